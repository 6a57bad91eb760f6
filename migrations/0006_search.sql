-- session_search: each user and assistant message's words as a tsvector built by the store
-- (store/search_text.rs: words plus CJK bigrams, so Chinese and Japanese are searchable), in
-- a GIN index. Tool results are not indexed: they are large, noisy and often redacted.
ALTER TABLE messages ADD COLUMN search tsvector;
CREATE INDEX messages_search ON messages USING gin (search);

-- Finding a session's lineage (compactions, forks, delegated children) walks parent links.
CREATE INDEX sessions_by_parent ON sessions (tenant_id, parent_session_id) WHERE parent_session_id IS NOT NULL;
