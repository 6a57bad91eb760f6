-- The admin plane (issue 20): people, their memberships in tenants, invitations, console
-- sessions, one-time sign-in links, admin API tokens, and the audit log.
--
-- People belong to the installation (one person may be in several tenants), so the tenant role
-- sees a person only through a membership of its own tenant, and never writes one. Sessions
-- and sign-in links are the installation's alone: the tenant role cannot touch them at all.

CREATE TABLE people (
    id uuid PRIMARY KEY,
    email text NOT NULL CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+$' AND length(email) <= 254),
    display_name text NOT NULL DEFAULT '' CHECK (length(display_name) <= 200),
    -- An argon2id PHC string; NULL: signs in by link or through the identity provider only.
    password_hash text,
    operator boolean NOT NULL DEFAULT false,
    failed_sign_ins integer NOT NULL DEFAULT 0,
    locked_until timestamptz,
    disabled_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX people_email ON people (email);

CREATE TABLE memberships (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    person_id uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, person_id)
);
CREATE INDEX memberships_person ON memberships (person_id);

CREATE TABLE invitations (
    id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    email text NOT NULL CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+$' AND length(email) <= 254),
    role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    -- SHA-256 of the link's token; the token itself is shown once.
    hash bytea NOT NULL UNIQUE,
    invited_by uuid REFERENCES people (id) ON DELETE SET NULL,
    expires_at timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by uuid REFERENCES people (id) ON DELETE SET NULL,
    revoked_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invitations_tenant ON invitations (tenant_id, created_at DESC);

-- A one-time link that signs a person in (the first operator's, a demo owner's, a reset).
CREATE TABLE sign_in_links (
    hash bytea PRIMARY KEY,
    person_id uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The server side of a console session: signing out or an idle hour ends it at once, whatever
-- its token says.
CREATE TABLE console_sessions (
    id uuid PRIMARY KEY,
    person_id uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    address text NOT NULL DEFAULT '',
    user_agent text NOT NULL DEFAULT ''
);
CREATE INDEX console_sessions_person ON console_sessions (person_id) WHERE ended_at IS NULL;

-- Tokens for automation: a person's (capped by the person's role, and gone with the person's
-- membership) or a tenant's service token; with no tenant, an operator's installation token.
CREATE TABLE admin_tokens (
    id uuid PRIMARY KEY,
    tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
    person_id uuid REFERENCES people (id) ON DELETE CASCADE,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    prefix text NOT NULL,
    hash bytea NOT NULL UNIQUE,
    expires_at timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (tenant_id IS NOT NULL OR person_id IS NOT NULL)
);
CREATE INDEX admin_tokens_tenant ON admin_tokens (tenant_id, created_at DESC);

-- Every admin write: who, for which tenant (NULL: the installation's), what, on which object,
-- before and after (secrets masked), from which request and address. Append-only: neither
-- role may change or delete an entry; only the retention function below deletes, by age.
CREATE TABLE audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id uuid,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_kind text NOT NULL CHECK (actor_kind IN ('person', 'token', 'cli', 'chat', 'system')),
    actor_id text NOT NULL,
    actor_label text NOT NULL,
    action text NOT NULL,
    object_kind text NOT NULL,
    object_id text NOT NULL,
    before jsonb,
    after jsonb,
    request_id text,
    source_address text
);
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, id DESC);
CREATE INDEX audit_log_installation ON audit_log (id DESC) WHERE tenant_id IS NULL;

-- Row policies (as migration 0040): the tenant's own rows, and everything for the system.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memberships', 'invitations', 'admin_tokens', 'audit_log'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON %I TO hermes_tenant
                 USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant())', t);
        EXECUTE format('CREATE POLICY system_paths ON %I TO hermes_system USING (true) WITH CHECK (true)', t);
    END LOOP;
END $$;

-- A tenant sees its members (and no one else), and writes no person.
ALTER TABLE people ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON people TO hermes_tenant
    USING (EXISTS (SELECT 1 FROM memberships m WHERE m.person_id = people.id)) WITH CHECK (false);
CREATE POLICY system_paths ON people TO hermes_system USING (true) WITH CHECK (true);
REVOKE INSERT, UPDATE, DELETE ON people FROM hermes_tenant;

REVOKE ALL ON sign_in_links, console_sessions FROM hermes_tenant;
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM hermes_tenant, hermes_system;

-- Retention: the one way audit entries go, oldest first, by age only.
CREATE FUNCTION hermes_prune_audit(keep interval, batch integer)
    RETURNS bigint
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        WITH gone AS (
            DELETE FROM audit_log WHERE id IN (
                SELECT id FROM audit_log WHERE at < now() - keep ORDER BY id LIMIT batch)
            RETURNING 1)
        SELECT count(*) FROM gone
    $$;
REVOKE ALL ON FUNCTION hermes_prune_audit(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hermes_prune_audit(interval, integer) TO hermes_system;
