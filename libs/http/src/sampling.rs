//! The sampling and reasoning fields of an OpenAI request (`temperature`, `top_p`,
//! `max_tokens`, `reasoning_effort`, `service_tier`), checked and named when wrong. Whether
//! the agent allows them is the api's to decide (`hermes_core::ClientLimits`).

use serde_json::Value;

use crate::{ApiError, ErrorCode};
use hermes_core::{ClientLimits, ModelSettings, ReasoningEffort};

/// The raw fields, each with the name it came under where that varies.
pub struct Asked {
    pub temperature: Option<Value>,
    pub top_p: Option<Value>,
    pub max_tokens: (Option<Value>, &'static str),
    pub effort: (Option<Value>, &'static str),
    pub service_tier: Option<Value>,
}

fn invalid(param: &'static str, why: impl Into<String>) -> ApiError {
    ApiError::invalid_request(ErrorCode::InvalidValue, why.into()).with_param(param)
}

fn number(value: Option<Value>, param: &'static str) -> Result<Option<f64>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => {
            Err(ApiError::invalid_request(ErrorCode::InvalidType, format!("{param} must be a number"))
                .with_param(param))
        }
    }
}

fn count(value: Option<Value>, param: &'static str) -> Result<Option<u32>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => Err(invalid(param, format!("{param} must be a positive integer"))),
        },
        Some(_) => {
            Err(ApiError::invalid_request(ErrorCode::InvalidType, format!("{param} must be an integer"))
                .with_param(param))
        }
    }
}

fn text(value: Option<Value>, param: &'static str) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => {
            Err(ApiError::invalid_request(ErrorCode::InvalidType, format!("{param} must be a string"))
                .with_param(param))
        }
    }
}

/// The settings `asked` names, each in its range (`ModelSettings::check`).
pub fn requested(asked: Asked) -> Result<ModelSettings, ApiError> {
    let (max_value, max_param) = asked.max_tokens;
    let (effort_value, effort_param) = asked.effort;
    let reasoning_effort = text(effort_value, effort_param)?
        .map(|e| e.parse::<ReasoningEffort>().map_err(|e| invalid(effort_param, e.to_string())))
        .transpose()?;
    let fast = match text(asked.service_tier, "service_tier")?.as_deref() {
        None | Some("auto" | "default") => None,
        Some("priority") => Some(true),
        Some(other) => {
            return Err(invalid(
                "service_tier",
                format!("service_tier `{other}` is not offered (priority, auto or default)"),
            ));
        }
    };
    let settings = ModelSettings {
        temperature: number(asked.temperature, "temperature")?,
        top_p: number(asked.top_p, "top_p")?,
        max_output_tokens: count(max_value, max_param)?,
        reasoning_effort,
        thinking_budget: None,
        fast,
    };
    settings.check().map_err(|e| {
        let param = match e.field {
            "max_output_tokens" => max_param,
            other => other,
        };
        invalid(param, format!("{param} {}", e.why))
    })?;
    Ok(settings)
}

/// What a request asked, if the `limits` of an agent whose own settings are `agent` allow it
/// (`None`: it asked nothing).
pub fn allowed(
    limits: &ClientLimits,
    agent: &ModelSettings,
    asked: &ModelSettings,
) -> Result<Option<ModelSettings>, ApiError> {
    if asked.is_default() {
        return Ok(None);
    }
    limits.allow(agent, asked).map(|_| Some(*asked)).map_err(|e| {
        let param = if e.field == "max_tokens" { "max_tokens" } else { e.field };
        ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some(ErrorCode::InvalidValue),
            format!("{param}: {}", e.why),
        )
        .with_param(param)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(fields: Value) -> Asked {
        let f = |k: &str| fields.get(k).cloned();
        Asked {
            temperature: f("temperature"),
            top_p: f("top_p"),
            max_tokens: (f("max_tokens"), "max_tokens"),
            effort: (f("reasoning_effort"), "reasoning_effort"),
            service_tier: f("service_tier"),
        }
    }

    #[test]
    fn fields_are_read_in_range_and_named_when_wrong() {
        let got = requested(asked(json!({"temperature": 0.2, "top_p": 1, "max_tokens": 300,
            "reasoning_effort": "low", "service_tier": "priority"})))
        .unwrap();
        assert_eq!(
            got,
            ModelSettings {
                temperature: Some(0.2),
                top_p: Some(1.0),
                max_output_tokens: Some(300),
                reasoning_effort: Some(ReasoningEffort::Low),
                thinking_budget: None,
                fast: Some(true),
            }
        );
        assert_eq!(requested(asked(json!({"service_tier": "auto"}))).unwrap(), ModelSettings::default());
        for (fields, param) in [
            (json!({"temperature": "hot"}), "temperature"),
            (json!({"temperature": 9}), "temperature"),
            (json!({"top_p": 0}), "top_p"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"max_tokens": 1.5}), "max_tokens"),
            (json!({"reasoning_effort": "extreme"}), "reasoning_effort"),
            (json!({"service_tier": "flex"}), "service_tier"),
        ] {
            let err = requested(asked(fields.clone())).unwrap_err();
            assert_eq!(err.param, Some(param), "{fields}");
        }
    }
}
