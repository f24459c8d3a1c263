"""Forms of the curator pages. Django forms only collect text here: the bundle models (pydantic)
judge every value, so a form and an imported bundle get the same checks and the same messages."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from django import forms
from pydantic import ValidationError

from clinical.rules import SourceSpec, UnitSpec, unit_content
from clinical.vocab import UnitCancerType, UnitKind
from knowledge.bundle import nesting_error
from knowledge.ingest import MAX_INPUT_BYTES
from knowledge.models import GuidelineSource, VersionStatus
from knowledge.services import HOTFIX_REASON

KIND_CHOICES = [(k.value, k.value.replace("_", " ")) for k in UnitKind]
CANCER_CHOICES = [(c.value, c.value.replace("_", " ")) for c in UnitCancerType]
GRADE_ORDINALS = [
    ("1", "1 – strongest (e.g. NCCN category 1, ESMO I/A)"),
    ("2", "2"),
    ("3", "3"),
    ("4", "4"),
    ("5", "5 – weakest (expert opinion)"),
]
MODES = [("hybrid", "hybrid (dense + keyword)"), ("dense", "dense only"), ("keyword", "keyword")]
ANY = [("", "any")]
RETIRE_REASON = "Retiring needs a reason (it is kept in the audit log)."
EMPTY_CONTEXT: dict[str, list[Any]] = {"all": [], "any": [], "exceptions": []}

# Where each UnitSpec error lands in the form: grade is split into three inputs.
_GRADE_FIELDS = {"system": "grade_system", "native": "grade_native", "ordinal": "grade_ordinal"}
_ACTION_TAGS = {"therapy", "safety", "surveillance", "staging"}


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _where(path: Sequence[int | str]) -> str:
    """("all", 0, "value") -> "all[0].value"."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _message(err: Mapping[str, Any]) -> str:
    return str(err["msg"]).removeprefix("Value error, ")


