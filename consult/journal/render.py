"""Rendering board changes as htmx out-of-band fragments (autoescaped templates only)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.template.loader import render_to_string

from consult.journal.board import Board, apply


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


def render_events(board: Board, events: Iterable[dict[str, Any]]) -> list[tuple[int, str]]:
    """Fold each event into ``board`` (in place) and render what it changed: (seq, html)."""
    fragments = []
    for event in events:
        known_rounds = set(board.rounds)
        changed = apply(board, event)
        fragments.append((int(event["seq"]), render_changes(board, changed, event, known_rounds)))
    return fragments
