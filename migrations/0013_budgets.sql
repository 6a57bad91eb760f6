-- Spending caps per tenant (agent_id NULL) or per agent, per day or month in the tenant's time
-- zone, in US dollars of priced model calls. Hard: no further model call is made once reached.
-- Soft: reaching it is logged and counted for operators.
CREATE TABLE budgets (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id  uuid,
    period    text NOT NULL CHECK (period IN ('day', 'month')),
    hard_usd  numeric(14, 4) CHECK (hard_usd >= 0),
    soft_usd  numeric(14, 4) CHECK (soft_usd >= 0),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX budgets_one_per_scope
    ON budgets (tenant_id, COALESCE(agent_id, '00000000-0000-0000-0000-000000000000'::uuid), period);
