-- Rate limits per tenant and per API key: requests per minute and turns in flight. NULL takes
-- the installation's default (`api.*` in the configuration); 0 means unlimited.
ALTER TABLE tenants
    ADD COLUMN requests_per_minute integer CHECK (requests_per_minute >= 0),
    ADD COLUMN concurrent_turns integer CHECK (concurrent_turns >= 0);
ALTER TABLE api_keys
    ADD COLUMN requests_per_minute integer CHECK (requests_per_minute >= 0),
    ADD COLUMN concurrent_turns integer CHECK (concurrent_turns >= 0);
