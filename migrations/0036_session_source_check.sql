-- A session's source is one of `hermes_core::SessionSource`: a worker claiming a turn reads it
-- as that enum, so a name outside it must not be written. NOT VALID: rows written before are
-- not re-checked (there are none outside the list; the check guards what comes next).
ALTER TABLE sessions ADD CONSTRAINT sessions_source_known
    CHECK (source IN ('api', 'cron', 'webhook', 'subagent', 'telegram', 'slack', 'wecom')) NOT VALID;
