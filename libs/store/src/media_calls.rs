//! Media calls on the usage ledger (migration 0052): a picture made, speech spoken, a
//! recording transcribed is a `model_calls` row with the units its service bills, priced by
//! the same trigger as model calls from the model's per-unit price. Under a hard cap such a
//! call reserves its estimate first ([`crate::SpendRequest::media`]), like a model call, and
//! [`Tenancy::settle_media_call`](crate::views::Tenancy::settle_media_call) swaps the reservation for the recorded call.

use hermes_core::{CallPurpose, SessionId, SpendReservationId, TenantId, TurnId};

use crate::{Result, views::Tenancy};

/// What a media service bills for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaUnits {
    /// Pictures made.
    pub images: u32,
    /// Characters spoken.
    pub speech_chars: u64,
    /// Milliseconds of audio transcribed.
    pub audio_ms: u64,
}

impl MediaUnits {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// What the units cost at the given prices (per image, per million characters, per audio
    /// minute); `None` when a unit used has no price.
    pub fn cost_usd(&self, per_image: Option<f64>, per_mchar: Option<f64>, per_minute: Option<f64>) -> Option<f64> {
        let part = |count: f64, price: Option<f64>| if count == 0.0 { Some(0.0) } else { price.map(|p| p * count) };
        Some(
            part(f64::from(self.images), per_image)?
                + part(self.speech_chars as f64 / 1e6, per_mchar)?
                + part(self.audio_ms as f64 / 60_000.0, per_minute)?,
        )
    }
}

/// One media call made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaCall {
    /// [`CallPurpose::Image`], [`CallPurpose::Speech`] or [`CallPurpose::Transcription`].
    pub purpose: CallPurpose,
    /// The service (`fal`, `openai`, `elevenlabs`, `edge`).
    pub provider: String,
    /// The model its price is looked up by (`fal-ai/flux/schnell`, `tts-1`, `edge-tts`).
    pub model: String,
    pub units: MediaUnits,
    pub latency_ms: u64,
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Tenancy<'_> {
    /// Records `call` for `turn`, dropping `reservation` (the call's, under a cap) in the same
    /// statement, so the spend a cap sees never counts the call twice or not at all.
    pub async fn settle_media_call(
        self,
        tenant: TenantId,
        session: SessionId,
        turn: TurnId,
        reservation: Option<SpendReservationId>,
        call: &MediaCall,
    ) -> Result<()> {
        sqlx::query(
            "WITH settled AS (DELETE FROM spend_reservations WHERE tenant_id = $1 AND id = $11)
             INSERT INTO model_calls (tenant_id, session_id, turn_id, purpose, provider, model, prompt_tokens,
                                      completion_tokens, cached_tokens, cache_write_tokens, latency_ms, images,
                                      speech_chars, audio_ms)
             VALUES ($1, $2, $3, $4, $5, $6, 0, 0, 0, 0, $7, $8, $9, $10)",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(turn.as_uuid())
        .bind(call.purpose.as_str())
        .bind(&call.provider)
        .bind(&call.model)
        .bind(i32::try_from(call.latency_ms).unwrap_or(i32::MAX))
        .bind(i32::try_from(call.units.images).unwrap_or(i32::MAX))
        .bind(int(call.units.speech_chars))
        .bind(int(call.units.audio_ms))
        .bind(reservation.map(|id| id.as_uuid()))
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(())
    }

    /// Drops a reservation whose call was never made (the service failed before billing).
    pub async fn release_spend(self, tenant: TenantId, reservation: SpendReservationId) -> Result<()> {
        sqlx::query("DELETE FROM spend_reservations WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(reservation.as_uuid())
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_cost_what_their_prices_say_and_an_unpriced_unit_is_no_cost_at_all() {
        let image = MediaUnits { images: 2, ..Default::default() };
        assert_eq!(image.cost_usd(Some(0.04), None, None), Some(0.08));
        assert_eq!(image.cost_usd(None, Some(15.0), None), None, "a picture with no picture price");
        let speech = MediaUnits { speech_chars: 2_000, ..Default::default() };
        assert!((speech.cost_usd(None, Some(15.0), None).unwrap_or_default() - 0.03).abs() < 1e-9);
        let audio = MediaUnits { audio_ms: 90_000, ..Default::default() };
        assert!((audio.cost_usd(None, None, Some(0.006)).unwrap_or_default() - 0.009).abs() < 1e-9);
        assert_eq!(MediaUnits::default().cost_usd(None, None, None), Some(0.0));
    }
}
