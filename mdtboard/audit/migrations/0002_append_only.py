"""Make the audit table append-only in the database itself, whatever the application does."""

from __future__ import annotations

from django.db import migrations

FORBID = """
CREATE OR REPLACE FUNCTION audit_auditevent_forbid_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only: % refused on audit_auditevent', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_auditevent_forbid_change();
"""

ALLOW = """
DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_auditevent_forbid_change();
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    # Row triggers do not fire on TRUNCATE, which only the table's owner may run; the test
    # database teardown relies on it. docker/README.md says how to run the app as a non-owner.
    operations = [migrations.RunSQL(FORBID, reverse_sql=ALLOW)]
