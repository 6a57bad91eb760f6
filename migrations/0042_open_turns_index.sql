-- The claim (`claim_next_turn`) and its re-check (`has_claimable_turn`) look for a session's
-- oldest open turn: `status IN ('queued', 'running', 'waiting')`. The index of 0001 covers
-- only queued and running (waiting came later, in 0003), so Postgres could not use it and
-- read every turn of the tenant, twice a turn, the claim under FOR UPDATE: a cost that grew
-- with the table. This one matches the queries' predicate and order.
DROP INDEX IF EXISTS turns_open_by_session;
CREATE INDEX turns_open_by_session ON turns (tenant_id, session_id, created_at, id)
    WHERE status IN ('queued', 'running', 'waiting');
