-- Who titled a session (issue 40: titles written by a model).
--
-- `first_message`: the service, from the first user message, as every session so far; a model
-- may replace it after the first exchange (`llm.session_titles`). `model`: a model did.
-- `given`: a person (a rename, a title given at creation, a fork's), never replaced.
-- Sessions before this migration count as given: their first exchange is long past.
ALTER TABLE sessions
    ADD COLUMN IF NOT EXISTS title_source text NOT NULL DEFAULT 'given'
        CHECK (title_source IN ('first_message', 'model', 'given'));
ALTER TABLE sessions ALTER COLUMN title_source SET DEFAULT 'first_message';
