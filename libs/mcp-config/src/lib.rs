//! An MCP server as an agent's configuration names it, in upstream Hermes's `mcp_servers`
//! shape: `command`/`args`/`env` for a stdio server, `url`/`headers` for streamable HTTP;
//! `timeout`, `connect_timeout`, `enabled`, and `tools` (`include`/`exclude` globs, `resources`,
//! `prompts`). `env` and `headers` values are secrets: stored sealed, never shown back.

use std::collections::BTreeMap;
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// Upstream's defaults: two minutes a call, one minute to connect.
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;
pub const DEFAULT_CONNECT_TIMEOUT_SECS: f64 = 60.0;

/// Which of a server's tools the agent gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolFilter {
    /// Only these (globs); when set, `exclude` is ignored, as upstream does.
    pub include: Vec<String>,
    /// All but these (globs).
    pub exclude: Vec<String>,
    /// The `list_resources`/`read_resource` wrappers, where the server has resources.
    pub resources: bool,
    /// The `list_prompts`/`get_prompt` wrappers, where the server has prompts.
    pub prompts: bool,
}

impl Default for ToolFilter {
    fn default() -> Self {
        Self { include: Vec::new(), exclude: Vec::new(), resources: true, prompts: true }
    }
}

/// Requests from the server to the agent's model (`sampling/createMessage`), with upstream's
/// caps (4,096 tokens, 30 s, 10 a minute). Off unless turned on: a hosted server's requests are
/// model calls billed to the tenant (upstream turns it on by default on a desktop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingSpec {
    pub enabled: bool,
    /// The model to answer with, on the agent's provider (unset: the agent's model).
    pub model: Option<String>,
    /// The most tokens one answer may take, whatever the server asks.
    pub max_tokens_cap: u32,
    /// Seconds one request may take.
    pub timeout: f64,
    /// Requests a minute, per tenant and server (counted across workers).
    pub max_rpm: u32,
    /// Upstream's bound on tool rounds; tool use in sampling is not offered, so kept as read.
    pub max_tool_rounds: u32,
    /// The models `model` may name (empty: any).
    pub allowed_models: Vec<String>,
    /// `debug`, `info` or `warning`: how each request is logged.
    pub log_level: String,
}

impl Default for SamplingSpec {
    fn default() -> Self {
        Self {
            enabled: false,
            model: None,
            max_tokens_cap: 4096,
            timeout: 30.0,
            max_rpm: 10,
            max_tool_rounds: 5,
            allowed_models: Vec::new(),
            log_level: "info".into(),
        }
    }
}

impl SamplingSpec {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Seconds a request may take.
    pub fn timeout(&self) -> Duration {
        seconds(Some(self.timeout), 30.0)
    }

    fn validate(&self) -> Result<(), SpecError> {
        if self.max_tokens_cap == 0 {
            return Err(SpecError("`sampling.max_tokens_cap` is a number of tokens above 0".into()));
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return Err(SpecError("`sampling.timeout` is a number of seconds above 0".into()));
        }
        if !matches!(self.log_level.as_str(), "debug" | "info" | "warning") {
            return Err(SpecError("`sampling.log_level` is debug, info or warning".into()));
        }
        match &self.model {
            Some(model) if !self.allowed_models.is_empty() && !self.allowed_models.contains(model) => {
                Err(SpecError(format!("`sampling.model` {model:?} is not among `sampling.allowed_models`")))
            }
            _ => Ok(()),
        }
    }
}

/// One server, as configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Seconds a tool call may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Seconds to connect and initialise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<f64>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub tools: ToolFilter,
    #[serde(default, skip_serializing_if = "SamplingSpec::is_default")]
    pub sampling: SamplingSpec,
}

fn yes() -> bool {
    true
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
}

/// A configuration that cannot work, said so the person fixing it knows what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

fn seconds(v: Option<f64>, default: f64) -> Duration {
    Duration::from_secs_f64(v.filter(|s| s.is_finite() && *s > 0.0).unwrap_or(default).min(3_600.0))
}

impl McpServerSpec {
    /// The server's transport, or why the configuration names none (or both).
    pub fn transport(&self) -> Result<Transport, SpecError> {
        match (&self.command, &self.url) {
            (Some(c), None) if !c.trim().is_empty() => Ok(Transport::Stdio),
            (None, Some(u)) if !u.trim().is_empty() => Ok(Transport::Http),
            (Some(_), Some(_)) => Err(SpecError("give either `command` (stdio) or `url` (HTTP), not both".into())),
            _ => Err(SpecError("give `command` for a stdio server or `url` for an HTTP one".into())),
        }
    }

