"""What a consultation process pays before it works (issue 27): scipy (rating statistics) and
torch are not imported by the consultation path, nor by embedding a query, nor by reading the
case's free text (spaCy's thinc imports torch, medspaCy's QuickUMLS scipy, when left to); nor
are matplotlib (the study's charts), WeasyPrint (the PDF report) or Twisted (the web server)
by the URL configuration, which a consultation loads to render the board's fragments; and the
embedding model's weights are mapped, not read whole into memory."""

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
import mdtboard.urls
heavy = ("scipy", "torch", "sentence_transformers", "matplotlib", "weasyprint", "twisted")
before = sorted(m for m in heavy if m in sys.modules)
import resource
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from knowledge.embeddings import LocalMiniLM
[vector] = LocalMiniLM().embed(["stage IIIA lung adenocarcinoma"])
embedding_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
from clinical.text.reader import read_text
findings = read_text("EGFR exon 19 deletion. No brain metastases. Creatinine clearance 28 mL/min.")
after = sorted(m for m in heavy if m in sys.modules)
print(json.dumps({
    "before": before, "after": after, "dim": len(vector), "read": len(findings),
    "embedding_mb": embedding_kb / 1024,
}))
"""


def test_a_consultation_its_query_embeddings_and_text_reader_import_nothing_they_do_not_use() -> (
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
    # The model's first query costs the pages of the weights it multiplies by (~45 MB), not
    # the whole 90 MB file plus copies (~170 MB at the peak when it was read into memory).
    assert seen["embedding_mb"] < 100
