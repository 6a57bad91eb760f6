//! The figures of a run, and their comparison with a committed baseline: a figure worse than
//! its baseline by more than the tolerance is called out as a regression.

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
}

/// The committed reference: figures of one run on the reference machine kind, and how far a
/// figure may move the wrong way before it counts as a regression.
#[derive(Debug, Serialize, Deserialize)]
pub struct Baseline {
    pub note: String,
    pub tolerance: f64,
    pub figures: BTreeMap<String, f64>,
}

impl Baseline {
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    pub fn of(figures: &Figures, tolerance: f64, note: String) -> Self {
        Self { note, tolerance, figures: figures.iter().map(|(n, f)| (n.to_owned(), f.value)).collect() }
    }
}

/// How one figure compares with its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Within,
    Regressed,
    New,
}

pub fn verdict(figure: Figure, base: Option<f64>, tolerance: f64) -> Verdict {
    let Some(base) = base else { return Verdict::New };
    let worse = match figure.better {
        Better::Lower => figure.value > base * (1.0 + tolerance),
        Better::Higher => figure.value < base * (1.0 - tolerance),
    };
    let better = match figure.better {
        Better::Lower => figure.value < base,
        Better::Higher => figure.value > base,
    };
    if worse {
        Verdict::Regressed
    } else if better {
        Verdict::Better
    } else {
        Verdict::Within
    }
}

/// Prints every figure beside its baseline; returns the names of the regressed ones.
pub fn compare(figures: &Figures, baseline: Option<&Baseline>) -> Vec<String> {
    let tolerance = baseline.map_or(0.0, |b| b.tolerance);
    println!("\n{:<28} {:>12} {:>12} {:>9}  verdict", "figure", "now", "baseline", "change");
    let mut regressed = Vec::new();
    for (name, figure) in figures.iter() {
        let base = baseline.and_then(|b| b.figures.get(name).copied());
        let v = verdict(figure, base, tolerance);
        let (base_text, change) = match base {
            Some(b) if b != 0.0 => (format!("{b:.2}"), format!("{:+.0}%", (figure.value / b - 1.0) * 100.0)),
            Some(b) => (format!("{b:.2}"), String::new()),
            None => ("-".to_owned(), String::new()),
        };
        let word = match v {
            Verdict::Better => "better",
            Verdict::Within => "within tolerance",
            Verdict::Regressed => "REGRESSED",
            Verdict::New => "no baseline",
        };
        println!("{name:<28} {:>12.2} {base_text:>12} {change:>9}  {word}", figure.value);
        if v == Verdict::Regressed {
            regressed.push(name.to_owned());
        }
    }
    regressed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_regresses_only_past_the_tolerance_in_its_bad_direction() {
        let latency = |value| Figure { value, better: Better::Lower };
        let rate = |value| Figure { value, better: Better::Higher };
        assert_eq!(verdict(latency(12.0), Some(10.0), 0.25), Verdict::Within);
        assert_eq!(verdict(latency(12.6), Some(10.0), 0.25), Verdict::Regressed);
        assert_eq!(verdict(latency(8.0), Some(10.0), 0.25), Verdict::Better);
        assert_eq!(verdict(rate(70.0), Some(100.0), 0.25), Verdict::Regressed);
        assert_eq!(verdict(rate(80.0), Some(100.0), 0.25), Verdict::Within);
        assert_eq!(verdict(rate(80.0), None, 0.25), Verdict::New);
    }
}
