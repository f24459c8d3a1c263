"""Two database roles: the owner changes the schema, the app only reads and writes rows.

Web, worker and every other process connect as the app's role (``DATABASES["default"]``):
no superuser, no DDL, no TRUNCATE, and on append-only tables (the audit log, dossier
snapshots, plans: those with an ``<table>_append_only`` trigger) only SELECT and INSERT; on a
model that lists ``MUTABLE_FIELDS`` (knowledge unit versions) UPDATE of those columns only and
no DELETE. So a hole in the application cannot rewrite the audit chain, drop its trigger or
truncate it, which a superuser or table owner can.

Migrations, ``flush``, backups and restores switch to the owner (``settings.DATABASE_OWNER``:
the embedded server's superuser, or ``DATABASE_OWNER_URL`` for a real server); ``migrate``
then creates the app's role if it is missing and grants it exactly the above. Without an owner
(a real server configured with one role only) nothing switches and nothing is granted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connections, transaction

logger = logging.getLogger(__name__)

# What identifies a role's connection; the database name stays (tests switch it).
_CREDENTIALS = ("USER", "PASSWORD", "HOST", "PORT")
# The app's credentials of each connection now switched to the owner.
_app_credentials: dict[str, dict[str, Any]] = {}


class RoleSwitchError(RuntimeError):
    pass


def owner_credentials() -> dict[str, Any] | None:
    """The owner's USER, PASSWORD, HOST and PORT, or None when there is no separate owner."""
    owner = getattr(settings, "DATABASE_OWNER", None)
    if not owner:
        return None
    return {key: owner.get(key, "") for key in _CREDENTIALS}


def app_credentials(using: str = "default") -> dict[str, Any]:
    """The app's credentials for ``using``, whichever role the connection has now."""
    if using in _app_credentials:
        return dict(_app_credentials[using])
    settings_dict = connections[using].settings_dict
    return {key: settings_dict.get(key, "") for key in _CREDENTIALS}


def connection_use_owner(using: str = "default") -> bool:
    """Reconnect ``using`` as the owner; False if it already is, or there is no owner."""
    owner = owner_credentials()
    if owner is None or using in _app_credentials:
        return False
    connection = connections[using]
    if connection.in_atomic_block:
        raise RoleSwitchError("the database role cannot change inside a transaction")
    _app_credentials[using] = app_credentials(using)
    connection.close()
    # The settings dict is shared by the connections of every thread: new ones get the owner.
    connection.settings_dict.update(owner)
    return True


def connection_use_app(using: str = "default") -> None:
    """Reconnect ``using`` as the app's role again, after connection_use_owner."""
    credentials = _app_credentials.get(using)
    if credentials is None:
        return
    connection = connections[using]
    if connection.in_atomic_block:
        raise RoleSwitchError("the database role cannot change inside a transaction")
    connection.close()
    connection.settings_dict.update(credentials)
    del _app_credentials[using]


@contextmanager
def database_owner(using: str = "default") -> Iterator[None]:
    """Run the block connected as the owner (nested use is fine)."""
    switched = connection_use_owner(using)
    try:
        yield
    finally:
        if switched:
            connection_use_app(using)


def _append_only_tables(cursor: Any) -> list[str]:
    cursor.execute(
        "SELECT DISTINCT t.tgrelid::regclass::text FROM pg_trigger AS t "
        r"WHERE NOT t.tgisinternal AND t.tgname LIKE '%%\_append\_only' ORDER BY 1"
    )
    return [row[0] for row in cursor.fetchall()]


def _review_only_tables() -> dict[str, list[str]]:
    """Tables of models whose rows change only in ``MUTABLE_FIELDS``: their columns."""
    tables: dict[str, list[str]] = {}
    for model in apps.get_models():
        fields = getattr(model, "MUTABLE_FIELDS", None)
        if fields:
            columns = [getattr(model._meta.get_field(name), "column", None) for name in fields]
            tables[model._meta.db_table] = [str(c) for c in columns if c]
    return tables


def app_role_grant(*, using: str = "default") -> str | None:
    """Create the app's role if it is missing and grant it what the module docstring says;
    run as the owner, after migrations. Returns the role's name, or None when the app and
    the owner are one role (nothing to grant)."""
    app = app_credentials(using)
    owner = owner_credentials()
    role = str(app["USER"] or "")
    if owner is None or not role or role == owner["USER"]:
        return None
    connection = connections[using]
    quote = connection.ops.quote_name
    name = quote(role)
    # One transaction: the app never sees a moment with UPDATE on an append-only table.
    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role])
        row = cursor.fetchone()
        if row is None:
            password = app["PASSWORD"]
            cursor.execute(
                f"CREATE ROLE {name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                "NOREPLICATION NOBYPASSRLS" + (" PASSWORD %s" if password else ""),
                [password] if password else None,
            )
        elif row[0]:
            logger.warning(
                "the app's database role %s is a superuser: it can rewrite the audit log; "
                "make it an ordinary role (ALTER ROLE %s NOSUPERUSER)",
                role,
                role,
            )
        cursor.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
        cursor.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}"
        )
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {name}")
        for table in _append_only_tables(cursor):
            cursor.execute(f"REVOKE ALL ON TABLE {table} FROM {name}")
            cursor.execute(f"GRANT SELECT, INSERT ON TABLE {table} TO {name}")
        for table, columns in _review_only_tables().items():
            quoted = quote(table)
            cursor.execute(f"REVOKE ALL ON TABLE {quoted} FROM {name}")
            cursor.execute(f"GRANT SELECT, INSERT ON TABLE {quoted} TO {name}")
            cursor.execute(
                f"GRANT UPDATE ({', '.join(quote(c) for c in columns)}) ON TABLE {quoted} TO {name}"
            )
    return role
