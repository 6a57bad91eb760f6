-- Each claim of an outbox row gets its own token (issue 17): every record a sender makes of
-- the row (a part sent, the whole reply sent, a retry, a failure) carries it, so a sender whose
-- lease lapsed while a slow platform held it cannot overwrite what the next claimant did, and
-- `sent_parts` cannot go backwards.
ALTER TABLE outbox ADD COLUMN lease_owner uuid;
