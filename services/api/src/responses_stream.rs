//! Streaming a response (`"stream": true` on `POST /v1/responses`) as the Responses API's
//! server-sent events, in upstream Hermes' order with OpenAI's content-part events added so the
//! official SDKs' stream accumulators work: `response.created`, `response.in_progress`, each
//! model call's reasoning as a `reasoning` item (`reasoning_summary_part.added`,
//! `reasoning_summary_text.delta`..., closed by whatever comes next), the message item
//! (`output_item.added`, `content_part.added`, `output_text.delta`...), each tool
//! call as a `function_call` item and its `function_call_output`, then `output_text.done`,
//! `content_part.done`, `output_item.done` and the terminal `response.completed` (or
//! `response.failed` / `response.incomplete`) with the full object. Every event carries a
//! `sequence_number` counting from 0.

use std::collections::HashMap;
use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::mpsc;

use hermes_core::{TurnEventKind, TurnOutcome};
use hermes_store::{Store, TurnStatus};
use hermes_wire::v1::{
    ContentPart, IncompleteDetails, IncompleteReason, ItemStatus, OutputItem, ResponseEvent, ResponseStatus,
    ResponseStreamEvent, SummaryPart,
};

use crate::completion::{Completion, interaction_text};
use crate::responses_object::{
    ResponseMeta, function_call_item, function_output_item, internal_tool, message_id, message_item, reasoning_id,
    reasoning_item, response_object, response_status,
};
use crate::wait::Next;

/// Writes numbered events; `false` once the client has gone.
struct Emitter {
    tx: mpsc::Sender<Result<Event, Infallible>>,
    sequence: u64,
}

impl Emitter {
    async fn send(&mut self, event: ResponseEvent) -> bool {
        let name = event.name();
        let numbered = ResponseStreamEvent { event, sequence_number: self.sequence };
        self.sequence += 1;
        let Ok(event) = Event::default().event(name).json_data(numbered) else { return false };
        self.tx.send(Ok(event)).await.is_ok()
    }
}

/// The output items as they open and close.
#[derive(Default)]
struct Items {
    next_index: usize,
    /// The assistant message's output index, once its first text arrived.
    message: Option<usize>,
    text: String,
    /// Open function calls: output index, name, arguments.
    calls: HashMap<String, (usize, String, String)>,
    /// The open reasoning item: output index, id, text so far.
    reasoning: Option<(usize, String, String)>,
    /// How many reasoning items were opened.
    reasoned: usize,
}

impl Items {
    fn claim_index(&mut self) -> usize {
        self.next_index += 1;
        self.next_index - 1
    }
}

