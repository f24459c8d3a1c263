"""Every route of the URL conf, with every role, against the permission table.

The table (tests/mdtboard/permissions.py) says who may do what; this module walks the real
URL conf, so a route added without a row, or a row left behind by a removed route, fails."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.exceptions import Resolver404

from mdtboard.core.caching import PATIENT_DATA_NAMESPACES
from tests.mdtboard.permissions import (
    ALLOW,
    DENY,
    HIDDEN,
    LOGIN,
    METHODS,
    ROLES,
    SKIPPED,
    TABLE,
    UNLISTED_METHOD,
)

pytestmark = pytest.mark.django_db


# --- the URL conf, walked -----------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    name: str  # "namespace:name", as reverse() takes it
    path: str  # the pattern, for messages


def _skip_key(resolver: URLResolver) -> str | None:
    """The SKIPPED entry that covers an include, by its namespace or its module's name."""
    module = getattr(resolver.urlconf_name, "__name__", resolver.urlconf_name)
    for key in (resolver.namespace, module if isinstance(module, str) else None):
        if key and key in SKIPPED:
            return key
    return None


def project_routes() -> tuple[list[Route], dict[str, list[str]]]:
    """Every route of the URL conf (named or not), and the routes each SKIPPED entry skips
    (a route with a row of its own, like admin:index, is checked all the same)."""
    routes: list[Route] = []
    skipped: dict[str, list[str]] = {}

    def walk(patterns: list[Any], prefix: str, namespaces: list[str], skip: str | None) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                inner = [*namespaces, pattern.namespace] if pattern.namespace else namespaces
                walk(pattern.url_patterns, route, inner, skip or _skip_key(pattern))
            elif isinstance(pattern, URLPattern):
                name = ":".join([*namespaces, pattern.name or f"<unnamed {route}>"])
                if skip is not None and name not in TABLE:
                    skipped.setdefault(skip, []).append(name)
                else:
                    routes.append(Route(name, "/" + route))

    walk(get_resolver().url_patterns, "", [], None)
    return routes, skipped


def test_every_route_of_the_url_conf_has_a_row_in_the_permission_table() -> None:
    routes, skipped = project_routes()
    # An unnamed route cannot be reversed: it needs a name, then a row.
    missing = sorted(f"{r.name} ({r.path})" for r in routes if r.name not in TABLE)
    assert not missing, f"add it to the permission table (tests/mdtboard/permissions.py): {missing}"
    # Each skip still covers something (allauth's pages, the admin's insides), and only that.
    assert set(skipped) == set(SKIPPED)
    assert "account_login" in skipped["allauth.urls"]
    assert all(name.startswith("admin:") for name in skipped["admin"])
    assert "admin:index" not in skipped["admin"], "the admin's front door keeps its row"


def test_every_row_of_the_permission_table_is_a_route() -> None:
    names = {route.name for route in project_routes()[0]}
    stale = sorted(set(TABLE) - names)
    assert not stale, f"these rows name no route any more; remove them: {stale}"


def test_every_row_gives_an_outcome_for_each_role() -> None:
    for name, row in TABLE.items():
        for method, outcomes in row.items():
            assert method in METHODS, (name, method)
            assert len(outcomes) == len(ROLES), (name, method)
            assert set(outcomes) <= {ALLOW, LOGIN, DENY, HIDDEN}, (name, method)


# --- the world every request runs against --------------------------------------------------------
@dataclass
class World:
    users: dict[str, Any]
    dossier: Any
    consultation: Any
    unit_key: str
    unit_number: int
    published_version_id: int
    source_key: str
    comparator_id: int
    study_id: int
    assignment_id: int
    report_id: int
    entry_id: int
    prompt_version_id: int
    approval_id: int


