//! `/admin/v1` bodies: tenants and their quotas, credentials, people, agents' skills, MCP
//! servers and memory, and the day-to-day operations.

mod agent_changes;
mod agents;
mod audit;
mod automation;
mod credentials;
mod ops;
mod people;
mod secret_bindings;
mod sessions;
mod tenants;

pub use agent_changes::{AgentEdit, NewAgent, ToolsetChoice};
pub use agents::{
    Agent, AgentSkill, AgentSkills, AuxiliaryModels, McpServer, McpServerSet, Memory, MemoryWritten, ModelRef,
    SandboxImageShown, SandboxOffer, SkillDocument, SkillSaved, SkillToggled,
};
pub use audit::{AuditActor, AuditEntry, AuditPage};
pub use automation::Hooks;
pub use credentials::{AdminToken, ApiKey, ApiKeyMade, NewApiKey, NewToken, TokenMade};
pub use ops::{
    Answered, Backlog, BudgetView, Cluster, CredentialAdded, PingSent, RollupLine, SeenSandbox, TurnStopped,
    UsageRollup, WorkerAtWork,
};
pub use people::{
    Invitation, InvitationMade, Invite, Me, Member, Membership, Person, RoleChange, RoleChanged, SignInOptions,
    SsoOption,
};
pub use secret_bindings::{SecretBind, SecretBinding};
pub use sessions::{ListedSession, OpenTurn, Transcript, WaitingQuestion};
pub use tenants::{NewOperatorToken, NewTenant, Quotas, QuotasView, Tenant, TenantDeletion, TenantMade, TenantView};
