-- Busy mode `steer`: a message sent while the agent works is read by the running turn as
-- guidance before its next model call (it is queued as a turn marked `steer`; the running turn
-- absorbs it, or it runs on its own if that turn ended first, so nothing is lost).
ALTER TABLE turns ADD COLUMN steer boolean NOT NULL DEFAULT false;
ALTER TABLE channels DROP CONSTRAINT channels_busy_mode_check;
ALTER TABLE channels ADD CONSTRAINT channels_busy_mode_check CHECK (busy_mode IN ('interrupt', 'queue', 'steer'));

-- Chat commands only a channel's admins may use (when it names admins); /help and /whoami are
-- always everyone's.
ALTER TABLE channels ADD COLUMN admin_commands text[] NOT NULL
    DEFAULT ARRAY['usage', 'pair', 'model', 'compress', 'memory'];
