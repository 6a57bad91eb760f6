//! The W3C trace context a unit of work carries across processes: in AMQP headers, stored with
//! a turn (so a turn resumed by another worker continues its trace), in gRPC metadata to
//! sandboxd. Only the `traceparent` travels: `tracestate` is vendor data we never read.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A valid `traceparent` header value (version `00`): `00-<trace id>-<parent id>-<flags>`,
/// lowercase hex, neither id all zeros.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TraceParent(String);

/// The header (and AMQP header, and gRPC metadata key) the context travels in.
pub const TRACEPARENT: &str = "traceparent";

impl TraceParent {
    /// Parses a header value; anything else than a well-formed version-00 value is `None`
    /// (a caller's bad header starts a new trace rather than failing its request).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        let mut parts = value.split('-');
        let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        let valid = parts.next().is_none()
            && version == "00"
            && hex(trace, 32)
            && !zero(trace)
            && hex(parent, 16)
            && !zero(parent)
            && hex(flags, 2);
        valid.then(|| Self(value.to_owned()))
    }

    /// The 32-hex-digit trace id.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The 16-hex-digit id of the span this context names as parent.
    pub fn span_id(&self) -> &str {
        &self.0[36..52]
    }

    /// Whether the sender sampled the trace.
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.0[53..55], 16).is_ok_and(|f| f & 1 == 1)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for TraceParent {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value).ok_or_else(|| format!("not a W3C traceparent: {value:?}"))
    }
}

impl From<TraceParent> for String {
    fn from(value: TraceParent) -> Self {
        value.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_parses_into_its_parts() {
        let tp = TraceParent::parse(GOOD).unwrap();
        assert_eq!(tp.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.span_id(), "00f067aa0ba902b7");
        assert!(tp.sampled());
        assert!(!TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap().sampled());
    }

    #[test]
    fn malformed_or_zero_ids_are_refused() {
        for bad in [
            "",
            "garbage",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad).is_none(), "{bad:?} parsed");
        }
        assert!(serde_json::from_str::<TraceParent>("\"nope\"").is_err());
        assert_eq!(serde_json::from_str::<TraceParent>(&format!("\"{GOOD}\"")).unwrap().as_str(), GOOD);
    }
}
