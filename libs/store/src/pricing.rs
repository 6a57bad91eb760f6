//! Prices and the usage report (migration 0012). Calls are priced as they are recorded, by a
//! trigger, from `model_prices`; the report sums them per day (in the tenant's time zone),
//! agent or API key.

use chrono::NaiveDate;
use serde::Serialize;

use hermes_core::{AgentId, TenantId};

use crate::{Result, StoreError, views::Tenancy};

/// A model's price, in US dollars per million tokens, and for media models per unit billed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, sqlx::FromRow)]
pub struct ModelPrice {
    /// A model id, or a prefix ending in `*` (`gpt-4o*`).
    pub model: String,
    pub input: f64,
    pub output: f64,
    /// Cache reads; billed like other input when `None`.
    #[sqlx(rename = "cached")]
    pub cached_input: Option<f64>,
    /// Cache writes; billed like other input when `None`.
    #[sqlx(rename = "write")]
    pub cache_write: Option<f64>,
    /// Per picture made (image generation).
    pub per_image: Option<f64>,
    /// Per million characters spoken (text to speech).
    pub per_mchar: Option<f64>,
    /// Per minute of audio transcribed (speech to text).
    pub per_audio_minute: Option<f64>,
    /// What a call served on the provider's priority tier (`/fast`) costs over the token
    /// rates (at least 1); `None`: such a call is unpriced.
    pub priority_multiplier: Option<f64>,
}

/// How the report groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGroup {
    Day,
    Agent,
    Key,
}

/// One line of the report, as `/v1/usage` shows it.
pub use hermes_wire::v1::{UsageLine, UsageTotals};