class _NoModel:
    """Stands in for the embedding model during the one run: these units carry no
    embeddings, so dense retrieval finds nothing either way, and loading the model is slow."""

    name, dim = "test:none", 384

    def embed(self, texts: Any) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dim - 1) for _ in texts]


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """Built once for the module and committed (the engine writes from another thread); every
    test runs inside a transaction that is rolled back, so what a POST changes is undone.
    Flushed at the end, as a transactional test is."""
    from consult.services.consultations import consultation_run, consultation_start
    from knowledge.models import UnitVersion
    from knowledge.services import bundle_import, version_retire_request
    from knowledge.tasks import versions_embed_task
    from mdtboard.accounts.services import team_get_or_create
    from tests.fixtures.consultations import submitted
    from tests.fixtures.personas import make_user
    from tests.knowledge.kb_factory import SOURCE, bundle, unit

    try:
        with django_db_blocker.unblock():
            team = team_get_or_create(name="Hepatobiliary MDT")
            other_team = team_get_or_create(name="Thoracic MDT")
            users = {
                "anonymous": None,
                "team-clinician": make_user("clinician", "owner@hospital.test", [team]),
                "other-team-clinician": make_user(
                    "clinician", "outsider@hospital.test", [other_team]
                ),
                "rater": make_user("rater", "rater@hospital.test", []),
                "curator": make_user("curator", "curator@hospital.test", []),
                "admin": make_user("admin", "admin@hospital.test", []),
            }
            with mock.patch.object(versions_embed_task, "delay"):
                bundle_import(actor=None, bundle=bundle(unit("hcc.resection")), publish=True)
            published = UnitVersion.objects.select_related("unit").get(unit__key="hcc.resection")
            dossier = submitted(users["team-clinician"], team, "pub-hcc-03.json")
            consultation = consultation_start(
                actor=users["team-clinician"], dossier=dossier, enqueue=False
            )
            with mock.patch("knowledge.selectors.get_provider", _NoModel):
                consultation_run(consultation_id=consultation.pk)
            consultation.refresh_from_db()
            assert consultation.plan is not None
            comparator, study = _rating_objects(users, dossier, consultation)
            assignment = study.assignments.get()
            report = _rendered_report(consultation, users["team-clinician"])
            entry, prompt_version = _memory_objects(consultation)
            approval = version_retire_request(
                actor=users["curator"], version=published, reason="Superseded in 2026"
            )
        yield World(
            users=users,
            dossier=dossier,
            consultation=consultation,
            unit_key=published.unit.key,
            unit_number=published.number,
            published_version_id=published.pk,
            source_key=SOURCE["key"],
            comparator_id=comparator.pk,
            study_id=study.pk,
            assignment_id=assignment.pk,
            report_id=report.pk,
            entry_id=entry.pk,
            prompt_version_id=prompt_version.pk,
            approval_id=approval.pk,
        )
    finally:
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)


def _rating_objects(users: dict[str, Any], dossier: Any, consultation: Any) -> tuple[Any, Any]:
    """The team's comparator plan for the dossier, and a study pairing it with the
    consultation's plan, whose one packet goes to the rater."""
    from consult.rating.services import StudySpec, comparator_create, study_create
    from tests.consult.rating.support import COMPARATOR

    comparator = comparator_create(actor=users["team-clinician"], dossier=dossier, plan=COMPARATOR)
    study = study_create(
        actor=users["admin"],
        spec=StudySpec(
            name="Permissions",
            consultation_ids=[consultation.pk],
            rater_ids=[users["rater"].pk],
            raters_per_packet=1,
            seed=1,
        ),
    )
    return comparator, study


def _memory_objects(consultation: Any) -> tuple[Any, Any]:
    """A CorrectKB entry learnt from the consultation, and a proposed prompt refinement."""
    from knowledge.memory.models import ExperienceEntry, PromptVersion

    entry = ExperienceEntry.objects.create(
        kind="correct",
        source="review_accept",
        source_ref="review:permissions",
        consultation_ref=consultation.pk,
        cancer_type="hcc",
        case_summary="hcc; BCLC C",
        plan="Pathway: atezolizumab with bevacizumab.",
    )
    version = PromptVersion.objects.create(
        prompt="treatment", number=1, addendum="- a lesson", content_hash="0" * 64, rationale="r"
    )
    return entry, version


def _rendered_report(consultation: Any, user: Any) -> Any:
    """A finished PDF report of the plan, its file in place (its content is not under test)."""
    from django.conf import settings

    from consult.review.models import PlanReport, ReportStatus

    report = PlanReport.objects.create(
        consultation=consultation,
        plan_number=1,
        plan_hash=consultation.plan.content_hash,
        requested_by=user,
        status=ReportStatus.DONE,
    )
    report.path = f"reports/{consultation.pk}/report-{report.pk}.pdf"
    report.save()
    target = settings.MEDIA_ROOT / report.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"%PDF-1.7\n%%EOF\n")
    return report


