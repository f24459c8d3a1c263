"""Who may do what: the explicit allow/deny table of every route and WebSocket.

tests/mdtboard/views/test_permission_table.py walks the URL conf and checks every row with
every role; tests/mdtboard/integration/test_socket_permission_table.py does the same for the
WebSocket routes. A route without a row fails the test: add it here, with what each role
must get. Review a change to this file like a change to the views it describes.

Outcomes:
  allow  - 2xx, or a redirect to a page of the app (not the login page); 422 counts too: the
           form was judged on its content, so the user was let in
  login  - a redirect to the login page (nobody is signed in)
  deny   - 403: the user's role may not use the route
  hidden - 404: the object belongs to another team, and must look absent

Each row gives, per HTTP method the view accepts, one outcome per role in ROLES order. A
method without a row must be refused (405) even to an administrator.
"""

from __future__ import annotations

ALLOW, LOGIN, DENY, HIDDEN = "allow", "login", "deny", "hidden"
UNLISTED_METHOD = "method not allowed"
METHODS = ("GET", "POST")

# team-clinician: a clinician of the team that owns the patient, dossier, consultation, plan.
# other-team-clinician: a clinician of another team. admin: an administrator (sees all teams).
ROLES = ("anonymous", "team-clinician", "other-team-clinician", "rater", "curator", "admin")

A, L, D, H = ALLOW, LOGIN, DENY, HIDDEN

# Parts of the URL conf that are not ours to tabulate, by namespace or included module.
SKIPPED: dict[str, str] = {
    "allauth.urls": (
        "allauth's own login, logout, password, e-mail and two-factor pages: public or "
        "login-only by allauth's design (tests/mdtboard/views/test_access.py checks that "
        "every one of them but the public ones sends a visitor to the login page)"
    ),
    "admin": (
        "the Django admin's internals (model pages, jsi18n, autocomplete, its own login): "
        "all behind admin_view's staff check, which the admin:index row covers"
    ),
}

Row = dict[str, tuple[str, str, str, str, str, str]]

