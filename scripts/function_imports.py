"""Lists imports of the project's own modules made inside functions; `make lint` fails on one not
allowed here. An import inside a function hides a dependency from the reader and from the import
contracts (docs/architecture.md). Allowed:

- the Celery task <-> service pairs: a service enqueues its task and the task calls the service,
  so one of the two imports the other when it runs (the task modules import their services);
- the LLM client (consult.llm, which imports openai: about 1.4 s and 20 MB) where an LLM is
  configured, so that a run of the guideline engine, the web process and the tests never pay it;
- the PDF renderer (consult.review.pdf, which imports WeasyPrint: about 0.5 s and 20 MB) where a
  report is rendered, so that the processes that only load the URL configuration (the review
  views import the report module), a consultation's included, never pay it;
- Django's ``AppConfig.ready``, where an app connects its signal receivers once the models load.

Run: python scripts/function_imports.py [paths...]
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PROJECT = ("clinical", "consult", "knowledge", "mdtboard")
DEFAULT_PATHS = PROJECT
# (module that imports inside a function, module it imports)
TASK_PAIRS: frozenset[tuple[str, str]] = frozenset(
    {
        ("consult.services.consultations", "consult.tasks"),
        ("consult.rating.services", "consult.tasks"),
        ("consult.review.services", "consult.tasks"),
        ("consult.review.services", "consult.review.tasks"),
        ("consult.rating.llm_rater", "consult.rating.tasks"),
        ("knowledge.services", "knowledge.tasks"),
    }
)
LLM_CLIENT: frozenset[tuple[str, str]] = frozenset(
    {
        ("consult.services.consultations", "consult.llm"),
        ("consult.learning", "consult.llm"),
        ("consult.rating.llm_rater", "consult.llm"),
    }
)
PDF_RENDERER: frozenset[tuple[str, str]] = frozenset(
    {
        ("consult.review.report", "consult.review.pdf"),
    }
)
ALLOWED = TASK_PAIRS | LLM_CLIENT | PDF_RENDERER


def _module(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] if node.level == 0 else []
    return [alias.name for alias in node.names]


def function_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of a project module inside a function of ``path``
    (``AppConfig.ready`` of an ``apps`` module aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if path.name == "apps.py" and function.name == "ready":
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for name in _imported(node):
                    if name.split(".")[0] in PROJECT:
                        yield node.lineno, name


def offenders(paths: list[str]) -> list[str]:
    found = []
    for root in paths:
        for path in sorted(Path(root).rglob("*.py")) if Path(root).is_dir() else [Path(root)]:
            if "migrations" in path.parts:
                continue
            importer = _module(path)
            for line, name in sorted(set(function_imports(path))):
                if (importer, name) not in ALLOWED:
                    found.append(f"{path}:{line}: {importer} imports {name} inside a function")
    return found


def main(argv: list[str]) -> int:
    found = offenders(argv or list(DEFAULT_PATHS))
    for line in found:
        print(line)  # noqa: T201 - a lint's report
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
