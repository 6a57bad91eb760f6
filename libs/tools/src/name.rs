//! A tool's name. The built-in tools' names are constants of the code; an MCP server's tools
//! are named at run time after the server and the tool, so their names are shared strings
//! freed with the tools (a server choosing thousands of fresh names cannot grow the process).

use std::borrow::Borrow;
use std::sync::Arc;

/// The name the model calls a tool by.
#[derive(Debug, Clone)]
pub enum ToolName {
    /// Fixed by the code: one of a set known when the program was built.
    Fixed(&'static str),
    /// Chosen at run time (an MCP server's tool).
    Chosen(Arc<str>),
}

impl ToolName {
    pub fn as_str(&self) -> &str {
        match self {
            Self::Fixed(name) => name,
            Self::Chosen(name) => name,
        }
    }

    /// The name when the code fixed it: fit to be kept past the tool (a metric label, a list
    /// of names that outlives the registry), since the set of them is bounded.
    pub fn fixed(&self) -> Option<&'static str> {
        match self {
            Self::Fixed(name) => Some(name),
            Self::Chosen(_) => None,
        }
    }
}

impl From<&'static str> for ToolName {
    fn from(name: &'static str) -> Self {
        Self::Fixed(name)
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for ToolName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ToolName {}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ToolName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

// Ordered and hashed as the text (as `Borrow<str>` requires): a map of them is looked up by
// `&str`.
impl PartialOrd for ToolName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for ToolName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ToolName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
