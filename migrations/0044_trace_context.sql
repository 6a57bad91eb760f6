-- The W3C trace context a turn was created under, so the worker that runs it, another worker
-- that resumes it after a crash, and the sender of its answer all continue one trace. A
-- `traceparent` header value; NULL when tracing was off.
ALTER TABLE turns ADD COLUMN trace_parent text CHECK (length(trace_parent) <= 64);