pub(crate) fn stream(
    completion: Completion,
    meta: ResponseMeta,
    store: Store,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let keepalive = completion.keepalive;
    let (tx, mut rx) = mpsc::channel::<Result<Event, Infallible>>(64);
    hermes_telemetry::tasks::spawn("api_responses_stream", async move {
        let closed = tx.clone();
        let timeout = completion.timeout;
        tokio::select! {
            () = closed.closed() => tracing::info!("client left the response stream"),
            r = tokio::time::timeout(timeout, pump(completion, meta, store, Emitter { tx, sequence: 0 })) => {
                if r.is_err() {
                    tracing::warn!("response stream reached the turn timeout");
                }
            }
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Sse::new(stream).keep_alive(KeepAlive::new().interval(keepalive).text("keepalive"))
}

/// A piece of reasoning, in a reasoning item opened for it if none is open.
async fn reasoning_delta(out: &mut Emitter, items: &mut Items, meta: &ResponseMeta, delta: &str) -> bool {
    if items.reasoning.is_none() {
        let (index, id) = (items.claim_index(), reasoning_id(meta.turn, items.reasoned));
        items.reasoned += 1;
        let item = reasoning_item(id.clone(), None, ItemStatus::InProgress);
        let part = SummaryPart::SummaryText { text: String::new() };
        let opened = out.send(ResponseEvent::ItemAdded { output_index: index, item }).await
            && out
                .send(ResponseEvent::SummaryPartAdded {
                    item_id: id.clone(),
                    output_index: index,
                    summary_index: 0,
                    part,
                })
                .await;
        if !opened {
            return false;
        }
        items.reasoning = Some((index, id, String::new()));
    }
    let Some((output_index, item_id, text)) = items.reasoning.as_mut() else { return true };
    text.push_str(delta);
    let delta = delta.to_owned();
    let (output_index, item_id) = (*output_index, item_id.clone());
    out.send(ResponseEvent::SummaryTextDelta { item_id, output_index, summary_index: 0, delta }).await
}

/// Closes the reasoning item, if one is open: whatever the model does next ends it.
async fn close_reasoning(out: &mut Emitter, items: &mut Items) -> bool {
    let Some((output_index, item_id, text)) = items.reasoning.take() else { return true };
    let part = SummaryPart::SummaryText { text: text.clone() };
    let done = reasoning_item(item_id.clone(), Some(&text), ItemStatus::Completed);
    out.send(ResponseEvent::SummaryTextDone { item_id: item_id.clone(), output_index, summary_index: 0, text }).await
        && out.send(ResponseEvent::SummaryPartDone { item_id, output_index, summary_index: 0, part }).await
        && out.send(ResponseEvent::ItemDone { output_index, item: done }).await
}

async fn text_delta(out: &mut Emitter, items: &mut Items, meta: &ResponseMeta, delta: &str) -> bool {
    if !close_reasoning(out, items).await {
        return false;
    }
    let item_id = message_id(meta.turn);
    let output_index = match items.message {
        Some(i) => i,
        None => {
            let i = items.claim_index();
            items.message = Some(i);
            let mut item = message_item(meta.turn, "", ItemStatus::InProgress);
            if let OutputItem::Message { content, .. } = &mut item {
                content.clear();
            }
            let part = ContentPart::text("");
            if !out.send(ResponseEvent::ItemAdded { output_index: i, item }).await
                || !out
                    .send(ResponseEvent::PartAdded {
                        item_id: item_id.clone(),
                        output_index: i,
                        content_index: 0,
                        part,
                    })
                    .await
            {
                return false;
            }
            i
        }
    };
    items.text.push_str(delta);
    out.send(ResponseEvent::TextDelta {
        item_id,
        output_index,
        content_index: 0,
        delta: delta.to_owned(),
        logprobs: Vec::new(),
    })
    .await
}

/// Closes the message item, if one was opened.
async fn close_message(out: &mut Emitter, items: &Items, meta: &ResponseMeta) -> bool {
    let Some(output_index) = items.message else { return true };
    let item_id = message_id(meta.turn);
    let text = items.text.clone();
    out.send(ResponseEvent::TextDone {
        item_id: item_id.clone(),
        output_index,
        content_index: 0,
        text: text.clone(),
        logprobs: Vec::new(),
    })
    .await
        && out
            .send(ResponseEvent::PartDone { item_id, output_index, content_index: 0, part: ContentPart::text(&text) })
            .await
        && out
            .send(ResponseEvent::ItemDone { output_index, item: message_item(meta.turn, &text, ItemStatus::Completed) })
            .await
}

async fn pump(mut completion: Completion, meta: ResponseMeta, store: Store, mut out: Emitter) {
    let created = Box::new(response_object(&meta, TurnStatus::Running, None, &[], None));
    if !out.send(ResponseEvent::Created { response: created.clone() }).await
        || !out.send(ResponseEvent::InProgress { response: created }).await
    {
        return;
    }
    let mut items = Items::default();
    let ended = loop {
        let sent = match completion.waiter.next().await {
            Next::Finished(outcome) => break Ok(outcome),
            Next::Waiting(interaction) => break Err(interaction),
            Next::Event(TurnEventKind::Delta { text }) => text_delta(&mut out, &mut items, &meta, &text).await,
            Next::Event(TurnEventKind::Reasoning { text }) => reasoning_delta(&mut out, &mut items, &meta, &text).await,
            Next::Event(TurnEventKind::ToolStarted { call_id, tool, arguments, .. }) if !internal_tool(&tool) => {
                tool_started(&mut out, &mut items, call_id, tool, arguments).await
            }
            // An internal tool shows nothing, but the reasoning before it is done all the same.
            Next::Event(TurnEventKind::ToolStarted { .. }) => close_reasoning(&mut out, &mut items).await,
            Next::Event(TurnEventKind::ToolCompleted { call_id, output, .. }) => {
                tool_completed(&mut out, &mut items, &call_id, &output).await
            }
            Next::Event(_) => continue,
        };
        if !sent {
            return;
        }
    };
    completion.guard.armed = false;
    if !close_reasoning(&mut out, &mut items).await {
        return;
    }
    let tenant = completion.guard.tenant;
    let (status, outcome, interaction) = match ended {
        Ok(outcome) => {
            let rest = unsent_text(&outcome, &items);
            if !rest.is_empty() && !text_delta(&mut out, &mut items, &meta, &rest).await {
                return;
            }
            let status = if outcome.error_code == Some(hermes_core::ErrorCode::Cancelled) {
                TurnStatus::Cancelled
            } else {
                TurnStatus::Completed
            };
            (status, Some(outcome), None)
        }
        Err(interaction) => {
            if !text_delta(&mut out, &mut items, &meta, &interaction_text(&interaction)).await {
                return;
            }
            (TurnStatus::Waiting, None, Some(interaction))
        }
    };
    if !close_message(&mut out, &items, &meta).await {
        return;
    }
    let messages = store.conversations().turn_messages(tenant, meta.turn).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the turn's tool calls for the final response");
        Vec::new()
    });
    let mut response = Box::new(response_object(&meta, status, outcome.as_ref(), &messages, interaction.as_ref()));
    let last = match response_status(status, outcome.as_ref()) {
        ResponseStatus::Completed => ResponseEvent::Completed { response },
        ResponseStatus::Incomplete => ResponseEvent::Incomplete { response },
        ResponseStatus::InProgress => {
            // The turn waits for the user: this stream ends here; answering resumes the turn.
            response.status = ResponseStatus::Incomplete;
            response.incomplete_details = Some(IncompleteDetails { reason: IncompleteReason::InteractionRequired });
            ResponseEvent::Incomplete { response }
        }
        _ => ResponseEvent::Failed { response },
    };
    let _ = out.send(last).await;
}

/// A tool call as a new output item; whatever the model reasoned before it is done.
async fn tool_started(out: &mut Emitter, items: &mut Items, call_id: String, tool: String, arguments: String) -> bool {
    if !close_reasoning(out, items).await {
        return false;
    }
    let index = items.claim_index();
    let item = function_call_item(&call_id, &tool, &arguments, ItemStatus::InProgress);
    items.calls.insert(call_id, (index, tool, arguments));
    out.send(ResponseEvent::ItemAdded { output_index: index, item }).await
}

/// A tool's result as two output items after its call's; `false` once the client is gone.
/// A completion without its start (an internal tool, a lost event) is dropped.
async fn tool_completed(out: &mut Emitter, items: &mut Items, call_id: &str, output: &str) -> bool {
    let Some((index, name, arguments)) = items.calls.remove(call_id) else { return true };
    let done = function_call_item(call_id, &name, &arguments, ItemStatus::Completed);
    let result = function_output_item(call_id, output);
    let result_index = items.claim_index();
    out.send(ResponseEvent::ItemDone { output_index: index, item: done }).await
        && out.send(ResponseEvent::ItemAdded { output_index: result_index, item: result.clone() }).await
        && out.send(ResponseEvent::ItemDone { output_index: result_index, item: result }).await
}

/// Text of the answer the events did not carry (a lost event, or a resumed attempt); for an
/// answer with no text at all, its error.
fn unsent_text(outcome: &TurnOutcome, items: &Items) -> String {
    let rest = match outcome.content.strip_prefix(items.text.as_str()) {
        Some(rest) => rest.to_owned(),
        None if items.text.is_empty() => outcome.content.clone(),
        None => String::new(),
    };
    if rest.is_empty() && items.message.is_none() { outcome.error.clone().unwrap_or_default() } else { rest }
}
