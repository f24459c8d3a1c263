"""The app connects as an ordinary database role: what it may not do is refused by privilege,
not only by a trigger an owner could drop (mdtboard.core.dbroles)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from mdtboard.core.dbroles import database_owner

pytestmark = pytest.mark.django_db

APPEND_ONLY = ["audit_auditevent", "consult_dossiersnapshot", "consult_plan"]


def _refused(sql: str, match: str) -> None:
    with (
        pytest.raises(DatabaseError, match=match),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)


def test_the_app_connects_as_an_ordinary_role_not_the_owner() -> None:
    # given the connection the app (and every test, web server and worker) uses
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_user, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls "
            "FROM pg_roles WHERE rolname = current_user"
        )
        user, superuser, createrole, createdb, bypassrls = cursor.fetchone()
    # then it is not the owner, and holds none of the powers that would undo the guarantees
    assert user == settings.DATABASES["default"]["USER"]
    assert user != settings.DATABASE_OWNER["USER"]
    assert (superuser, createrole, createdb, bypassrls) == (False, False, False, False)


@pytest.mark.parametrize("table", APPEND_ONLY)
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE {table} SET id = id",
        "DELETE FROM {table}",
        "TRUNCATE {table}",
    ],
    ids=["update", "delete", "truncate"],
)
def test_append_only_tables_refuse_changes_by_privilege(table: str, statement: str) -> None:
    # when the app's role changes, removes or truncates rows of an append-only table
    # then the database refuses for lack of privilege, before any trigger is asked
    _refused(statement.format(table=table), f"permission denied for table {table}")


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("DROP TRIGGER audit_auditevent_append_only ON audit_auditevent", "must be owner"),
        ("ALTER TABLE audit_auditevent DISABLE TRIGGER ALL", "must be owner"),
        ("SET session_replication_role = replica", "permission denied to set parameter"),
        ("CREATE TABLE mischief (id int)", "permission denied for schema public"),
        ("TRUNCATE consult_patient CASCADE", "permission denied for table consult_patient"),
    ],
    ids=["drop-trigger", "disable-trigger", "replica-mode", "create-table", "truncate-patients"],
)
def test_the_app_cannot_switch_the_guarantees_off(sql: str, match: str) -> None:
    _refused(sql, match)


def test_unit_versions_change_only_in_their_review_state() -> None:
    # given the app's role, which publishes and retires versions
    # when it rewrites a version's content, or deletes one
    # then both are refused; the review columns stay writable
    _refused("UPDATE knowledge_unitversion SET text = 'x'", "permission denied")
    _refused("DELETE FROM knowledge_unitversion", "permission denied")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE knowledge_unitversion SET status = status, retired_at = NULL")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_owner_keeps_the_schema_and_the_app_gets_new_tables_after_migrate() -> None:
    # given a table the owner creates, as a later migration would
    from django.core.management import call_command

    with database_owner(), connection.cursor() as cursor:
        cursor.execute("CREATE TABLE core_later (id bigint PRIMARY KEY)")
    try:
        # when migrate runs (nothing to migrate: it still grants)
        call_command("migrate", verbosity=0)
        # then the app may use the new table's rows
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO core_later VALUES (1)")
            cursor.execute("DELETE FROM core_later")
    finally:
        with database_owner(), connection.cursor() as cursor:
            cursor.execute("DROP TABLE core_later")
