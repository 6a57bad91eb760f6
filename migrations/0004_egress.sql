-- Per-agent opt-in to the public internet for its sandbox (through the worker's egress proxy,
-- which still refuses private, loopback, link-local and metadata addresses).
ALTER TABLE agents ADD COLUMN egress boolean NOT NULL DEFAULT false;