TABLE: dict[str, Row] = {
    # route name                        anonymous team  other rater curator admin
    # --- core --------------------------------------------------------------------------------
    "core:home": {"GET": (L, A, A, A, A, A)},
    "core:healthz": {"GET": (A, A, A, A, A, A)},  # for load balancers: no login
    "core:favicon": {"GET": (A, A, A, A, A, A)},  # the icon, asked for before any login
    # --- intake: patients and dossiers (clinicians of the team, and administrators) ----------
    "consult:patient-list": {"GET": (L, A, A, D, D, A)},  # lists only the user's teams
    "consult:dossier-list": {"GET": (L, A, A, D, D, A)},  # lists only the user's teams
    "consult:patient-timeline": {"GET": (L, A, H, D, D, A)},  # the patient's team only
    "consult:dossier-create": {"GET": (L, A, A, D, D, A), "POST": (L, A, A, D, D, A)},
    "consult:dossier-import": {"GET": (L, A, A, D, D, A), "POST": (L, A, A, D, D, A)},
    "consult:dossier-detail": {"GET": (L, A, H, D, D, A)},
    "consult:dossier-edit": {"GET": (L, A, H, D, D, A), "POST": (L, A, H, D, D, A)},
    "consult:dossier-check-field": {"POST": (L, A, H, D, D, A)},
    "consult:dossier-submit": {"POST": (L, A, H, D, D, A)},
    # Recompute the frozen facts (a new snapshot; refused with a message when nothing changed).
    "consult:dossier-recompute": {"POST": (L, A, H, D, D, A)},
    "consult:dossier-export": {"GET": (L, A, H, D, D, A)},
    "consult:dossier-export-fhir": {"GET": (L, A, H, D, D, A)},  # audited like the JSON export
    # The FHIR review's confirm step (no valid review: back to the import page) and the FHIR
    # server source (a page saying none is configured when FHIR_SERVER_URL is unset).
    "consult:fhir-import-confirm": {"POST": (L, A, A, D, D, A)},
    "consult:fhir-server-import": {"GET": (L, A, A, D, D, A), "POST": (L, A, A, D, D, A)},
    "consult:case-schema": {"GET": (A, A, A, A, A, A)},  # the published format: public
    # --- consultations and plans -------------------------------------------------------------
    "consult:consultation-start": {"POST": (L, A, H, D, D, A)},
    "consult:consultation-board": {"GET": (L, A, H, D, D, A)},
    "consult:consultation-cancel": {"POST": (L, A, H, D, D, A)},
    "consult:plan-detail": {"GET": (L, A, H, D, D, A)},
    "consult:plan-json": {"GET": (L, A, H, D, D, A)},
    # A signed plan as a FHIR CarePlan; before sign-off it sends back to the plan page.
    "consult:plan-careplan": {"GET": (L, A, H, D, D, A)},
    # --- clinician review, the MDT decision, reports and exports (consult/review) ------------
    "review:plan-version": {"GET": (L, A, H, D, D, A)},
    "review:plan-version-json": {"GET": (L, A, H, D, D, A)},
    "review:case-record": {"GET": (L, A, H, D, D, A)},
    "review:decide": {"POST": (L, A, H, D, D, A)},
    "review:amend": {"GET": (L, A, H, D, D, A), "POST": (L, A, H, D, D, A)},
    "review:meeting": {"GET": (L, A, H, D, D, A), "POST": (L, A, H, D, D, A)},
    # Signing is the responsible clinician's act: an administrator may review, never sign.
    # The confirmation page too: only a clinician is shown it.
    "review:sign-off": {"GET": (L, A, H, D, D, D), "POST": (L, A, H, D, D, D)},
    # Taking a decision back, with the reason: whoever may decide.
    "review:reopen": {"POST": (L, A, H, D, D, A)},
    "review:report-request": {"POST": (L, A, H, D, D, A)},
    "review:report-status": {"GET": (L, A, H, D, D, A)},
    "review:report-download": {"GET": (L, A, H, D, D, A)},
    # --- knowledge base (curators and administrators) ----------------------------------------
    # A cited guideline version is evidence on the board: every clinical role may read it.
    "knowledge:evidence": {"GET": (L, A, A, D, A, A)},
    "knowledge:unit-list": {"GET": (L, D, D, D, A, A)},
    "knowledge:coverage": {"GET": (L, D, D, D, A, A)},  # curators and admins
    "knowledge:unit-create": {"GET": (L, D, D, D, A, A), "POST": (L, D, D, D, A, A)},
    "knowledge:unit-detail": {"GET": (L, D, D, D, A, A)},
    "knowledge:unit-edit": {"GET": (L, D, D, D, A, A), "POST": (L, D, D, D, A, A)},
    "knowledge:unit-diff": {"GET": (L, D, D, D, A, A)},
    "knowledge:version-submit": {"POST": (L, D, D, D, A, A)},
    "knowledge:version-publish": {"POST": (L, D, D, D, A, A)},
    "knowledge:version-hotfix": {"POST": (L, D, D, D, A, A)},
    "knowledge:version-retire": {"POST": (L, D, D, D, A, A)},
    "knowledge:review-queue": {"GET": (L, D, D, D, A, A)},
    # approve / refuse / withdraw a change waiting for four eyes; the service then refuses
    # whoever asked (a message on the page they came from), so the table's curator is let in
    "knowledge:approval-decide": {"POST": (L, D, D, D, A, A)},
    "knowledge:source-list": {"GET": (L, D, D, D, A, A)},
    "knowledge:source-create": {"GET": (L, D, D, D, A, A), "POST": (L, D, D, D, A, A)},
    "knowledge:source-edit": {"GET": (L, D, D, D, A, A), "POST": (L, D, D, D, A, A)},
    "knowledge:bundle": {"GET": (L, D, D, D, A, A), "POST": (L, D, D, D, A, A)},
    "knowledge:bundle-export-json": {"GET": (L, D, D, D, A, A)},
    "knowledge:bundle-export-yaml": {"GET": (L, D, D, D, A, A)},
    "knowledge:diagnostics": {"GET": (L, D, D, D, A, A)},
    "knowledge:ingest": {"GET": (L, D, D, D, A, A), "POST": (L, D, D, D, A, A)},
    "knowledge:ingest-draft": {"POST": (L, D, D, D, A, A)},
    # --- rating studies ------------------------------------------------------------------------
    # Raters: their own queue and the packets assigned to them (anyone else's: 404).
    "rating:queue": {"GET": (L, D, D, A, D, D)},
    "rating:packet": {"GET": (L, D, D, A, D, D), "POST": (L, D, D, A, D, D)},
    # Comparator plans: clinicians of the dossier's team, and administrators.
    "rating:comparator-list": {"GET": (L, A, A, D, D, A)},  # lists only the user's teams
    "rating:comparator-detail": {"GET": (L, A, H, D, D, A)},
    "rating:comparator-edit": {"GET": (L, A, H, D, D, A), "POST": (L, A, H, D, D, A)},
    "rating:comparator-import": {"GET": (L, A, H, D, D, A), "POST": (L, A, H, D, D, A)},
    # The team's decision as the comparator of rating studies (a fragment of the plan page,
    # and its button): as the comparator pages, the team's clinicians and administrators.
    "rating:decision-comparator": {"GET": (L, A, H, D, D, A), "POST": (L, A, H, D, D, A)},
    # Studies, their allocation, analytics and unblinded export: administrators only.
    # --- experience memory and governed evolution (administrators only) -----------------------
    "memory:home": {"GET": (L, D, D, D, D, A)},
    "memory:entry": {"GET": (L, D, D, D, D, A), "POST": (L, D, D, D, D, A)},
    "memory:entry-retire": {"POST": (L, D, D, D, D, A)},
    "memory:prune": {"POST": (L, D, D, D, D, A)},
    "memory:evolution": {"GET": (L, D, D, D, D, A)},
    "memory:propose": {"POST": (L, D, D, D, D, A)},
    "memory:version-decide": {"POST": (L, D, D, D, D, A)},
    "rating:study-list": {"GET": (L, D, D, D, D, A)},
    "rating:study-create": {"GET": (L, D, D, D, D, A), "POST": (L, D, D, D, D, A)},
    "rating:study-detail": {"GET": (L, D, D, D, D, A)},
    "rating:study-close": {"POST": (L, D, D, D, D, A)},
    # Clearing a rating flagged as too fast, so that the board may learn from it.
    "rating:rating-clear": {"POST": (L, D, D, D, D, A)},
    "rating:study-llm": {"POST": (L, D, D, D, D, A)},
    "rating:study-analytics": {"GET": (L, D, D, D, D, A)},
    "rating:study-export": {"GET": (L, D, D, D, D, A)},
    # --- accounts (ours; allauth's are skipped above) ----------------------------------------
    "accounts:invite": {"GET": (L, D, D, D, D, A), "POST": (L, D, D, D, D, A)},
    "accounts:email": {"GET": (L, A, A, A, A, A), "POST": (L, A, A, A, A, A)},
    "accounts:password-set-done": {"GET": (L, A, A, A, A, A)},  # on to sign-in or home
    # --- the Django admin: staff (administrators) only ---------------------------------------
    "admin:index": {"GET": (L, D, D, D, D, A), "POST": (L, D, D, D, D, A)},
}

# The WebSocket routes of mdtboard/routing.py: accepted (allow) or closed at connect (deny).
SOCKETS: dict[str, tuple[str, str, str, str, str, str]] = {
    # path                             anonymous team  other rater curator admin
    "ws/notifications/": (D, A, A, A, A, A),  # each user's own notices
    "ws/consultations/<int:pk>/": (D, A, D, D, D, A),  # the live board: as its page
}
