-- Spend reserved by model calls in flight (issue 17). Under a hard cap, a call reserves its
-- estimated cost before it starts, against every cap it falls under, while those caps' rows
-- are locked, so concurrent turns cannot all pass a cap they would pass together; the call's
-- recorded usage replaces the reservation in one statement. A reservation whose worker died
-- lapses at `expires_at` (the retention sweep removes it later).
CREATE TABLE spend_reservations (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL,
    amount_usd numeric(16, 8) NOT NULL CHECK (amount_usd >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX spend_reservations_live ON spend_reservations (tenant_id, agent_id, expires_at);

ALTER TABLE spend_reservations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON spend_reservations TO hermes_tenant
    USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
CREATE POLICY system_paths ON spend_reservations TO hermes_system USING (true) WITH CHECK (true);

-- A model's price: its own row, else the longest `prefix*` row that matches (as the pricing
-- trigger of migration 0012 finds it).
CREATE FUNCTION hermes_model_price(name text) RETURNS model_prices
    LANGUAGE sql STABLE
    AS $$
        SELECT * FROM model_prices
         WHERE model = name OR (right(model, 1) = '*' AND starts_with(name, left(model, -1)))
         ORDER BY model = name DESC, length(model) DESC
         LIMIT 1
    $$;
