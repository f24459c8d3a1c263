"""Governed evolution, as an administrator meets it: after several corrected cases the system
proposes a change; nothing changes until it is approved; the next consultation uses (and
records) the approved version; a rollback restores the previous one."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from consult import learning
from consult.engine import prompting
from consult.review import services
from consult.review.selectors import review_state_get
from consult.review.services import ComponentEdit
from consult.services.consultations import consultation_start, engine_config
from knowledge.memory.evolution import (
    EvolutionError,
    evolution_propose,
    version_approve,
    version_rollback,
)
from knowledge.memory.models import PromptVersion, VersionStatus, WeightVersion
from knowledge.memory.selectors import versions_in_force
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import completed, submitted

pytestmark = pytest.mark.django_db

REASONS = (
    "Resection unsafe: clinically significant portal hypertension",
    "Not a surgical candidate: platelets too low and bleeding risk",
    "Hepatic reserve too poor for resection after counselling",
)


def _reviewer(clinician: Any, team: Any) -> Any:
    """The clinician, or a colleague every other time: a pattern needs two reviewers."""
    from consult.review.models import PlanVersion
    from mdtboard.accounts.models import User
    from tests.fixtures.personas import make_user

    if PlanVersion.objects.count() % 2 == 0:
        return clinician
    other = User.objects.filter(email="second@hospital.test").first()
    return other or make_user("clinician", "second@hospital.test", [team])


def _correct(clinician: Any, team: Any, reason: str, *, reviewer: Any = None) -> int:
    """A board plan whose first pathway item the team replaced by ablation, for a reason
    (by the clinician and a colleague in turn, unless ``reviewer`` is given)."""
    actor = reviewer or _reviewer(clinician, team)
    consultation = completed(clinician, team, "pub-hcc-01.json", copy_of=uuid.uuid4().hex[:8])
    components = review_state_get(consultation=consultation).current.payload["recommendation"][
        "components"
    ]
    edits = [
        ComponentEdit(
            source=i,
            role=c["role"],
            position=c.get("order") if c["role"] == "primary" else c.get("rank"),
            modality="ablation" if i == 0 else c["modality"],
            description="Percutaneous microwave ablation" if i == 0 else c["description"],
            agents=[] if i == 0 else list(c.get("agents") or []),
            dose_adjustments=list(c.get("dose_adjustments") or []),
            when=c.get("when") or "",
        )
        for i, c in enumerate(components)
    ]
    version = services.plan_amend(
        actor=actor,
        consultation=consultation,
        edits=edits,
        reason=reason,
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )
    review = version.consultation.reviews.get(decision="amend")
    entry = learning.experience_from_review(review_id=review.pk)
    assert entry is not None
    return entry


def _three_corrections(clinician: Any, team: Any) -> list[int]:
    return [_correct(clinician, team, reason) for reason in REASONS]


def test_two_corrections_propose_nothing_three_propose_a_prompt_and_a_weight_step(
    clinician: Any, team: Any
) -> None:
    # given two corrected cases: below the threshold
    _correct(clinician, team, REASONS[0])
    _correct(clinician, team, REASONS[1])
    assert not PromptVersion.objects.exists()
    assert not WeightVersion.objects.exists()
    # when a third case shares the pattern (its entry is recorded, and patterns looked for)
    _correct(clinician, team, REASONS[2])
    made = [*PromptVersion.objects.all(), *WeightVersion.objects.all()]
    # then a refinement of the Treatment prompt naming the cases and their reasons, and one
    # step of Safety's weight, are proposed
    prompts = [p for p in made if isinstance(p, PromptVersion)]
    weights = [w for w in made if isinstance(w, WeightVersion)]
    assert [p.prompt for p in prompts] == ["treatment"]
    assert "“Resection unsafe: clinically significant portal hypertension”" in (
        prompts[0].rationale
    )
    assert "3 reviewed cases" in prompts[0].addendum
    assert "judged by 2 people" in prompts[0].rationale
    assert [w.offsets for w in weights] == [{"safety": 0.1}]
    assert {p.status for p in made} == {VersionStatus.PROPOSED}
    # and looking again proposes nothing new from the same cases
    assert evolution_propose() == []


def test_a_proposal_does_nothing_until_approved(clinician: Any, team: Any, admin_user: Any) -> None:
    # given pending proposals
    _three_corrections(clinician, team)
    assert PromptVersion.objects.filter(status="proposed").exists()
    # then what a consultation starting now uses is still the files and the engine's weights
    assert versions_in_force() == {"prompts": {}, "weights": {"label": "", "offsets": {}}}
    consultation = consultation_start(
        actor=clinician, dossier=submitted(clinician, team, "pub-hcc-02.json"), enqueue=False
    )
    assert consultation.prompt_versions == prompting.versions()
    assert consultation.config["weight_version"] == ""
    assert engine_config(consultation.config).weight_offsets == {}


def test_admin_approves_in_the_browser_and_the_next_consultation_records_the_new_versions(
    clinician: Any, team: Any, admin_user: Any
) -> None:
    # given three corrected cases and the proposals they led to
    _three_corrections(clinician, team)
    browser = Client()
    browser.force_login(admin_user)
    home = browser.get(reverse("memory:home")).content.decode()
    assert "2 proposals drawn from corrected cases wait for your decision" in home
    page = browser.get(reverse("memory:evolution")).content.decode()
    prompt = PromptVersion.objects.get(status="proposed")
    weights = WeightVersion.objects.get(status="proposed")
    assert f'id="prompt-version-{prompt.pk}"' in page
    assert "Resection unsafe" in page
    # when the administrator approves both
    for kind, version in (("prompt", prompt), ("weights", weights)):
        response = browser.post(
            reverse("memory:version-decide", args=[kind, version.pk, "approve"]),
            {"note": "Reviewed with the HPB team"},
        )
        assert response.status_code == 302
    # then the next consultation uses them and records which versions it used
    consultation = consultation_start(
        actor=clinician, dossier=submitted(clinician, team, "pub-hcc-02.json"), enqueue=False
    )
    prompt.refresh_from_db()
    assert consultation.prompt_versions["treatment"].endswith(f"+{prompt.label}")
    assert consultation.prompt_versions["safety"] == prompting.versions()["safety"]
    assert consultation.config["prompt_addenda"] == {"treatment": prompt.addendum}
    assert consultation.config["weight_version"] == "w1"
    assert engine_config(consultation.config).weight_offsets == {"safety": 0.1}
    # and the LLM's Treatment turns read the refinement after the file's text
    system = prompting.system_prompt(
        "treatment", "treatment", consultation.config["prompt_addenda"]
    )
    assert system.index(prompting.load("treatment")) < system.index(prompting.ADDENDUM_HEADING)
    assert prompt.addendum in system
    assert AuditEvent.objects.filter(action="evolution.approve", actor=admin_user).count() == 2


def test_rollback_restores_the_previous_version(clinician: Any, team: Any, admin_user: Any) -> None:
    # given weight version w1 approved, then a later w2 approved over it
    _three_corrections(clinician, team)
    first = version_approve(actor=admin_user, version=WeightVersion.objects.get(status="proposed"))
    for reason in REASONS:
        _correct(clinician, team, reason + " (second series)")
    second = WeightVersion.objects.get(status="proposed")
    assert second.offsets == {"safety": 0.2}
    version_approve(actor=admin_user, version=second)
    assert versions_in_force()["weights"] == {"label": "w2", "offsets": {"safety": 0.2}}
    # when w2 is rolled back
    restored = version_rollback(actor=admin_user, version=second)
    # then w1 is in force again, and a consultation starting now records it
    assert restored is not None
    assert restored.pk == first.pk
    assert versions_in_force()["weights"] == {"label": "w1", "offsets": {"safety": 0.1}}
    second.refresh_from_db()
    assert second.status == VersionStatus.ROLLED_BACK
    consultation = consultation_start(
        actor=clinician, dossier=submitted(clinician, team, "pub-hcc-02.json"), enqueue=False
    )
    assert consultation.config["weight_version"] == "w1"
    # and rolling back the first returns to the engine's own weights
    assert version_rollback(actor=admin_user, version=restored) is None
    assert versions_in_force()["weights"] == {"label": "", "offsets": {}}


def test_the_weight_step_stops_at_its_cap(clinician: Any, team: Any, admin_user: Any) -> None:
    for series in range(4):
        for reason in REASONS:
            _correct(clinician, team, f"{reason} ({series})")
        made = list(WeightVersion.objects.filter(status="proposed"))
        if series < 3:
            version_approve(actor=admin_user, version=made[0])
        else:
            assert made == []  # +0.3 is the cap: no fourth step
    assert versions_in_force()["weights"]["offsets"] == {"safety": 0.3}


def test_only_an_admin_decides(clinician: Any, team: Any, curator: Any) -> None:
    _three_corrections(clinician, team)
    proposal = PromptVersion.objects.get(status="proposed")
    with pytest.raises(EvolutionError):
        version_approve(actor=curator, version=proposal)
    proposal.refresh_from_db()
    assert proposal.status == VersionStatus.PROPOSED


def test_one_proposal_waits_at_a_time_and_the_next_keeps_the_approved_lesson(
    clinician: Any, team: Any, admin_user: Any
) -> None:
    # given a pending refinement of the Treatment prompt
    _three_corrections(clinician, team)
    first = PromptVersion.objects.get(status="proposed")
    # when three more cases are corrected the same way before anyone decides
    for reason in REASONS:
        _correct(clinician, team, reason + " (again)")
    # then still one proposal waits
    assert PromptVersion.objects.filter(status="proposed").count() == 1
    # and once the first is approved, the next is drawn on top of it
    version_approve(actor=admin_user, version=first)
    evolution_propose()
    second = PromptVersion.objects.get(status="proposed")
    assert second.number == 2
    assert second.addendum.startswith(first.addendum)
    assert second.addendum.count("reviewed cases") == 2


def test_a_pattern_needs_two_reviewers_and_three_distinct_cases(clinician: Any, team: Any) -> None:
    from knowledge.memory.models import ExperienceEntry

    # three corrections by one clinician: one person's view, not a pattern
    for reason in REASONS:
        _correct(clinician, team, reason, reviewer=clinician)
    assert not PromptVersion.objects.exists()
    assert not WeightVersion.objects.exists()
    # three judgements of one case by three people are not a pattern either
    ExperienceEntry.objects.all().delete()
    for person in range(3):
        ExperienceEntry.objects.create(
            kind="chain",
            source="rating_poor",
            source_ref=f"rating:{900 + person}",
            case_ref=77,
            judged_by_ref=1000 + person,
            cancer_type="hcc",
            case_summary="hcc; BCLC A",
            plan="Pathway: ablation.",
            error_reflection="A rater scored the board's plan poorly. Reason: unsafe.",
            signals={"removed": ["surgery"], "safety": True, "reason": "unsafe"},
        )
    assert evolution_propose() == []


def test_proposals_state_their_evidence_in_clean_correctly_spelt_sentences(
    clinician: Any, team: Any
) -> None:
    from spellchecker import SpellChecker

    from knowledge.memory.models import ExperienceEntry

    # given proposals drawn from three corrections (their reasons end with a full stop, as
    # clinicians write them: the sentences around them must not double it)
    for reason in REASONS:
        _correct(clinician, team, reason + ".")
    prompt = PromptVersion.objects.get()
    weights = WeightVersion.objects.get()
    reflections = [e.error_reflection for e in ExperienceEntry.objects.all()]
    texts = [prompt.rationale, prompt.addendum, weights.rationale, *reflections]
    # then no doubled or clashing punctuation
    for text in texts:
        for clash in ("..", ".;", ";.", ",.", " .", " ,", ";;", "..;"):
            assert clash not in text.replace("…", ""), (clash, text)
    # and every word of the proposals is English, the clinicians' own words, or a label
    allowed = {w.lower() for w in re.findall(r"[A-Za-z]+", " ".join(REASONS))} | {
        "chainkb",
        "hepatocellular",
    }
    checker = SpellChecker()
    for text in (prompt.rationale, prompt.addendum, weights.rationale):
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)} - allowed
        unknown = checker.unknown(words)
        assert not unknown, (unknown, text)
