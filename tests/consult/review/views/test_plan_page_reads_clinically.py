"""The plan page as an oncologist reads it: the recommendation first, in clinical words, every
gate with its result, each missing fact once, only the staging of the case's cancer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from clinical.vocab import STAGING_LABELS
from consult.engine.guideline import relevant_staging
from tests.fixtures.consultations import completed
from tests.page_text import internal_names, page_text
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db


def _plan_page(client: Any, clinician: Any, team: Any, case: str) -> tuple[Any, str]:
    consultation = completed(clinician, team, case)
    client.force_login(clinician)
    response = client.get(reverse("consult:plan-detail", args=[consultation.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    main = html[html.index("<main") : html.index("</main>")]
    return consultation, page_text(main)


@pytest.mark.parametrize(
    "case", ["pub-hcc-03.json", "pub-breast-01.json", "pub-lung-01.json", "pub-lymph-01.json"]
)
def test_the_plan_page_shows_no_internal_names(
    client: Any, clinician: Any, team: Any, case: str
) -> None:
    # given the guideline engine's plan of a public case
    _, text = _plan_page(client, clinician, team, case)
    # then nothing on the page is a unit id, a case-file path or an engine key
    assert internal_names(text) == []


def test_the_recommendation_comes_first_and_each_item_says_why_it_applies(
    client: Any, clinician: Any, team: Any
) -> None:
    _, text = _plan_page(client, clinician, team, "pub-hcc-03.json")
    # the question and its answer (which names the pathway), then the pathway, alternatives
    # with when, and what was ruled out, in that order
    answer = text.index("Answer")
    text = text[text.index("Recommended pathway", answer) :]  # the end of the question's card
    order = [text.index(h) for h in ("Recommended pathway", "Alternatives", "Ruled out")]
    assert order == sorted(order)
    pathway = text[text.index("Recommended pathway") : text.index("Alternatives")]
    assert "Applies because" in pathway
    assert "BCLC stage: C ✓" in pathway
    alternatives = text[text.index("Alternatives") : text.index("Ruled out")]
    assert "When:" in alternatives
    ruled_out = text[text.index("Ruled out") : text.index("Safety gates")]
    assert "Chemoembolisation (TACE): not indicated now" in ruled_out


def test_every_gate_shows_its_result_in_words(client: Any, clinician: Any, team: Any) -> None:
    # given pub-hcc-03 (large untreated varices), whose plan fails, passes and cannot check
    # some gates
    _, text = _plan_page(client, clinician, team, "pub-hcc-03.json")
    gates = text[text.index("Safety gates") : text.index("Monitoring")]
    # then all three results are shown, failed first, each with what it did to the plan
    failed, unknown, passed = (gates.find(w) for w in ("✗ Failed", "? Not checked", "✓ Passed"))
    assert 0 <= failed < unknown < passed
    assert "Result: Waits for this; a safer option goes first." in gates
    assert "does not apply to this patient" in gates
    assert "cannot be checked for" in gates
    # (said once: the gate's own words already say it)
    assert "Result: Checked: does not apply to this patient." not in gates
    # and a field to fill in reads as its label, as the dossier names it
    assert "To check it, fill in: QTc (ms)" in gates
    assert "Qtc (ms)" not in gates


def test_missing_data_lists_each_fact_once_linked_to_the_dossier(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation, text = _plan_page(client, clinician, team, "pub-hcc-03.json")
    missing = text[text.index("Missing data") : text.index("Evidence cited")]
    # two QTc rules wait for the QTc: the fact is asked for once, naming both
    assert missing.count("QTc (ms)") == 1
    assert "borderline QTc" in missing
    assert "QTc above 500 ms" in missing
    html = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    edit = reverse("consult:dossier-edit", args=[consultation.dossier_id, "organ_function"])
    assert f'href="{edit}#id_organ_function__qtc_ms"' in html


@pytest.mark.parametrize(
    "case", ["pub-hcc-03.json", "pub-breast-01.json", "pub-lung-01.json", "pub-lymph-01.json"]
)
def test_only_the_staging_of_the_cases_cancer_is_shown(
    client: Any, clinician: Any, team: Any, case: str
) -> None:

    _, text = _plan_page(client, clinician, team, case)
    start = text.index("Question")
    question = text[start : text.index("Recommended pathway", start)]
    own = relevant_staging(json.loads((PUBLIC_CASES / case).read_text()))
    assert own, "the case's cancer has staging systems"
    for key, label in STAGING_LABELS.items():
        shown = f"{label}:" in question
        assert shown == (key in own), f"{label} shown: {shown} for {case}"


def test_a_pathway_item_that_waits_for_a_precondition_says_so(
    client: Any, clinician: Any, team: Any
) -> None:
    # given a plan whose leading item failed a gate and leads only for want of a safer one
    def waiting(plan: dict[str, Any]) -> None:
        first = plan["recommendation"]["components"][0]
        first["waits_for"] = "the large varices have been treated (hcc.ci.untreated-varices)"

    consultation = completed(clinician, team, "pub-hcc-03.json", edit=waiting)
    client.force_login(clinician)
    html = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    text = page_text(html[html.index("<main") : html.index("</main>")])
    text = text[text.index("Recommended pathway") :]  # after the question and its answer
    pathway = text[text.index("Recommended pathway") : text.index("Alternatives")]
    # then the page says what it waits for, in words, before anything else about the item
    assert "Only once: the large varices have been treated (nothing safer is on offer)" in pathway


@pytest.mark.parametrize("case", ["pub-hcc-03.json", "pub-breast-01.json", "pub-lymph-02.json"])
def test_the_answer_comes_first_and_internals_wait_in_the_audit_details(
    client: Any, clinician: Any, team: Any, case: str
) -> None:
    # given the plan page of a public case
    consultation = completed(clinician, team, case)
    client.force_login(clinician)
    html = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    main = html[html.index("<main") : html.index("</main>")]
    # then the answer is at most three sentences, and names the pathway's leading option
    answer = main[main.index('id="answer"') : main.index('id="staging"')]
    assert 1 <= answer.count('class="answer__sentence"') <= 3
    components = consultation.plan.payload["recommendation"]["components"]
    leading = next(c for c in components if c["role"] == "primary" and not c.get("adjunct"))
    assert leading["description"].split()[0].lower() in page_text(answer).lower()
    # and the clinical part of the page shows no hash, case id, raw confidence or booleans
    clinical, audit = page_text(main).split("Audit details", 1)
    assert consultation.plan.content_hash not in clinical
    assert consultation.dossier.case_id not in clinical
    assert "Confidence" not in clinical
    assert not {"True", "False", "None"} & set(clinical.replace(".", " ").split())
    # which the audit details keep, the confidence explained
    assert consultation.plan.content_hash in audit
    assert consultation.dossier.case_id in audit
    assert "not a probability of benefit" in audit


def test_gates_that_passed_fold_into_one_line_and_rules_that_do_not_apply_hide(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team, "pub-hcc-03.json")
    client.force_login(clinician)
    html = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    gates = consultation.plan.payload["safety"]["gates"]
    passed = [g for g in gates if g["status"] == "pass" and g.get("effect") != "clear"]
    clear = [g for g in gates if g["status"] == "pass" and g.get("effect") == "clear"]
    assert passed
    assert clear
    # then failed and unknown gates are open; passed ones fold behind one counted line
    shown = html[html.index('id="gates-to-read"') : html.index('id="gates-passed"')]
    assert shown.count('class="gate gate--') == len(gates) - len(passed) - len(clear)
    summary = f"{len(passed)} check{'s' if len(passed) != 1 else ''} passed"
    assert summary in page_text(html)
    # and the rules that do not concern this patient are behind their own toggle
    assert f"{len(clear)} rules do not apply to this patient" in page_text(html)
    assert '<details class="gates-more" id="gates-not-applicable">' in html
