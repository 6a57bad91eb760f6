//! Tenants as the admin API shows them: the operators' list, creating one, a tenant with its
//! quotas and the caller's standing, new quotas, and an operator's own token.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use hermes_core::TenantId;

/// A tenant (a team using the service).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Tenant {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: TenantId,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// A tenant to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    /// 1-63 lowercase letters, digits, `-` or `_`.
    pub name: String,
    /// Invite this person as the tenant's first owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_email: Option<String>,
}

/// A tenant just made, with its first owner's invitation link when one was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TenantMade {
    pub tenant: Tenant,
    pub owner_invitation_link: Option<String>,
}

/// A tenant whose deletion has begun: no key, member, bot, hook or job reaches it any more,
/// and its rows are being deleted in the background (the scheduler finishes a deletion a
/// stopped pod left half done). The installation's audit log records `tenant.deleted` at
/// the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TenantDeletion {
    #[schema(value_type = String, format = "uuid")]
    pub id: TenantId,
    pub name: String,
    /// `deleting`.
    pub status: String,
}

/// A tenant's quotas (`null`: the installation's default; 0: unlimited).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuotasView {
    pub requests_per_minute: Option<i64>,
    pub concurrent_turns: Option<i64>,
    /// Web searches per UTC day.
    pub web_searches_per_day: Option<i64>,
    /// Pages read by `web_extract` per UTC day.
    pub web_extracts_per_day: Option<i64>,
    /// MB the files people send may take over all the tenant's workspaces.
    pub file_storage_mb: Option<i64>,
    /// What those files take now, as last measured.
    pub file_storage_used_bytes: i64,
}

/// A tenant, its quotas and where the caller stands in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TenantView {
    pub tenant: Tenant,
    pub quotas: QuotasView,
    /// `operator`, `owner`, `admin` or `member`.
    pub standing: String,
    /// The operations the caller may perform in this tenant (the console shows only these).
    pub may: Vec<String>,
}

/// New quotas (`null`: the installation's default; 0: unlimited). The web quotas are left as
/// they are when absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Quotas {
    pub requests_per_minute: Option<u32>,
    pub concurrent_turns: Option<u32>,
    /// Web searches per UTC day.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u32>)]
    pub web_searches_per_day: Option<Option<u32>>,
    /// Pages `web_extract` reads per UTC day.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u32>)]
    pub web_extracts_per_day: Option<Option<u32>>,
    /// MB the files people send may take over all the tenant's workspaces (left as it is
    /// when absent).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u32>)]
    pub file_storage_mb: Option<Option<u32>>,
}

/// A field that was sent (`Some`, perhaps of `null`), as opposed to one left out (`None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(d).map(Some)
}

/// An operator's own token for the installation (`hermesctl --url`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOperatorToken {
    pub name: String,
    /// 1 to 366; default 30.
    pub expires_in_days: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_tell_a_null_from_a_missing_web_quota() {
        let set: Quotas = serde_json::from_str(
            r#"{"requests_per_minute": 5, "concurrent_turns": null,
            "web_searches_per_day": null}"#,
        )
        .unwrap();
        assert_eq!(set.web_searches_per_day, Some(None), "sent as null: back to the default");
        assert_eq!(set.web_extracts_per_day, None, "left out: left as it is");
        let back: Quotas = serde_json::from_value(serde_json::to_value(&set).unwrap()).unwrap();
        assert_eq!(back, set, "what hermesctl sends is read as it meant");
    }
}
