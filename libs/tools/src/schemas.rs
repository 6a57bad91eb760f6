//! One copy of each tool schema in the process. Tools registered for each turn (memory,
//! todo, delegate_task, execute_code, the skill tools) build their schema anew each time, and
//! a schema is kilobytes of `Value`s: thousands of turns in flight each held their own copy
//! (77 MB at 2,000 in flight). A schema equal to the one last seen under its tool's name is
//! shared instead.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde_json::Value;

/// `schema` of tool `name` in OpenAI `tools` form, shared with every registration of an
/// equal schema that is still alive.
pub(crate) fn shared(name: &'static str, schema: Value) -> Arc<Value> {
    // Keyed by the static tool names: the map stays as small as the set of tools, and a
    // schema nobody holds any more is only a dead `Weak` until its name is seen again.
    static LAST_SEEN: LazyLock<Mutex<HashMap<&'static str, Weak<Value>>>> = LazyLock::new(Default::default);
    let wrapped = serde_json::json!({ "type": "function", "function": schema });
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
        let first = shared("schemas_test_tool", serde_json::json!({"name": "t", "description": "a"}));
        let again = shared("schemas_test_tool", serde_json::json!({"name": "t", "description": "a"}));
        assert!(Arc::ptr_eq(&first, &again), "an equal schema is shared");
        assert_eq!(again["type"], "function");
        assert_eq!(again["function"]["description"], "a");

        let changed = shared("schemas_test_tool", serde_json::json!({"name": "t", "description": "b"}));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert_eq!(changed["function"]["description"], "b", "a changed schema is never answered with an old one");
        assert_eq!(first["function"]["description"], "a", "holders of the old schema keep theirs");
    }
}
