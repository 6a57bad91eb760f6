//! Settings that take one of a few names. Each is a closed enum whose serde names are the
//! names the TOML file and `HERMES__SECTION__KEY` use, so a bad value fails at load time
//! with figment's error listing the allowed ones, and `--dump-config` prints the same names.

use serde::de::IntoDeserializer;
use serde::de::value::{Error as ValueError, StrDeserializer};
use serde::{Deserialize, Serialize};

/// Where tools that touch a shell or files run (`sandbox.backend`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBackend {
    /// A container per tenant-agent.
    #[default]
    Docker,
    /// bubblewrap on the worker's own machine.
    Local,
    /// A pod per tenant-agent.
    Kubernetes,
}

/// What happens to a turn when its API client goes away (`api.on_disconnect`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnDisconnect {
    /// Stop the turn, as upstream Hermes does.
    #[default]
    Interrupt,
    /// Let it finish in the background; the answer stays in the session.
    Finish,
}

/// How log lines are written (`telemetry.log_format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line.
    #[default]
    Json,
    /// For a terminal.
    Text,
}

/// The OTLP transport (`telemetry.otlp_protocol`, the values of `OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OtlpProtocol {
    #[serde(rename = "grpc")]
    Grpc,
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

/// How long Anthropic keeps cached prompt prefixes (`llm.anthropic_cache_ttl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnthropicCacheTtl {
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Costs more to write.
    #[serde(rename = "1h")]
    OneHour,
}

/// Reads a value by its wire name as the config loader does; the error lists the allowed
/// names (``unknown variant `podman`, expected one of `docker`, `local`, `kubernetes` ``).
fn by_name<'de, T: Deserialize<'de>>(name: &'de str) -> Result<T, ValueError> {
    let name: StrDeserializer<'de, ValueError> = name.into_deserializer();
    T::deserialize(name)
}

/// `FromStr` for command-line flags, with the loader's error. (No `From<&str>`: an unknown
/// name must be an error, never a quiet default.)
macro_rules! by_wire_name {
    ($($choice:ty),+) => {$(
        impl std::str::FromStr for $choice {
            type Err = ValueError;
            fn from_str(name: &str) -> Result<Self, ValueError> {
                by_name(name)
            }
        }
    )+};
}

by_wire_name!(SandboxBackend, OnDisconnect, LogFormat, AnthropicCacheTtl, OtlpProtocol);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_the_names_the_config_has_always_used() {
        assert_eq!("kubernetes".parse::<SandboxBackend>().unwrap(), SandboxBackend::Kubernetes);
        assert_eq!("local".parse::<SandboxBackend>().unwrap(), SandboxBackend::Local);
        assert_eq!("finish".parse::<OnDisconnect>().unwrap(), OnDisconnect::Finish);
        assert_eq!("text".parse::<LogFormat>().unwrap(), LogFormat::Text);
        assert_eq!("1h".parse::<AnthropicCacheTtl>().unwrap(), AnthropicCacheTtl::OneHour);
        assert_eq!("5m".parse::<AnthropicCacheTtl>().unwrap(), AnthropicCacheTtl::FiveMinutes);
        assert!("nonsense".parse::<OnDisconnect>().is_err(), "an unknown name is an error, not the default");
        let err = "podman".parse::<SandboxBackend>().unwrap_err().to_string();
        assert!(err.contains("podman") && err.contains("`docker`, `local`, `kubernetes`"), "{err}");
    }
}
