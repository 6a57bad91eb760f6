//! The store's rows as the admin API shows them (`hermes_wire` types): the one place where a
//! column becomes a field, so a row type can change without the API changing with it.

use hermes_wire::admin::ListedSession;

pub(crate) fn listed_session(s: hermes_store::ListedSession) -> ListedSession {
    ListedSession { session: s.info, match_seq: s.match_seq, snippet: s.snippet }
}
