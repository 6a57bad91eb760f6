//! Import circles: the strongly connected components (Tarjan's algorithm) of two or more
//! files in a crate's import graph. Each one is reported with its files and, for every edge
//! inside it, the names that edge carries.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::imports::Edges;

/// Files that import each other, directly or around a ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    pub files: Vec<String>,
    /// The edges between files of the circle, with the names each carries.
    pub edges: Vec<(String, String, Vec<String>)>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  circle: {}", self.files.join(" <-> "))?;
        for (from, to, names) in &self.edges {
            writeln!(f, "    {from} -> {to}: {}", names.join(", "))?;
        }
        Ok(())
    }
}

/// Tarjan's bookkeeping over nodes numbered `0..n`.
struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.next[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// The strongly connected components of the graph `next` (node -> successors).
fn components(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = next.len();
    let mut t = Tarjan {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    t.components
}

/// The circles of one crate's edges, each with its files sorted, in file order.
pub fn circles(edges: &Edges) -> Vec<Circle> {
    let files: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let files: Vec<&String> = files.into_iter().collect();
    let number: BTreeMap<&String, usize> = files.iter().enumerate().map(|(i, f)| (*f, i)).collect();
    let mut next = vec![Vec::new(); files.len()];
    for (from, to) in edges.keys() {
        next[number[from]].push(number[to]);
    }
    let mut found: Vec<Circle> = components(&next)
        .into_iter()
        .filter(|c| c.len() >= 2)
        .map(|c| {
            let mut members: Vec<String> = c.iter().map(|&i| files[i].clone()).collect();
            members.sort();
            let edges = edges
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|((a, b), names)| (a.clone(), b.clone(), names.iter().cloned().collect()))
                .collect();
            Circle { files: members, edges }
        })
        .collect();
    found.sort_by(|a, b| a.files.cmp(&b.files));
    found
}
