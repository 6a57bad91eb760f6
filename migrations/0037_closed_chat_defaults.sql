-- Chat defaults that let strangers in and then hand them the agent are closed (issue 17):
-- * `/cron`, `/goal` and `/subgoal` are admin commands by default, like `/model` and `/sethome`
--   (any chat user could list, edit, run or delete every job of the agent, or redirect its
--   delivery). Existing channels get them too; an admin may take one off again.
-- * Groups are closed until an admin lists them in `allow_chats` (`*`: every group). A channel
--   that names admins keeps the groups it had (`*`); one that names none is closed to groups
--   until someone is made its admin and allows them.
-- * (In code) a channel with no admins has no admins: admin commands, group approvals and
--   `/approve always` are then for nobody in chat.
ALTER TABLE channels ALTER COLUMN admin_commands
    SET DEFAULT ARRAY['usage', 'pair', 'model', 'compress', 'memory', 'sethome', 'cron', 'goal', 'subgoal'];
UPDATE channels
   SET admin_commands = admin_commands
       || ARRAY(SELECT unnest(ARRAY['cron', 'goal', 'subgoal']) EXCEPT SELECT unnest(admin_commands));
UPDATE channels SET allow_chats = ARRAY['*'] WHERE allow_chats = '{}' AND admins <> '{}';
