"""The soak's sequence check: what a watcher received against what the database holds."""

from __future__ import annotations

from benchmarks.soak import seq_check


def test_a_watcher_that_got_every_event_once_in_order_passes() -> None:
    # given a watcher that received 1..5 across two connections (resume after 3)
    report = seq_check([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    # then nothing is reported
    assert report.ok
    assert (report.missing, report.duplicated, report.out_of_order) == ([], [], 0)


def test_a_gap_a_duplicate_and_a_reordering_are_each_reported() -> None:
    # given a watcher that missed 3, got 4 twice (a resume after 3 instead of 4) and 6 before 5
    report = seq_check([1, 2, 4, 4, 6, 5], [1, 2, 3, 4, 5, 6])
    # then each fault is named
    assert not report.ok
    assert report.missing == [3]
    assert report.duplicated == [4]
    assert report.out_of_order == 1


def test_a_seq_the_database_does_not_hold_is_reported() -> None:
    # given a watcher that received a seq past the database's last
    report = seq_check([1, 2, 3], [1, 2])
    # then it is not silently accepted
    assert not report.ok
    assert report.unexpected == [3]
