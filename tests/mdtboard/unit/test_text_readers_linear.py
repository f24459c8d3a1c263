"""Issue 26, finding 2: every reader of untrusted free text costs time linear in its input.

The readers are one list (tests/text_readers.py); the shapes and the measure are
tests/linearity.py. `make bench` prints the worst ratio (benchmarks/textreaders.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.linearity import (
    HOSTILE_SHAPES,
    HOSTILE_TOKENS,
    TEXT_GROWTH_BOUND,
    assert_reader_linear,
    hostile_text,
    text_growth,
)
from tests.text_readers import TEXT_READERS, hostile_case

# Slow: about five minutes on a quiet two-core machine, far longer on a busy one, where one
# consultation at 100 KB with its retries may take longer than the suite's 300 s per test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

READERS = {reader.__name__: reader for reader in TEXT_READERS}


# The readers that run the whole engine (a consultation with its decisive-fact re-runs, the
# rendered plan and dossier pages) cost seconds per 100 KB: they read every shape through the
# readers measured one by one above them, so they take a third of the shapes (every third, in
# name order) to keep the suite's time bounded; every other reader takes all twenty.
_WHOLE_ENGINE = {"consultation", "dossier_page", "plan_page"}
_PAIRS = [
    (name, shape)
    for name in sorted(READERS)
    for n, shape in enumerate(sorted(HOSTILE_SHAPES))
    if name not in _WHOLE_ENGINE or n % 3 == 0
]


@pytest.mark.parametrize(("name", "shape"), _PAIRS)
def test_text_reader_is_linear_on_every_hostile_shape(name: str, shape: str) -> None:
    # given a reader of free text and 10 KB, then 100 KB, of one hostile shape
    reader = READERS[name]
    # when it reads both, then its cost grows about as the text does (10 times), not as its
    # square (100 times)
    assert_reader_linear(reader, HOSTILE_SHAPES[shape])


@pytest.mark.parametrize("name", sorted(READERS))
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(tokens=st.lists(st.sampled_from(HOSTILE_TOKENS), min_size=2, max_size=4))
def test_text_reader_is_linear_on_mixed_hostile_tokens(name: str, tokens: list[str]) -> None:
    # given a shape made of several hostile tokens ("no " "resistant to " "1" ...)
    token = "".join(tokens)
    # then every reader's cost still grows linearly
    assert_reader_linear(READERS[name], token)


def _rereads_before_each_mention(text: str) -> int:
    """The shape of the old negation reader: the text up to each mention read again."""
    return sum(text[:start].count(".") for start in range(0, len(text), 50))


def test_linearity_check_fails_a_reader_that_rereads_the_text() -> None:
    # given a reader that reads the text again before each of its mentions (quadratic)
    reader: Callable[[str], object] = _rereads_before_each_mention
    # then the check fails it
    assert text_growth(reader, "no ") > TEXT_GROWTH_BOUND
    with pytest.raises(AssertionError, match="cost grew"):
        assert_reader_linear(reader, "no ", attempts=1)


def test_hostile_case_shares_the_text_among_every_free_text_field() -> None:
    # given 11,000 characters of a hostile shape
    text = hostile_text("resistant to ", 11_000)
    # when a case is built around it, then each free-text field holds an equal share
    case = hostile_case(text)
    share = case["notes"]
    assert 500 < len(share) <= 1_000
    assert text.startswith(share)
    assert case["question"] == case["patient"]["preferences"] == share
    assert case["patient"]["comorbidities"] == [share]
    assert case["index_lesion"]["description"] == share
