//! The figures of a run: printed, and written (`--write-figures`) for a paired comparison
//! ([`super::pairs`]).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub value: f64,
    pub better: Better,
}

/// Figures by name, in the order they were measured.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Figures {
    order: Vec<String>,
    values: BTreeMap<String, Figure>,
}

impl Figures {
    pub fn add(&mut self, name: &str, value: f64, better: Better) {
        if !self.values.contains_key(name) {
            self.order.push(name.to_owned());
        }
        self.values.insert(name.to_owned(), Figure { value, better });
    }

    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).map(|f| f.value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Figure)> {
        self.order.iter().filter_map(|n| self.values.get(n).map(|f| (n.as_str(), *f)))
    }

    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Prints every figure.
    pub fn print(&self) {
        println!("\n{:<28} {:>12}", "figure", "value");
        for (name, figure) in self.iter() {
            println!("{name:<28} {:>12.2}", figure.value);
        }
    }
}
