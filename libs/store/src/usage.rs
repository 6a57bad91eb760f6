//! The per-call usage ledger: one row per answered model call, written with the turn's
//! checkpoints (never in a statement of its own on the plain-turn path).

use sqlx::postgres::PgArguments;
use sqlx::query::Query;

use hermes_core::{SessionId, TenantId, TurnId, Usage};

use crate::{Result, views::Tenancy};

pub use hermes_core::ModelCall;

/// The calls as column arrays, for one `unnest` insert.
#[derive(Debug, Default)]
pub(crate) struct CallColumns {
    purpose: Vec<String>,
    provider: Vec<String>,
    model: Vec<String>,
    key_id: Vec<Option<String>>,
    prompt: Vec<i64>,
    completion: Vec<i64>,
    cached: Vec<i64>,
    cache_write: Vec<i64>,
    reasoning: Vec<i64>,
    latency: Vec<i64>,
    priority: Vec<bool>,
}

fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A count as read back: a negative one (no writer stores it) is 0.
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A recorded call as `turn_model_calls` selects it.
#[derive(sqlx::FromRow)]
struct CallRow {
    #[sqlx(try_from = "String")]
    purpose: hermes_core::CallPurpose,
    provider: String,
    model: String,
    key_id: Option<String>,
    prompt_tokens: i64,
    completion_tokens: i64,
    cached_tokens: i64,
    cache_write_tokens: i64,
    reasoning_tokens: i64,
    latency_ms: Option<i32>,
    priority: bool,
}

impl From<CallRow> for ModelCall {
    fn from(row: CallRow) -> Self {
        let (prompt, completion) = (count(row.prompt_tokens), count(row.completion_tokens));
        ModelCall {
            purpose: row.purpose,
            provider: row.provider,
            model: row.model,
            key_id: row.key_id,
            usage: Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt + completion,
                cached_tokens: count(row.cached_tokens),
                cache_write_tokens: count(row.cache_write_tokens),
                reasoning_tokens: count(row.reasoning_tokens),
                priority: row.priority,
            },
            latency_ms: row.latency_ms.map_or(0, |ms| u64::try_from(ms).unwrap_or(0)),
        }
    }
}

impl CallColumns {
    pub(crate) fn of(calls: &[ModelCall]) -> Self {
        let mut c = Self::default();
        for call in calls {
            c.purpose.push(call.purpose.as_str().to_owned());
            c.provider.push(call.provider.clone());
            c.model.push(call.model.clone());
            c.key_id.push(call.key_id.clone());
            c.prompt.push(tokens(call.usage.prompt_tokens));
            c.completion.push(tokens(call.usage.completion_tokens));
            c.cached.push(tokens(call.usage.cached_tokens));
            c.cache_write.push(tokens(call.usage.cache_write_tokens));
            c.reasoning.push(tokens(call.usage.reasoning_tokens));
            c.latency.push(tokens(call.latency_ms));
            c.priority.push(call.usage.priority);
        }
        c
    }

    /// Binds the eleven arrays in the order of `insert_model_calls!`.
    pub(crate) fn bind_to(
        self,
        query: Query<'_, sqlx::Postgres, PgArguments>,
    ) -> Query<'_, sqlx::Postgres, PgArguments> {
        query
            .bind(self.purpose)
            .bind(self.provider)
            .bind(self.model)
            .bind(self.key_id)
            .bind(self.prompt)
            .bind(self.completion)
            .bind(self.cached)
            .bind(self.cache_write)
            .bind(self.reasoning)
            .bind(self.latency)
            .bind(self.priority)
    }
}

/// The insert of a call batch (a static string, so no SQL is ever built at run time), with
/// tenant, session and turn at `$1 $2 $3` and the eleven arrays of [`CallColumns`] at the
/// given placeholders.
macro_rules! insert_model_calls {
    ($a:literal, $b:literal, $c:literal, $d:literal, $e:literal, $f:literal, $g:literal, $h:literal, $i:literal, $j:literal, $k:literal) => {
        concat!(
            "INSERT INTO model_calls (tenant_id, session_id, turn_id, purpose, provider, model, key_id,
                                      prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens,
                                      reasoning_tokens, latency_ms, priority)
             SELECT $1, $2, $3, c.* FROM unnest(",
            $a,
            "::text[], ",
            $b,
            "::text[], ",
            $c,
            "::text[], ",
            $d,
            "::text[], ",
            $e,
            "::bigint[], ",
            $f,
            "::bigint[], ",
            $g,
            "::bigint[], ",
            $h,
            "::bigint[], ",
            $i,
            "::bigint[], ",
            $j,
            "::bigint[], ",
            $k,
            "::boolean[]) AS c"
        )
    };
}
pub(crate) use insert_model_calls;

impl Tenancy<'_> {
    /// Records answered calls of `turn` (whatever happens to the turn: they were paid for).
    pub async fn record_model_calls(
        self,
        tenant: TenantId,
        session: SessionId,
        turn: TurnId,
        calls: &[ModelCall],
    ) -> Result<()> {
        if calls.is_empty() {
            return Ok(());
        }
        let sql = insert_model_calls!("$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13", "$14");
        let query = sqlx::query(sql).bind(tenant.as_uuid()).bind(session.as_uuid()).bind(turn.as_uuid());
        CallColumns::of(calls).bind_to(query).execute(&mut *self.as_tenant(tenant).await?).await?;
        Ok(())
    }

    /// The calls recorded for `turn`, oldest first.
    pub async fn turn_model_calls(self, tenant: TenantId, turn: TurnId) -> Result<Vec<ModelCall>> {
        let rows = sqlx::query(
            "SELECT purpose, provider, model, key_id, prompt_tokens, completion_tokens, cached_tokens,
                    cache_write_tokens, reasoning_tokens, latency_ms, priority
             FROM model_calls WHERE tenant_id = $1 AND turn_id = $2 ORDER BY id",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        // A purpose outside its vocabulary is `Corrupt`.
        rows.iter().map(|r| crate::rows::read::<CallRow>(r).map(ModelCall::from)).collect()
    }
}
