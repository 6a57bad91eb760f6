-- Foundation schema: tenants, agents, API keys, sessions, messages, turns, inbound, outbox.
-- Every row carries tenant_id; child tables reference (tenant_id, id) pairs so a row can never
-- point at another tenant's parent.

CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agents (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name              text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    model             text NOT NULL,
    provider_base_url text NOT NULL,
    -- AES-256-GCM: 12-byte nonce || ciphertext+tag, key from secrets.master_key
    provider_secret   bytea,
    soul              text,
    -- the agent's standing instructions, a layer of the stable prompt
    system_message    text,
    -- hosts the agent's own provider key may be sent to (bound when the key is set)
    provider_key_hosts text[] NOT NULL DEFAULT '{}',
    -- ordered fallback models: [{"base_url": ..., "model": ..., "api_mode": ...}], keys from the tenant's pools
    fallbacks         jsonb NOT NULL DEFAULT '[]',
    -- the auxiliary model for side tasks (compaction summaries): {"base_url", "model", "api_mode"}
    auxiliary         jsonb,
    -- the model's context window in tokens; NULL = from the model's name
    context_window    integer CHECK (context_window > 0),
    -- provider API; NULL = decided from the provider and base URL
    api_mode          text CHECK (api_mode IN ('chat_completions', 'anthropic_messages', 'responses')),
    toolsets          text[] NOT NULL DEFAULT ARRAY['terminal'],
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name),
    UNIQUE (tenant_id, id)
);

-- a tenant's provider keys, pooled per provider and shared by every worker (state in Redis)
CREATE TABLE provider_credentials (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- pool name: openai, openrouter, anthropic, ..., or custom:<host>
    provider      text NOT NULL,
    label         text NOT NULL,
    -- AES-256-GCM sealed like agents.provider_secret
    secret        bytea NOT NULL,
    -- lower comes first for fill_first
    priority      integer NOT NULL DEFAULT 0,
    -- the only hosts this key is ever sent to
    allowed_hosts text[] NOT NULL CHECK (cardinality(allowed_hosts) > 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, provider, label)
);

CREATE TABLE provider_pools (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    provider  text NOT NULL,
    strategy  text NOT NULL DEFAULT 'fill_first'
              CHECK (strategy IN ('fill_first', 'round_robin', 'random', 'least_used')),
    PRIMARY KEY (tenant_id, provider)
);

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- when set, the key may only use this agent
    agent_id     uuid,
    name         text NOT NULL DEFAULT '',
    -- the visible start of the key, e.g. "hk_3fa9c1d2"
    prefix       text NOT NULL UNIQUE,
    -- sha256 of the whole key; keys are 190 random bits, so a fast hash is enough
    hash         bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE sessions (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id      uuid NOT NULL,
    source        text NOT NULL,
    title         text,
    -- the rendered stable system prompt, frozen at the first turn and reused byte for byte
    system_prompt text,
    -- fencing token of the worker allowed to write; bumped on every claim
    fence         bigint NOT NULL DEFAULT 0,
    -- next message sequence number
    next_seq      integer NOT NULL DEFAULT 1,
    -- lineage: the session this one continues (compaction) or branches from (fork, sub-agent)
    parent_session_id uuid,
    lineage       text CHECK (lineage IN ('compaction', 'fork', 'subagent')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX sessions_by_agent ON sessions (tenant_id, agent_id, updated_at DESC);

CREATE TYPE turn_status AS ENUM ('queued', 'running', 'completed', 'failed', 'cancelled');

CREATE TABLE turns (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL,
    session_id       uuid NOT NULL,
    status           turn_status NOT NULL DEFAULT 'queued',
    -- the user message that starts the turn (OpenAI form); written to messages when it runs
    input            jsonb NOT NULL,
    -- per-request system text layered on the agent's prompt (never stored in the prompt)
    instructions     text,
    stream           boolean NOT NULL DEFAULT false,
    -- the event hub (API/gateway pod) waiting for this turn's events
    notify_hub       text,
    lease_owner      text,
    lease_expires_at timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    republished_at   timestamptz,
    -- set when the client asked to stop (disconnect, /stop); the running worker stops the turn
    cancel_requested_at timestamptz,
    outcome          jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX turns_open_by_session ON turns (session_id, created_at) WHERE status IN ('queued', 'running');
CREATE INDEX turns_for_reaper ON turns (status, lease_expires_at) WHERE status IN ('queued', 'running');

CREATE TABLE messages (
    tenant_id    uuid NOT NULL,
    session_id   uuid NOT NULL,
    seq          integer NOT NULL,
    turn_id      uuid,
    -- 0 = the user input, then one step per model call; a tool result shares its call's step
    turn_step    integer,
    role         text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      jsonb,
    tool_calls   jsonb,
    tool_call_id text,
    name         text,
    reasoning    text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
-- idempotency of a resumed turn: one input, one assistant message per step, one result per call
CREATE UNIQUE INDEX messages_one_per_step ON messages (session_id, turn_id, turn_step)
    WHERE role IN ('user', 'assistant') AND turn_id IS NOT NULL;
-- (call ids are only unique within one model response, so the step is part of the key)
CREATE UNIQUE INDEX messages_one_result_per_call ON messages (session_id, turn_id, turn_step, tool_call_id)
    WHERE role = 'tool' AND turn_id IS NOT NULL;

-- chat-platform updates, written before the platform is answered (dedupe by the platform's id)
-- One answered model call (usage per call, cache reads and writes included). Kept when its
-- session is deleted: it is what the tenant was billed for.
CREATE TABLE model_calls (
    id                 bigserial PRIMARY KEY,
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    session_id         uuid NOT NULL,
    turn_id            uuid NOT NULL,
    -- main, auxiliary (summaries) or subagent
    purpose            text NOT NULL,
    provider           text NOT NULL,
    model              text NOT NULL,
    key_id             text,
    prompt_tokens      bigint NOT NULL,
    completion_tokens  bigint NOT NULL,
    cached_tokens      bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX model_calls_by_tenant ON model_calls (tenant_id, created_at);
CREATE INDEX model_calls_by_turn ON model_calls (tenant_id, turn_id);

CREATE TABLE inbound (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source       text NOT NULL,
    dedupe_key   text NOT NULL,
    payload      jsonb NOT NULL,
    turn_id      uuid,
    received_at  timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz,
    UNIQUE (tenant_id, source, dedupe_key)
);
CREATE INDEX inbound_unprocessed ON inbound (received_at) WHERE processed_at IS NULL;

-- replies to deliver, keyed so a retried delivery is recognised
CREATE TABLE outbox (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    turn_id             uuid,
    destination         jsonb NOT NULL,
    dedupe_key          text NOT NULL,
    payload             jsonb NOT NULL,
    attempts            integer NOT NULL DEFAULT 0,
    last_error          text,
    platform_message_id text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz,
    UNIQUE (tenant_id, dedupe_key)
);
CREATE INDEX outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;
