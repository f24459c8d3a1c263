"""Read the bytes of a FHIR R4 Bundle (JSON) into ``fhir.resources`` models, with limits and
errors that name the FHIR path (``Bundle.entry[3].resource.valueQuantity``)."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any

from fhir.resources.R4B import get_fhir_model_class
from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.resource import Resource
from pydantic import ValidationError

from consult.casefile.validate import text_depth_exceeds

# mCODE STU4 is written against FHIR R4 (4.0.1); fhir.resources ships R4B (4.3.0), which has
# the same Patient, Condition, Observation, Procedure, Medication* and AllergyIntolerance
# elements that the mapping reads (fhir.resources documents R4B as its R4 line).
FHIR_VERSION = "4.0.1"
# A whole patient record ($everything) is far larger than a case file: 5 MB is a long history.
MAX_BYTES = 20 * 1024 * 1024
# Bundle.entry[].resource.extension[].extension[].valueCodeableConcept.coding[] is 8 levels;
# contained resources and nested extensions add some. Deeper is a recursion bomb.
MAX_DEPTH = 32
MAX_ENTRIES = 50_000
# Errors listed for one bundle; beyond this a file is junk and more help nobody.
MAX_ERRORS = 100
BUNDLE_TYPES = frozenset({"collection", "document", "transaction", "searchset"})
_SNIFF = re.compile(rb'"resourceType"\s*:')


@dataclass(frozen=True)
class FhirError:
    """One problem in a bundle; ``path`` is a FHIR path such as "Bundle.entry[3].resource"."""

    filename: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.filename}: {self.path}: {self.message}"


@dataclass(frozen=True)
class ParsedBundle:
    """A bundle read and validated by fhir.resources, or the errors that stopped it."""

    filename: str
    bundle: Bundle | None
    errors: tuple[FhirError, ...]
    size: int = 0

    @property
    def ok(self) -> bool:
        return self.bundle is not None and not self.errors

    @property
    def resources(self) -> list[tuple[int, Resource]]:
        """(entry index, resource) for every entry that has a resource."""
        if self.bundle is None:
            return []
        return [(i, e.resource) for i, e in enumerate(self.bundle.entry or []) if e.resource]


def looks_like_fhir(raw: bytes) -> bool:
    """True if the start of a JSON file names a FHIR resourceType (a case file never does)."""
    return bool(_SNIFF.search(raw[:65536]))


def fhir_path(loc: tuple[Any, ...]) -> str:
    """("entry", 3, "resource", "valueQuantity") -> "Bundle.entry[3].resource.valueQuantity"."""
    out = "Bundle"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}"
    return out


def _short(value: object, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def parse_bundle_bytes(raw: bytes, *, filename: str) -> ParsedBundle:
    """Decode, bound and validate a FHIR Bundle; never raises on bad input."""

    def fail(path: str, message: str) -> ParsedBundle:
        return ParsedBundle(filename, None, (FhirError(filename, path, message),), len(raw))

    if len(raw) > MAX_BYTES:
        return fail(
            "Bundle",
            f"The file is {len(raw) / (1024 * 1024):.1f} MiB; FHIR bundles are limited to "
            f"{MAX_BYTES // (1024 * 1024)} MiB.",
        )
    skipped = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        return fail(
            "Bundle",
            f"The file is not valid UTF-8 (byte offset {exc.start + skipped}); FHIR JSON is UTF-8.",
        )
    if not text.strip():
        return fail("Bundle", "The file is empty; expected a FHIR Bundle in JSON.")
    if text_depth_exceeds(text, MAX_DEPTH):
        return fail("Bundle", f"The file is nested too deeply (more than {MAX_DEPTH} levels).")
    duplicates: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            duplicates.extend(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        return obj

    try:
        data = json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        return fail(
            "Bundle",
            f"The file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
        )
    except (ValueError, RecursionError) as exc:
        return fail("Bundle", f"The file is not valid JSON: {exc}.")
    if duplicates:
        return fail(
            "Bundle",
            f"The key {_short(duplicates[0])} appears twice in one JSON object; FHIR JSON gives "
            "each element once.",
        )
    return parse_bundle_data(data, filename=filename, size=len(raw))


def parse_bundle_data(data: object, *, filename: str, size: int = 0) -> ParsedBundle:
    """Validate an already-decoded JSON value as a FHIR R4 Bundle."""
    errors: list[FhirError] = []

    def fail(path: str, message: str) -> ParsedBundle:
        return ParsedBundle(filename, None, (FhirError(filename, path, message),), size)

    if not isinstance(data, dict):
        return fail("Bundle", "A FHIR Bundle is a JSON object ({ ... }).")
    kind = data.get("resourceType")
    if kind != "Bundle":
        shown = f"a {kind} resource" if isinstance(kind, str) else "no resourceType"
        return fail(
            "Bundle.resourceType",
            f"Expected a FHIR Bundle; the file holds {shown}. Export the patient's record as "
            "a Bundle (collection, document, transaction or searchset).",
        )
    bundle_type = data.get("type")
    if isinstance(bundle_type, str) and bundle_type not in BUNDLE_TYPES:
        return fail(
            "Bundle.type",
            f"A {_short(bundle_type)} bundle carries no patient record; use a collection, "
            "document, transaction or searchset bundle.",
        )
    entries = data.get("entry")
    if isinstance(entries, list):
        if len(entries) > MAX_ENTRIES:
            return fail(
                "Bundle.entry",
                f"The bundle has {len(entries):,} entries; the limit is {MAX_ENTRIES:,}.",
            )
        for index, entry in enumerate(entries):
            resource = entry.get("resource") if isinstance(entry, dict) else None
            if not isinstance(resource, dict):
                continue
            name = resource.get("resourceType")
            path = f"Bundle.entry[{index}].resource.resourceType"
            if not isinstance(name, str):
                errors.append(FhirError(filename, path, "Every resource names its resourceType."))
                continue
            try:
                get_fhir_model_class(name)
            except (ValueError, KeyError):
                errors.append(
                    FhirError(filename, path, f"{_short(name)} is not a FHIR R4 resource type.")
                )
    if errors:
        return ParsedBundle(filename, None, tuple(errors[:MAX_ERRORS]), size)
    try:
        bundle = Bundle.model_validate(data)
    except ValidationError as exc:
        for item in exc.errors()[:MAX_ERRORS]:
            path = fhir_path(tuple(item["loc"]))
            message = str(item["msg"]).removeprefix("Value error, ")
            found = item.get("input")
            if item["type"] not in ("missing", "model_field_validation.missing") and not (
                isinstance(found, (dict, list))
            ):
                message += f" Found {_short(found)}."
            errors.append(FhirError(filename, path, message))
        return ParsedBundle(filename, None, tuple(errors), size)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        return fail("Bundle", f"The bundle is not valid FHIR R4: {_short(str(exc), 200)}")
    return ParsedBundle(filename, bundle, (), size)
