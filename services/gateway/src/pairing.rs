//! Pairing in chat: an unknown person in a direct chat of a `pairing` channel gets a code to
//! hand to an admin; an admin approves it with `/pair approve CODE` in any chat of the bot (or
//! `hermesctl channel pair approve`), and the person is told they are in.

use hermes_store::{Channel, PairingApproval, PairingStart};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::Incoming;

impl Gateway {
    /// The reply to an unknown person: their code, or why there is none.
    pub(crate) async fn pairing_reply(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let started = self
            .store
            .chat()
            .start_pairing(channel.tenant_id, channel.id, &msg.user_id, msg.user_name.as_deref(), &msg.chat_id)
            .await
            .map_err(|e| IngestError::new(e.to_string()))?;
        Ok(match started {
            PairingStart::Code { code, .. } | PairingStart::Pending { code, .. } => format!(
                "Hi! I don't know you yet. To talk to me, ask an admin of this bot to approve your code:\n\n{code}\n\n\
                 It is valid for one hour. (An admin sends /pair approve {code} to me.)"
            ),
            PairingStart::Full => {
                "Hi! Several people are already waiting for an admin to let them in. Please try again later.".into()
            }
        })
    }

    /// `/pair approve CODE` from an admin.
    pub(crate) async fn pair_command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        if !channel.admins.iter().any(|a| a == &msg.user_id) {
            return Ok("Only this bot's admins can approve pairing codes.".into());
        }
        let mut words = msg.text.split_whitespace().skip(1);
        let (Some("approve"), Some(code)) = (words.next(), words.next()) else {
            return Ok("Use /pair approve CODE.".into());
        };
        let err = |e: hermes_store::StoreError| IngestError::new(e.to_string());
        // The approval, its announcement and its entry commit together; a wrong code still
        // counts toward the lockout.
        let mut tx = self.store.audited(channel.tenant_id, msg.audit(channel.platform)).await.map_err(err)?;
        let approval = tx.approve_pairing(channel.id, code).await.map_err(err)?;
        if let PairingApproval::Approved { user_id, chat_id } = &approval {
            let note = hermes_chat::pairing::announcement(channel.platform, channel.id, user_id, chat_id);
            tx.enqueue_outbox(&note.destination, &note.dedupe_key, &note.payload).await.map_err(err)?;
            let change = hermes_store::admin::Change::new("pairing.approved", "channel", channel.id)
                .after(serde_json::json!({ "approved": true, "user_id": user_id }));
            tx.commit(change).await.map_err(err)?;
        } else {
            tx.commit_refusal().await.map_err(err)?;
        }
        Ok(match approval {
            PairingApproval::Approved { user_id, .. } => format!("Approved: user {user_id} can talk to me now."),
            PairingApproval::WrongCode => "No such code is waiting (it may have expired).".into(),
            PairingApproval::Locked { until } => {
                format!("Too many wrong codes: approvals are locked until {}.", until.format("%H:%M UTC"))
            }
        })
    }
}
