//! The page as the model reads it: Chromium's accessibility tree as an indented list of
//! `role "name"` lines, each element one can act on carrying a ref (`[ref=e3]`, used as `@e3`
//! by the other tools), as upstream's snapshots read. The default shows only those elements;
//! `full` shows headings, text and structure too.

use std::collections::HashMap;

use serde_json::Value;

/// Roles one can click, type into or choose.
const INTERACTIVE: [&str; 17] = [
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
];

/// Roles that only group others: shown in a full snapshot only when named.
const STRUCTURE: [&str; 9] =
    ["generic", "none", "presentation", "group", "Section", "div", "LineBreak", "InlineTextBox", "RootWebArea"];

/// A snapshot: its text and what each ref points at (a DOM node's backend id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub text: String,
    pub refs: HashMap<String, i64>,
}

struct Node<'a> {
    raw: &'a Value,
    children: Vec<&'a str>,
}

fn value_of<'a>(node: &'a Value, key: &str) -> &'a str {
    node[key]["value"].as_str().unwrap_or_default()
}

fn property<'a>(node: &'a Value, name: &str) -> Option<&'a Value> {
    node["properties"].as_array()?.iter().find(|p| p["name"] == name).map(|p| &p["value"]["value"])
}

/// The line of one node (without indentation), or `None` when it is not shown.
fn line(node: &Value, full: bool, next_ref: &mut usize, refs: &mut HashMap<String, i64>) -> Option<String> {
    if node["ignored"].as_bool() == Some(true) {
        return None;
    }
    let role = value_of(node, "role");
    let name = value_of(node, "name").trim();
    let interactive = INTERACTIVE.contains(&role);
    if !interactive && !full {
        return None;
    }
    if !interactive && (STRUCTURE.contains(&role) || (role == "StaticText" && name.is_empty())) {
        return None;
    }
    if role == "StaticText" {
        return Some(format!("text {name:?}"));
    }
    let mut out = if name.is_empty() { role.to_owned() } else { format!("{role} {name:?}") };
    if let Some(level) = property(node, "level").and_then(Value::as_i64) {
        out.push_str(&format!(" [level={level}]"));
    }
    if let Some(checked) = property(node, "checked").and_then(Value::as_str).filter(|c| *c != "false") {
        out.push_str(&format!(" [checked={checked}]"));
    }
    if property(node, "disabled").and_then(Value::as_bool) == Some(true) {
        out.push_str(" [disabled]");
    }
    let value = value_of(node, "value");
    if !value.is_empty() {
        out.push_str(&format!(" [value={value:?}]"));
    }
    if let (true, Some(id)) = (interactive, node["backendDOMNodeId"].as_i64()) {
        *next_ref += 1;
        let reference = format!("e{next_ref}");
        out.push_str(&format!(" [ref={reference}]"));
        refs.insert(reference, id);
    }
    Some(out)
}

/// Renders `Accessibility.getFullAXTree`'s nodes.
pub fn render(nodes: &[Value], full: bool) -> Snapshot {
    let by_id: HashMap<&str, Node<'_>> = nodes
        .iter()
        .filter_map(|n| {
            let children =
                n["childIds"].as_array().map(|c| c.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            Some((n["nodeId"].as_str()?, Node { raw: n, children }))
        })
        .collect();
    let Some(root) = nodes.first().and_then(|n| n["nodeId"].as_str()) else { return Snapshot::default() };
    let mut snapshot = Snapshot::default();
    let mut next_ref = 0;
    // Depth-first, in document order; a node not shown passes its depth to its children.
    let mut stack: Vec<(&str, usize)> = vec![(root, 0)];
    let mut lines = Vec::new();
    while let Some((id, depth)) = stack.pop() {
        let Some(node) = by_id.get(id) else { continue };
        let shown = line(node.raw, full, &mut next_ref, &mut snapshot.refs);
        let child_depth = match shown {
            Some(text) => {
                let indent = if full { "  ".repeat(depth) } else { String::new() };
                lines.push(format!("{indent}- {text}"));
                depth + 1
            }
            None => depth,
        };
        // A text node's own text boxes repeat it.
        if value_of(node.raw, "role") == "StaticText" {
            continue;
        }
        for child in node.children.iter().rev() {
            stack.push((child, child_depth));
        }
    }
    snapshot.text = lines.join("\n");
    snapshot
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(id: &str, role: &str, name: &str, children: &[&str], backend: i64) -> Value {
        json!({"nodeId": id, "ignored": false, "role": {"value": role}, "name": {"value": name},
               "childIds": children, "backendDOMNodeId": backend})
    }

    fn page() -> Vec<Value> {
        let mut heading = node("2", "heading", "Sign up", &["3"], 12);
        heading["properties"] = json!([{"name": "level", "value": {"value": 1}}]);
        let mut email = node("5", "textbox", "Email", &[], 15);
        email["value"] = json!({"value": "a@b.c"});
        vec![
            node("1", "RootWebArea", "Sign up", &["2", "4"], 1),
            heading,
            node("3", "StaticText", "Sign up", &[], 13),
            node("4", "generic", "", &["5", "6"], 14),
            email,
            node("6", "button", "Submit", &[], 16),
        ]
    }

    #[test]
    fn the_default_lists_what_can_be_acted_on_with_refs() {
        let snapshot = render(&page(), false);
        assert_eq!(snapshot.text, "- textbox \"Email\" [value=\"a@b.c\"] [ref=e1]\n- button \"Submit\" [ref=e2]");
        assert_eq!(snapshot.refs.get("e2"), Some(&16));
    }

    #[test]
    fn a_full_snapshot_shows_structure_and_text_indented() {
        let snapshot = render(&page(), true);
        assert_eq!(
            snapshot.text,
            "- heading \"Sign up\" [level=1]\n  - text \"Sign up\"\n- textbox \"Email\" [value=\"a@b.c\"] [ref=e1]\n- button \"Submit\" [ref=e2]"
        );
    }
}