    /// Checks everything that can be checked without connecting.
    pub fn validate(&self) -> Result<(), SpecError> {
        let transport = self.transport()?;
        if transport == Transport::Http {
            let url = self.url.as_deref().unwrap_or_default();
            let parsed = url::Url::parse(url).map_err(|_| SpecError(format!("`{url}` is not a URL")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(SpecError("an MCP server's url is http:// or https://".into()));
            }
            for name in self.headers.keys() {
                http::HeaderName::try_from(name.as_str())
                    .map_err(|_| SpecError(format!("`{name}` is not an HTTP header name")))?;
            }
        } else if !self.headers.is_empty() {
            return Err(SpecError("`headers` are for HTTP servers; a stdio server takes `env`".into()));
        }
        for (key, what) in [(self.timeout, "timeout"), (self.connect_timeout, "connect_timeout")] {
            if key.is_some_and(|s| !(s.is_finite() && s > 0.0)) {
                return Err(SpecError(format!("`{what}` is a number of seconds above 0")));
            }
        }
        self.sampling.validate()?;
        self.secret_refs()?;
        self.filter().map(|_| ())
    }

    pub fn timeout(&self) -> Duration {
        seconds(self.timeout, DEFAULT_TIMEOUT_SECS)
    }

    pub fn connect_timeout(&self) -> Duration {
        seconds(self.connect_timeout, DEFAULT_CONNECT_TIMEOUT_SECS)
    }

    /// The tool filter, compiled.
    pub fn filter(&self) -> Result<Filter, SpecError> {
        let build = |globs: &[String]| -> Result<Option<GlobSet>, SpecError> {
            if globs.is_empty() {
                return Ok(None);
            }
            let mut set = GlobSetBuilder::new();
            for g in globs {
                set.add(Glob::new(g).map_err(|e| SpecError(format!("`{g}` is not a glob: {e}")))?);
            }
            set.build().map(Some).map_err(|e| SpecError(e.to_string()))
        };
        Ok(Filter { include: build(&self.tools.include)?, exclude: build(&self.tools.exclude)? })
    }

    /// The names of the team's keys that `${NAME}` in `env` and `headers` values refer to.
    pub fn secret_refs(&self) -> Result<Vec<String>, SpecError> {
        let names = std::cell::RefCell::new(Vec::new());
        let note = |name: &str| {
            names.borrow_mut().push(name.to_owned());
            Ok(String::new())
        };
        for value in self.env.values().chain(self.headers.values()) {
            substitute(value, &note).map_err(SpecError)?;
        }
        let mut names = names.into_inner();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The configuration without its headers: whose `${NAME}`s go into the sandbox (a stdio
    /// server's environment, which the agent's own code can read: placeholders only).
    pub fn env_only(&self) -> Self {
        Self { headers: BTreeMap::new(), ..self.clone() }
    }

    /// The configuration without its env: whose `${NAME}`s are the team's keys themselves.
    pub fn headers_only(&self) -> Self {
        Self { env: BTreeMap::new(), ..self.clone() }
    }

    /// The configuration as it is shown back: every `env` and `headers` value masked.
    pub fn masked(&self) -> Self {
        let mask = |m: &BTreeMap<String, String>| m.keys().map(|k| (k.clone(), "***".to_owned())).collect();
        Self { env: mask(&self.env), headers: mask(&self.headers), ..self.clone() }
    }

    /// The secret values (`env` and `headers`), and each long word of them (the token of a
    /// `Bearer <token>` header), to keep out of anything the model or a log sees.
    pub fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = Vec::new();
        for value in self.env.values().chain(self.headers.values()) {
            values.extend(
                std::iter::once(value.as_str())
                    .chain(value.split_whitespace())
                    .filter(|v| v.len() >= 8)
                    .map(str::to_owned),
            );
        }
        // The longest first, so a whole value is masked before a word of it.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        values
    }
}

/// A compiled `tools` filter.
#[derive(Debug, Clone)]
pub struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl Filter {
    /// Whether the agent gets the server's tool `name` (include wins over exclude).
    pub fn allows(&self, name: &str) -> bool {
        match (&self.include, &self.exclude) {
            (Some(include), _) => include.is_match(name),
            (None, Some(exclude)) => !exclude.is_match(name),
            (None, None) => true,
        }
    }
}

/// Fills `${NAME}` in `value` with `lookup(NAME)` (upstream's `${VAR}`, here the tenant's
/// secrets); `$${` is a literal `${`. A name `lookup` does not know, or a `${` left open, is
/// an error naming it.
pub fn substitute(value: &str, lookup: &dyn Fn(&str) -> Result<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            out.push_str(&rest[..at - 1]);
            out.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after.find('}').ok_or_else(|| format!("`${{` without its `}}` in {value:?}"))?;
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.')) {
            return Err(format!("`${{{name}}}` is not a secret's name"));
        }
        out.push_str(&lookup(name)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A server's name as a tool-name component: anything but ASCII letters, digits and `_`
/// becomes `_` (upstream's rule: `my-api`/`query.data` gives `mcp_my_api_query_data`).
pub fn sanitize(component: &str) -> String {
    component.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The longest name a model provider takes for a tool (OpenAI's `^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME: usize = 64;

/// The name the model calls a server's tool by: `mcp_<server>_<tool>`, sanitised; one longer
/// than [`MAX_TOOL_NAME`] is cut and ends in the tag of the server's and the tool's own names.
pub fn tool_name(server: &str, tool: &str) -> String {
    let name = format!("mcp_{}_{}", sanitize(server), sanitize(tool));
    if name.len() <= MAX_TOOL_NAME { name } else { tagged(name, server, tool) }
}

/// The name of a server's tool when another of the agent's servers' tools would have the same
/// one (server `a`'s `b_c` and server `a_b`'s `c`): [`tool_name`] cut to leave room for the
/// tag of the server's and the tool's own names, so each keeps a name of its own, the same
/// whatever order the servers come in.
pub fn distinct_tool_name(server: &str, tool: &str) -> String {
    tagged(format!("mcp_{}_{}", sanitize(server), sanitize(tool)), server, tool)
}

/// `name` cut to `MAX_TOOL_NAME` with `_` and 8 hex digits of `server` and `tool` at its end.
fn tagged(mut name: String, server: &str, tool: &str) -> String {
    // FNV-1a: stable across processes and releases (a resumed turn calls the same names).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain([0]).chain(tool.bytes()) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    // `sanitize` leaves ASCII only: any byte is a char boundary.
    name.truncate(MAX_TOOL_NAME - 9);
    name.push_str(&format!("_{:08x}", hash >> 32));
    name
}

/// Whether `name` is a tool name model providers accept.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

/// Whether `name` may name a server (it becomes part of tool names and URLs).
pub fn valid_server_name(name: &str) -> bool {
    (1..=40).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> Result<McpServerSpec, String> {
        serde_json::from_value::<McpServerSpec>(json).map_err(|e| e.to_string())
    }

    #[test]
    fn upstreams_shape_is_read_and_checked() {
        let http = spec(serde_json::json!({
            "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abcdefgh"},
            "timeout": 30, "tools": {"include": ["create_*", "list_issues"], "prompts": false}
        }))
        .unwrap();
        assert_eq!(http.transport(), Ok(Transport::Http));
        assert_eq!(http.validate(), Ok(()));
        assert_eq!(http.timeout(), Duration::from_secs(30));
        assert_eq!(http.connect_timeout(), Duration::from_secs(60));
        assert!(http.enabled && http.tools.resources && !http.tools.prompts);
        let stdio = spec(serde_json::json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                             "env": {"GITHUB_TOKEN": "ghp_secret"}}))
        .unwrap();
        assert_eq!(stdio.transport(), Ok(Transport::Stdio));

        for (bad, says) in [
            (serde_json::json!({}), "give `command`"),
            (serde_json::json!({"command": "x", "url": "http://a/"}), "not both"),
            (serde_json::json!({"url": "ftp://a/"}), "http:// or https://"),
            (serde_json::json!({"url": "http://a/", "headers": {"bad header": "x"}}), "not an HTTP header name"),
            (serde_json::json!({"command": "x", "headers": {"a": "b"}}), "takes `env`"),
            (serde_json::json!({"url": "http://a/", "timeout": -1}), "above 0"),
            (serde_json::json!({"url": "http://a/", "tools": {"include": ["[oops"]}}), "not a glob"),
            (serde_json::json!({"url": "http://a/", "sampling": {"max_tokens_cap": 0}}), "above 0"),
            (
                serde_json::json!({"url": "http://a/", "sampling": {"model": "gpt-4o", "allowed_models": ["gpt-4o-mini"]}}),
                "not among",
            ),
        ] {
            let err = spec(bad.clone()).unwrap().validate().unwrap_err().0;
            assert!(err.contains(says), "{bad}: {err}");
        }
        assert!(spec(serde_json::json!({"url": "http://a/", "colour": "red"})).is_err(), "unknown keys are refused");
        let sampling =
            spec(serde_json::json!({"url": "http://a/", "sampling": {"enabled": true, "max_rpm": 2}})).unwrap();
        assert_eq!((sampling.sampling.max_tokens_cap, sampling.sampling.max_rpm), (4096, 2), "upstream's caps, as set");
        assert!(!http.sampling.enabled, "off unless turned on");
        assert!(!serde_json::to_string(&http).unwrap().contains("sampling"), "the default is not written back");
    }

    fn spec_open() -> McpServerSpec {
        spec(serde_json::json!({"command": "x", "env": {"TOKEN": "${TOKEN"}})).unwrap()
    }

    #[test]
    fn secrets_fill_their_names_and_an_unknown_or_open_one_is_an_error() {
        let lookup = |name: &str| match name {
            "GITHUB_TOKEN" => Ok("ghp_123".to_owned()),
            other => Err(format!("no {other}")),
        };
        assert_eq!(substitute("Bearer ${GITHUB_TOKEN}", &lookup), Ok("Bearer ghp_123".into()));
        assert_eq!(substitute("${GITHUB_TOKEN}:${GITHUB_TOKEN}", &lookup), Ok("ghp_123:ghp_123".into()));
        assert_eq!(substitute("plain $HOME and $${LITERAL}", &lookup), Ok("plain $HOME and ${LITERAL}".into()));
        assert_eq!(substitute("${NOPE}", &lookup), Err("no NOPE".into()));
        assert!(substitute("Bearer ${GITHUB_TOKEN", &lookup).unwrap_err().contains("without its `}`"));
        assert!(substitute("${a b}", &lookup).unwrap_err().contains("not a secret's name"));
        let spec = spec(serde_json::json!({"url": "http://a/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}",
                                            "X-Both": "${b}${GITHUB_TOKEN}"}}))
        .unwrap();
        assert_eq!(spec.secret_refs(), Ok(vec!["GITHUB_TOKEN".to_owned(), "b".to_owned()]));
        let open = spec_open();
        assert!(open.validate().unwrap_err().0.contains("without its `}`"), "checked when saved");
    }

    #[test]
    fn include_wins_over_exclude_and_globs_match_tool_names() {
        let both =
            spec(serde_json::json!({"url": "http://a/", "tools": {"include": ["get_*"], "exclude": ["get_secret"]}}));
        let filter = both.unwrap().filter().unwrap();
        assert!(filter.allows("get_secret") && filter.allows("get_issue") && !filter.allows("delete_repo"));
        let exclude = spec(serde_json::json!({"url": "http://a/", "tools": {"exclude": ["delete_*"]}})).unwrap();
        let filter = exclude.filter().unwrap();
        assert!(!filter.allows("delete_repo") && filter.allows("create_issue"));
    }

    #[test]
    fn names_are_sanitised_as_upstream_does_and_secrets_are_masked() {
        assert_eq!(tool_name("github", "create-issue"), "mcp_github_create_issue");
        assert_eq!(tool_name("my-api", "query.data"), "mcp_my_api_query_data");
        assert!(valid_server_name("my-api_2") && !valid_server_name("a b") && !valid_server_name(""));
        let long = tool_name("a-server-name-of-forty-characters-123456", "get_pull_request_review_comments");
        assert_eq!(long.len(), MAX_TOOL_NAME, "{long}");
        assert!(valid_tool_name(&long) && long.starts_with("mcp_a_server_name_of_forty_characters_123456_get_pu"));
        assert_eq!(long, tool_name("a-server-name-of-forty-characters-123456", "get_pull_request_review_comments"));
        assert_ne!(distinct_tool_name("a", "b_c"), distinct_tool_name("a_b", "c"));
        assert!(distinct_tool_name("a", "b_c").starts_with("mcp_a_b_c_") && !valid_tool_name("mcp a"));
        let secret =
            spec(serde_json::json!({"url": "http://a/", "headers": {"Authorization": "Bearer sk-123456"}})).unwrap();
        assert_eq!(secret.masked().headers["Authorization"], "***");
        assert_eq!(secret.secret_values(), ["Bearer sk-123456", "sk-123456"]);
    }
}