# Path parameters of each route that has any, from the world's objects.
ARGUMENTS: dict[str, Callable[[World], dict[str, Any]]] = {
    "consult:dossier-detail": lambda w: {"pk": w.dossier.pk},
    "consult:patient-timeline": lambda w: {"pk": w.dossier.patient_id},
    "consult:dossier-edit": lambda w: {"pk": w.dossier.pk, "section": "patient"},
    "consult:dossier-check-field": lambda w: {"pk": w.dossier.pk, "section": "patient"},
    "consult:dossier-submit": lambda w: {"pk": w.dossier.pk},
    "consult:dossier-recompute": lambda w: {"pk": w.dossier.pk},
    "consult:dossier-export": lambda w: {"pk": w.dossier.pk},
    "consult:consultation-start": lambda w: {"pk": w.dossier.pk},
    "consult:consultation-board": lambda w: {"pk": w.consultation.pk},
    "consult:consultation-cancel": lambda w: {"pk": w.consultation.pk},
    "consult:plan-detail": lambda w: {"pk": w.consultation.pk},
    "consult:plan-json": lambda w: {"pk": w.consultation.pk},
    "consult:plan-careplan": lambda w: {"pk": w.consultation.pk},
    "consult:dossier-export-fhir": lambda w: {"pk": w.dossier.pk},
    "review:plan-version": lambda w: {"pk": w.consultation.pk, "number": 1},
    "review:plan-version-json": lambda w: {"pk": w.consultation.pk, "number": 1},
    "review:case-record": lambda w: {"pk": w.consultation.pk},
    "review:decide": lambda w: {"pk": w.consultation.pk},
    "review:amend": lambda w: {"pk": w.consultation.pk},
    "review:meeting": lambda w: {"pk": w.consultation.pk},
    "review:sign-off": lambda w: {"pk": w.consultation.pk},
    "review:reopen": lambda w: {"pk": w.consultation.pk},
    "review:report-request": lambda w: {"pk": w.consultation.pk},
    "review:report-status": lambda w: {"pk": w.report_id},
    "review:report-download": lambda w: {"pk": w.report_id},
    "knowledge:evidence": lambda w: {"version_id": w.published_version_id},
    "knowledge:unit-detail": lambda w: {"key": w.unit_key},
    "knowledge:unit-edit": lambda w: {"key": w.unit_key},
    "knowledge:unit-diff": lambda w: {"key": w.unit_key},
    "knowledge:version-submit": lambda w: {"key": w.unit_key, "number": w.unit_number},
    "knowledge:version-publish": lambda w: {"key": w.unit_key, "number": w.unit_number},
    "knowledge:version-hotfix": lambda w: {"key": w.unit_key, "number": w.unit_number},
    "knowledge:version-retire": lambda w: {"key": w.unit_key, "number": w.unit_number},
    "knowledge:source-edit": lambda w: {"key": w.source_key},
    "knowledge:approval-decide": lambda w: {"pk": w.approval_id, "decision": "approve"},
    "memory:entry": lambda w: {"pk": w.entry_id},
    "memory:entry-retire": lambda w: {"pk": w.entry_id},
    "memory:version-decide": lambda w: {
        "kind": "prompt",
        "pk": w.prompt_version_id,
        "action": "approve",
    },
    "rating:packet": lambda w: {"pk": w.assignment_id},
    "rating:comparator-detail": lambda w: {"pk": w.comparator_id},
    "rating:comparator-edit": lambda w: {"pk": w.dossier.pk},
    "rating:comparator-import": lambda w: {"pk": w.dossier.pk},
    "rating:decision-comparator": lambda w: {"pk": w.consultation.pk},
    "rating:study-detail": lambda w: {"pk": w.study_id},
    "rating:study-close": lambda w: {"pk": w.study_id},
    "rating:rating-clear": lambda w: {"pk": w.study_id},
    "rating:study-llm": lambda w: {"pk": w.study_id},
    "rating:study-analytics": lambda w: {"pk": w.study_id},
    "rating:study-export": lambda w: {"pk": w.study_id},
}

# What a POST sends, where an empty form would stop before the view's own checks.
POST_DATA: dict[str, dict[str, str]] = {
    "consult:dossier-check-field": {"_field": "patient__sex", "patient__sex": "female"},
    "consult:consultation-start": {"engine": "guideline", "max_rounds": "1"},
}


def _url(name: str, world: World) -> str:
    argument = ARGUMENTS.get(name)
    return reverse(name, kwargs=argument(world) if argument else None)


