//! Most tools are constants (name, toolset, description, traits), a parameters schema and one
//! async body. [`SimpleTool`] says those once and is a [`Tool`], so no tool repeats the trait's
//! boilerplate; [`Choice`] (made with [`choices!`](crate::choices)) turns an argument with a
//! closed set of names (`action`, `mode`) into an enum the tool matches on, and its schema.

use std::future::Future;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_core::ToolsetName;

use crate::{MAX_RESULT_CHARS, Tool, ToolCtx, ToolError, ToolTraits};

/// What a tool is and how the loop treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub toolset: ToolsetName,
    /// What the model is told the tool does.
    pub description: &'static str,
    pub traits: ToolTraits,
    /// See [`Tool::max_result_chars`].
    pub max_result_chars: Option<usize>,
}

impl ToolSpec {
    /// A mutating, parallel tool outside the sandbox whose large results are saved to files.
    pub const fn new(name: &'static str, toolset: ToolsetName, description: &'static str) -> Self {
        Self {
            name,
            toolset,
            description,
            traits: ToolTraits { read_only: false, sequential: false, refunds_iteration: false, sandboxed: false },
            max_result_chars: Some(MAX_RESULT_CHARS),
        }
    }

    pub const fn read_only(mut self) -> Self {
        self.traits.read_only = true;
        self
    }

    pub const fn sequential(mut self) -> Self {
        self.traits.sequential = true;
        self
    }

    pub const fn sandboxed(mut self) -> Self {
        self.traits.sandboxed = true;
        self
    }

    /// Its results are never saved to a file, however long.
    pub const fn never_spilled(mut self) -> Self {
        self.max_result_chars = None;
        self
    }
}

/// A tool told by a [`ToolSpec`], its parameters and one async body.
pub trait SimpleTool: Send + Sync {
    const SPEC: ToolSpec;
    /// The JSON schema of its arguments (`{"type": "object", ...}`).
    fn parameters(&self) -> Value;
    /// Runs the tool with the model's parsed arguments.
    fn run(&self, ctx: &ToolCtx, args: Value) -> impl Future<Output = Result<String, ToolError>> + Send;
}

impl<T: SimpleTool> Tool for T {
    fn name(&self) -> crate::ToolName {
        crate::ToolName::Fixed(T::SPEC.name)
    }

    fn toolset(&self) -> ToolsetName {
        T::SPEC.toolset
    }

    fn schema(&self) -> Value {
        json!({ "name": T::SPEC.name, "description": T::SPEC.description, "parameters": self.parameters() })
    }

    fn read_only(&self) -> bool {
        T::SPEC.traits.read_only
    }

    fn sequential(&self) -> bool {
        T::SPEC.traits.sequential
    }

    fn refunds_iteration(&self) -> bool {
        T::SPEC.traits.refunds_iteration
    }

    fn sandboxed(&self) -> bool {
        T::SPEC.traits.sandboxed
    }

    fn max_result_chars(&self) -> Option<usize> {
        T::SPEC.max_result_chars
    }

    fn call<'a>(&'a self, ctx: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(self.run(ctx, args))
    }
}

/// The schema of a tool's arguments: an object of `properties`, of which `required` must be
/// given (the list is left out when it is empty).
pub fn object_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// A closed set of names one argument takes; made by [`choices!`](crate::choices).
pub trait Choice: Sized + Copy + 'static {
    /// The wire names, in the order the schema lists them.
    const NAMES: &'static [&'static str];
    fn from_name(name: &str) -> Option<Self>;

    /// `args[key]` as one of the names; `None` when it is missing or anything else (the tool
    /// says what it accepts).
    fn read(args: &Value, key: &str) -> Option<Self> {
        args.get(key).and_then(Value::as_str).and_then(Self::from_name)
    }

    /// The argument's schema: `{"type": "string", "enum": [...]}`.
    fn schema() -> Value {
        json!({ "type": "string", "enum": Self::NAMES })
    }
}

/// An enum of unit variants with wire names, as a [`Choice`]:
/// `choices! { pub enum Mode { Replace = "replace", Patch = "patch" } }`.
#[macro_export]
macro_rules! choices {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $crate::Choice for $name {
            const NAMES: &'static [&'static str] = &[$($wire),+];

            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($wire => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    choices! {
        enum Mode { Replace = "replace", Patch = "patch" }
    }

    #[test]
    fn a_choice_reads_its_names_and_nothing_else_and_lists_them_for_the_schema() {
        assert_eq!(Mode::read(&json!({"mode": "patch"}), "mode"), Some(Mode::Patch));
        assert_eq!(Mode::read(&json!({"mode": "Patch"}), "mode"), None);
        assert_eq!(Mode::read(&json!({}), "mode"), None);
        assert_eq!(Mode::schema(), json!({"type": "string", "enum": ["replace", "patch"]}));
    }

    #[test]
    fn an_object_schema_lists_required_arguments_only_when_there_are_some() {
        let properties = json!({ "path": { "type": "string" } });
        assert_eq!(
            object_schema(properties.clone(), &["path"]),
            json!({ "type": "object", "properties": properties, "required": ["path"] })
        );
        assert_eq!(object_schema(properties.clone(), &[]), json!({ "type": "object", "properties": properties }));
    }
}
