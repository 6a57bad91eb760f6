//! Every error code a client can see, in one list: the `code` of an API error
//! (`{"error": {"code": ...}}`) and the `error_code` of a turn's outcome (which the API, the
//! chat and the run events report as they are). Codes OpenAI defines keep OpenAI's names
//! (`invalid_api_key`, `rate_limit_exceeded`, `insufficient_quota`, `context_length_exceeded`);
//! the others are Hermes's own. A code is added here or nowhere.

use crate::kinds::vocabulary;

vocabulary! {
    /// A machine-readable error code.
    ErrorCode ("error code") {
        // How a turn ended without an answer.
        /// Stopped at the user's request (`/stop`, a cancelled run, a client gone).
        Cancelled = "cancelled",
        /// Replaced by a steering message that joined the running turn.
        Steered = "steered",
        /// The tool-loop guardrail stopped a model that repeated itself.
        GuardrailHalt = "guardrail_halt",
        IterationBudgetExhausted = "iteration_budget_exhausted",
        /// The model ended without an answer.
        AgentIncomplete = "agent_incomplete",
        StorageError = "storage_error",
        InvalidInput = "invalid_input",
        ProviderKeyUnavailable = "provider_key_unavailable",
        TurnRetriesExhausted = "turn_retries_exhausted",
        InactivityTimeout = "inactivity_timeout",
        TurnTimeout = "turn_timeout",
        // What the model provider answered (see `hermes_llm::ErrorClass`).
        /// The tenant's spending cap (or a provider's quota error, as OpenAI names it).
        InsufficientQuota = "insufficient_quota",
        ProviderRateLimited = "provider_rate_limited",
        ProviderQuotaExhausted = "provider_quota_exhausted",
        ProviderAuthFailed = "provider_auth_failed",
        ContextLengthExceeded = "context_length_exceeded",
        ProviderPayloadTooLarge = "provider_payload_too_large",
        ProviderModelNotFound = "provider_model_not_found",
        ContentFiltered = "content_filtered",
        ProviderThinkingSignature = "provider_thinking_signature",
        ProviderOverloaded = "provider_overloaded",
        ProviderServerError = "provider_server_error",
        ProviderTimeout = "provider_timeout",
        ProviderUnreachable = "provider_unreachable",
        ProviderProtocolError = "provider_protocol_error",
        ProviderBadRequest = "provider_bad_request",
        ProviderKeyNotAllowed = "provider_key_not_allowed",
        // The API's own.
        InternalError = "internal_error",
        /// A response that failed with no code of its own (OpenAI's Responses name for it).
        ServerError = "server_error",
        ServiceUnavailable = "service_unavailable",
        InvalidApiKey = "invalid_api_key",
        RateLimitExceeded = "rate_limit_exceeded",
        BodyTooLarge = "body_too_large",
        InvalidJson = "invalid_json",
        InvalidValue = "invalid_value",
        NotFound = "not_found",
    }
}
