"""Blinding: a rater's packet shows both plans in one neutral layout, and nothing that says
where either came from."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from consult.models import AgentMessage, ConsultationEvent
from consult.rating.blinding import blind_plan
from consult.rating.models import Assignment
from consult.rating.services import comparator_create
from tests.consult.rating.support import (
    COMPARATOR,
    study_over,
    with_comparator,
)
from tests.fixtures.consultations import completed, system_plan
from tests.fixtures.personas import make_user

# The board's own names for its members: present in agent traces, never in a packet.
ROLE_NAMES = (
    "Coordinator",
    "coordinator",
    "Diagnostic agent",
    "Treatment agent",
    "Safety agent",
    "Monitoring agent",
    "hepatology",
    "interventional_radiology",
    "radiation_oncology",
    "cardio_oncology",
    "cardio-oncology",
)
HEADINGS = re.compile(r"<h3>([^<]+)</h3>")


def _provenance(consultation: Any) -> set[str]:
    """Every string that would say where the system's plan came from."""
    plan = consultation.plan.payload
    strings = {
        plan["engine"],
        consultation.engine_label,
        "guideline engine",
        "guideline-engine",
        "Guideline engine",
        consultation.plan.content_hash,
        consultation.plan.content_hash[:12],
        consultation.snapshot.content_hash[:12],
        f"consultations/{consultation.pk}/",
        plan["case_id"],
        *ROLE_NAMES,
    }
    strings |= {e["unit_id"] for e in plan.get("evidence") or []}
    for component in plan["recommendation"]["components"]:
        strings |= set(component.get("evidence") or [])
    strings |= {g["unit"] for g in plan["safety"]["gates"] if g.get("unit")}
    strings |= {m for m in AgentMessage.objects.values_list("model_name", flat=True) if m}
    strings |= {r for r in AgentMessage.objects.values_list("role", flat=True) if r and "_" in r}
    timestamps = [consultation.started_at, consultation.finished_at, consultation.plan.created_at]
    strings |= {t.strftime("%Y-%m-%d %H:%M") for t in timestamps if t}
    strings |= {t.isoformat()[:19] for t in timestamps if t}
    return {s for s in strings if s}


def _packet_html(client: Client, study: Any, rater: Any) -> str:
    assignment = Assignment.objects.get(study=study, rater=rater)
    response = client.get(reverse("rating:packet", args=[assignment.pk]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_consultation_packet_names_no_engine_model_role_or_unit(
    finished: Any, clinician: Any, rater: Any, admin_user: Any
) -> None:
    # given a consultation the guideline engine ran to its plan (units cited everywhere),
    # and the team's comparator
    assert ConsultationEvent.objects.filter(consultation=finished).exists()
    with_comparator(clinician, finished)
    study = study_over(admin_user, [finished], [rater])
    client = Client()
    client.force_login(rater)
    # when the rater opens the packet
    html = _packet_html(client, study, rater)
    # then none of the strings that give the plan's source away appears in it
    leaks = sorted(s for s in _provenance(finished) if s in html)
    assert not leaks, f"the packet names its source: {leaks}"
    # and no unit id in any shape ("hcc.tx.x", "(common.gate.x)")
    assert not re.search(r"\b(?:hcc|lung|breast|lymph|common)\.[a-z]+\.[a-z0-9-]+", html)
    # while the clinical content is there: the drugs of the system's pathway reached the page
    first = finished.plan.payload["recommendation"]["components"][0]
    assert all(agent.capitalize() in html or agent in html for agent in first["agents"])


@pytest.mark.django_db
def test_both_plans_have_the_same_sections_in_the_same_order(
    clinician: Any, team: Any, rater: Any, admin_user: Any
) -> None:
    consultation = completed(clinician, team, "pub-breast-01.json")
    with_comparator(clinician, consultation)
    study = study_over(admin_user, [consultation], [rater])
    client = Client()
    client.force_login(rater)
    html = _packet_html(client, study, rater)
    a = html[html.index('id="plan-a"') : html.index('id="plan-b"')]
    b = html[html.index('id="plan-b"') : html.index('id="rating-title"')]
    assert HEADINGS.findall(a) == HEADINGS.findall(b)
    assert HEADINGS.findall(a) == list(blind_plan({}).sections)


@pytest.mark.django_db
def test_llm_and_clinician_text_is_escaped_and_scrubbed(
    clinician: Any, team: Any, rater: Any, admin_user: Any
) -> None:
    # given a system plan written by an LLM whose text carries markup, its model name,
    # a member's name and unit ids, and a comparator with markup of its own
    payload = system_plan({"cancer_type": "hcc"}) | {"engine": "llm:gpt-4.1-mini"}
    payload = {
        **payload,
        "recommendation": {
            "summary": "The Coordinator agent, gpt-4.1-mini, chose resection.",
            "intent": "curative",
            "components": [
                {
                    "role": "primary",
                    "order": 1,
                    "modality": "surgery",
                    "description": "Resection <script>alert(1)</script> (hcc.tx.resection)",
                    "evidence": ["hcc.tx.resection"],
                    "dose_adjustments": ["[carboplatin auc5 mg: 670] (common.gate.calvert)"],
                    "conditions": ["needs organ_function.lvef_pct"],
                }
            ],
        },
    }
    payload["rejected_options"] = [
        {"option": "TACE", "reason": "as the Safety agent advised (hcc.ci.tace-x)"}
    ]
    consultation = completed(clinician, team, "pub-hcc-01.json", plan=payload)
    comparator = {**COMPARATOR}
    comparator["recommendation"] = {
        **COMPARATOR["recommendation"],
        "components": [
            {**c, "conditions": ["renal function first"]} if c["role"] == "primary" else c
            for c in COMPARATOR["recommendation"]["components"]
        ],
    }
    comparator_create(
        actor=clinician,
        dossier=consultation.dossier,
        plan={**comparator, "rejected_options": [{"option": "<b>TACE</b>", "reason": "x"}]},
    )
    study = study_over(admin_user, [consultation], [rater])
    client = Client()
    client.force_login(rater)
    # when the rater opens the packet
    html = _packet_html(client, study, rater)
    # then markup is shown as text, never run or rendered
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert" in html
    assert "<b>TACE</b>" not in html
    assert "&lt;b&gt;TACE&lt;/b&gt;" in html
    # and the model, the member and the units are gone, the calculated dose kept in words
    for leak in ("gpt-4.1", "Safety agent", "Coordinator", "hcc.tx.resection", "common.gate"):
        assert leak not in html
    assert "Carboplatin dose for AUC 5: 670" in html
    assert "LVEF" in html


@pytest.mark.django_db
def test_the_comparator_json_never_reaches_a_rater_with_its_engine_key(
    clinician: Any, team: Any, admin_user: Any
) -> None:
    rater = make_user("rater", "blind@hospital.test", [])
    consultation = completed(clinician, team, "pub-lung-02.json")
    comparator = with_comparator(clinician, consultation)
    assert "engine" not in comparator.payload
    study = study_over(admin_user, [consultation], [rater])
    client = Client()
    client.force_login(rater)
    assert "human-mdt" not in _packet_html(client, study, rater)
