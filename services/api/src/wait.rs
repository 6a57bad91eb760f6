//! Waiting for a turn: events from RabbitMQ, with Postgres as the fallback truth when an
//! event is lost (a broker restart, a worker killed between storing and publishing), and
//! events of a superseded attempt (a zombie worker still streaming) ignored.

use std::time::Duration;

use hermes_core::{PendingInteraction, TenantId, TurnEventKind, TurnId, TurnOutcome};
use hermes_queue::EventSubscription;
use hermes_store::Store;

/// What the waiter saw next.
pub(crate) enum Next {
    Event(TurnEventKind),
    /// The turn ended; from its final event or, if that never came, from Postgres.
    Finished(TurnOutcome),
    /// The turn waits for the user's answer to this.
    Waiting(PendingInteraction),
}

/// Follows one turn.
pub(crate) struct Waiter {
    pub sub: EventSubscription,
    pub store: Store,
    pub tenant: TenantId,
    pub turn: TurnId,
    /// Re-read Postgres after this much silence.
    pub recheck: Duration,
    /// The newest attempt seen; events of older attempts come from a worker that lost the turn.
    attempt: u32,
    /// Read Postgres before waiting for events (a turn that may have ended already).
    check_first: bool,
    /// The pod's event hub stopped (its broker connection is gone for good): Postgres, read
    /// every `recheck`, is then the only source, and the request is still answered.
    hub_gone: bool,
}

impl Waiter {
    pub fn new(sub: EventSubscription, store: Store, tenant: TenantId, turn: TurnId, recheck: Duration) -> Self {
        Self { sub, store, tenant, turn, recheck, attempt: 0, check_first: false, hub_gone: false }
    }

    /// Looks at Postgres before waiting: for a turn started by an earlier request (a retry with
    /// the same Idempotency-Key), which may be over, and whose events go to another pod.
    pub fn checking_first(mut self) -> Self {
        self.check_first = true;
        self
    }

    /// The turn's end or question as Postgres has it, if it has one.
    /// Called boxed: its queries' futures would otherwise sit in every waiting request's.
    async fn stored_state(&self) -> Option<Next> {
        match self.store.turns().turn_state(self.tenant, self.turn).await {
            Ok((status, Some(outcome))) if status.is_final() => Some(Next::Finished(outcome)),
            Ok((hermes_store::TurnStatus::Waiting, _)) => {
                match self.store.turns().turn_pending_interaction(self.tenant, self.turn).await {
                    Ok(Some(interaction)) => Some(Next::Waiting(interaction)),
                    _ => None,
                }
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot re-read the turn while waiting");
                None
            }
        }
    }

    /// The next thing to happen to the turn.
    pub async fn next(&mut self) -> Next {
        if std::mem::take(&mut self.check_first)
            && let Some(next) = Box::pin(self.stored_state()).await
        {
            return next;
        }
        loop {
            if self.hub_gone {
                tokio::time::sleep(self.recheck).await;
                if let Some(next) = Box::pin(self.stored_state()).await {
                    return next;
                }
                continue;
            }
            tokio::select! {
                event = self.sub.next() => {
                    let Some(event) = event else {
                        tracing::warn!(turn.id = %self.turn, "the event hub stopped; following the turn in Postgres");
                        self.hub_gone = true;
                        continue;
                    };
                    if event.attempt < self.attempt {
                        continue;
                    }
                    self.attempt = event.attempt;
                    return match event.kind {
                        TurnEventKind::Finished { outcome } => Next::Finished(outcome),
                        TurnEventKind::Waiting { interaction } => Next::Waiting(interaction),
                        kind => Next::Event(kind),
                    };
                }
                () = tokio::time::sleep(self.recheck) => {
                    if let Some(next) = Box::pin(self.stored_state()).await {
                        return next;
                    }
                }
            }
        }
    }
    /// The turn's end (`Ok`) or the question it parks on (`Err`), its progress events passed
    /// over: what a request answers once, whole.
    pub async fn settled(&mut self) -> Result<TurnOutcome, PendingInteraction> {
        loop {
            match self.next().await {
                Next::Finished(outcome) => return Ok(outcome),
                Next::Waiting(interaction) => return Err(interaction),
                Next::Event(_) => {}
            }
        }
    }
}
