"""Administrators set up a study, follow it, read its analytics and export its ratings."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from consult.rating.analytics import study_analytics
from consult.rating.llm_rater import RaterReply, study_llm_rate
from consult.rating.models import Assignment, LLMRating, Packet, Study
from consult.rating.services import assignment_open, rating_submit, study_allocation_reproduces
from consult.rating.statistics import icc_2_1
from mdtboard.audit.models import AuditEvent
from tests.consult.rating.support import (
    answers,
    finished_consultation,
    study_over,
    with_comparator,
)
from tests.fixtures.personas import make_user
from tests.llm_stub import StubReply

pytestmark = pytest.mark.django_db

CASES = ("pub-hcc-01.json", "pub-lung-02.json", "pub-breast-02.json", "pub-lymph-01.json")


@pytest.fixture
def raters(db: None) -> list[Any]:
    return [make_user("rater", f"rater{i}@hospital.test", []) for i in (1, 2, 3)]


@pytest.fixture
def consultations(clinician: Any, team: Any) -> list[Any]:
    out = []
    for name in CASES:
        consultation = finished_consultation(clinician, team, name)
        with_comparator(clinician, consultation)
        out.append(consultation)
    return out


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_admin_sets_up_a_study_from_the_form(
    any_admin: Any, consultations: list[Any], raters: list[Any]
) -> None:
    client = _client(any_admin)
    form = client.get(reverse("rating:study-create")).content.decode()
    for consultation in consultations:
        assert f'value="{consultation.pk}"' in form
    response = client.post(
        reverse("rating:study-create"),
        {
            "name": "Pilot 2026",
            "consultations": [c.pk for c in consultations],
            "raters": [r.pk for r in raters],
            "raters_per_packet": "2",
            "block_sizes": ["2", "4"],
        },
    )
    assert response.status_code == 302
    study = Study.objects.get(name="Pilot 2026")
    assert study.packets.count() == 4
    # every packet went to two raters, the loads differ by at most one
    assert all(p.assignments.count() == 2 for p in study.packets.all())
    loads = [Assignment.objects.filter(study=study, rater=r).count() for r in raters]
    assert max(loads) - min(loads) <= 1
    page = client.get(response["Location"]).content.decode()
    assert "reproduced from the seed" in page
    assert AuditEvent.objects.filter(action="study.create", object_id=str(study.pk)).exists()


def test_a_study_refuses_what_it_cannot_randomise(
    admin_user: Any, consultations: list[Any], raters: list[Any], clinician: Any, team: Any
) -> None:
    client = _client(admin_user)
    lonely = finished_consultation(clinician, team, "pub-hcc-02.json")  # no comparator
    response = client.post(
        reverse("rating:study-create"),
        {
            "name": "Too many raters",
            "consultations": [consultations[0].pk, lonely.pk],
            "raters": [raters[0].pk],
            "raters_per_packet": "3",
            "block_sizes": ["3"],
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert f"Select a valid choice. {lonely.pk} is not one of the available choices." in html
    assert not Study.objects.exists()
    response = client.post(
        reverse("rating:study-create"),
        {
            "name": "Too many raters",
            "consultations": [consultations[0].pk],
            "raters": [raters[0].pk],
            "raters_per_packet": "3",
            "block_sizes": ["2"],
        },
    )
    assert "Raters per packet must be between 1 and the number of raters (1)." in (
        response.content.decode()
    )
    assert not Study.objects.exists()


def test_a_changed_allocation_no_longer_reproduces_from_the_seed(
    admin_user: Any, consultations: list[Any], raters: list[Any]
) -> None:
    study = study_over(admin_user, consultations, raters)
    assert study_allocation_reproduces(study=study)
    packet = study.packets.first()
    assert packet is not None
    Packet.objects.filter(pk=packet.pk).update(
        system_position="B" if packet.system_position == "A" else "A"
    )
    assert not study_allocation_reproduces(study=study)


def _rate_all(study: Study, raters: list[Any], *, guess_right: bool) -> None:
    """Every rater scores every packet: the system's plan one point above the comparator on
    every dimension but efficiency, varying by packet so that raters agree but plans differ."""
    for rater in raters:
        for i, assignment in enumerate(
            Assignment.objects.filter(study=study, rater=rater).select_related("packet")
        ):
            sp = assignment.packet.system_position
            cp = "B" if sp == "A" else "A"
            base = 2 + assignment.packet.sequence % 3
            system = {"efficiency": 3} | {
                k: base + 1
                for k in (
                    "safety_ethics",
                    "completeness",
                    "clinical_appropriateness",
                    "evidence_utilization",
                    "patient_centeredness",
                )
            }
            scores = {sp: system, cp: dict.fromkeys(system, base) | {"efficiency": 3 + i % 2}}
            assignment_open(actor=rater, assignment=assignment)
            rating_submit(
                actor=rater,
                assignment=assignment,
                data=answers(
                    scores["A"],
                    scores["B"],
                    preference=sp,
                    guess=sp if guess_right else cp,
                    comment="=HYPERLINK(evil)" if i == 0 else "",
                ),
            )


def test_analytics_report_the_figures_and_plots_of_evomdt_fig_4(
    admin_user: Any, consultations: list[Any], raters: list[Any]
) -> None:
    study = study_over(admin_user, consultations, raters)
    _rate_all(study, raters, guess_right=True)
    response = _client(admin_user).get(reverse("rating:study-analytics", args=[study.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    # the counts, every dimension, the composite
    assert "12 of 12 ratings submitted (4 packets)" in html
    analytics = study_analytics(study=study, with_charts=False)
    composite = analytics.composite
    assert composite is not None
    system = composite.by_arm["system"]
    assert system is not None
    assert f"{system.mean:.2f} ({system.low:.2f}–{system.high:.2f})" in html
    # the system scored higher on safety: r is positive
    safety = analytics.comparisons[0]
    assert safety.test is not None
    assert safety.test.r > 0
    assert safety.q is not None
    # ICC(2,1) over the 8 rated plans by the 3 raters equals the statistic on that table
    assert analytics.icc_targets == 8
    assert analytics.icc[0].icc is not None
    assert analytics.icc[0].icc.icc == pytest.approx(1.0)
    assert "ICC(2,1)" in html
    # preference and a blinding that failed, said in words
    assert analytics.preference is not None
    assert analytics.preference.rate == 1.0
    assert 'id="blinding-failed"' in html
    # Kruskal-Wallis across the four cancers, BH q beside p, Spearman, response times
    assert 'id="kruskal-table"' in html
    assert 'id="spearman-table"' in html
    assert "Time to produce the plan" in html
    # the plots are SVG drawn on the server, as images (no script)
    assert html.count('src="data:image/svg+xml;base64,') == 5
    assert "<script>" not in html.split("</head>", 1)[1]


def test_blinding_kept_reads_as_such(
    admin_user: Any, consultations: list[Any], raters: list[Any]
) -> None:
    study = study_over(admin_user, consultations, raters)
    _rate_all(study, raters, guess_right=False)
    analytics = study_analytics(study=study, with_charts=False)
    assert analytics.blinding is not None
    assert analytics.blinding.index == -1.0
    assert analytics.blinding.verdict == "opposite"


def test_icc_is_computed_on_the_fully_crossed_table(
    admin_user: Any, consultations: list[Any], raters: list[Any]
) -> None:
    study = study_over(admin_user, consultations, raters)
    _rate_all(study, raters[:2], guess_right=True)
    _rate_all(study, raters[2:], guess_right=True)
    analytics = study_analytics(study=study, with_charts=False)
    # the same table by hand: rows = (packet, arm), columns = raters
    from consult.rating.analytics import study_records

    records = study_records(study=study)
    table = []
    for packet in sorted({r.packet_id for r in records}):
        for arm in ("system", "comparator"):
            row = sorted(
                (r.rater_id, r.scores[arm]["efficiency"]) for r in records if r.packet_id == packet
            )
            table.append([value for _, value in row])
    expected = icc_2_1(table)
    efficiency = next(row for row in analytics.icc if row.key == "efficiency")
    assert expected is not None
    assert efficiency.icc is not None
    assert efficiency.icc.icc == pytest.approx(expected.icc)


def test_csv_export_unblinds_the_arms_for_the_admin_only(
    admin_user: Any, consultations: list[Any], raters: list[Any]
) -> None:
    study = study_over(admin_user, consultations, raters)
    _rate_all(study, raters, guess_right=True)
    response = _client(admin_user).get(reverse("rating:study-export", args=[study.pk]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 12 * 12
    packets = {p.sequence: p for p in study.packets.all()}
    for row in rows:
        packet = packets[int(row["packet"])]
        expected = "system" if row["position"] == packet.system_position else "comparator"
        assert row["arm"] == expected
        assert row["system_guess"] == "correct"
    # a comment that a spreadsheet would run as a formula is written as text
    assert {r["comment"] for r in rows} >= {"'=HYPERLINK(evil)"}
    assert (
        _client(raters[0]).get(reverse("rating:study-export", args=[study.pk])).status_code == 403
    )


def _llm_reply(request: Any) -> StubReply:
    scores = dict.fromkeys(
        (
            "safety_ethics",
            "efficiency",
            "completeness",
            "clinical_appropriateness",
            "evidence_utilization",
            "patient_centeredness",
        ),
        4,
    )
    reply = RaterReply.model_validate(
        {
            "plan_a": scores,
            "plan_b": scores | {"safety_ethics": 2},
            "preference": "A",
            "system_guess": "unsure",
            "comment": "LLM-ONLY-REMARK",
        }
    )
    assert "PLAN A" in request.user
    assert "PLAN B" in request.user
    assert "guideline-engine" not in request.user
    assert "guideline engine" not in request.user.lower()
    return StubReply(content=json.dumps(reply.model_dump()))


@pytest.mark.slow
def test_the_llm_rater_is_a_separate_arm_physicians_never_see(
    llm_env: Any, admin_user: Any, consultations: list[Any], raters: list[Any]
) -> None:
    # given a study with the LLM arm and an LLM endpoint (the stub) that scores every packet
    llm_env.switch.responder = _llm_reply
    study = study_over(admin_user, consultations, raters, llm_arm=True)
    _rate_all(study, raters, guess_right=True)
    # when the LLM rater runs (the task's service), then every packet has its LLM rating
    run = study_llm_rate(study_id=study.pk)
    assert (run.scored, run.failed) == (4, 0)
    assert LLMRating.objects.filter(study=study).count() == 4
    # a second run scores only what is missing
    assert study_llm_rate(study_id=study.pk).scored == 0
    # and the analytics report its agreement with the physicians beside them
    html = _client(admin_user).get(reverse("rating:study-analytics", args=[study.pk])).content
    assert b'id="llm-table"' in html
    analytics = study_analytics(study=study, with_charts=False)
    assert [row.n for row in analytics.llm] == [8] * 6
    # while no rater page shows it
    assignment = Assignment.objects.filter(rater=raters[0]).first()
    assert assignment is not None
    page = _client(raters[0]).get(reverse("rating:packet", args=[assignment.pk])).content
    assert b"LLM-ONLY-REMARK" not in page
