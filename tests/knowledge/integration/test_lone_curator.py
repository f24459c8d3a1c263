"""The end-to-end proof of issue 26's first finding: a curator alone cannot change what the
safety gate does for any patient. A lone curator tries every path against the published
checkpoint-inhibitor / solid-organ-transplant rule; a kidney-transplant recipient's consultation
still keeps pembrolizumab out of the plan; once a second curator approves the retirement, the
same consultation does offer it (so this test can fail)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from knowledge.forms import unit_initial
from knowledge.models import ApprovalRequest, UnitVersion, VersionStatus
from tests.fixtures.seed import load_seed
from tests.paths import PUBLIC_CASES

# The engine writes from asgiref's worker thread: commit for it to see the data.
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RULE = "common.ci.ici-solid-organ-transplant"
CHECKPOINT_INHIBITORS = ("pembrolizumab", "nivolumab", "atezolizumab", "cemiplimab")


def _kidney_transplant_consultation(clinician: Any, team: Any, tag: str) -> dict[str, Any]:
    """A stage IV, PD-L1-high lung adenocarcinoma after a kidney transplant, run to its plan
    by the guideline engine over the knowledge base as it is now."""
    from consult.services.consultations import consultation_run, consultation_start
    from consult.services.dossiers import case_import, dossier_submit

    case = json.loads((PUBLIC_CASES / "pub-lung-02.json").read_text())
    case["diagnosis"]["transplant_history"] = "kidney"
    case["case_id"] = f"{case['case_id']}-{tag}"
    case["patient"]["pseudonym"] = f"{case['patient']['pseudonym']}-{tag}"
    imported = case_import(
        actor=clinician, team=team, raw=json.dumps(case).encode(), filename=f"{tag}.json"
    )
    assert imported.dossier is not None, imported.errors
    dossier_submit(actor=clinician, dossier=imported.dossier)
    consultation = consultation_start(actor=clinician, dossier=imported.dossier, enqueue=False)
    consultation_run(consultation_id=consultation.pk)
    consultation.refresh_from_db()
    return dict(consultation.plan.payload)


def _pathway_agents(plan: dict[str, Any]) -> set[str]:
    return {
        agent.casefold()
        for component in plan["recommendation"]["components"]
        if component["role"] == "primary"
        for agent in component["agents"]
    }


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _weakened_form(version: UnitVersion, **action: Any) -> dict[str, str]:
    """The unit's edit form, as the curator fills it, with the rule's action changed."""
    data = unit_initial(RULE, version.content)
    rule = json.loads(data["action"])
    rule.update(action)
    data["action"] = json.dumps(rule)
    return {name: str(value) for name, value in data.items()}


def test_a_lone_curator_cannot_switch_off_the_transplant_rule(
    client: Any, curator: Any, second_curator: Any, clinician: Any, team: Any
) -> None:
    # given the shipped knowledge base, its transplant rule published
    load_seed()
    rule = UnitVersion.objects.get(unit__key=RULE, status=VersionStatus.PUBLISHED)
    client.force_login(curator)

    # 1. retire: asked for, not done; approving one's own request is refused
    retire = reverse("knowledge:version-retire", args=[RULE, rule.number])
    client.post(retire, {"reason": "Transplant teams now accept immunotherapy"})
    request = ApprovalRequest.objects.get(kind="retire", version=rule)
    response = client.post(
        reverse("knowledge:approval-decide", args=[request.pk, "approve"]), follow=True
    )
    assert any("You asked for this change" in m for m in _messages(response))

    # 2. edit, send to review, publish it oneself: four eyes
    edit = reverse("knowledge:unit-edit", args=[RULE])
    assert client.post(edit, _weakened_form(rule, agents=["relatlimab"])).status_code == 302
    draft = UnitVersion.objects.get(unit__key=RULE, number=rule.number + 1)
    client.post(reverse("knowledge:version-submit", args=[RULE, draft.number]))
    response = client.post(
        reverse("knowledge:version-publish", args=[RULE, draft.number]), follow=True
    )
    assert any("four eyes" in m for m in _messages(response))

    # 3. hot-fix the weakening edit: refused, with what it weakens
    response = client.post(
        reverse("knowledge:version-hotfix", args=[RULE, draft.number]),
        {"reason": "Safety alert 2026-11 from the transplant society"},
        follow=True,
    )
    refusal = " ".join(_messages(response))
    assert "only add to or strengthen" in refusal
    assert "pembrolizumab" in refusal
    # and a narrower rule (liver recipients only), as a hot-fix of a fresh draft: refused too
    narrower = _weakened_form(rule)
    narrower["context"] = json.dumps(
        {"all": [{"fact": "diagnosis.transplant_history", "op": "in", "value": ["liver"]}]}
    )
    client.post(edit, narrower)
    newest = UnitVersion.objects.filter(unit__key=RULE).order_by("-number").first()
    assert newest is not None
    response = client.post(
        reverse("knowledge:version-hotfix", args=[RULE, newest.number]),
        {"reason": "Safety alert 2026-11 from the transplant society"},
        follow=True,
    )
    assert any("fewer patients" in m for m in _messages(response))

    # 4. bulk import of a bundle that drops the rule's severity to minor
    exported = client.get(reverse("knowledge:bundle-export-yaml")).content
    document = yaml.safe_load(exported)
    for unit in document["units"]:
        if unit["key"] == RULE:
            unit["action"]["severity"] = "minor"
    upload = SimpleUploadedFile("kb.yaml", yaml.safe_dump(document).encode())
    response = client.post(reverse("knowledge:bundle"), {"file": upload})
    assert response.status_code == 200
    imported = UnitVersion.objects.filter(unit__key=RULE).order_by("-number").first()
    assert imported is not None
    assert imported.status == VersionStatus.IN_REVIEW

    # 5. the Django admin offers a curator nothing
    assert client.get("/admin/knowledge/unitversion/").status_code in (302, 403, 404)

    # then the rule is live as it was, and the transplant recipient's plan has no checkpoint
    # inhibitor in its pathway
    live = UnitVersion.objects.get(unit__key=RULE, status=VersionStatus.PUBLISHED)
    assert live.pk == rule.pk
    plan = _kidney_transplant_consultation(clinician, team, "before")
    assert not _pathway_agents(plan) & set(CHECKPOINT_INHIBITORS)
    assert any("pembrolizumab" in r["option"].casefold() for r in plan["rejected_options"])

    # when a second curator approves the retirement, it takes effect: the same patient's
    # plan now leads with a checkpoint inhibitor (the rule was what kept it out)
    client.force_login(second_curator)
    client.post(reverse("knowledge:approval-decide", args=[request.pk, "approve"]))
    rule.refresh_from_db()
    assert rule.status == VersionStatus.RETIRED
    plan = _kidney_transplant_consultation(clinician, team, "after")
    assert _pathway_agents(plan) & set(CHECKPOINT_INHIBITORS)
