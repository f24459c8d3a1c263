"""SQL for tables whose rows may be inserted but never changed (audit log, snapshots, plans)."""

from __future__ import annotations

from django.db import migrations


def append_only(table: str) -> migrations.RunSQL:
    """A migration operation that makes the database refuse UPDATE and DELETE on ``table``.

    Row triggers do not fire on TRUNCATE, which only the table's owner may run; the test
    database teardown relies on it. docker/README.md says how to run the app as a non-owner.
    """
    function = f"{table}_forbid_change"
    trigger = f"{table}_append_only"
    forward = f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rows of {table} are append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER {trigger}
    BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {function}();
"""
    reverse = f"""
DROP TRIGGER IF EXISTS {trigger} ON {table};
DROP FUNCTION IF EXISTS {function}();
"""
    return migrations.RunSQL(forward, reverse_sql=reverse)
