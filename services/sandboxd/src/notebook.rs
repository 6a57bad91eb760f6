//! The text of Jupyter notebooks (`.ipynb`, JSON): each cell in order as `# [markdown]`,
//! `# [code]` or `# [raw]` and its source; after a code cell its outputs under `# [output]`:
//! stream text, the `text/plain` of results and displays, `ename: evalue` of errors, and
//! `[image output]` (or `[text/html output]`, ...) where only a picture or markup was kept,
//! never its base64. Runs only in the extractor child (`extract.rs`).

use serde_json::Value;

/// The most characters kept of one output (a training loop's log can be megabytes).
const MAX_OUTPUT_CHARS: usize = 20_000;

/// A notebook's cells as text; `None` when it is not a notebook.
pub fn notebook_text(bytes: &[u8]) -> Option<String> {
    let notebook: Value = serde_json::from_slice(bytes).ok()?;
    // nbformat 4 keeps `cells`; nbformat 3 kept them in `worksheets`.
    let cells: Vec<&Value> = match notebook.get("cells").and_then(Value::as_array) {
        Some(cells) => cells.iter().collect(),
        None => notebook
            .get("worksheets")?
            .as_array()?
            .iter()
            .filter_map(|w| w.get("cells").and_then(Value::as_array))
            .flatten()
            .collect(),
    };
    let mut out = String::new();
    for cell in cells {
        let kind = match cell.get("cell_type").and_then(Value::as_str) {
            Some("markdown" | "heading") => "markdown",
            Some("code") => "code",
            _ => "raw",
        };
        let source = cell.get("source").or_else(|| cell.get("input")).map(joined).unwrap_or_default();
        out.push_str(&format!("# [{kind}]\n{}\n", source.trim_end()));
        let outputs = cell.get("outputs").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let shown: Vec<String> = outputs.iter().filter_map(output_text).filter(|t| !t.is_empty()).collect();
        if !shown.is_empty() {
            out.push_str(&format!("# [output]\n{}\n", shown.join("\n")));
        }
        out.push('\n');
    }
    Some(out)
}

/// A notebook string: one string, or a list of lines to join.
fn joined(text: &Value) -> String {
    match text {
        Value::String(s) => s.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// What one output shows as text.
fn output_text(output: &Value) -> Option<String> {
    let text = match output.get("output_type").and_then(Value::as_str)? {
        "stream" => joined(output.get("text")?),
        "error" | "pyerr" => {
            let field = |k| output.get(k).and_then(Value::as_str).unwrap_or_default();
            format!("{}: {}", field("ename"), field("evalue"))
        }
        // nbformat 3 kept the data at the output's top level.
        _ => rich_output(output.get("data").unwrap_or(output)),
    };
    Some(cut(text.trim_end()))
}

/// The `text/plain` of a result or display, and a mark for each picture or other rich form.
fn rich_output(data: &Value) -> String {
    let Some(data) = data.as_object() else { return String::new() };
    let mut parts = Vec::new();
    if data.keys().any(|k| k.starts_with("image/") || matches!(k.as_str(), "png" | "jpeg" | "svg")) {
        parts.push("[image output]".to_owned());
    }
    match data.get("text/plain").or_else(|| data.get("text")) {
        Some(plain) => parts.push(joined(plain)),
        None if parts.is_empty() => {
            if let Some(kind) = data.keys().find(|k| k.contains('/')) {
                parts.push(format!("[{kind} output]"));
            }
        }
        None => {}
    }
    parts.join("\n")
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((at, _)) => format!("{}\n[output cut at {MAX_OUTPUT_CHARS} characters]", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::notebook_text;

    #[test]
    fn cells_come_out_in_order_with_their_text_outputs_and_no_base64() {
        let notebook = serde_json::json!({
            "nbformat": 4,
            "cells": [
                {"cell_type": "markdown", "source": ["# Sales\n", "By quarter."]},
                {"cell_type": "code", "source": "print('hi')\ndf.sum()", "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
                    {"output_type": "execute_result", "data": {"text/plain": ["42"]}},
                    {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgoAAAANSUhEUg==", "text/plain": "<Figure>"}},
                    {"output_type": "display_data", "data": {"text/html": "<table></table>"}},
                    {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": ["\u{1b}[31m..."]}
                ]},
                {"cell_type": "raw", "source": "raw text"}
            ]
        });
        let text = notebook_text(notebook.to_string().as_bytes()).unwrap();
        assert_eq!(
            text,
            "# [markdown]\n# Sales\nBy quarter.\n\n\
             # [code]\nprint('hi')\ndf.sum()\n\
             # [output]\nhi\n42\n[image output]\n<Figure>\n[text/html output]\nZeroDivisionError: division by zero\n\n\
             # [raw]\nraw text\n\n"
        );
        assert!(!text.contains("iVBOR"), "no base64 reaches the model");
        assert_eq!(notebook_text(b"{\"not\": \"a notebook\"}"), None);
        assert_eq!(notebook_text(b"{ truncated"), None);
    }

    #[test]
    fn a_huge_output_is_cut() {
        let log = "step\n".repeat(100_000);
        let notebook = serde_json::json!({"cells": [{"cell_type": "code", "source": "train()", "outputs": [
            {"output_type": "stream", "text": log}
        ]}]});
        let text = notebook_text(notebook.to_string().as_bytes()).unwrap();
        assert!(text.len() < 25_000, "{}", text.len());
        assert!(text.contains("[output cut at 20000 characters]"));
    }
}
