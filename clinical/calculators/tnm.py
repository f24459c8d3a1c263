"""AJCC 8th edition anatomic stage groups from T/N/M for lung (NSCLC) and breast cancer."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup

LUNG_SOURCE: Final = (
    "Amin MB, et al. (eds). AJCC Cancer Staging Manual, 8th ed. Springer 2017, chapter 36 "
    "(Lung), anatomic stage groups, based on the IASLC proposals: Goldstraw P, et al. "
    "J Thorac Oncol 2016;11(1):39-51."
)
BREAST_SOURCE: Final = (
    "Amin MB, et al. (eds). AJCC Cancer Staging Manual, 8th ed. Springer 2017, chapter 48 "
    "(Breast), anatomic stage groups; summarised in Giuliano AE, et al. CA Cancer J Clin "
    "2017;67(4):290-303."
)

# Concrete categories each table distinguishes. A missing or X value stands for "any of these".
LUNG_T: Final = ("T0", "Tis", "T1mi", "T1a", "T1b", "T1c", "T2a", "T2b", "T3", "T4")
LUNG_N: Final = ("N0", "N1", "N2", "N3")
LUNG_M: Final = ("M0", "M1a", "M1b", "M1c")
# Breast groups never depend on the T1a-c, T4a-d, N1a-c, N2a-b, N3a-c sub-letters, so those
# are folded into the parent category on parsing; only N1mi is kept apart (it defines IB).
BREAST_T: Final = ("T0", "Tis", "T1", "T2", "T3", "T4")
BREAST_N: Final = ("N0", "N1mi", "N1", "N2", "N3")
BREAST_M: Final = ("M0", "M1")

# Generic codes that stand for several concrete lung categories. T1mi is deliberately not part
# of a bare "T1": minimally invasive adenocarcinoma is a separate pathological designation.
_LUNG_GENERIC: Final[dict[str, tuple[str, ...]]] = {
    "T1": ("T1a", "T1b", "T1c"),
    "T2": ("T2a", "T2b"),
    "M1": ("M1a", "M1b", "M1c"),
}

_PREFIX = re.compile(r"^(?:y?[cp]|r[cp]?|y)(?=[tnm])", re.IGNORECASE)


def _canonical(raw: str) -> str:
    """Normalise spelling: strip c/p/y/r prefixes and spaces, fix letter case ("t1A" -> "T1a")."""
    code = _PREFIX.sub("", raw.strip().replace(" ", ""))
    if not code:
        return ""
    code = code[0].upper() + code[1:].lower()
    if code[1:] == "x":
        return code[0] + "X"
    return code


def lung_stage_group(t: str, n: str, m: str) -> str | None:
    """AJCC 8 lung stage group for concrete categories; None if the table has no such cell."""
    if m in ("M1a", "M1b"):
        return "IVA"
    if m == "M1c":
        return "IVB"
    if m != "M0":
        return None
    if t == "Tis":
        return "0" if n == "N0" else None
    if t == "T1mi":
        return "IA1" if n == "N0" else None
    n_index = {"N0": 0, "N1": 1, "N2": 2, "N3": 3}.get(n)
    if n_index is None:
        return None
    rows: dict[str, tuple[str, str, str, str]] = {
        "T1a": ("IA1", "IIB", "IIIA", "IIIB"),
        "T1b": ("IA2", "IIB", "IIIA", "IIIB"),
        "T1c": ("IA3", "IIB", "IIIA", "IIIB"),
        "T2a": ("IB", "IIB", "IIIA", "IIIB"),
        "T2b": ("IIA", "IIB", "IIIA", "IIIB"),
        "T3": ("IIB", "IIIA", "IIIB", "IIIC"),
        "T4": ("IIIA", "IIIA", "IIIB", "IIIC"),
    }
    row = rows.get(t)
    return None if row is None else row[n_index]


def breast_stage_group(t: str, n: str, m: str) -> str | None:
    """AJCC 8 breast anatomic stage group for folded categories; None if no such cell."""
    if m == "M1":
        return "IV"
    if m != "M0":
        return None
    if n == "N3":
        return "IIIC"  # any T
    if t == "Tis":
        return "0" if n == "N0" else None
    rows: dict[str, dict[str, str]] = {
        # T0 N0 is not a stage group (no tumour found); T0/T1 with N1mi only are IB.
        "T0": {"N1mi": "IB", "N1": "IIA", "N2": "IIIA"},
        "T1": {"N0": "IA", "N1mi": "IB", "N1": "IIA", "N2": "IIIA"},
        "T2": {"N0": "IIA", "N1mi": "IIB", "N1": "IIB", "N2": "IIIA"},
        "T3": {"N0": "IIB", "N1mi": "IIIA", "N1": "IIIA", "N2": "IIIA"},
        "T4": {"N0": "IIIB", "N1mi": "IIIB", "N1": "IIIB", "N2": "IIIB"},
    }
    return rows.get(t, {}).get(n)


def _lung_candidates(code: str) -> tuple[str, ...] | None:
    """Concrete lung categories a (canonical) code may stand for; None if not a lung code."""
    if code in (*LUNG_T, *LUNG_N, *LUNG_M):
        return (code,)
    return _LUNG_GENERIC.get(code)


def _breast_candidates(code: str) -> tuple[str, ...] | None:
    """Folded breast category for a (canonical) code; None if not a breast code."""
    if re.fullmatch(r"Tis(\((dcis|paget)\))?", code):
        return ("Tis",)
    if re.fullmatch(r"T1(mi|[abc])?", code):
        return ("T1",)
    if re.fullmatch(r"T4[abcd]?", code):
        return ("T4",)
    if code in ("T0", "T2", "T3"):
        return (code,)
    # Isolated tumour cells / molecular-only findings are staged as N0 (and M0).
    if re.fullmatch(r"N0(\((i|mol)[+-]\))?", code):
        return ("N0",)
    if code == "N1mi":
        return ("N1mi",)
    if re.fullmatch(r"N1[abc]?", code):
        return ("N1",)
    if re.fullmatch(r"N2[ab]?", code):
        return ("N2",)
    if re.fullmatch(r"N3[abc]?", code):
        return ("N3",)
    if re.fullmatch(r"M0(\(i\+\))?", code):
        return ("M0",)
    if code == "M1":
        return ("M1",)
    return None


def _stage(
    case: Mapping[str, Any],
    name: str,
    source: str,
    table: Callable[[str, str, str], str | None],
    candidates: Callable[[str], tuple[str, ...] | None],
    universe: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]],
) -> CalcResult:
    """Stage group that holds for every category the recorded T/N/M could stand for.

    A missing, X or generic code is expanded to all categories it could be; the stage is
    reported only if every expansion gives the same defined group (e.g. any T/N with M1c is
    IVB, so a missing T does not block it). Otherwise the value is None -- never a guess.
    """
    inputs = Inputs(case)
    notes: list[str] = []
    edition = lookup(case, "staging.tnm_edition")
    if edition is None:
        notes.append("TNM edition not stated; codes read as AJCC 8th edition")
    elif edition != 8 or isinstance(edition, bool):
        inputs.used["staging.tnm_edition"] = edition
        return inputs.result(
            name,
            None,
            source,
            f"staging.tnm_edition={edition!r}: only AJCC 8th edition is implemented",
        )
    else:
        inputs.used["staging.tnm_edition"] = edition

    options: list[tuple[str, ...]] = []
    uncertain: list[str] = []  # paths whose value stands for more than one category
    assessed_x: list[str] = []  # paths recorded as TX/NX/MX
    invalid = False
    for axis, (path, axis_universe) in enumerate(
        zip(("staging.t", "staging.n", "staging.m"), universe, strict=True)
    ):
        letter = "TNM"[axis]
        raw = lookup(case, path)
        if raw is None:
            options.append(axis_universe)
            uncertain.append(path)
            continue
        if not isinstance(raw, str):
            notes.append(f"{path}={raw!r} is not a {letter} code")
            invalid = True
            options.append(axis_universe)
            continue
        code = _canonical(raw)
        inputs.used[path] = raw
        if code == f"{letter}X":
            options.append(axis_universe)
            uncertain.append(path)
            assessed_x.append(path)
            notes.append(f"{path}={raw} (cannot be assessed)")
            continue
        found = candidates(code) if code.startswith(letter) else None
        if found is None:
            notes.append(f"{path}={raw!r} is not a valid AJCC 8 {letter} category here")
            invalid = True
            options.append(axis_universe)
            continue
        if len(found) > 1:
            uncertain.append(path)
        options.append(found)

    if invalid:
        return inputs.result(name, None, source, notes)

    groups = {table(t, n, m) for t, n, m in itertools.product(*options)}
    if len(groups) == 1 and None not in groups:
        (stage,) = groups
        if uncertain:
            notes.append(f"stage is the same for every possible value of {', '.join(uncertain)}")
        notes.append("anatomic stage group")
        return inputs.result(name, stage, source, notes)

    if not uncertain:
        t, n, m = (o[0] for o in options)
        notes.append(f"{t} {n} {m} has no AJCC 8 stage group")
        if table is lung_stage_group and (t, n, m) == ("T0", "N0", "M0"):
            notes.append("no evidence of primary tumour")
        return inputs.result(name, None, source, notes)

    possible = sorted(g if g is not None else "no group" for g in groups)
    notes.append(f"stage depends on {', '.join(uncertain)} (could be {', '.join(possible)})")
    if (
        table is lung_stage_group
        and "staging.t" in assessed_x
        and options[1:] == [("N0",), ("M0",)]
    ):
        notes.append("TX N0 M0 is the AJCC 'occult carcinoma' group, which has no stage number")
    for path in uncertain:
        if path not in inputs.missing:
            inputs.missing.append(path)
    return inputs.result(name, None, source, notes)


def lung_tnm_stage(case: Mapping[str, Any]) -> CalcResult:
    """AJCC 8 NSCLC stage group (0, IA1-IA3, IB, IIA, IIB, IIIA-IIIC, IVA, IVB)."""
    return _stage(
        case,
        "tnm_stage",
        LUNG_SOURCE,
        lung_stage_group,
        _lung_candidates,
        (LUNG_T, LUNG_N, LUNG_M),
    )


def breast_tnm_stage(case: Mapping[str, Any]) -> CalcResult:
    """AJCC 8 breast anatomic stage group (0, IA, IB, IIA, IIB, IIIA, IIIB, IIIC, IV).

    The AJCC 8 prognostic stage groups (which add grade, ER, PR and HER2) can differ; the plan
    format asks for the anatomic group.
    """
    return _stage(
        case,
        "tnm_stage",
        BREAST_SOURCE,
        breast_stage_group,
        _breast_candidates,
        (BREAST_T, BREAST_N, BREAST_M),
    )


def tnm_stage(case: Mapping[str, Any]) -> CalcResult:
    """Dispatch on cancer_type: lung_adenocarcinoma -> lung table, breast -> breast table."""
    cancer_type = lookup(case, "cancer_type")
    if cancer_type == "lung_adenocarcinoma":
        return lung_tnm_stage(case)
    if cancer_type == "breast":
        return breast_tnm_stage(case)
    inputs = Inputs(case)
    if cancer_type is None:
        inputs.missing.append("cancer_type")
    else:
        inputs.used["cancer_type"] = cancer_type
    return inputs.result(
        "tnm_stage",
        None,
        "AJCC Cancer Staging Manual, 8th ed. (2017)",
        f"no AJCC stage-group table implemented for cancer_type={cancer_type!r}",
    )
