-- Chat channels: an agent bound to a bot on a chat platform (Telegram, Slack, WeCom).
CREATE TABLE channels (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id          uuid NOT NULL,
    platform          text NOT NULL CHECK (platform IN ('telegram', 'slack', 'wecom')),
    -- how updates arrive: webhook (the platform calls us), poll (we long-poll it), socket or
    -- websocket (a connection we keep)
    mode              text NOT NULL CHECK (mode IN ('webhook', 'poll', 'socket', 'websocket')),
    -- the platform API host (a self-hosted Bot API server, a test emulator)
    api_base          text NOT NULL,
    -- the credentials as JSON, sealed with secrets.master_key (the row id in the context)
    credentials       bytea NOT NULL,
    -- sha256 of the bot's identity: one binding per bot in the whole installation
    bot_fingerprint   text NOT NULL UNIQUE,
    -- the bot's own user name (group messages must mention it), learnt from the platform
    bot_username      text,
    -- shared secret of the platform's webhook calls (Telegram's secret_token)
    webhook_secret    text NOT NULL,
    dm_policy         text NOT NULL DEFAULT 'pairing'
                      CHECK (dm_policy IN ('open', 'allowlist', 'pairing', 'disabled')),
    -- groups: the bot answers when mentioned or replied to (`mention`), or to everything (`open`)
    group_policy      text NOT NULL DEFAULT 'mention' CHECK (group_policy IN ('mention', 'open', 'disabled')),
    allow_users       text[] NOT NULL DEFAULT '{}',
    allow_chats       text[] NOT NULL DEFAULT '{}',
    -- users who may run admin chat commands
    admins            text[] NOT NULL DEFAULT '{}',
    -- `active`, or why delivery stopped (`blocked`: the platform refuses the bot)
    status            text NOT NULL DEFAULT 'active',
    status_reason     text,
    -- long-poll position: the next update id to ask for (Telegram getUpdates offset)
    poll_offset       bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

-- Where a turn's answer goes when it came from a chat: {channel_id, chat_id, thread, reply_to}.
ALTER TABLE turns ADD COLUMN reply_to jsonb;

-- The outbox delivers replies: claimed with a lease by one gateway pod, retried with backoff.
ALTER TABLE outbox ADD COLUMN channel_id uuid;
ALTER TABLE outbox ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE outbox ADD COLUMN lease_until timestamptz;
-- `pending`, `sent`, or `failed` (gave up; last_error says why)
ALTER TABLE outbox ADD COLUMN status text NOT NULL DEFAULT 'pending';
-- a long reply goes out in parts: how many are out (a retry sends only the rest), and their
-- platform message ids, comma-separated, in platform_message_id
ALTER TABLE outbox ADD COLUMN sent_parts integer NOT NULL DEFAULT 0;
DROP INDEX outbox_unsent;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';

-- A chat turn that ends puts its answer in the outbox in the same transaction, whichever path
-- ended it (a worker finishing, a failure, a stop), exactly once per turn.
CREATE FUNCTION turn_reply_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
    VALUES (gen_random_uuid(), NEW.tenant_id, NEW.id, (NEW.reply_to ->> 'channel_id')::uuid, NEW.reply_to,
            'turn:' || NEW.id || ':answer',
            jsonb_build_object('kind', 'answer', 'status', NEW.status::text, 'outcome', NEW.outcome))
    ON CONFLICT (tenant_id, dedupe_key) DO NOTHING;
    RETURN NEW;
END;
$$;
CREATE TRIGGER turns_reply_to_outbox
    AFTER UPDATE OF status ON turns
    FOR EACH ROW
    WHEN (NEW.reply_to IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('completed', 'failed'))
    EXECUTE FUNCTION turn_reply_to_outbox();
