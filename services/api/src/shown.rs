//! The store's rows as `/v1` and `/api` show them (`hermes_wire` types): the one place where a
//! column becomes a field, so a row type can change without the API changing with it.

use hermes_wire::v1::{CronJob, NumberedMessage};

/// A stored job as the API shows it: without its tenant.
pub(crate) fn cron_job(j: hermes_store::cron::Job) -> CronJob {
    j.job
}

/// A stored message as a transcript shows it.
pub(crate) fn numbered(m: hermes_store::StoredMessage) -> NumberedMessage {
    NumberedMessage { message: m.message, seq: m.seq }
}
