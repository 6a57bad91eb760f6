-- A tenant's own identity provider, set by an operator: people whose verified email is at one
-- of its domains sign in to the console through it (and, if the tenant says so, join it as a
-- member on their first sign-in). A domain signs in through one tenant's provider at most.
CREATE TABLE tenant_identity_providers (
    tenant_id     uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    issuer        text NOT NULL,
    client_id     text NOT NULL,
    client_secret bytea,
    scopes        text NOT NULL,
    join_as       text CHECK (join_as IN ('member', 'admin')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sso_domains (
    domain    text PRIMARY KEY CHECK (domain = lower(domain) AND domain <> ''),
    tenant_id uuid NOT NULL REFERENCES tenant_identity_providers (tenant_id) ON DELETE CASCADE
);
CREATE INDEX sso_domains_by_tenant ON sso_domains (tenant_id);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tenant_identity_providers', 'sso_domains'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON %I TO hermes_tenant
                 USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant())', t);
        EXECUTE format('CREATE POLICY system_paths ON %I TO hermes_system USING (true) WITH CHECK (true)', t);
    END LOOP;
END $$;
