-- A team key may go into a stdio MCP server's environment, which the agent's own code can read
-- in its sandbox, only when whoever added it said so (issue 35, security review 2026-12, H2).
-- Until then a key goes only to the hosts it is allowed for.
ALTER TABLE provider_credentials ADD COLUMN readable_in_sandbox boolean NOT NULL DEFAULT false;
