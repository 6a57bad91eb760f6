-- Who may be signed in as whom (issue 35, security review 2026-12, H1/M3/L1).
--
-- An invitation's link is handed to the inviter, so holding it proves nothing about the invited
-- address. An account made from such a link is "unproven" until its address is proven: a
-- verified email at an identity provider, or an operator's sign-in link. Whatever was set on it
-- before (a password, sessions, tokens) is dropped when it is proven, and a membership granted
-- to it from outside drops them too.
ALTER TABLE people ADD COLUMN email_proven boolean NOT NULL DEFAULT true;
-- Accounts made by accepting an invitation (the person row and the acceptance share the
-- transaction's timestamp) were never proven.
UPDATE people p SET email_proven = false
WHERE NOT p.operator
  AND EXISTS (SELECT 1 FROM invitations i WHERE i.accepted_by = p.id AND i.accepted_at = p.created_at);
-- Operators sign in through the installation's identity provider only when they said so.
ALTER TABLE people ADD COLUMN operator_sso boolean NOT NULL DEFAULT false;
-- Whether a password is set, readable without reading the hash (the tenant role may not).
ALTER TABLE people ADD COLUMN has_password boolean GENERATED ALWAYS AS (password_hash IS NOT NULL) STORED;

-- An identity at a provider, bound to one person at its first sign-in: a later ID token for
-- the same email with another subject (a reassigned address) is refused, and a subject signs
-- in one person only.
CREATE TABLE person_identities (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    person_id  uuid NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject),
    UNIQUE (person_id, issuer)
);
-- The installation's, like sign-in links: the tenant role may not touch it at all.
REVOKE ALL ON person_identities FROM hermes_tenant;

-- A session opened through a tenant's own provider is valid in that tenant only. (Sessions are
-- the installation's, not a tenant's rows: hence not `tenant_id`.)
ALTER TABLE console_sessions ADD COLUMN limited_to_tenant uuid REFERENCES tenants (id) ON DELETE CASCADE;

-- A tenant's provider that never sends `email_verified` (and whose users cannot choose their
-- email) is trusted without it only when the operator says so.
ALTER TABLE tenant_identity_providers ADD COLUMN trust_unverified_email boolean NOT NULL DEFAULT false;
