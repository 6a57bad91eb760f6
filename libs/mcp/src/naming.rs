//! The names an agent's MCP tools are offered by: upstream's `mcp_<server>_<tool>`, unless two
//! of the agent's servers' tools would have the same one (server `a`'s `b_c` and server
//! `a_b`'s `c`, or tools `a-b` and `a.b` of one server). Then each of them is named with the
//! tag of its server's and its own names, so neither takes the calls meant for the other,
//! whatever order the servers come in. A name shared even so is given to none of them.

use std::collections::HashMap;

use crate::spec::{distinct_tool_name, sanitize, tool_name};

/// A name given to a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    pub name: String,
    /// Not upstream's plain name (tagged because shared, or cut because too long): the model
    /// reads whose tool it is in its description.
    pub tagged: bool,
}

/// The names of `wanted` (server, its name for the tool), in order; `None` for one whose name
/// would still be another's.
pub(crate) fn assign(wanted: &[(&str, &str)]) -> Vec<Option<Given>> {
    let plain: Vec<String> = wanted.iter().map(|(server, tool)| tool_name(server, tool)).collect();
    let once = counts(&plain);
    let named: Vec<Given> = wanted
        .iter()
        .zip(&plain)
        .map(|((server, tool), name)| {
            if once.get(name.as_str()).is_some_and(|n| *n > 1) {
                Given { name: distinct_tool_name(server, tool), tagged: true }
            } else {
                let cut = *name != format!("mcp_{}_{}", sanitize(server), sanitize(tool));
                Given { name: name.clone(), tagged: cut }
            }
        })
        .collect();
    let names: Vec<String> = named.iter().map(|g| g.name.clone()).collect();
    let twice = counts(&names);
    named.into_iter().map(|given| twice.get(given.name.as_str()).is_some_and(|n| *n == 1).then_some(given)).collect()
}

fn counts(names: &[String]) -> HashMap<&str, usize> {
    let mut counts = HashMap::new();
    for name in names {
        *counts.entry(name.as_str()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::valid_tool_name;

    fn names(wanted: &[(&str, &str)]) -> Vec<Option<String>> {
        assign(wanted).into_iter().map(|g| g.map(|g| g.name)).collect()
    }

    #[test]
    fn names_that_meet_are_each_tagged_whatever_the_order_and_the_rest_stay_upstreams() {
        let one = names(&[("a", "b_c"), ("a", "status"), ("a_b", "c")]);
        let other = names(&[("a_b", "c"), ("a", "b_c"), ("a", "status")]);
        let (trusted, hostile) = (distinct_tool_name("a", "b_c"), distinct_tool_name("a_b", "c"));
        assert_ne!(trusted, hostile);
        assert_eq!(one, [Some(trusted.clone()), Some("mcp_a_status".into()), Some(hostile.clone())]);
        assert_eq!(other, [Some(hostile), Some(trusted), Some("mcp_a_status".into())]);
        assert!(assign(&[("a", "b_c"), ("a_b", "c")]).iter().flatten().all(|g| g.tagged));
        assert_eq!(assign(&[("a", "status")])[0], Some(Given { name: "mcp_a_status".into(), tagged: false }));
    }

    #[test]
    fn long_and_odd_names_become_ones_providers_take_and_a_name_shared_even_tagged_goes_to_none() {
        let long = "x".repeat(64);
        let given = assign(&[("a-server-name-of-forty-characters-123456", &long), ("s", "naïve tool/ü")]);
        for g in given.iter().flatten() {
            assert!(valid_tool_name(&g.name), "{}", g.name);
        }
        assert!(given[0].as_ref().is_some_and(|g| g.tagged && g.name.len() == 64));
        assert_eq!(given[1], Some(Given { name: "mcp_s_na_ve_tool__".into(), tagged: false }));
        // A tool named like a wrapper of its own server: the same server and name, so the same tag.
        assert_eq!(names(&[("s", "list_resources"), ("s", "list_resources")]), [None, None]);
    }
}
