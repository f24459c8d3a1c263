"""The review as a state machine (docs/review-states.md): one ``PlanReview`` per consultation,
reopenings with their reason, one decision per review cycle, and the kind of a rejection's
reason. Existing records migrate as they stand: a consultation whose decision changed before
reopening needed a reason gets one cycle per decision and a reopening between them saying so,
and its review stage is read from its decisions, meeting and sign-off."""

import uuid
from typing import Any

import django.db.models.deletion
import django_fsm
from django.conf import settings
from django.db import migrations, models

from mdtboard.core.dbtriggers import append_only

MIGRATED = (
    "The decision was changed before reopening needed a reason; this reopening was recorded "
    "when the review became a state machine."
)
# Every move of PlanReview.stage the state machine allows: (from, to, how the cycle changes).
# tests/consult/review/integration/test_review_state_machine.py checks it against the model.
TRANSITIONS = (
    ("awaiting_review", "accepted", 0),
    ("awaiting_review", "amended", 0),
    ("awaiting_review", "rejected", 0),
    ("accepted", "meeting_recorded", 0),
    ("amended", "meeting_recorded", 0),
    ("rejected", "meeting_recorded", 0),
    ("meeting_recorded", "meeting_recorded", 0),
    ("meeting_recorded", "signed_off", 0),
    ("accepted", "awaiting_review", 1),
    ("amended", "awaiting_review", 1),
    ("rejected", "awaiting_review", 1),
    ("meeting_recorded", "awaiting_review", 1),
)
_PAIRS = ", ".join(f"('{a}', '{b}', {step})" for a, b, step in TRANSITIONS)
FORWARD_ONLY = f"""
CREATE OR REPLACE FUNCTION review_planreview_forward_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'a review stage is never deleted' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.consultation_id <> OLD.consultation_id THEN
        RAISE EXCEPTION 'a review stays with its consultation'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.stage = 'signed_off' THEN
        RAISE EXCEPTION 'a signed-off review does not change' USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.stage = OLD.stage AND NEW.cycle = OLD.cycle THEN
        RETURN NEW;
    END IF;
    IF (OLD.stage, NEW.stage, NEW.cycle - OLD.cycle) NOT IN ({_PAIRS}) THEN
        RAISE EXCEPTION 'review stage % -> % (cycle % -> %) is not a transition of the review',
            OLD.stage, NEW.stage, OLD.cycle, NEW.cycle USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER review_planreview_forward_only
    BEFORE UPDATE OR DELETE ON review_planreview
    FOR EACH ROW EXECUTE FUNCTION review_planreview_forward_only();
"""
FORWARD_ONLY_REVERSE = """
DROP TRIGGER IF EXISTS review_planreview_forward_only ON review_planreview;
DROP FUNCTION IF EXISTS review_planreview_forward_only();
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    review_model = apps.get_model("review", "ClinicianReview")
    reopen_model = apps.get_model("review", "ReviewReopen")
    plan_review = apps.get_model("review", "PlanReview")
    plan_model = apps.get_model("consult", "Plan")
    meeting_model = apps.get_model("review", "MdtMeeting")
    sign_off_model = apps.get_model("review", "SignOff")
    by_consultation: dict[int, list[Any]] = {}
    for review in review_model.objects.order_by("created_at", "id"):
        by_consultation.setdefault(review.consultation_id, []).append(review)
    changed = {cid: rows for cid, rows in by_consultation.items() if len(rows) > 1}
    if changed:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE review_clinicianreview "
                "DISABLE TRIGGER review_clinicianreview_append_only"
            )
        for cid, rows in changed.items():
            for cycle, review in enumerate(rows):
                if cycle:
                    review_model.objects.filter(pk=review.pk).update(cycle=cycle)
                    reopen = reopen_model.objects.create(
                        consultation_id=cid,
                        cycle=cycle - 1,
                        reason=MIGRATED,
                        reopened_by_id=review.reviewer_id,
                        idempotency_key=uuid.uuid4(),
                    )
                    reopen_model.objects.filter(pk=reopen.pk).update(created_at=review.created_at)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE review_clinicianreview "
                "ENABLE TRIGGER review_clinicianreview_append_only"
            )
    meetings = {m.consultation_id: m for m in meeting_model.objects.all()}
    signed = set(sign_off_model.objects.values_list("consultation_id", flat=True))
    stages = {"accept": "accepted", "amend": "amended", "reject": "rejected"}
    for cid in plan_model.objects.values_list("consultation_id", flat=True):
        rows = by_consultation.get(cid, [])
        decision = rows[-1] if rows else None
        meeting = meetings.get(cid)
        if cid in signed:
            stage = "signed_off"
        elif decision is None:
            stage = "awaiting_review"
        elif meeting is not None and meeting.updated_at >= decision.created_at:
            stage = "meeting_recorded"
        else:
            stage = stages[decision.decision]
        plan_review.objects.create(consultation_id=cid, stage=stage, cycle=max(len(rows) - 1, 0))


class Migration(migrations.Migration):
    dependencies = [
        ("consult", "0004_plan_append_only"),
        ("review", "0002_append_only"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="PlanReview",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "stage",
                    django_fsm.FSMField(
                        choices=[
                            ("awaiting_review", "Awaiting review"),
                            ("accepted", "Accepted"),
                            ("amended", "Amended"),
                            ("rejected", "Rejected"),
                            ("meeting_recorded", "Meeting recorded"),
                            ("signed_off", "Signed off"),
                        ],
                        default="awaiting_review",
                        max_length=20,
                        protected=True,
                    ),
                ),
                ("cycle", models.PositiveSmallIntegerField(default=0)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            bases=(django_fsm.FSMModelMixin, models.Model),
        ),
        migrations.CreateModel(
            name="ReviewReopen",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("cycle", models.PositiveSmallIntegerField()),
                ("reason", models.TextField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("idempotency_key", models.UUIDField(unique=True)),
            ],
            options={
                "ordering": ["consultation", "cycle"],
            },
        ),
        migrations.AddField(
            model_name="clinicianreview",
            name="cycle",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="clinicianreview",
            name="reason_kind",
            field=models.CharField(
                blank=True,
                choices=[
                    ("clinical", "Clinical"),
                    (
                        "administrative",
                        "Administrative (duplicate, wrong patient, entered in error)",
                    ),
                ],
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="planreview",
            name="consultation",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="plan_review",
                to="consult.consultation",
            ),
        ),
        migrations.AddField(
            model_name="reviewreopen",
            name="consultation",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="review_reopenings",
                to="consult.consultation",
            ),
        ),
        migrations.AddField(
            model_name="reviewreopen",
            name="reopened_by",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddConstraint(
            model_name="planreview",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "stage__in",
                        [
                            "awaiting_review",
                            "accepted",
                            "amended",
                            "rejected",
                            "meeting_recorded",
                            "signed_off",
                        ],
                    )
                ),
                name="plan_review_known_stage",
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewreopen",
            constraint=models.UniqueConstraint(
                fields=("consultation", "cycle"), name="one_reopen_per_cycle"
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewreopen",
            constraint=models.CheckConstraint(
                condition=models.Q(("reason", ""), _negated=True), name="reopen_has_a_reason"
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="clinicianreview",
            constraint=models.UniqueConstraint(
                fields=("consultation", "cycle"), name="one_decision_per_review_cycle"
            ),
        ),
        append_only("review_reviewreopen"),
        migrations.RunSQL(FORWARD_ONLY, reverse_sql=FORWARD_ONLY_REVERSE),
    ]
