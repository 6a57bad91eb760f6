//! `/admin/v1` bodies: tenants and their quotas, admin tokens and API keys.

mod credentials;
mod tenants;

pub use credentials::{AdminToken, ApiKey, ApiKeyMade, NewApiKey, NewToken, TokenMade};
pub use tenants::{NewOperatorToken, NewTenant, Quotas, QuotasView, Tenant, TenantMade, TenantView};
