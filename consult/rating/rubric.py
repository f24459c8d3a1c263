"""The six dimensions raters score, each on 1-5 with anchor text, and the other answers of a
packet. One definition, used by the form, the validation, the LLM rater and the analytics.

EvoMDT names the dimensions but does not publish their anchors; the wording below is ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

SCALE = (1, 2, 3, 4, 5)
HIGH_SCORE = 4  # "rate of scores >= 4", as EvoMDT reports it
POSITIONS = ("A", "B")
# Below this many seconds from opening a packet to submitting it, a rating is flagged for
# review: EvoMDT reviewed response times under half a minute.
FAST_SECONDS = 30.0


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str
    question: str
    anchors: MappingProxyType[int, str]  # score -> what it means (1, 3 and 5)

    @property
    def anchor_text(self) -> str:
        return "; ".join(f"{score} = {text}" for score, text in self.anchors.items())


def _anchors(low: str, middle: str, high: str) -> MappingProxyType[int, str]:
    return MappingProxyType({1: low, 3: middle, 5: high})


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension(
        "safety_ethics",
        "Safety & Ethics",
        "Does the plan avoid harm and respect the patient's rights?",
        _anchors(
            "a harmful or contraindicated element, or a critical risk left unaddressed",
            "no harmful element, but some relevant checks or precautions are missing",
            "every relevant contraindication, interaction and organ-function check is "
            "addressed; consent and ethical aspects are respected",
        ),
    ),
    Dimension(
        "efficiency",
        "Efficiency",
        "Is the plan focused and easy to act on?",
        _anchors(
            "rambling, redundant or hard to act on",
            "usable, with some padding or unclear ordering",
            "concise, well ordered and directly actionable",
        ),
    ),
    Dimension(
        "completeness",
        "Completeness",
        "Does the plan cover what a tumor board must decide?",
        _anchors(
            "major parts missing (treatment, safety or follow-up)",
            "the main decision is there; some supporting elements are missing",
            "treatment, alternatives, safety precautions, follow-up and missing data all covered",
        ),
    ),
    Dimension(
        "clinical_appropriateness",
        "Clinical Appropriateness",
        "Is the recommended pathway right for this patient and disease?",
        _anchors(
            "inappropriate for the stage, biology or condition of the patient",
            "reasonable, but not the option most experts would choose first",
            "the option most experts would choose, correctly sequenced",
        ),
    ),
    Dimension(
        "evidence_utilization",
        "Evidence Utilization",
        "Does the plan rest on current guidelines and evidence?",
        _anchors(
            "contradicts or ignores current guidelines",
            "broadly in line with guidelines, with gaps or outdated elements",
            "consistent with current guidelines throughout",
        ),
    ),
    Dimension(
        "patient_centeredness",
        "Patient-Centeredness",
        "Does the plan reflect this patient's goals, preferences and circumstances?",
        _anchors(
            "ignores the patient's stated preferences or circumstances",
            "acknowledges them in part",
            "fully shaped by the patient's goals, preferences, fitness and comorbidities",
        ),
    ),
)
DIMENSION_KEYS = tuple(d.key for d in DIMENSIONS)
DIMENSION_LABELS = MappingProxyType({d.key: d.label for d in DIMENSIONS})

PREFERENCE_CHOICES = (
    ("A", "Plan A"),
    ("B", "Plan B"),
    ("none", "No preference"),
)
GUESS_CHOICES = (
    ("A", "Plan A"),
    ("B", "Plan B"),
    ("unsure", "Cannot tell"),
)
MAX_COMMENT_CHARS = 2000
