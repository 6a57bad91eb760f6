//! Where a team secret bound to an agent may be put in a request to its hosts (issue 39): the
//! egress proxy swaps the placeholder for the value in headers always (never in cookies or
//! forwarding headers), and in the query string or one body field only when named here.

use serde::{Deserialize, Serialize};

/// A secret binding's placement rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretPlacement {
    /// Also in the query string (`?access_token=...`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub query: bool,
    /// Also in this top-level field of a JSON or form body; never anywhere else in a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_field: Option<String>,
    /// A request to the secret's hosts carrying this header (`authorization`) without the
    /// placeholder in it is refused: a credential planted by someone else cannot be used there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_header: Option<String>,
}

impl SecretPlacement {
    /// Whether the rules make sense: a header name that is one, a body field that is named.
    pub fn check(&self) -> Result<(), String> {
        if let Some(header) = &self.required_header {
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if header.is_empty() || !header.chars().all(token) {
                return Err(format!("required_header `{header}` is not a header name"));
            }
        }
        if self.body_field.as_deref().is_some_and(|f| f.trim().is_empty() || f.len() > 200) {
            return Err("body_field must name one top-level field".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_reads_upstreams_shape_and_refuses_what_is_not_a_header_or_field() {
        let p: SecretPlacement =
            serde_json::from_str(r#"{"query": true, "required_header": "Authorization"}"#).unwrap();
        assert!(p.query && p.check().is_ok());
        assert!(serde_json::from_str::<SecretPlacement>(r#"{"body": "all"}"#).is_err(), "unknown fields refused");
        let bad = SecretPlacement { required_header: Some("Author ization".into()), ..SecretPlacement::default() };
        assert!(bad.check().is_err());
        let blank = SecretPlacement { body_field: Some(" ".into()), ..SecretPlacement::default() };
        assert!(blank.check().is_err());
        assert_eq!(serde_json::to_string(&SecretPlacement::default()).unwrap(), "{}");
    }
}
