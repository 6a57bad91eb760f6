-- A tenant's API key changes its chat bots through `/v1/channels`, and that change is recorded
-- in the audit log like an admin's (libs/ops/src/channels.rs), as actor kind `api_key`.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_kind_check
    CHECK (actor_kind IN ('person', 'token', 'cli', 'chat', 'system', 'api_key'));
