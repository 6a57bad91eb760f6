-- Keys are never readable in a sandbox any more (issue 39): an MCP server's `${NAME}` is a bound
-- secret's placeholder, swapped for the key at the egress proxy. The flag of 0055 has been
-- unread since the release before this one, so no pod of a rolling upgrade still reads it.
ALTER TABLE provider_credentials DROP COLUMN IF EXISTS readable_in_sandbox;
