//! The queries that span tenants, and nothing else. Everything outside this module takes a
//! [`TenantId`](hermes_core::TenantId) and filters by it; these cannot, because the role that
//! calls them works for every tenant at once, or does not know the tenant yet. None is
//! reachable from a tenant's API request. Each stays a method on [`Store`](crate::Store).
//!
//! Why each is cross-tenant:
//! - [`turns`]: the scheduler's lease reaper ([`reap_stranded_turns`]) and interaction expiry
//!   ([`expire_interactions`]) look after every tenant's turns; a worker that died did not say
//!   whose turn it held. [`presence`] tells the reaper which workers died: it tries the
//!   presence lock of every worker holding a running turn ([`gone_workers`]) and hands a gone
//!   worker's turns on ([`release_turns_of_gone_workers`]).
//! - [`leases`]: a worker's heartbeat extends the leases of all the turns it runs, of every
//!   tenant, in one statement ([`extend_leases`]); each lease is named by tenant, turn and the
//!   owner only that worker knows.
//! - [`outbox`]: gateway pods deliver every tenant's replies ([`claim_outbox`]) and settle a
//!   claimed reply by its id (`outbox_part_sent`, `outbox_sent`, `outbox_retry`, ...), the id
//!   coming from their own claim.
//! - [`channels`]: a platform's webhook names only a channel id ([`gateway_channel`]); the
//!   platform's own secret then authenticates it. The gateway polls every tenant's channels of
//!   a platform and mode ([`gateway_channels`]).
//! - [`webhooks`]: a third party's POST names only a hook id ([`gateway_webhook`]); its
//!   signature, checked with that hook's secret, proves the sender. [`accept_webhook`] then
//!   works by that hook's id, for the tenant its row names.
//! - [`cron`]: schedulers claim every tenant's due jobs and fired runs ([`claim_due_jobs`]),
//!   start and fail claimed runs by id ([`start_run`], [`fail_run`]), settle runs whose turns
//!   ended or whose scheduler vanished ([`settle_runs`]), and count open runs
//!   ([`open_cron_runs`]) for the installation's gauge.
//! - [`event_deliveries`]: gateway pods send every tenant's events ([`claim_events`]) and
//!   record each attempt by the event's and endpoint's ids ([`settle_event`]).
//! - [`retention`]: pruning idempotency keys, settled events and expired sessions is one sweep
//!   over all tenants ([`prune_idempotency_keys`], [`prune_events`], [`prune_chat_traffic`],
//!   [`prune_spend_reservations`], [`prune_sessions`]); so is [`data_retention`]'s of finished
//!   turns, files and usage detail past each tenant's period ([`prune_past_retention`]).
//! - [`tenant_deletion`]: deleting a tenant removes rows the tenant role may not (its audit
//!   entries, its people, the tenant itself), and the scheduler resumes every tenant's deletion
//!   that a dead process left half done ([`unfinished_tenant_deletions`]). Its batches run as
//!   the tenant role where that role may delete.
//! - [`curator`]: the scheduler picks idle agents of any tenant for a curator pass
//!   ([`claim_agents_for_curation`]); the pass itself is tenant-scoped.
//! - [`egress_authority`]: the egress proxy's CA is the installation's, one for every worker and
//!   every tenant's sandboxes; no tenant role may read it.
//! - [`process_watches`]: workers poll every tenant's watched background processes
//!   ([`claim_watches`]); each is then settled for the tenant its row names.
//! - [`gauges`]: the installation's backlog ([`backlog`]: turns queued and running, replies
//!   waiting, late cron jobs), counts only, for the scheduler's gauges and the autoscaler; and
//!   the workers holding turns ([`workers_at_work`]), for the operators' cluster page.
//!
//! Everything here runs as the `hermes_system` role (`Store::system_pool`, policies `system_paths`,
//! migration 0040); everything else as `hermes_tenant`, which sees one tenant's rows.
//!
//! Not here, though they too run as the system role: authentication, which is where a tenant
//! comes from (`authenticate_api_key`; `tenant_by_name` and `create_tenant` for the operator's
//! CLI and the admin API, which makes a tenant in an `audited_installation` change; the admin
//! plane's people, console sessions, sign-in links, admin tokens and accepted invitations in
//! `admin/`, which come before a tenant is known (with whether an invited address is an
//! operator's), proofs of an address and identities at providers (`admin/proof.rs`),
//! the identity provider of an email's domain (`sso_for_domain`, `domain_has_own_provider`,
//! `any_tenant_sso`), and the installation's own audit entries), installation-wide data that is no tenant's (`set_model_price`, `model_prices`,
//! `sync_bundled_skills`), and the readiness probes (`ping`, `schema_lag`).
//!
//! [`reap_stranded_turns`]: crate::views::System::reap_stranded_turns
//! [`expire_interactions`]: crate::views::System::expire_interactions
//! [`gone_workers`]: crate::views::System::gone_workers
//! [`extend_leases`]: crate::views::System::extend_leases
//! [`release_turns_of_gone_workers`]: crate::views::System::release_turns_of_gone_workers
//! [`claim_outbox`]: crate::views::System::claim_outbox
//! [`gateway_channel`]: crate::views::System::gateway_channel
//! [`gateway_channels`]: crate::views::System::gateway_channels
//! [`gateway_webhook`]: crate::views::System::gateway_webhook
//! [`accept_webhook`]: crate::views::System::accept_webhook
//! [`claim_due_jobs`]: crate::views::System::claim_due_jobs
//! [`start_run`]: crate::views::System::start_run
//! [`fail_run`]: crate::views::System::fail_run
//! [`settle_runs`]: crate::views::System::settle_runs
//! [`open_cron_runs`]: crate::views::System::open_cron_runs
//! [`claim_events`]: crate::views::System::claim_events
//! [`settle_event`]: crate::views::System::settle_event
//! [`prune_idempotency_keys`]: crate::views::System::prune_idempotency_keys
//! [`prune_events`]: crate::views::System::prune_events
//! [`prune_chat_traffic`]: crate::views::System::prune_chat_traffic
//! [`prune_spend_reservations`]: crate::views::System::prune_spend_reservations
//! [`prune_sessions`]: crate::views::System::prune_sessions
//! [`prune_past_retention`]: crate::views::System::prune_past_retention
//! [`unfinished_tenant_deletions`]: crate::views::System::unfinished_tenant_deletions
//! [`claim_agents_for_curation`]: crate::views::System::claim_agents_for_curation
//! [`claim_watches`]: crate::views::System::claim_watches
//! [`backlog`]: crate::views::System::backlog
//! [`workers_at_work`]: crate::views::System::workers_at_work

pub mod channels;
pub mod cron;
pub mod curator;
pub mod data_retention;
pub mod egress_authority;
pub mod event_deliveries;
pub mod gauges;
pub mod leases;
pub mod outbox;
pub mod presence;
pub mod process_watches;
pub mod retention;
pub mod tenant_deletion;
pub mod turns;
pub mod webhooks;

pub use gauges::{Backlog, WorkerAtWork};
pub use leases::HeldLease;
pub use outbox::OutboxItem;
pub use presence::{GoneScan, OrphanedTurn, Presence};
pub use turns::StrandedTurn;

use sqlx::FromRow;
use sqlx::postgres::PgRow;

use crate::{Result, StoreError, views::System};

impl System<'_> {
    /// The row `sql` selects by `id` (its `$1`) whoever owns it, read as `T`: what a gateway
    /// looks up before it knows a tenant. `NotFound` when there is none.
    async fn unowned_row<T: for<'r> FromRow<'r, PgRow>>(self, sql: &'static str, id: uuid::Uuid) -> Result<T> {
        let row = sqlx::query(sql).bind(id).fetch_optional(self.system_pool()).await?.ok_or(StoreError::NotFound)?;
        crate::rows::read::<T>(&row)
    }
}
