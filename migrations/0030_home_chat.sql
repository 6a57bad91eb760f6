-- A channel's home chat (`chat` or `chat:thread`): where deliveries to the bare platform go
-- (a cron job delivering to `telegram`). Set with /sethome in that chat, the admin API or
-- hermesctl; /sethome is for a channel's admins.
ALTER TABLE channels ADD COLUMN home_chat text;
ALTER TABLE channels ALTER COLUMN admin_commands SET DEFAULT ARRAY['usage', 'pair', 'model', 'compress', 'memory', 'sethome'];
UPDATE channels SET admin_commands = array_append(admin_commands, 'sethome')
 WHERE admin_commands @> ARRAY['usage', 'pair', 'model', 'compress', 'memory'] AND NOT admin_commands @> ARRAY['sethome'];
