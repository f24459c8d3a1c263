"""With an LLM configured (the session's OpenAI-compatible stub, over real HTTP): an approved
prompt refinement reaches the LLM's turns of that prompt only, and a ChainKB reflection is
written by the LLM."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from consult import learning
from consult.review import services
from consult.services.consultations import consultation_run, consultation_start
from knowledge.memory.evolution import version_approve
from knowledge.memory.models import ExperienceEntry, PromptVersion
from tests.fixtures.consultations import completed, submitted
from tests.fixtures.seed import load_seed
from tests.llm_stub import StubReply

ADDENDUM = "- hcc: check the platelet count before proposing resection (test addendum)."


@pytest.mark.django_db(transaction=True)
def test_an_approved_refinement_reaches_the_llm_turns_of_its_prompt_only(
    clinician: Any, team: Any, admin_user: Any, llm_env: Any
) -> None:
    # given an approved refinement of the Treatment prompt
    load_seed()
    proposal = PromptVersion.objects.create(
        prompt="treatment", number=1, addendum=ADDENDUM, content_hash="a" * 64, rationale="test"
    )
    version_approve(actor=admin_user, version=proposal)
    systems: dict[str, str] = {}
    default = llm_env.switch.default

    def respond(request: Any) -> Any:
        systems.setdefault(request.role, request.system)
        return default(request)

    llm_env.switch.responder = respond
    # when an LLM consultation runs
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    # then Treatment's turns read it after the file's text; the other members' do not
    assert ADDENDUM in systems["treatment"]
    assert "Lessons from reviewed cases" in systems["treatment"]
    assert all(ADDENDUM not in text for role, text in systems.items() if role != "treatment")
    consultation.refresh_from_db()
    assert consultation.prompt_versions["treatment"].endswith("+m1:" + "a" * 12)


@pytest.mark.django_db
def test_the_llm_writes_the_chainkb_reflection_when_configured(
    clinician: Any, team: Any, llm_env: Any
) -> None:
    reflection = {
        "initial_hypothesis": "Resection was proposed.",
        "analysis": "The board relied on the resection unit.",
        "final_conclusion": "Resection of segment VI.",
        "error_reflection": "Portal hypertension made resection unsafe; check it first.",
    }
    asked: list[str] = []

    def respond(request: Any) -> Any:
        asked.append(request.role)
        return StubReply(content=json.dumps(reflection))

    llm_env.switch.responder = respond
    consultation = completed(clinician, team, "pub-hcc-01.json")
    review = services.review_decide(
        actor=clinician,
        consultation=consultation,
        decision="reject",
        reason_kind="clinical",
        reason="Portal hypertension",
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))
    assert asked == ["reflector"]
    assert entry.written_by.startswith("llm:")
    assert entry.error_reflection == reflection["error_reflection"]
