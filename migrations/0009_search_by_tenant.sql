-- session_search always filters by tenant first: one GIN index over (tenant_id, search) lets a
-- query intersect the tenant with its words instead of scanning every tenant's matches.
-- btree_gin is a trusted extension (PostgreSQL 13+), available on managed services.
CREATE EXTENSION IF NOT EXISTS btree_gin;
DROP INDEX IF EXISTS messages_search;
CREATE INDEX messages_search ON messages USING gin (tenant_id, search);
