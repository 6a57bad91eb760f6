//! `todo`: the agent's own task list for a session. Omit `todos` to read it; give `todos` to
//! replace it, or with `merge` to update items by id and append new ones. Every call answers
//! with the whole list. Kept in Postgres, so it survives worker restarts and follows the
//! conversation into a compacted session.

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_store::Store;
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema};

pub(crate) const MAX_ITEMS: usize = 256;
pub(crate) const MAX_CONTENT_CHARS: usize = 4_000;
const STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "cancelled"];
const TRUNCATED: &str = "… [truncated]";

pub(crate) struct TodoTool {
    pub store: Store,
}

fn field(item: &Value, key: &str) -> String {
    match item.get(key) {
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn cap(content: &str) -> String {
    if content.chars().count() <= MAX_CONTENT_CHARS {
        return content.to_owned();
    }
    let keep = MAX_CONTENT_CHARS - TRUNCATED.chars().count();
    format!("{}{TRUNCATED}", content.chars().take(keep).collect::<String>())
}

fn status_of(item: &Value) -> Option<String> {
    let status = field(item, "status").to_lowercase();
    STATUSES.contains(&status.as_str()).then_some(status)
}

/// An item as stored: `{id, content, status}` with defaults for what is missing or invalid.
fn normalise(item: &Value) -> Value {
    let id = Some(field(item, "id")).filter(|s| !s.is_empty()).unwrap_or_else(|| "?".into());
    let content = Some(field(item, "content")).filter(|s| !s.is_empty()).map_or("(no description)".into(), |c| cap(&c));
    json!({"id": id, "content": content, "status": status_of(item).unwrap_or_else(|| "pending".into())})
}

/// Later duplicates of an id win, in the position of the last one.
fn last_of_each_id(items: &[Value]) -> Vec<&Value> {
    items
        .iter()
        .enumerate()
        .filter(|(i, item)| {
            let id = Some(field(item, "id")).filter(|s| !s.is_empty()).unwrap_or_else(|| "?".into());
            !items[i + 1..]
                .iter()
                .any(|later| Some(field(later, "id")).filter(|s| !s.is_empty()).unwrap_or_else(|| "?".into()) == id)
        })
        .map(|(_, item)| item)
        .collect()
}

/// The list after writing `todos` to `current` (replacing it, or merging by id).
pub(crate) fn write(current: &[Value], todos: &[Value], merge: bool) -> Vec<Value> {
    let mut items: Vec<Value> = if merge {
        let mut items = current.to_vec();
        for todo in last_of_each_id(todos) {
            let id = field(todo, "id");
            if id.is_empty() {
                continue;
            }
            match items.iter_mut().find(|i| field(i, "id") == id) {
                Some(existing) => {
                    let content = field(todo, "content");
                    if !content.is_empty() {
                        existing["content"] = json!(cap(&content));
                    }
                    if let Some(status) = status_of(todo) {
                        existing["status"] = json!(status);
                    }
                }
                None => items.push(normalise(todo)),
            }
        }
        items
    } else {
        last_of_each_id(todos).into_iter().map(normalise).collect()
    };
    items.truncate(MAX_ITEMS);
    items
}

/// The whole list with counts, as every call answers.
fn answer(items: &[Value]) -> String {
    let count = |s: &str| items.iter().filter(|i| i["status"] == s).count();
    json!({
        "todos": items,
        "summary": {
            "total": items.len(),
            "pending": count("pending"),
            "in_progress": count("in_progress"),
            "completed": count("completed"),
            "cancelled": count("cancelled"),
        }
    })
    .to_string()
}

impl SimpleTool for TodoTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "todo",
        ToolsetName::Todo,
        "Manage your task list for this session. Use it for tasks of 3+ steps or when the user \
                gives several tasks. Call with no arguments to read the list. Writing: give `todos` to replace the \
                list, or `merge: true` to update items by id and add new ones. Keep one item in_progress at a \
                time and mark items completed as soon as they are done. Every call returns the whole list.",
    )
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "todos": {
                    "type": "array",
                    "description": "Items to write; omit to read.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string" },
                            "content": { "type": "string" },
                            "status": { "type": "string", "enum": STATUSES }
                        },
                        "required": ["id", "content", "status"]
                    }
                },
                "merge": { "type": "boolean", "description": "Update by id instead of replacing (default false)." }
            }),
            &[],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let unavailable = |e: hermes_store::StoreError| ToolError::Unavailable(format!("task list: {e}"));
        let current = self.store.conversations().todos(ctx.tenant_id, ctx.session_id).await.map_err(unavailable)?;
        let current = current.as_array().cloned().unwrap_or_default();
        let todos = match args.get("todos") {
            None | Some(Value::Null) => return Ok(answer(&current)),
            Some(Value::Array(todos)) => todos,
            Some(_) => {
                return Err(ToolError::RespondToModel("todos must be an array of {id, content, status}".into()));
            }
        };
        if let Some(bad) = todos.iter().find(|t| !t.is_object()) {
            return Err(ToolError::RespondToModel(format!("each todo must be an object, not {bad}")));
        }
        let merge = args.get("merge").and_then(Value::as_bool).unwrap_or(false);
        let items = write(&current, todos, merge);
        self.store
            .conversations()
            .set_todos(ctx.tenant_id, ctx.session_id, &Value::Array(items.clone()))
            .await
            .map_err(unavailable)?;
        Ok(answer(&items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, content: &str, status: &str) -> Value {
        json!({"id": id, "content": content, "status": status})
    }

    #[test]
    fn replacing_normalises_items_and_keeps_the_last_duplicate() {
        let todos =
            [item("1", "a", "pending"), item("2", "b", "bogus"), json!({"content": "c"}), item("1", "a2", "completed")];
        let items = write(&[], &todos, false);
        assert_eq!(items, vec![item("2", "b", "pending"), item("?", "c", "pending"), item("1", "a2", "completed")]);
    }

    #[test]
    fn merging_updates_by_id_and_appends_new_items_in_place() {
        let current = vec![item("1", "write", "in_progress"), item("2", "test", "pending")];
        let items = write(&current, &[json!({"id": "1", "status": "completed"}), item("3", "ship", "pending")], true);
        assert_eq!(
            items,
            vec![item("1", "write", "completed"), item("2", "test", "pending"), item("3", "ship", "pending")]
        );
    }

    #[test]
    fn long_content_and_long_lists_are_capped() {
        let items = write(&[], &[item("1", &"x".repeat(5_000), "pending")], false);
        let content = items[0]["content"].as_str().unwrap();
        assert_eq!(content.chars().count(), MAX_CONTENT_CHARS);
        assert!(content.ends_with(TRUNCATED));
        let many: Vec<Value> = (0..300).map(|i| item(&i.to_string(), "t", "pending")).collect();
        assert_eq!(write(&[], &many, false).len(), MAX_ITEMS);
    }
}
