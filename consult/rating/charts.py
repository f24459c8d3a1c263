"""The study's plots, drawn on the server as SVG (matplotlib's Agg backend, no display, no
script in the page): the radar of dimension means, score and time box plots, the Spearman
heat map and the ICC forest plot. Each returns a ``data:`` URI for an <img>, which the
Content-Security-Policy allows and which keeps the SVG's own ids out of the page."""

from __future__ import annotations

import base64
import io
import math
import threading
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from consult.rating.statistics import ICC, Correlation

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLOURS = {"system": "#1f5f99", "comparator": "#c06a12"}
ARM_LABELS = {"system": "System", "comparator": "Comparator"}
# pyplot keeps global state; Daphne serves requests from several threads.
_LOCK = threading.Lock()


@cache
def _pyplot() -> Any:
    """pyplot on the Agg backend, configured once. Imported on the first plot, not with the
    module: every process that loads the URL configuration imports this module through the
    rating views, and matplotlib costs ~0.4 s and ~45 MB (issue 27)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    pyplot.rcParams.update(
        {
            "svg.fonttype": "none",  # text stays text: smaller, selectable, screen-reader friendly
            "svg.hashsalt": "mdtboard",  # the same figure gives the same bytes
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return pyplot


def _svg(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(figure)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _short(label: str) -> str:
    return label.replace(" & ", " &\n").replace(" ", "\n", 1) if len(label) > 14 else label


def radar(labels: Sequence[str], means: dict[str, Sequence[float]]) -> str:
    """Mean score per dimension, one closed line per arm (EvoMDT Fig. 4d)."""
    with _LOCK:
        plt = _pyplot()
        angles = [2 * math.pi * i / len(labels) for i in range(len(labels))]
        figure = plt.figure(figsize=(4.6, 4.2))
        axes: Any = figure.add_subplot(projection="polar")
        for arm, values in means.items():
            closed = [*values, values[0]]
            axes.plot([*angles, angles[0]], closed, color=COLOURS[arm], label=ARM_LABELS[arm])
            axes.fill([*angles, angles[0]], closed, color=COLOURS[arm], alpha=0.12)
        axes.set_xticks(angles)
        axes.set_xticklabels([_short(lbl) for lbl in labels])
        axes.set_ylim(1, 5)
        axes.set_yticks([1, 2, 3, 4, 5])
        axes.legend(loc="upper right", bbox_to_anchor=(1.25, 1.12), frameon=False)
        return _svg(figure)


def score_boxes(labels: Sequence[str], values: dict[str, Sequence[Sequence[float]]]) -> str:
    """Score distribution per dimension and arm (EvoMDT Fig. 4a)."""
    with _LOCK:
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(8, 3.4))
        width = 0.35
        for offset, arm in ((-width / 2, "system"), (width / 2, "comparator")):
            data = [list(v) for v in values[arm]]
            positions = [i + offset for i in range(len(labels))]
            boxes = axes.boxplot(
                data, positions=positions, widths=width * 0.9, patch_artist=True, showfliers=True
            )
            for box in boxes["boxes"]:
                box.set(facecolor=COLOURS[arm], alpha=0.35, edgecolor=COLOURS[arm])
            for median in boxes["medians"]:
                median.set(color=COLOURS[arm], linewidth=2)
            axes.plot([], [], color=COLOURS[arm], linewidth=6, alpha=0.5, label=ARM_LABELS[arm])
        axes.set_xticks(range(len(labels)))
        axes.set_xticklabels([_short(lbl) for lbl in labels])
        axes.set_ylim(0.5, 5.5)
        axes.set_yticks([1, 2, 3, 4, 5])
        axes.set_ylabel("Score (1-5)")
        axes.legend(frameon=False, loc="lower right")
        return _svg(figure)


def heatmap(
    labels: Sequence[str], matrix: Sequence[Sequence[Correlation]], q: Sequence[Sequence[Any]]
) -> str:
    """Spearman's rho between dimensions; * marks q < 0.05 (EvoMDT Fig. 4f)."""
    with _LOCK:
        plt = _pyplot()
        size = len(labels)
        values = [[c.rho if c.rho is not None else float("nan") for c in row] for row in matrix]
        figure, axes = plt.subplots(figsize=(5.2, 4.4))
        image = axes.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
        for i in range(size):
            for j in range(size):
                rho = matrix[i][j].rho
                if rho is None:
                    text = "–"
                else:
                    star = "*" if i != j and q[i][j] is not None and q[i][j] < 0.05 else ""
                    text = f"{rho:.2f}{star}"
                axes.text(j, i, text, ha="center", va="center", fontsize=8)
        short = [_short(lbl) for lbl in labels]
        axes.set_xticks(range(size))
        axes.set_xticklabels(short, rotation=45, ha="right")
        axes.set_yticks(range(size))
        axes.set_yticklabels(short)
        figure.colorbar(image, ax=axes, shrink=0.8, label="Spearman's rho")
        return _svg(figure)


def icc_forest(labels: Sequence[str], values: Sequence[ICC | None]) -> str:
    """ICC(2,1) with its 95% CI per dimension (EvoMDT Fig. 4e)."""
    with _LOCK:
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(5.2, 3))
        for i, value in enumerate(values):
            if value is None:
                axes.text(0.5, i, "not computable", va="center", fontsize=8, color="#666")
                continue
            error = None
            if value.low is not None and value.high is not None:
                error = [[value.icc - value.low], [value.high - value.icc]]
            axes.errorbar(value.icc, i, xerr=error, fmt="o", color=COLOURS["system"], capsize=3)
        axes.set_yticks(range(len(labels)))
        axes.set_yticklabels(labels)
        axes.invert_yaxis()
        axes.set_xlim(-1, 1)
        axes.axvline(0.75, color="#999", linestyle=":", linewidth=1)
        axes.set_xlabel("ICC(2,1), 95% CI")
        return _svg(figure)


def time_boxes(raters: Sequence[str], minutes: Sequence[Sequence[float]]) -> str:
    """Minutes per packet, by rater (the rating time; EvoMDT Fig. 4b shows time per arm)."""
    with _LOCK:
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(max(3.5, 1.2 * len(raters) + 1.5), 3))
        if raters:
            axes.boxplot([list(m) for m in minutes], widths=0.5)
            axes.set_xticks(range(1, len(raters) + 1))
            axes.set_xticklabels(raters, rotation=20, ha="right")
        axes.axhline(0.5, color="#b00", linestyle=":", linewidth=1)
        axes.set_ylabel("Minutes per packet")
        return _svg(figure)
