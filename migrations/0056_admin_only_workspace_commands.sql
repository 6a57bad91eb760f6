-- `/rollback` restores the agent's workspace, which every conversation of the agent shares, and
-- `/reload_mcp` restarts its MCP servers: admin commands by default, like `/cron` (issue 35,
-- security review 2026-12, L7). Existing channels get them too; an admin may take one off.
ALTER TABLE channels ALTER COLUMN admin_commands
    SET DEFAULT ARRAY['usage', 'pair', 'model', 'compress', 'memory', 'sethome', 'cron', 'goal', 'subgoal',
                      'rollback', 'reload_mcp'];
UPDATE channels
   SET admin_commands = admin_commands
       || ARRAY(SELECT unnest(ARRAY['rollback', 'reload_mcp']) EXCEPT SELECT unnest(admin_commands));
