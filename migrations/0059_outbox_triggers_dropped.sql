-- The contract step of 0057: a turn's answer and a parked turn's question reach the outbox only
-- from Rust now (libs/store/src/turns/outbox_rows.rs), in the transaction that ends or parks the
-- turn. The fallback triggers kept for builds older than 0057 go, with the function only they
-- called. `Store::migrate` applies this only over a schema that had 0057 before the run
-- (`UPGRADE_STOPS` in libs/store/src/migrations.rs): then every pod still running writes the
-- rows itself.
DROP TRIGGER IF EXISTS turns_reply_to_outbox ON turns;
DROP TRIGGER IF EXISTS interactions_to_outbox ON interactions;
DROP FUNCTION IF EXISTS turn_reply_to_outbox();
DROP FUNCTION IF EXISTS interaction_to_outbox();
DROP FUNCTION IF EXISTS hermes_tenant_channel(uuid, jsonb);
