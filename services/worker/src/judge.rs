//! `smart` approval: the agent's auxiliary model (else its main model) reviews a flagged
//! command and answers APPROVE, DENY or ESCALATE, as upstream's guardian does. An approval
//! holds for the session's later uses of the same patterns; a failed or unclear review asks
//! the user.

use futures_util::future::BoxFuture;

use hermes_core::{AgentId, ChatMessage, SessionId, TenantId};
use hermes_llm::{ChatModel, ChatRequest, NoDeltas};
use hermes_store::Store;
use hermes_tools::{ApprovalJudge, Verdict};

use crate::models::TurnModel;

const REVIEW_PROMPT: &str = "You review shell commands that an AI agent wants to run in its own sandboxed Linux \
workspace: a container with a persistent /workspace directory, no access to the host, and no network unless \
enabled. A pattern list flagged the command below as possibly dangerous. Answer with exactly one word: APPROVE if \
it is a normal, low-risk step of routine work in that workspace; DENY if it destroys data the user would want, \
tampers with credentials or history, sends secrets anywhere, or runs code fetched from the internet; ESCALATE if \
you are not sure.";

pub(crate) struct SmartJudge {
    pub model: TurnModel,
    pub model_name: String,
    pub store: Store,
    pub tenant: TenantId,
    pub agent: AgentId,
    pub session: SessionId,
}

/// The verdict in a reviewer's answer: its first word.
pub(crate) fn parse_verdict(answer: &str) -> Verdict {
    let first = answer.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or_default();
    match first.to_ascii_uppercase().as_str() {
        "APPROVE" | "APPROVED" => Verdict::Approve,
        "DENY" | "DENIED" => Verdict::Deny,
        _ => Verdict::Escalate,
    }
}

impl ApprovalJudge for SmartJudge {
    fn judge<'a>(&'a self, command: &'a str, reasons: &'a str, keys: &'a [&'static str]) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            let request = ChatRequest {
                model: self.model_name.clone(),
                messages: vec![
                    ChatMessage::system(REVIEW_PROMPT),
                    ChatMessage::user(format!("Command:\n{command}\n\nFlagged because: {reasons}")),
                ],
                tools: std::sync::Arc::from([]),
                max_tokens: Some(16),
                settings: Default::default(),
            };
            let verdict = match self.model.complete(&request, &mut NoDeltas).await {
                Ok(answer) => parse_verdict(&answer.message.text()),
                Err(e) => {
                    tracing::warn!(error = %e, "the approval review failed; asking the user");
                    Verdict::Escalate
                }
            };
            tracing::info!(verdict = ?verdict, patterns = ?keys, "smart approval review");
            if verdict == Verdict::Approve {
                let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
                if let Err(e) =
                    self.store.turns().grant_session_patterns(self.tenant, self.agent, self.session, &keys).await
                {
                    tracing::warn!(error = %e, "cannot remember the approval for the session");
                }
            }
            verdict
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clear_first_word_decides() {
        assert_eq!(parse_verdict("APPROVE"), Verdict::Approve);
        assert_eq!(parse_verdict(" approve."), Verdict::Approve);
        assert_eq!(parse_verdict("DENY - deletes the repo"), Verdict::Deny);
        assert_eq!(parse_verdict("ESCALATE"), Verdict::Escalate);
        assert_eq!(parse_verdict("I think this is fine"), Verdict::Escalate);
        assert_eq!(parse_verdict(""), Verdict::Escalate);
    }
}
