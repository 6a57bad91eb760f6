//! People as the admin API shows them: the signed-in caller, a tenant's members and
//! invitations, role changes, and how one may sign in.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{InvitationId, MemberRole, PersonId, TenantId};

/// A person (never a password).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Person {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: PersonId,
    pub email: String,
    pub display_name: String,
    pub operator: bool,
    pub has_password: bool,
    /// False for an account made from an invitation link, until an identity provider that
    /// verified the address or an operator's sign-in link signs it in.
    pub email_proven: bool,
    /// An operator who may sign in through the installation's identity provider.
    pub operator_sso: bool,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
}

/// A tenant the person belongs to, and as what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Membership {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub tenant_id: TenantId,
    pub tenant_name: String,
    /// `owner`, `admin` or `member`.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub role: MemberRole,
}

/// The signed-in caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Me {
    pub person: Person,
    pub memberships: Vec<Membership>,
    pub operator: bool,
    /// The one tenant this session is valid in, when the tenant's own identity provider opened
    /// it; `null` otherwise.
    #[schema(value_type = Option<String>, format = "uuid")]
    pub tenant_scope: Option<TenantId>,
    /// Send it back in `X-CSRF-Token` on every request that changes something (console
    /// sessions only; `null` for tokens).
    pub csrf_token: Option<String>,
    pub session_minutes: u64,
    pub idle_minutes: u64,
}

/// A member: the person's fields, their role and since when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Member {
    #[serde(flatten)]
    #[cfg_attr(feature = "sqlx", sqlx(flatten))]
    pub person: Person,
    /// `owner`, `admin` or `member`.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub role: MemberRole,
    pub member_since: DateTime<Utc>,
}

/// A member's new role.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    #[schema(value_type = String, example = "admin")]
    pub role: MemberRole,
}

/// A member's role before and after a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RoleChanged {
    #[schema(value_type = String, format = "uuid")]
    pub person_id: PersonId,
    #[schema(value_type = String)]
    pub before: MemberRole,
    #[schema(value_type = String)]
    pub role: MemberRole,
}

/// An invitation to join a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Invitation {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: InvitationId,
    pub email: String,
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub role: MemberRole,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// An invitation just made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct InvitationMade {
    pub invitation: Invitation,
    /// The link to send the invitee; it works once, until the invitation expires.
    pub link: String,
}

/// Whom to invite, as what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Invite {
    pub email: String,
    #[schema(value_type = String, example = "member")]
    pub role: MemberRole,
}

/// The installation's identity provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SsoOption {
    pub label: String,
    /// Where the sign-in button goes.
    pub start: String,
}

/// How one may sign in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SignInOptions {
    /// Local accounts (and one-time links).
    pub password: bool,
    /// The identity provider, when one is configured.
    pub sso: Option<SsoOption>,
    /// Some tenant has its own identity provider: a work email says where to sign in.
    pub sso_by_email: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_the_persons_fields_with_a_role() {
        let at = DateTime::<Utc>::from_timestamp(0, 0).unwrap();
        let person = Person {
            id: PersonId::from(uuid::Uuid::nil()),
            email: "a@example.com".into(),
            display_name: "A".into(),
            operator: false,
            has_password: true,
            email_proven: true,
            operator_sso: false,
            disabled: false,
            created_at: at,
        };
        let member = Member { person, role: MemberRole::Admin, member_since: at };
        let shown = serde_json::to_value(&member).unwrap();
        assert_eq!(shown["email"], "a@example.com", "flat, as the store's member was");
        assert_eq!(shown["role"], "admin");
        let back: Member = serde_json::from_value(shown).unwrap();
        assert_eq!(back, member, "what hermesctl reads is what the API sent");
    }
}
