"""Unit versions are immutable records of what a guideline unit said: the database enforces it."""

from __future__ import annotations

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION knowledge_unitversion_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'unit versions are never deleted (retire them instead)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.unit_id <> OLD.unit_id OR NEW.number <> OLD.number
       OR NEW.source_id <> OLD.source_id OR NEW.content::text <> OLD.content::text
       OR NEW.content_hash <> OLD.content_hash OR NEW.diff <> OLD.diff
       OR NEW.title <> OLD.title OR NEW.text <> OLD.text OR NEW.anchor <> OLD.anchor
       OR NEW.grade_system <> OLD.grade_system OR NEW.grade_native <> OLD.grade_native
       OR NEW.grade_ordinal <> OLD.grade_ordinal OR NEW.search <> OLD.search
       OR NEW.author_id IS DISTINCT FROM OLD.author_id OR NEW.created_at <> OLD.created_at THEN
        RAISE EXCEPTION 'unit version content is immutable: edit the unit to make a new version'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.status = 'published' AND NEW.status NOT IN ('published', 'retired') THEN
        RAISE EXCEPTION 'a published unit version can only be retired'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.status = 'retired' AND NEW.status <> 'retired' THEN
        RAISE EXCEPTION 'a retired unit version stays retired'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER knowledge_unitversion_guard
    BEFORE UPDATE OR DELETE ON knowledge_unitversion
    FOR EACH ROW EXECUTE FUNCTION knowledge_unitversion_guard();
"""

REVERSE = """
DROP TRIGGER IF EXISTS knowledge_unitversion_guard ON knowledge_unitversion;
DROP FUNCTION IF EXISTS knowledge_unitversion_guard();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0002_initial")]
    operations = [migrations.RunSQL(FORWARD, reverse_sql=REVERSE)]