impl Tenancy<'_> {
    /// Adds a tool call's duration to its turn's metering.
    pub async fn add_tool_time(
        self,
        tenant: TenantId,
        turn: hermes_core::TurnId,
        ms: i64,
        sandboxed: bool,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE turns SET tool_ms = tool_ms + $3, sandbox_ms = sandbox_ms + CASE WHEN $4 THEN $3 ELSE 0 END
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(ms)
        .bind(sandboxed)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(())
    }

    /// Sets (or replaces) a model's price; later calls use it.
    pub async fn set_model_price(self, price: &ModelPrice) -> Result<()> {
        let finite = [
            Some(price.input),
            Some(price.output),
            price.cached_input,
            price.cache_write,
            price.per_image,
            price.per_mchar,
            price.per_audio_minute,
            price.priority_multiplier,
        ];
        if finite.iter().flatten().any(|p| !p.is_finite() || *p < 0.0) || price.model.trim().is_empty() {
            return Err(StoreError::Invalid("prices are non-negative numbers".into()));
        }
        if price.priority_multiplier.is_some_and(|m| !(1.0..=100.0).contains(&m)) {
            return Err(StoreError::Invalid("a priority multiplier is between 1 and 100".into()));
        }
        sqlx::query(
            "INSERT INTO model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cached_input_usd_per_mtok,
                                       cache_write_usd_per_mtok, usd_per_image, usd_per_mchar, usd_per_audio_minute,
                                       priority_multiplier)
             VALUES ($1, $2::float8::numeric, $3::float8::numeric, $4::float8::numeric, $5::float8::numeric,
                     $6::float8::numeric, $7::float8::numeric, $8::float8::numeric, $9::float8::numeric)
             ON CONFLICT (model) DO UPDATE SET input_usd_per_mtok = EXCLUDED.input_usd_per_mtok,
                output_usd_per_mtok = EXCLUDED.output_usd_per_mtok,
                cached_input_usd_per_mtok = EXCLUDED.cached_input_usd_per_mtok,
                cache_write_usd_per_mtok = EXCLUDED.cache_write_usd_per_mtok,
                usd_per_image = EXCLUDED.usd_per_image, usd_per_mchar = EXCLUDED.usd_per_mchar,
                usd_per_audio_minute = EXCLUDED.usd_per_audio_minute,
                priority_multiplier = EXCLUDED.priority_multiplier, updated_at = now()",
        )
        .bind(price.model.trim())
        .bind(price.input)
        .bind(price.output)
        .bind(price.cached_input)
        .bind(price.cache_write)
        .bind(price.per_image)
        .bind(price.per_mchar)
        .bind(price.per_audio_minute)
        .bind(price.priority_multiplier)
        .execute(self.system_pool())
        .await?;
        Ok(())
    }

    pub async fn model_prices(self) -> Result<Vec<ModelPrice>> {
        let rows = sqlx::query(
            "SELECT model, input_usd_per_mtok::float8 AS input, output_usd_per_mtok::float8 AS output,
                    cached_input_usd_per_mtok::float8 AS cached, cache_write_usd_per_mtok::float8 AS write,
                    usd_per_image::float8 AS per_image, usd_per_mchar::float8 AS per_mchar,
                    usd_per_audio_minute::float8 AS per_audio_minute,
                    priority_multiplier::float8 AS priority_multiplier
             FROM model_prices ORDER BY model",
        )
        .fetch_all(self.system_pool())
        .await?;
        rows.iter().map(crate::rows::read::<ModelPrice>).collect()
    }

    /// The tenant's usage from `from` to `to` (days, inclusive, in the tenant's time zone),
    /// of one agent when given.
    pub async fn usage_report(
        self,
        tenant: TenantId,
        agent: Option<AgentId>,
        group: UsageGroup,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<UsageLine>> {
        let zone = self.conversations().session_policy(tenant).await?.timezone;
        // Model calls and turns are grouped alike, then joined by group: a day (or agent, or
        // key) may have tool time without calls or calls without tool time.
        let rows = sqlx::query(
            "WITH calls AS (
                SELECT c.*, (c.created_at AT TIME ZONE $5)::date AS day FROM model_calls c
                WHERE c.tenant_id = $1 AND ($2::uuid IS NULL OR c.agent_id = $2)
                  AND c.created_at >= ($3::date::timestamp AT TIME ZONE $5)
                  AND c.created_at < (($4::date + 1)::timestamp AT TIME ZONE $5)
             ), call_lines AS (
                SELECT CASE $6 WHEN 'day' THEN calls.day::text
                               WHEN 'agent' THEN COALESCE(a.name, '-')
                               ELSE COALESCE(k.prefix, '-') END AS grp,
                       count(*) AS calls, sum(prompt_tokens)::int8 AS prompt, sum(completion_tokens)::int8 AS completion,
                       sum(cached_tokens)::int8 AS cached, sum(cache_write_tokens)::int8 AS written,
                       sum(reasoning_tokens)::int8 AS reasoning, COALESCE(sum(cost_usd), 0)::float8 AS cost,
                       count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced, avg(latency_ms)::float8 AS latency
                FROM calls
                LEFT JOIN agents a ON a.tenant_id = calls.tenant_id AND a.id = calls.agent_id
                LEFT JOIN api_keys k ON k.tenant_id = calls.tenant_id AND k.id = calls.api_key_id
                GROUP BY 1
             ), turn_lines AS (
                SELECT CASE $6 WHEN 'day' THEN (t.created_at AT TIME ZONE $5)::date::text
                               WHEN 'agent' THEN COALESCE(a.name, '-')
                               ELSE COALESCE(k.prefix, '-') END AS grp,
                       count(*) AS turns, sum(t.tool_ms)::int8 AS tool_ms, sum(t.sandbox_ms)::int8 AS sandbox_ms
                FROM turns t
                JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
                LEFT JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
                LEFT JOIN api_keys k ON k.tenant_id = t.tenant_id AND k.id = t.api_key_id
                WHERE t.tenant_id = $1 AND ($2::uuid IS NULL OR s.agent_id = $2)
                  AND t.created_at >= ($3::date::timestamp AT TIME ZONE $5)
                  AND t.created_at < (($4::date + 1)::timestamp AT TIME ZONE $5)
                GROUP BY 1
             )
             SELECT COALESCE(c.grp, t.grp) AS grp, COALESCE(c.calls, 0) AS calls,
                    COALESCE(c.prompt, 0) AS prompt_tokens, COALESCE(c.completion, 0) AS completion_tokens,
                    COALESCE(c.cached, 0) AS cached_tokens, COALESCE(c.written, 0) AS cache_write_tokens,
                    COALESCE(c.reasoning, 0) AS reasoning_tokens, COALESCE(c.cost, 0) AS cost_usd,
                    COALESCE(c.unpriced, 0) AS unpriced_calls, c.latency,
                    COALESCE(t.turns, 0) AS turns, COALESCE(t.tool_ms, 0) AS tool_ms,
                    COALESCE(t.sandbox_ms, 0) AS sandbox_ms
             FROM call_lines c FULL OUTER JOIN turn_lines t ON t.grp = c.grp
             ORDER BY 1",
        )
        .bind(tenant.as_uuid())
        .bind(agent.map(|a| a.as_uuid()))
        .bind(from)
        .bind(to)
        .bind(zone.name())
        .bind(match group {
            UsageGroup::Day => "day",
            UsageGroup::Agent => "agent",
            UsageGroup::Key => "key",
        })
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(crate::rows::read::<UsageLine>).collect()
    }
}
