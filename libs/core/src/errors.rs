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
        /// A cron job's script failed (an exit code, a timeout, a path outside the scripts folder).
        ScriptFailed = "script_failed",
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
        // The API's own: the server, the key, the rate.
        InternalError = "internal_error",
        /// A response that failed with no code of its own (OpenAI's Responses name for it).
        ServerError = "server_error",
        ServiceUnavailable = "service_unavailable",
        InvalidApiKey = "invalid_api_key",
        // The admin plane: sign-in, console sessions, permissions.
        NotSignedIn = "not_signed_in",
        WrongCredentials = "wrong_credentials",
        AccountLocked = "account_locked",
        CsrfRejected = "csrf_rejected",
        PermissionDenied = "permission_denied",
        LinkInvalid = "link_invalid",
        /// An invitation to an address that has an account: its owner accepts signed in.
        SignInRequired = "sign_in_required",
        /// An invitation for another address than the signed-in person's.
        InvitationNotYours = "invitation_not_yours",
        /// Too many sign-ins are being checked at once: try again in a moment.
        SignInBusy = "sign_in_busy",
        AdminDisabled = "admin_disabled",
        KeyRestricted = "key_restricted",
        RateLimitExceeded = "rate_limit_exceeded",
        MethodNotAllowed = "method_not_allowed",
        // A request the API cannot take (400).
        BodyTooLarge = "body_too_large",
        InvalidJson = "invalid_json",
        InvalidContentType = "invalid_content_type",
        InvalidRequest = "invalid_request",
        InvalidType = "invalid_type",
        InvalidValue = "invalid_value",
        MissingRequiredParameter = "missing_required_parameter",
        EmptyMessages = "empty_messages",
        InvalidMessages = "invalid_messages",
        TooManyMessages = "too_many_messages",
        InvalidContent = "invalid_content",
        ContentTooDeep = "content_too_deep",
        ContentTooLong = "content_too_long",
        InvalidImageUrl = "invalid_image_url",
        InvalidFile = "invalid_file",
        UnsupportedContentType = "unsupported_content_type",
        UnsupportedInputItem = "unsupported_input_item",
        InvalidSessionId = "invalid_session_id",
        InvalidSessionKey = "invalid_session_key",
        InvalidIdempotencyKey = "invalid_idempotency_key",
        IdempotencyKeyReused = "idempotency_key_reused",
        ModelMismatch = "model_mismatch",
        InvalidSchedule = "invalid_schedule",
        InvalidTimezone = "invalid_timezone",
        InvalidUrl = "invalid_url",
        InvalidApprovalChoice = "invalid_approval_choice",
        PromptRefused = "prompt_refused",
        WrongCode = "wrong_code",
        PlatformRefused = "platform_refused",
        // An object that is not there (another tenant's looks the same), or not in that state.
        NotFound = "not_found",
        TenantNotFound = "tenant_not_found",
        MemberNotFound = "member_not_found",
        ModelNotFound = "model_not_found",
        SessionNotFound = "session_not_found",
        ChannelNotFound = "channel_not_found",
        JobNotFound = "job_not_found",
        WebhookNotFound = "webhook_not_found",
        EventHookNotFound = "event_hook_not_found",
        InteractionNotFound = "interaction_not_found",
        ResponseNotFound = "response_not_found",
        RunNotFound = "run_not_found",
        RunNotActive = "run_not_active",
        ApprovalNotPending = "approval_not_pending",
        // An object that exists already or is busy (409).
        SessionBusy = "session_busy",
        ChannelExists = "channel_exists",
        JobExists = "job_exists",
        WebhookExists = "webhook_exists",
        EventHookExists = "event_hook_exists",
        InteractionClosed = "interaction_closed",
        PairingLocked = "pairing_locked",
        MemberExists = "member_exists",
        LastOwner = "last_owner",
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_has_one_snake_case_name_that_reads_back() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let name = code.as_str();
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{name}");
            assert!(seen.insert(name), "{name} twice");
            assert_eq!(name.parse::<ErrorCode>(), Ok(*code));
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(name));
        }
        assert!("provider_error".parse::<ErrorCode>().is_err(), "a code is added to the list or not used");
    }
}
