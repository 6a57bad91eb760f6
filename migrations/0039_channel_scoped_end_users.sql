-- A chat end user is known per channel (issue 17): `<platform>:<channel>:user:<id>` (and
-- `<platform>:<channel>:chat:<id>` for a shared group), since user ids are only unique within
-- one bot's platform account (two WeCom companies bound to one agent each have a `zhangsan`,
-- who must not share a USER profile or find each other's conversations). Keys written before
-- are moved to the channel when the agent has one bot on that platform; with several, which
-- one the person used is unknown and their old profile stays behind (starting afresh is safer
-- than merging two people).
WITH single AS (
    SELECT tenant_id, agent_id, platform, (array_agg(id))[1] AS channel_id
    FROM channels GROUP BY tenant_id, agent_id, platform HAVING count(*) = 1
)
UPDATE memories m
   SET user_key = s.platform || ':' || s.channel_id || substr(m.user_key, length(s.platform) + 1)
  FROM single s
 WHERE m.target = 'user' AND m.tenant_id = s.tenant_id AND m.agent_id = s.agent_id
   AND (m.user_key LIKE s.platform || ':user:%' OR m.user_key LIKE s.platform || ':chat:%');

WITH single AS (
    SELECT tenant_id, agent_id, platform, (array_agg(id))[1] AS channel_id
    FROM channels GROUP BY tenant_id, agent_id, platform HAVING count(*) = 1
)
UPDATE sessions x
   SET user_key = s.platform || ':' || s.channel_id || substr(x.user_key, length(s.platform) + 1)
  FROM single s
 WHERE x.tenant_id = s.tenant_id AND x.agent_id = s.agent_id
   AND (x.user_key LIKE s.platform || ':user:%' OR x.user_key LIKE s.platform || ':chat:%');