def _is_login(location: str) -> bool:
    return urlsplit(location).path == reverse("account_login")


def _outcome(client: Client, method: str, url: str, data: dict[str, str]) -> str:
    response = client.post(url, data) if method == "POST" else client.get(url)
    status = response.status_code
    if status in (301, 302, 303, 307, 308):
        location = response["Location"]
        if urlsplit(location).path == reverse("admin:login"):
            # The admin sends everyone to its own login, which sends visitors to ours and
            # refuses signed-in non-staff: one more step says which.
            return _outcome(client, "GET", location, {})
        if _is_login(location):
            return LOGIN
        try:
            resolve(urlsplit(location).path)
        except Resolver404:
            return f"redirect off the app ({location})"
        return ALLOW
    # 422: the form was judged on its content, so the user was let in.
    if 200 <= status < 300 or status == 422:
        return ALLOW
    return {403: DENY, 404: HIDDEN, 405: UNLISTED_METHOD}.get(status, f"status {status}")


@pytest.fixture(scope="module")
def shared_client() -> Client:
    # One client for the module: each new one loads the middleware again, and WhiteNoise's
    # scan of every static file would cost more than the requests themselves.
    return Client()


@pytest.fixture
def client(shared_client: Client) -> Client:
    """The module's client, without the last test's session (whose row was rolled back)."""
    shared_client.cookies.clear()
    return shared_client


@pytest.fixture(autouse=True)
def _healthy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Access, not health, is under test: /healthz must not wait on a Celery ping here.
    monkeypatch.setattr("mdtboard.core.views.health_checks", lambda: [])


CASES = [
    pytest.param(name, role, method, expected, id=f"{name}-{role}-{method}")
    for name, row in TABLE.items()
    for method, outcomes in row.items()
    for role, expected in zip(ROLES, outcomes, strict=True)
]


@pytest.mark.parametrize(("name", "role", "method", "expected"), CASES)
def test_route_answers_each_role_as_the_table_says(
    client: Client, world: World, name: str, role: str, method: str, expected: str
) -> None:
    # given a user of the role (or nobody)
    user = world.users[role]
    if user is not None:
        client.force_login(user)
    # when they open the route with the method
    outcome = _outcome(client, method, _url(name, world), POST_DATA.get(name, {}))
    # then they get what the table says
    assert outcome == expected, f"{method} {name} as {role}"


UNLISTED = [
    pytest.param(name, method, id=f"{name}-{method}")
    for name, row in TABLE.items()
    for method in METHODS
    if method not in row
]


@pytest.mark.parametrize(("name", "method"), UNLISTED)
def test_a_method_without_a_row_is_refused_even_to_an_administrator(
    client: Client, world: World, name: str, method: str
) -> None:
    # given the administrator, whom the most routes let in
    client.force_login(world.users["admin"])
    # when they use a method the table gives no row for, then the route refuses the method
    outcome = _outcome(client, method, _url(name, world), POST_DATA.get(name, {}))
    assert outcome == UNLISTED_METHOD, f"{method} {name}: give it a row in the table"


# Issue 26: every page with patient data tells browsers and proxies to keep no copy.
PATIENT_DATA_ROUTES = [
    pytest.param(name, method, id=f"{name}-{method}")
    for name, row in TABLE.items()
    if name.split(":")[0] in PATIENT_DATA_NAMESPACES
    for method in row
]


@pytest.mark.parametrize(("name", "method"), PATIENT_DATA_ROUTES)
def test_patient_data_routes_say_no_store_to_every_role(
    client: Client, world: World, name: str, method: str
) -> None:
    # given each role in turn, the one the route lets in and those it refuses
    for role in ROLES:
        client.cookies.clear()
        user = world.users[role]
        if user is not None:
            client.force_login(user)
        url = _url(name, world)
        # when the route answers (a page, a download, a redirect or a refusal)
        response = (
            client.post(url, POST_DATA.get(name, {})) if method == "POST" else client.get(url)
        )
        # then no browser or proxy may keep a copy
        assert "no-store" in response.get("Cache-Control", ""), f"{method} {name} as {role}"


def test_pages_without_patient_data_are_left_to_their_views(client: Client, world: World) -> None:
    # given the home page, which shows no patient, then the middleware adds nothing to it
    client.force_login(world.users["team-clinician"])
    assert "no-store" not in client.get(reverse("core:home")).get("Cache-Control", "")
