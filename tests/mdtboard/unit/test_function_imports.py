"""No import of the project hides inside a function, but the allowed kinds
(scripts/function_imports.py): the layers drawn in docs/architecture.md are the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.function_imports import offenders
from tests.paths import REPO


def test_function_imports_none_in_the_project_but_the_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    assert offenders(["clinical", "consult", "knowledge", "mdtboard"]) == []


def test_function_imports_names_a_hidden_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a module that imports the project inside a function, and one that imports outside
    package = tmp_path / "consult"
    package.mkdir()
    (package / "hidden.py").write_text(
        "import json\n\n\ndef f():\n    from consult.models import Patient\n    return Patient\n"
    )
    (package / "apps.py").write_text(
        "class C:\n    def ready(self):\n        from consult import x\n"
    )
    monkeypatch.chdir(tmp_path)
    # when the script reads them
    found = offenders(["consult"])
    # then the hidden import is named with its line, and AppConfig.ready is allowed
    assert found == ["consult/hidden.py:5: consult.hidden imports consult.models inside a function"]
