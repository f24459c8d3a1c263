"""Small knowledge bundles for tests, built with the real bundle models."""

from __future__ import annotations

from typing import Any

from clinical.rules import Bundle, UnitSpec
from knowledge.bundle import bundle_from_documents

SOURCE = {
    "key": "test-guideline-2025",
    "organisation": "Test Society",
    "title": "Test guideline on liver tumours",
    "version": "2025",
    "year": 2025,
    "jurisdiction": "EU",
    "url": "https://example.org/guideline",
}


def unit(key: str, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "key": key,
        "source": SOURCE["key"],
        "kind": "therapy_step",
        "cancer_type": "hcc",
        "title": "Resection for early HCC",
        "text": "Liver resection is the first option for a single tumour with preserved liver "
        "function and no clinically significant portal hypertension.",
        "anchor": "Section 6.1",
        "grade": {"system": "EASL", "native": "LoE 2, strong", "ordinal": 2},
        "context": {"all": [{"fact": "derived.bclc", "op": "in", "value": ["0", "A"]}]},
        "action": {
            "type": "therapy",
            "modality": "surgery",
            "description": "Liver resection",
            "agents": [],
            "intent": "curative",
        },
    }
    base.update(overrides)
    return base


def bundle(*units: dict[str, Any]) -> Bundle:
    return bundle_from_documents(
        [{"format": "mdtboard.kb/1", "sources": [SOURCE], "units": list(units)}]
    )


def spec(key: str, **overrides: Any) -> UnitSpec:
    return UnitSpec.model_validate(unit(key, **overrides))


# Overrides that make a unit a safety unit (a contraindication), which a curator may hot-fix.
SAFETY: dict[str, Any] = {
    "kind": "contraindication",
    "action": {
        "type": "safety",
        "gate": "varices",
        "agents": ["bevacizumab"],
        "severity": "critical",
        "effect": "remove",
        "advice": "Treat varices before bevacizumab.",
    },
}


def merge_bomb(levels: int) -> bytes:
    """Nested YAML merge keys, each level merging the one below twice: a few hundred bytes
    whose mappings, merged out, hold 2**levels key copies (the audit's 752-byte file)."""
    lines = ["a0: &a0 {x: 1}"]
    lines += [f"a{n}: &a{n} {{<<: [*a{n - 1}, *a{n - 1}]}}" for n in range(1, levels + 1)]
    return ("\n".join(lines) + "\n").encode()


def retire(
    asker: Any, approver: Any, version: Any, reason: str = "withdrawn by the society"
) -> Any:
    """Retire a published version the only way there is: one person asks, another approves."""
    from knowledge.services import approval_request_approve, version_retire_request

    request = version_retire_request(actor=asker, version=version, reason=reason)
    return approval_request_approve(actor=approver, request=request)
