"""Rendering board changes as htmx out-of-band fragments (autoescaped templates only)."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from consult.board import Board, apply, build_board, event_dict


def render_changes(
    board: Board,
    changed: set[str],
    event: dict[str, Any],
    known_rounds: set[int],
) -> str:
    parts: list[str] = [render_to_string("consult/board/_seq.html", {"board": board, "oob": True})]
    for what in sorted(changed):
        kind, _, key = what.partition(":")
        if kind == "status" or kind == "metrics":
            parts.append(
                render_to_string(
                    "consult/board/_status.html",
                    {"board": board, "oob": True},
                )
            )
        elif kind == "intake":
            parts.append(
                render_to_string("consult/board/_intake.html", {"board": board, "oob": True})
            )
        elif kind == "panels":
            parts.append(
                render_to_string("consult/board/_panels.html", {"board": board, "oob": True})
            )
        elif kind == "panel" and "panels" not in changed:
            parts.append(
                render_to_string(
                    "consult/board/_panel.html", {"panel": board.panels[key], "oob": True}
                )
            )
        elif kind == "round":
            number = int(key)
            section = render_to_string(
                "consult/board/_round.html",
                {"round": board.rounds[number], "oob": "true" if number in known_rounds else ""},
            )
            if number in known_rounds:
                parts.append(section)
            else:
                # An out-of-band "beforeend" inserts the wrapper's children: wrap the new round.
                parts.append(
                    f'<div hx-swap-oob="beforeend:#rounds">{section}</div>'
                    '<p id="rounds-empty" hx-swap-oob="delete"></p>'
                )
        elif kind == "conflicts":
            parts.append(
                render_to_string("consult/board/_conflicts.html", {"board": board, "oob": True})
            )
        elif kind == "gates":
            parts.append(
                render_to_string("consult/board/_gates.html", {"board": board, "oob": True})
            )
        elif kind == "node":
            node = board.nodes[key]
            item = render_to_string("consult/board/_node.html", {"node": node, "oob": ""})
            parts.append(f'<ul hx-swap-oob="beforeend:#{node.parent_dom}-children">{item}</ul>')
        elif kind == "plan":
            parts.append(
                render_to_string("consult/board/_plan_card.html", {"board": board, "oob": True})
            )
    return "\n".join(parts)


def render_event_fragments(consultation_id: int, seqs: list[int]) -> list[tuple[int, str]]:
    """Fragments for newly persisted events, from the board folded up to each of them."""
    from consult.models import ConsultationEvent

    wanted = sorted(seqs)
    events = ConsultationEvent.objects.filter(
        consultation_id=consultation_id, seq__lte=wanted[-1]
    ).order_by("seq")
    dicts = [event_dict(e) for e in events]
    board = build_board(consultation_id, [e for e in dicts if e["seq"] < wanted[0]])
    fragments = []
    for event in (e for e in dicts if e["seq"] >= wanted[0]):
        known_rounds = set(board.rounds)
        changed = apply(board, event)
        if event["seq"] in seqs:
            fragments.append((event["seq"], render_changes(board, changed, event, known_rounds)))
    return fragments
