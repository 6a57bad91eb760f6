//! One copy of each tool schema in the process. Tools registered for each turn (memory,
//! todo, delegate_task, execute_code, the skill tools) build their schema anew each time, and
//! a schema is kilobytes of `Value`s: thousands of turns in flight each held their own copy
//! (77 MB at 2,000 in flight). A schema equal to the one last seen under its tool's name is
//! shared instead. Only names the code fixed key it: a name chosen at run time (an MCP
//! server's tool) would leave an entry behind for every name a server invents.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde_json::Value;

use crate::ToolName;

static LAST_SEEN: LazyLock<Mutex<HashMap<&'static str, Weak<Value>>>> = LazyLock::new(Default::default);

/// How many tool names the process keeps schemas under (at most one per tool the code has).
pub fn shared_names() -> usize {
    LAST_SEEN.lock().map(|s| s.len()).unwrap_or(0)
}

/// `schema` of tool `name` in OpenAI `tools` form, shared with every registration of an
/// equal schema that is still alive (a fresh copy for a name chosen at run time).
pub(crate) fn shared(name: &ToolName, schema: Value) -> Arc<Value> {
    // Keyed by the fixed tool names: the map stays as small as the set of tools, and a
    // schema nobody holds any more is only a dead `Weak` until its name is seen again.
    let wrapped = serde_json::json!({ "type": "function", "function": schema });
    let Some(name) = name.fixed() else {
        return Arc::new(wrapped);
    };
    let Ok(mut seen) = LAST_SEEN.lock() else {
        return Arc::new(wrapped);
    };
    if let Some(known) = seen.get(name).and_then(Weak::upgrade)
        && *known == wrapped
    {
        return known;
    }
    let fresh = Arc::new(wrapped);
    seen.insert(name, Arc::downgrade(&fresh));
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_schemas_are_one_allocation_and_a_changed_one_is_its_own() {
        let first = shared(&ToolName::Fixed("schemas_test_tool"), serde_json::json!({"name": "t", "description": "a"}));
        let again = shared(&ToolName::Fixed("schemas_test_tool"), serde_json::json!({"name": "t", "description": "a"}));
        assert!(Arc::ptr_eq(&first, &again), "an equal schema is shared");
        assert_eq!(again["type"], "function");
        assert_eq!(again["function"]["description"], "a");

        let changed =
            shared(&ToolName::Fixed("schemas_test_tool"), serde_json::json!({"name": "t", "description": "b"}));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert_eq!(changed["function"]["description"], "b", "a changed schema is never answered with an old one");
        assert_eq!(first["function"]["description"], "a", "holders of the old schema keep theirs");
    }
}
