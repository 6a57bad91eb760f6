//! The store seen one aggregate at a time: `store.turns()`, `store.chat()`, ... Each view is a
//! copy of a reference to the [`Store`] whose methods are that aggregate's queries, so an
//! aggregate's API reads on one screen and a caller names what it works on
//! (`store.turns().finish_turn(..)`). The views share the store's pools and its connection
//! primitives (`as_tenant`, `tenant_tx`, `audited`), which they reach through `Deref`; the
//! methods of each live in the modules that `lib.rs` lists under the same heading.

use std::ops::Deref;

use crate::Store;

macro_rules! views {
    ($($(#[$doc:meta])* $view:ident => $accessor:ident;)+) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy)]
            pub struct $view<'s>(&'s Store);

            impl Deref for $view<'_> {
                type Target = Store;

                fn deref(&self) -> &Store {
                    self.0
                }
            }
        )+

        impl Store {
            $(
                $(#[$doc])*
                pub fn $accessor(&self) -> $view<'_> {
                    $view(self)
                }
            )+
        }
    };
}

views! {
    /// Tenants and their access: tenants, API keys, budgets, pooled provider keys, sealed
    /// secrets, prices, usage, spend reservations and quotas.
    Tenancy => tenancy;
    /// Agents and what they know: their settings, skills and skill use, memory, MCP servers.
    Agents => agents;
    /// Conversations: sessions, their routes and policies, messages, search, export, goals.
    Conversations => conversations;
    /// Turns: enqueue, claim, lease and fenced finish; idempotency, parked interactions, the
    /// Responses API's objects, a turn's files and inputs.
    Turns => turns;
    /// Chat platforms: channels, pairing, inbound messages taken once, previews, the outbox.
    Chat => chat;
    /// Unattended runs: cron jobs and fired runs, webhooks, deliveries, outbound event hooks.
    Automation => automation;
    /// The admin plane: people, members, invitations, console sessions, sign-in proofs, SSO,
    /// admin tokens, the audit log and its rollups.
    Admin => admin;
    /// The queries that span tenants, and nothing else (`system/`'s module docs say why each).
    System => system;
}
