//! `send_message`: the agent posts to a chat through one of its tenant's bound bots
//! (`platform:chat_id[:thread]`), or lists the bots it can use. The message goes through the
//! outbox like any reply, once per tool call (its call id is the key), so a resumed turn does
//! not post twice. Not given to cron runs or delegated children.

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{ChannelStatus, Platform};
use hermes_store::Store;
use hermes_tools::{Choice, SimpleTool, ToolCtx, ToolError, ToolSpec, choices, object_schema};

pub(crate) struct SendMessageTool {
    pub store: Store,
}

choices! {
    enum SendAction {
        Send = "send",
        List = "list",
    }
}

/// The longest message one call posts (the gateway splits it for the platform).
const MAX_CHARS: usize = 20_000;

fn refuse(why: impl Into<String>) -> ToolError {
    ToolError::RespondToModel(why.into())
}

impl SendMessageTool {
    async fn send(&self, ctx: &ToolCtx, args: &Value) -> Result<Value, ToolError> {
        let target = args.get("target").and_then(Value::as_str).unwrap_or_default().trim();
        let message = args.get("message").and_then(Value::as_str).unwrap_or_default().trim();
        if message.is_empty() {
            return Err(refuse("`message` is required"));
        }
        if message.chars().count() > MAX_CHARS {
            return Err(refuse(format!("the message is longer than {MAX_CHARS} characters")));
        }
        let mut parts = target.splitn(3, ':');
        let platform = parts.next().unwrap_or_default();
        let (Some(chat), thread) = (parts.next().filter(|c| !c.is_empty()), parts.next()) else {
            return Err(refuse("`target` is platform:chat_id or platform:chat_id:thread (e.g. telegram:123456)"));
        };
        let unavailable = |e: hermes_store::StoreError| ToolError::Unavailable(format!("cannot send right now: {e}"));
        let channels = self.store.chat().list_channels(ctx.tenant_id).await.map_err(unavailable)?;
        // An unknown platform has no bot either: the same answer as a platform nobody bound.
        let channel = platform
            .parse::<Platform>()
            .ok()
            .and_then(|p| hermes_store::channels::pick_channel(&channels, p, ctx.agent_id, false))
            .ok_or_else(|| refuse(format!("no {platform} bot is bound for this team (action=list shows the bots)")))?;
        let destination = Destination::chat(channel.platform, channel.id, chat, thread.map(str::to_owned));
        let key = format!("send:{}:{}", ctx.turn_id, ctx.call_id);
        self.store
            .chat()
            .enqueue_outbox(ctx.tenant_id, &destination, &key, &OutboxPayload::text(message))
            .await
            .map_err(unavailable)?;
        Ok(json!({ "success": true, "queued": true, "target": target }))
    }
}

impl SimpleTool for SendMessageTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "send_message",
        ToolsetName::Messaging,
        "Post a message to a chat through one of your team's bots, e.g. to tell a group that a \
                task finished. `target` is platform:chat_id or platform:chat_id:thread (telegram:123456, \
                slack:C0123:1700000000.000100, wecom:zhangsan). Your answer in this conversation needs no tool: \
                use this only for other chats. action=list shows the bots you can use.",
    )
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "action": SendAction::schema(),
                "target": { "type": "string" },
                "message": { "type": "string" }
            }),
            &["action"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let answer = match SendAction::read(&args, "action") {
            Some(SendAction::Send) => self.send(ctx, &args).await?,
            Some(SendAction::List) => {
                let channels = self
                    .store
                    .chat()
                    .list_channels(ctx.tenant_id)
                    .await
                    .map_err(|e| ToolError::Unavailable(format!("cannot list the bots right now: {e}")))?;
                let bots: Vec<Value> = channels
                    .iter()
                    .filter(|c| c.status == ChannelStatus::Active)
                    .map(|c| json!({ "platform": c.platform, "bot": c.bot_username, "yours": c.agent_id == ctx.agent_id }))
                    .collect();
                json!({ "bots": bots })
            }
            None => return Err(refuse("`action` must be send or list")),
        };
        Ok(answer.to_string())
    }
}
