-- How long each model call took, from the request to the last byte (retries of the same call
-- included), for the usage report.
ALTER TABLE model_calls ADD COLUMN latency_ms integer;