def _unit_field(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """(form field, path inside it) for the location of a UnitSpec error."""
    if not loc:
        # UnitSpec's only model-level check: the action must be of the kind's type.
        return "action", ""
    head, rest = str(loc[0]), loc[1:]
    if head == "grade":
        inner = str(rest[0]) if rest else ""
        return _GRADE_FIELDS.get(inner, "grade_native"), ""
    if head == "action" and rest and rest[0] in _ACTION_TAGS:
        rest = rest[1:]  # pydantic names the union member it tried; the curator wrote "type"
    return head, _where(rest)


def _add_pydantic_errors(
    form: forms.Form, exc: ValidationError, locate: Any, skip: Iterable[str] = ()
) -> None:
    skipped = set(skip)
    for err in exc.errors():
        field, where = locate(tuple(err["loc"]))
        if field in skipped:
            continue  # Django already said what is wrong with this input
        message = f"{where}: {_message(err)}" if where else _message(err)
        form.add_error(field if field in form.fields else None, message)


class UnitForm(forms.Form):
    """Every field of a UnitSpec. On edit, key, kind and cancer type are the unit's identity
    and are shown but not editable."""

    key = forms.CharField(
        label="Key",
        help_text="Lower case, digits, dot, dash or underscore, e.g. hcc.resection-early.",
    )
    kind = forms.ChoiceField(label="Kind", choices=KIND_CHOICES)
    cancer_type = forms.ChoiceField(label="Cancer type", choices=CANCER_CHOICES)
    source = forms.ChoiceField(label="Source")
    title = forms.CharField(label="Title")
    text = forms.CharField(
        label="Paraphrased text",
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text="In your own words, 10 to 2000 characters; never a verbatim copy.",
    )
    anchor = forms.CharField(
        label="Anchor", help_text="Where the source says it: section, page, table or figure."
    )
    grade_system = forms.CharField(label="Grading system", help_text="e.g. EASL, NCCN, ESMO.")
    grade_native = forms.CharField(
        label="Native grade", help_text="The guideline's own grade, verbatim."
    )
    grade_ordinal = forms.TypedChoiceField(
        label="Grade ordinal", choices=GRADE_ORDINALS, coerce=int
    )
    context = forms.CharField(
        label="Applicability (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 10, "class": "code", "spellcheck": "false"}),
        help_text='{"all": [conditions], "any": [conditions], "exceptions": [text]}; a '
        'condition is {"fact": "derived.bclc", "op": "in", "value": ["0", "A"]}. Empty means: '
        "whenever the cancer type matches.",
    )
    action = forms.CharField(
        label="Action (JSON)",
        widget=forms.Textarea(attrs={"rows": 10, "class": "code", "spellcheck": "false"}),
        help_text="Its type follows the kind: therapy, safety, surveillance or staging.",
    )

    def __init__(
        self,
        *args: Any,
        sources: Iterable[tuple[str, str]],
        editing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.spec: UnitSpec | None = None
        cast(forms.ChoiceField, self.fields["source"]).choices = [
            ("", "choose a source"),
            *sources,
        ]
        if editing:
            for name in ("key", "kind", "cancer_type"):
                self.fields[name].disabled = True
                self.fields[name].help_text = "Part of the unit's identity: create a new unit."

    def _json(self, name: str, default: Any) -> Any:
        raw = str(self.cleaned_data.get(name) or "").strip()
        if not raw:
            return default
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            self.add_error(
                name, f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            )
            return None
        except RecursionError:
            self.add_error(name, "The JSON is nested too deeply to read.")
            return None
        problem = nesting_error(value)
        if problem is not None:
            self.add_error(name, f"The JSON is {problem}.")
            return None
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # A field whose JSON does not parse keeps its own error; the others are still checked.
        context = self._json("context", {})
        action = self._json("action", None)
        candidate = {
            "key": data.get("key", ""),
            "source": data.get("source", ""),
            "kind": data.get("kind", ""),
            "cancer_type": data.get("cancer_type", ""),
            "title": data.get("title", ""),
            "text": data.get("text", ""),
            "anchor": data.get("anchor", ""),
            "grade": {
                "system": data.get("grade_system", ""),
                "native": data.get("grade_native", ""),
                "ordinal": data.get("grade_ordinal", 0),
            },
            "context": context,
            "action": action,
        }
        try:
            self.spec = UnitSpec.model_validate(candidate)
        except ValidationError as exc:
            _add_pydantic_errors(self, exc, _unit_field, skip=list(self.errors))
        return data


def canonical_content(key: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """A stored version's content in the bundle models' field order (the database keeps JSON
    keys in its own order), so the form and the detail page read like the bundle format."""
    try:
        return unit_content(UnitSpec.model_validate({"key": key, **content}))
    except ValidationError:
        return dict(content)


def unit_initial(key: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """The form's starting values: a version's content as the curator edits it."""
    content = canonical_content(key, content)
    grade = content.get("grade") or {}
    return {
        "key": key,
        "kind": content.get("kind"),
        "cancer_type": content.get("cancer_type"),
        "source": content.get("source"),
        "title": content.get("title"),
        "text": content.get("text"),
        "anchor": content.get("anchor"),
        "grade_system": grade.get("system"),
        "grade_native": grade.get("native"),
        "grade_ordinal": grade.get("ordinal"),
        "context": pretty_json(content.get("context") or EMPTY_CONTEXT),
        "action": pretty_json(content.get("action") or {}),
    }


def _flat_field(loc: tuple[int | str, ...]) -> tuple[str, str]:
    return (str(loc[0]), _where(loc[1:])) if loc else ("__all__", "")


class SourceForm(forms.Form):
    key = forms.CharField(label="Key", help_text="e.g. easl-hcc-2025.")
    organisation = forms.CharField(label="Organisation")
    title = forms.CharField(label="Title")
    version = forms.CharField(label="Version")
    year = forms.IntegerField(label="Year")
    jurisdiction = forms.CharField(label="Jurisdiction", help_text="e.g. EU, US, UK, DE.")
    url = forms.CharField(label="Address (URL)", required=False)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spec: SourceSpec | None = None
        if editing:
            self.fields["key"].disabled = True
            self.fields["key"].help_text = "Units cite the source by its key; it cannot change."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        candidate = {name: data.get(name, "") for name in self.fields}
        try:
            self.spec = SourceSpec.model_validate(candidate)
        except ValidationError as exc:
            _add_pydantic_errors(self, exc, _flat_field, skip=list(self.errors))
        return data


def source_initial(source: GuidelineSource) -> dict[str, Any]:
    return {name: getattr(source, name) for name in SourceForm.base_fields}


class ReasonForm(forms.Form):
    """The reason a hot-fix or a retirement must state; the audit log keeps it."""

    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)

    def __init__(self, *args: Any, required_message: str = HOTFIX_REASON, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].error_messages["required"] = required_message


class UnitFilterForm(forms.Form):
    q = forms.CharField(label="Search", required=False, max_length=200)
    cancer_type = forms.ChoiceField(
        label="Cancer type", choices=ANY + CANCER_CHOICES, required=False
    )
    kind = forms.ChoiceField(label="Kind", choices=ANY + KIND_CHOICES, required=False)
    status = forms.ChoiceField(
        label="Latest version", choices=ANY + list(VersionStatus.choices), required=False
    )
    source = forms.ChoiceField(label="Source", required=False)

    def __init__(self, *args: Any, sources: Iterable[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["source"]).choices = ANY + list(sources)
        self.fields["q"].widget.attrs.update(
            {"type": "search", "placeholder": "key, title or text"}
        )


class BundleUploadForm(forms.Form):
    file = forms.FileField(
        label="Bundle file (.json, .yaml)",
        widget=forms.ClearableFileInput(attrs={"accept": ".json,.yaml,.yml"}),
    )


class DiagnosticsForm(forms.Form):
    q = forms.CharField(label="Query", max_length=500)
    cancer_type = forms.ChoiceField(
        label="Cancer type", choices=ANY + CANCER_CHOICES, required=False
    )
    mode = forms.ChoiceField(label="Mode", choices=MODES, required=False)
    k = forms.IntegerField(label="Results (k)", min_value=1, max_value=50, required=False)
    dossier = forms.TypedChoiceField(
        label="Dossier (optional)", coerce=int, required=False, empty_value=None
    )

    def __init__(
        self, *args: Any, dossiers: Iterable[tuple[int, str]] | None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["k"].widget.attrs["placeholder"] = "10"
        self.fields["q"].widget.attrs["type"] = "search"
        dossier_field = cast(forms.TypedChoiceField, self.fields["dossier"])
        if dossiers is None:
            # Only clinicians and administrators may open a dossier; curators type queries.
            del self.fields["dossier"]
        else:
            dossier_field.choices = [("", "none: no case"), *dossiers]
            dossier_field.help_text = (
                "Checks each hit's applicability against this case file (yes / unknown); "
                "units that do not apply are dropped."
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["mode"] = data.get("mode") or "hybrid"
        data["k"] = data.get("k") or 10
        data["cancer_type"] = data.get("cancer_type") or None
        data.setdefault("dossier", None)
        return data


# --- document ingest ----------------------------------------------------------------------

INGEST_FORMATS = [
    ("auto", "from the file name (.md, .html, .txt)"),
    ("markdown", "Markdown"),
    ("html", "HTML"),
    ("text", "plain text (e.g. extracted from a PDF)"),
]
_FORMAT_BY_SUFFIX = {
    "md": "markdown",
    "markdown": "markdown",
    "html": "html",
    "htm": "html",
    "txt": "text",
}
# What a new unit's action looks like for each kind: the curator fills in the values.
_THERAPY = {"type": "therapy", "modality": "", "description": "", "agents": [], "intent": ""}
_SAFETY = {
    "type": "safety",
    "gate": "",
    "agents": [],
    "modalities": [],
    "severity": "",
    "effect": "",
    "advice": "",
}
_KINDS = frozenset(k.value for k in UnitKind)
_CANCER_TYPES = frozenset(c.value for c in UnitCancerType)
ACTION_SKELETONS: dict[str, dict[str, Any]] = {
    UnitKind.THERAPY_STEP: _THERAPY,
    UnitKind.CONTRAINDICATION: _SAFETY,
    UnitKind.INTERACTION: _SAFETY,
    UnitKind.ORGAN_FUNCTION_GATE: _SAFETY,
    UnitKind.SURVEILLANCE_INTERVAL: {
        "type": "surveillance",
        "phase": "",
        "what": "",
        "interval": "",
        "anchor": "",
    },
    UnitKind.STAGING_RULE: {"type": "staging", "system": "", "statement": ""},
}


class IngestForm(forms.Form):
    source = forms.ChoiceField(label="Source", help_text="The guideline this document is.")
    fmt = forms.ChoiceField(label="Format", choices=INGEST_FORMATS, initial="auto")
    file = forms.FileField(
        label="Document",
        widget=forms.ClearableFileInput(attrs={"accept": ".md,.markdown,.html,.htm,.txt"}),
    )

    def __init__(self, *args: Any, sources: Iterable[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["source"]).choices = [
            ("", "choose a source"),
            *sources,
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload is None:
            return data
        fmt = data.get("fmt") or "auto"
        if fmt == "auto":
            suffix = str(upload.name).rsplit(".", 1)[-1].lower() if "." in upload.name else ""
            fmt = _FORMAT_BY_SUFFIX.get(suffix, "")
            if not fmt:
                self.add_error("fmt", "The file name does not say its format: choose one.")
                return data
        raw = upload.read(MAX_INPUT_BYTES + 1)
        if len(raw) > MAX_INPUT_BYTES:
            self.add_error("file", f"The document is larger than {MAX_INPUT_BYTES >> 20} MiB.")
            return data
        try:
            data["document"] = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            self.add_error("file", f"Not UTF-8 text (byte {exc.start}).")
            return data
        data["format"] = fmt
        return data


class CandidateForm(forms.Form):
    """One segmented statement, carried from the ingest page to a new unit's form."""

    source = forms.CharField(max_length=80)
    anchor = forms.CharField(max_length=200, required=False)
    statement = forms.CharField(max_length=20000)
    native_grade = forms.CharField(max_length=200, required=False)
    kind = forms.CharField(max_length=40, required=False)
    cancer_type = forms.CharField(max_length=40, required=False)


def candidate_initial(candidate: Mapping[str, Any]) -> dict[str, Any]:
    """The new-unit form pre-filled from a candidate: what the segmenter found, and the shape
    of the action its suggested kind needs. The curator fills in the rest."""
    kind = candidate.get("kind") if candidate.get("kind") in _KINDS else None
    cancer = candidate.get("cancer_type")
    return {
        "source": candidate.get("source"),
        "anchor": candidate.get("anchor"),
        "text": candidate.get("statement"),
        "grade_native": candidate.get("native_grade"),
        "kind": kind,
        "cancer_type": cancer if cancer in _CANCER_TYPES else None,
        "context": pretty_json(EMPTY_CONTEXT),
        "action": pretty_json(ACTION_SKELETONS[kind]) if kind else "",
    }
