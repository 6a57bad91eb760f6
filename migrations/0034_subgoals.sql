-- `/subgoal`: acceptance criteria added to a standing goal along the way; the goal is done
-- only when it and all of them are met.
ALTER TABLE session_goals ADD COLUMN subgoals text[] NOT NULL DEFAULT '{}';
