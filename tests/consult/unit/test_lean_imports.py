"""What a consultation process pays before it works (issue 27): scipy (rating statistics) and
torch are not imported by the consultation path, nor by embedding a query, nor by reading the
case's free text (spaCy's thinc imports torch, medspaCy's QuickUMLS scipy, when left to)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter

REPO = Path(__file__).resolve().parents[3]

_PROBE = """
import json, sys
import django
django.setup()
from django.core.management import load_command_class
load_command_class("consult", "runcase")
import consult.tasks, consult.services.consultations, consult.retrieval
heavy = ("scipy", "torch", "sentence_transformers")
before = sorted(m for m in heavy if m in sys.modules)
from knowledge.embeddings import LocalMiniLM
[vector] = LocalMiniLM().embed(["stage IIIA lung adenocarcinoma"])
from clinical.text.reader import read_text
findings = read_text("EGFR exon 19 deletion. No brain metastases. Creatinine clearance 28 mL/min.")
after = sorted(m for m in heavy if m in sys.modules)
print(json.dumps({"before": before, "after": after, "dim": len(vector), "read": len(findings)}))
"""


def test_a_consultation_its_query_embeddings_and_text_reader_import_neither_scipy_nor_torch() -> (
    None
):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mdtboard.settings.test"}
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["before"] == []
    assert seen["after"] == []
    assert seen["dim"] == 384
    assert seen["read"] > 0  # the reader did read: the facts of the sentence
