-- The database role web and worker run as: full use of ordinary tables, but on every
-- append-only table (the audit log, dossier snapshots, ... : the tables with an
-- "<table>_append_only" trigger) only SELECT and INSERT. docker/README.md, "Hardening the
-- audit log", says why and how to use it.
--
-- Run with psql as the role that runs the migrations and owns the tables, in the app's
-- database, after `migrate` has run:
--   psql -U mdtboard -d mdtboard -v app_password='...' -f app-role.sql
-- Optional: -v app_role=NAME (default mdtboard_app). Idempotent: run it again after every
-- upgrade whose migrations add an append-only table.

\set ON_ERROR_STOP on

\if :{?app_role}
\else
\set app_role mdtboard_app
\endif

\if :{?app_password}
\else
DO $$ BEGIN RAISE EXCEPTION 'app-role.sql: give the role''s password with -v app_password=...'; END $$;
\endif

BEGIN;

-- The role: may log in, nothing more (no superuser, no role or database creation).
SELECT format('CREATE ROLE %I', :'app_role')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'app_role')
\gexec
ALTER ROLE :"app_role" WITH LOGIN PASSWORD :'app_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

GRANT CONNECT, TEMPORARY ON DATABASE :"DBNAME" TO :"app_role";
GRANT USAGE ON SCHEMA public TO :"app_role";
-- PostgreSQL 15+ already withholds CREATE on the public schema; older servers granted it.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- Ordinary tables: read and write rows; never TRUNCATE, never own anything.
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"app_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"app_role";
-- Tables and sequences that later migrations create (as this same owner role) get the same.
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO :"app_role";

-- Append-only tables: read and append, nothing else.
SELECT format('REVOKE ALL ON TABLE %s FROM %I', t.tgrelid::regclass, :'app_role'),
       format('GRANT SELECT, INSERT ON TABLE %s TO %I', t.tgrelid::regclass, :'app_role')
FROM pg_trigger AS t
WHERE NOT t.tgisinternal AND t.tgname LIKE '%\_append\_only'
ORDER BY 1
\gexec

COMMIT;

-- What the role may do on each append-only table: expect select and insert only.
SELECT t.tgrelid::regclass AS append_only_table,
       has_table_privilege(:'app_role', t.tgrelid, 'SELECT') AS "select",
       has_table_privilege(:'app_role', t.tgrelid, 'INSERT') AS "insert",
       has_table_privilege(:'app_role', t.tgrelid, 'UPDATE') AS "update",
       has_table_privilege(:'app_role', t.tgrelid, 'DELETE') AS "delete",
       has_table_privilege(:'app_role', t.tgrelid, 'TRUNCATE') AS "truncate"
FROM pg_trigger AS t
WHERE NOT t.tgisinternal AND t.tgname LIKE '%\_append\_only'
ORDER BY 1;
