"""Whether a study's blinding holds, measured rather than assumed: can a simple classifier tell
the system's plan from the human one by its length and wording, as a rater sees them?

Each plan of each packet, rendered exactly as the packet shows it (``blinding.blind_packet``),
becomes a handful of surface features: how long it is (characters, words, items, words per
item, word length), how it is written (digits, brackets, semicolons, colons and capitals per
word) and how many machine-looking tokens it keeps (arrows, ">=", field labels with units,
"not available", "e.g."). An L2-regularised logistic regression is trained with one packet
left out at a time (both of its plans, so a pair never informs its own prediction) and scores
the plans left out; the AUC of those scores says how well surface form alone gives the system
away: 0.5 is chance, 1.0 always right. Its 95% confidence interval is DeLong's (1988).

Pure numpy; no clinical content is read. A study of a few packets gives a wide interval: the
check says whether the evidence is consistent with blinding, not that blinding is perfect."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

# Tokens a program writes and a clinician rarely does.
_MACHINE = re.compile(
    r"->|=>|[<>]=|≥|≤|\bnot available\b|\bnot checked\b|\bbefore starting\b|\bneeds\b|"
    r"\([a-z%/·⁹0-9]+\)|_|\be\.g\.|\bi\.e\.|\bvs\.?\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'./%-]*")
FEATURES = (
    "log characters",
    "log words",
    "items",
    "words per item",
    "mean word length",
    "digits per word",
    "brackets per word",
    "semicolons per word",
    "colons per word",
    "capitalised words",
    "machine tokens per word",
)


def plan_features(text: str) -> list[float]:
    """The surface features of one plan as a rater reads it (one item per line)."""
    words = _WORD.findall(text)
    n = max(len(words), 1)
    lines = [line for line in text.splitlines() if line.strip()]
    items = max(len(lines), 1)
    return [
        math.log1p(len(text)),
        math.log1p(len(words)),
        float(len(lines)),
        len(words) / items,
        sum(len(w) for w in words) / n,
        sum(c.isdigit() for c in text) / n,
        (text.count("(") + text.count("[")) / n,
        text.count(";") / n,
        text.count(":") / n,
        sum(1 for w in words if w[:1].isupper()) / n,
        len(_MACHINE.findall(text)) / n,
    ]


def _fit(x: NDArray[np.float64], y: NDArray[np.float64], penalty: float) -> NDArray[np.float64]:
    """Logistic regression (intercept unpenalised) by Newton's method on standardised x."""
    design = np.hstack([np.ones((x.shape[0], 1)), x])
    weights = np.zeros(design.shape[1])
    ridge = np.full(design.shape[1], penalty)
    ridge[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-design @ weights))
        gradient = design.T @ (p - y) + ridge * weights
        hessian = (design.T * (p * (1 - p))) @ design + np.diag(ridge) + 1e-9 * np.eye(len(ridge))
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return weights


def _scores(
    x: NDArray[np.float64], y: NDArray[np.float64], groups: Sequence[int], penalty: float
) -> NDArray[np.float64]:
    """Each sample's score from a model trained without its group."""
    scores = np.zeros(len(y))
    group_ids = np.asarray(groups)
    for group in sorted(set(groups)):
        held = group_ids == group
        train_x, train_y = x[~held], y[~held]
        if len(set(train_y.tolist())) < 2:
            scores[held] = 0.5
            continue
        mean, std = train_x.mean(axis=0), train_x.std(axis=0)
        std[std == 0] = 1.0
        weights = _fit((train_x - mean) / std, train_y, penalty)
        design = np.hstack([np.ones((int(held.sum()), 1)), (x[held] - mean) / std])
        scores[held] = 1.0 / (1.0 + np.exp(-design @ weights))
    return scores


@dataclass(frozen=True)
class BlindingCheck:
    auc: float
    low: float
    high: float
    positives: int  # system plans
    negatives: int  # comparator plans

    @property
    def consistent_with_blinding(self) -> bool:
        return self.low <= 0.5 <= self.high

    def line(self) -> str:
        return f"AUC {self.auc:.2f} (95% CI {self.low:.2f}-{self.high:.2f})"


def _delong(positive: NDArray[np.float64], negative: NDArray[np.float64]) -> tuple[float, float]:
    """The AUC and its variance by DeLong, DeLong & Clarke-Pearson (Biometrics 1988)."""
    psi = (positive[:, None] > negative[None, :]) + 0.5 * (positive[:, None] == negative[None, :])
    auc = float(psi.mean())
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    m, n = len(positive), len(negative)
    s10 = float(np.var(v10, ddof=1)) if m > 1 else 0.0
    s01 = float(np.var(v01, ddof=1)) if n > 1 else 0.0
    return auc, s10 / m + s01 / n


def blinding_check(
    texts: Sequence[str], is_system: Sequence[bool], groups: Sequence[int], *, penalty: float = 1.0
) -> BlindingCheck | None:
    """Leave-one-packet-out AUC of a classifier on surface features; None without both arms
    in at least two packets."""
    labels = np.array([1.0 if s else 0.0 for s in is_system])
    if len(set(groups)) < 2 or labels.sum() == 0 or labels.sum() == len(labels):
        return None
    x = np.array([plan_features(t) for t in texts], dtype=float)
    scores = _scores(x, labels, groups, penalty)
    auc, variance = _delong(scores[labels == 1], scores[labels == 0])
    half = 1.959963984540054 * math.sqrt(max(variance, 0.0))
    return BlindingCheck(
        auc,
        max(0.0, auc - half),
        min(1.0, auc + half),
        int(labels.sum()),
        int(len(labels) - labels.sum()),
    )
