"""What an amendment moved, in sentences a clinician reads at the meeting: the intent, items
that moved between the pathway, the alternatives and the options ruled out, items added,
removed, reworded or re-ordered, what changed in an item's drugs, doses, conditions or "when",
and follow-up rows added, removed or changed. Pure: two ``mdtboard.plan/1`` documents in, a
list of sentences out (stored with the version, so the PDF and the export say the same)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clinical.vocab import PHASE_LABELS as PHASE_WORDS

PLACES = {
    "primary": "the recommended pathway",
    "alternative": "the alternatives",
    "rejected": "the options ruled out",
}


# What an amended item came from, while the amendment is made: "c2" (the base version's third
# component) or "r0" (its first option ruled out). Not kept in the saved version.
ORIGIN = "_from"


@dataclass(frozen=True)
class _Item:
    role: str
    place: int  # step or rank (1-based); for ruled-out options their order in the list
    text: str
    fields: Mapping[str, Any]
    origin: str = ""

    @property
    def key(self) -> str:
        return " ".join(self.text.casefold().split())

    @property
    def where(self) -> str:
        if self.role == "primary":
            return f"step {self.place} of the pathway"
        if self.role == "alternative":
            return f"alternative {self.place}"
        return "ruled out"


def _items(doc: Mapping[str, Any], *, base: bool) -> list[_Item]:
    """A version's items; those of the base version know their own origin, those of the
    amended one the origin the amendment gave them."""
    components = (doc.get("recommendation") or {}).get("components") or []
    out = []
    for role, key in (("primary", "order"), ("alternative", "rank")):
        chosen = [(i, c) for i, c in enumerate(components) if (c.get("role") or "primary") == role]
        chosen.sort(key=lambda pair: pair[1].get(key) or 99)
        for place, (index, c) in enumerate(chosen, start=1):
            out.append(
                _Item(
                    role,
                    place,
                    str(c.get("description") or ""),
                    {
                        "modality": c.get("modality") or "",
                        "drugs": list(c.get("agents") or []),
                        "dose adjustments": list(c.get("dose_adjustments") or []),
                        "conditions": list(c.get("conditions") or []),
                        "when": c.get("when") or "" if role == "alternative" else "",
                    },
                    f"c{index}" if base else str(c.get(ORIGIN) or ""),
                )
            )
    for place, r in enumerate(doc.get("rejected_options") or [], start=1):
        out.append(
            _Item(
                "rejected",
                place,
                str(r.get("option") or ""),
                {"reason": r.get("reason")},
                f"r{place - 1}" if base else str(r.get(ORIGIN) or ""),
            )
        )
    return out


def _quote(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split()).rstrip(".")
    if len(text) > limit:
        text = text[: limit - 1].rstrip(" ,;:") + "…"
    return f"“{text}”"


def _listed(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value) or "none"
    return str(value or "none")


def _field_changes(old: _Item, new: _Item) -> list[str]:
    out = []
    for name, before in old.fields.items():
        after = new.fields.get(name)
        if (before or "") != (after or "") and name != "reason":
            out.append(
                f"{_quote(new.text)}: {name} changed from {_listed(before)} to {_listed(after)}."
            )
    if old.role == new.role == "rejected" and (
        old.fields.get("reason") != new.fields.get("reason")
    ):
        out.append(
            f"{_quote(new.text)} stays ruled out, now because: {_listed(new.fields['reason'])}."
        )
    return out


def _moved(old: _Item, new: _Item) -> str:
    if new.role == "rejected":
        return f"{_quote(new.text)} moved from {PLACES[old.role]} to the options ruled out."
    return f"{_quote(new.text)} moved from {PLACES[old.role]} to {PLACES[new.role]} ({new.where})."


def _pair(
    old: list[_Item], new: list[_Item]
) -> tuple[list[tuple[_Item, _Item]], list[_Item], list[_Item]]:
    """Items of both versions paired: by where the amendment took them from, else by their
    words, then an unmatched item of the same place and position (an item reworded). What is
    left was removed or added."""
    pairs: list[tuple[_Item, _Item]] = []
    left = list(old)
    added = []
    for item in new:
        match = next((o for o in left if item.origin and o.origin == item.origin), None)
        match = match or next((o for o in left if o.key == item.key), None)
        if match is None:
            added.append(item)
        else:
            left.remove(match)
            pairs.append((match, item))
    still_added = []
    for item in added:
        match = next(
            (o for o in left if o.role == item.role != "rejected" and o.place == item.place), None
        )
        if match is None:
            still_added.append(item)
        else:
            left.remove(match)
            pairs.append((match, item))
    return pairs, left, still_added


def _monitoring_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    def rows(doc: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
        return {
            (str(m.get("phase")), " ".join(str(m.get("what") or "").casefold().split())): m
            for m in doc.get("monitoring") or []
        }

    before, after = rows(old), rows(new)
    out = []
    for key, row in after.items():
        phase = PHASE_WORDS.get(key[0], key[0]).lower()
        if key not in before:
            interval = f", {row.get('interval')}" if row.get("interval") else ""
            out.append(f"Follow-up added ({phase}): {_quote(str(row.get('what')))}{interval}.")
            continue
        was = before[key]
        for name, label in (("interval", "interval"), ("anchor", "response criteria")):
            if (was.get(name) or "") != (row.get(name) or ""):
                out.append(
                    f"Follow-up {_quote(str(row.get('what')))} ({phase}): {label} changed from "
                    f"{_listed(was.get(name))} to {_listed(row.get(name))}."
                )
    for key, row in before.items():
        if key not in after:
            phase = PHASE_WORDS.get(key[0], key[0]).lower()
            out.append(f"Follow-up removed ({phase}): {_quote(str(row.get('what')))}.")
    return out


def plan_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What changed from ``old`` to ``new``, one sentence per change (empty: nothing)."""
    out = []
    old_intent = (old.get("recommendation") or {}).get("intent")
    new_intent = (new.get("recommendation") or {}).get("intent")
    if old_intent != new_intent:
        out.append(
            f"Intent changed from {old_intent or 'not stated'} to {new_intent or 'not stated'}."
        )
    pairs, removed, added = _pair(_items(old, base=True), _items(new, base=False))
    for before, after in pairs:
        if before.role != after.role:
            out.append(_moved(before, after))
            if before.key != after.key:
                out.append(f"It was {_quote(before.text)}.")
        elif before.key != after.key:
            out.append(
                f"{before.where.capitalize()} reworded: {_quote(before.text)} became "
                f"{_quote(after.text)}."
            )
        elif before.place != after.place and after.role != "rejected":
            out.append(f"{_quote(after.text)} is now {after.where} (was {before.where}).")
        out += _field_changes(before, after)
    for item in added:
        if item.role == "rejected":
            out.append(f"Ruled out: {_quote(item.text)} ({_listed(item.fields.get('reason'))}).")
        else:
            out.append(f"Added to {PLACES[item.role]} ({item.where}): {_quote(item.text)}.")
    for item in removed:
        if item.role == "rejected":
            out.append(f"No longer ruled out: {_quote(item.text)}.")
        else:
            out.append(f"Removed from {PLACES[item.role]}: {_quote(item.text)}.")
    return out + _monitoring_changes(old, new)
