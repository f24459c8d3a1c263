"""Issue 25: an amendment edits every part of a plan (pathway, alternatives with when, options
ruled out, intent, preconditions, follow-up) into a new version, says what moved, and a version
that contradicts itself is refused with every reason, nothing saved."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from consult.review import services
from consult.review.models import ClinicianReview, PlanVersion
from consult.review.services import ComponentEdit, MonitoringEdit, ReviewError
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def edits_of(payload: dict[str, Any]) -> list[ComponentEdit]:
    """Every item of a plan as the amend form sends it back unchanged."""
    edits = []
    for index, c in enumerate(payload["recommendation"]["components"]):
        edits.append(
            ComponentEdit(
                source=index,
                role=c["role"],
                position=c.get("order") if c["role"] == "primary" else c.get("rank"),
                modality=c["modality"],
                description=c["description"],
                agents=list(c.get("agents") or []),
                dose_adjustments=list(c.get("dose_adjustments") or []),
                conditions=list(c.get("conditions") or []),
                when=c.get("when") or "",
            )
        )
    for index, r in enumerate(payload.get("rejected_options") or []):
        edits.append(
            ComponentEdit(
                source=None,
                ruled_out_source=index,
                role="rejected",
                position=None,
                modality="",
                description=r["option"],
                agents=[],
                dose_adjustments=[],
                when="",
                reason=r["reason"],
            )
        )
    return edits


def follow_up_of(payload: dict[str, Any]) -> list[MonitoringEdit]:
    return [
        MonitoringEdit(i, m["phase"], m["what"], m.get("interval") or "", m.get("anchor") or "")
        for i, m in enumerate(payload.get("monitoring") or [])
    ]


def _amend(consultation: Any, actor: Any, edits: list[ComponentEdit], **more: Any) -> Any:
    return services.plan_amend(
        actor=actor,
        consultation=consultation,
        edits=edits,
        reason=more.pop("reason", "Tumour board of 20 November"),
        idempotency_key=uuid.uuid4(),
        base_version=1,
        with_ruled_out=True,
        **more,
    )


def test_an_amendment_moves_a_ruled_out_option_into_the_pathway_and_changes_the_intent(
    clinician: Any, team: Any
) -> None:
    # given the board's palliative chemoembolisation plan, thermal ablation ruled out
    consultation = completed(clinician, team, "pub-hcc-02.json")
    board = consultation.plan.payload
    assert board["recommendation"]["intent"] == "palliative"
    edits = edits_of(board)
    ablation = next(e for e in edits if e.role == "rejected" and "ablation" in e.description)
    # when the MDT moves ablation after TACE, makes the plan curative and adds a follow-up
    moved = ComponentEdit(
        **{
            **ablation.__dict__,
            "role": "primary",
            "position": 2,
            "modality": "ablation",
            "description": "Microwave ablation of the residual nodule after TACE",
        }
    )
    edits[edits.index(ablation)] = moved
    follow_up = [
        *follow_up_of(board),
        MonitoringEdit(None, "acute_0_3m", "Liver MRI after ablation", "at 4 weeks", "mRECIST"),
    ]
    version = _amend(
        consultation,
        clinician,
        edits,
        intent="curative",
        monitoring=follow_up,
        reason="Combined TACE and ablation for the two nodules",
    )
    # then version 2 carries every change, and version 1 is as it was
    payload = version.payload
    recommendation = payload["recommendation"]
    assert recommendation["intent"] == "curative"
    pathway = [c["description"] for c in recommendation["components"] if c["role"] == "primary"]
    assert pathway[1] == "Microwave ablation of the residual nodule after TACE"
    ruled_out = [r["option"] for r in payload["rejected_options"]]
    assert not any("ablation" in o.lower() for o in ruled_out)
    assert len(ruled_out) == len(board["rejected_options"]) - 1
    # the options left ruled out keep the board's reasons
    kept = {r["option"]: r["reason"] for r in board["rejected_options"]}
    assert all(r["reason"] == kept[r["option"]] for r in payload["rejected_options"])
    assert payload["monitoring"][-1]["what"] == "Liver MRI after ablation" or any(
        m["what"] == "Liver MRI after ablation" for m in payload["monitoring"]
    )
    consultation.plan.refresh_from_db()
    assert consultation.plan.payload["recommendation"]["intent"] == "palliative"
    # and the changes list says what moved, in sentences
    changes = payload["amendment"]["changes"]
    assert "Intent changed from palliative to curative." in changes
    assert any(
        "moved from the options ruled out to the recommended pathway (step 2 of the pathway)" in c
        for c in changes
    ), changes
    assert any(c.startswith("Follow-up added (acute (0–3 months))") for c in changes), changes
    # the item the MDT added or changed is marked as not checked by the gate
    unchecked = [g for g in payload["safety"]["gates"] if g["gate"] == "amendment_not_rechecked"]
    assert unchecked[0]["applies_to"] == ["Microwave ablation of the residual nodule after TACE"]


def test_a_version_that_recommends_what_it_rules_out_is_refused_with_the_reasons(
    clinician: Any, team: Any
) -> None:
    # given the board's palliative plan for BCLC C, liver resection ruled out
    consultation = completed(clinician, team, "pub-hcc-03.json")
    board = consultation.plan.payload
    edits = edits_of(board)
    # when the MDT writes a laparoscopic resection as step 1 and changes nothing else
    edits[0] = ComponentEdit(
        **{
            **edits[0].__dict__,
            "modality": "surgery",
            "description": "Laparoscopic resection of the segment VI lesion",
            "agents": [],
        }
    )
    with pytest.raises(ReviewError) as refused:
        _amend(consultation, clinician, edits)
    # then nothing is saved, and the clinician reads both contradictions
    errors = " ".join(refused.value.errors)
    assert "rules out “Liver resection”" in errors
    assert "The intent is palliative" in errors
    assert not PlanVersion.objects.exists()
    assert not ClinicianReview.objects.exists()
    # with the option no longer ruled out and the intent made curative, it is saved
    edits = [e for e in edits if not (e.role == "rejected" and e.description == "Liver resection")]
    version = _amend(consultation, clinician, edits, intent="curative")
    assert version.number == 2


def test_accepting_a_plan_that_contradicts_itself_is_refused(clinician: Any, team: Any) -> None:
    # given a plan whose alternative gives a drug the plan rules out
    def contradict(plan: dict[str, Any]) -> None:
        plan["rejected_options"].append({"option": "Sorafenib", "reason": "Child-Pugh B"})

    consultation = completed(clinician, team, "pub-hcc-03.json", edit=contradict)
    with pytest.raises(ReviewError, match="contradicts itself") as refused:
        services.review_decide(
            actor=clinician,
            consultation=consultation,
            decision="accept",
            reason="",
            idempotency_key=uuid.uuid4(),
            base_version=1,
        )
    assert "Sorafenib" in refused.value.errors[0]
    assert not ClinicianReview.objects.exists()
