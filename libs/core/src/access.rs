//! Who may do what on the admin plane: every permission decision of the admin API, the
//! console and the chat admin commands is [`allows`], and nowhere else. The rules:
//! - a platform operator may do everything, in every tenant and on the installation;
//! - installation operations (tenants, quotas, the cluster) are the operators' alone;
//! - a tenant's `owner` may do everything in the tenant;
//! - an `admin` may do everything but make, unmake or remove owners (ownership is the owners');
//! - a `member` reads, except the audit log, and changes nothing.

/// A person's role in a tenant (a membership, an invitation, an admin token's ceiling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberRole {
    Owner,
    Admin,
    Member,
}

impl MemberRole {
    pub const ALL: &'static [MemberRole] = &[MemberRole::Owner, MemberRole::Admin, MemberRole::Member];

    /// The name stored in Postgres and sent on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            MemberRole::Owner => "owner",
            MemberRole::Admin => "admin",
            MemberRole::Member => "member",
        }
    }

    /// How much the role may do: a token or an invitation never grants more than its maker has.
    pub const fn rank(self) -> u8 {
        match self {
            MemberRole::Owner => 3,
            MemberRole::Admin => 2,
            MemberRole::Member => 1,
        }
    }

    /// The lesser of two roles (a person's token is capped by the person's current role).
    pub fn min(self, other: MemberRole) -> MemberRole {
        if self.rank() <= other.rank() { self } else { other }
    }
}

impl std::fmt::Display for MemberRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for MemberRole {
    type Error = crate::kinds::UnknownName;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl std::str::FromStr for MemberRole {
    type Err = crate::kinds::UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemberRole::ALL.iter().copied().find(|r| r.as_str() == s).ok_or_else(|| crate::kinds::UnknownName {
            what: "role",
            value: s.to_owned(),
            allowed: "owner, admin, member".into(),
        })
    }
}

/// Where the caller stands for the object at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// A platform operator: every tenant, and the installation.
    Operator,
    /// A member of the tenant the object belongs to, in this role.
    Member(MemberRole),
}

crate::kinds::vocabulary! {
    /// Every operation of the admin plane, as the permission table names it.
    AdminOp ("admin operation") {
        // The installation's (operators only).
        ListTenants = "tenants.list",
        CreateTenant = "tenants.create",
        SetQuotas = "tenants.quotas",
        ConfigureSso = "tenants.sso",
        DeleteTenant = "tenants.delete",
        ViewCluster = "cluster.view",
        // A tenant's, read.
        ViewTenant = "tenant.view",
        ViewMembers = "members.view",
        ViewAgents = "agents.view",
        ViewKeys = "keys.view",
        ViewCredentials = "credentials.view",
        ViewChannels = "channels.view",
        ViewSessions = "sessions.view",
        ViewMemory = "memory.view",
        ViewSkills = "skills.view",
        ViewCron = "cron.view",
        ViewHooks = "hooks.view",
        ViewApprovals = "approvals.view",
        ViewUsage = "usage.view",
        ViewTokens = "tokens.view",
        ViewAudit = "audit.view",
        // A tenant's, write.
        InviteMembers = "members.invite",
        ChangeRoles = "members.role",
        RemoveMembers = "members.remove",
        ManageOwners = "members.owners",
        EditAgents = "agents.edit",
        ManageKeys = "keys.manage",
        ManageCredentials = "credentials.manage",
        ManageChannels = "channels.manage",
        ManageSessions = "sessions.manage",
        EditMemory = "memory.edit",
        EditSkills = "skills.edit",
        ManageCron = "cron.manage",
        ManageHooks = "hooks.manage",
        ManageBudgets = "budgets.manage",
        AnswerApprovals = "approvals.answer",
        ManageTokens = "tokens.manage",
        // Everything the tenant owns in one archive: its owners' (and operators').
        ExportTenant = "tenant.export",
    }
}

impl AdminOp {
    /// Whether the operation concerns the installation rather than one tenant.
    pub const fn is_installation(self) -> bool {
        matches!(
            self,
            AdminOp::ListTenants
                | AdminOp::CreateTenant
                | AdminOp::SetQuotas
                | AdminOp::ConfigureSso
                | AdminOp::DeleteTenant
                | AdminOp::ViewCluster
        )
    }

    /// Whether the operation only reads.
    pub const fn is_read(self) -> bool {
        matches!(
            self,
            AdminOp::ListTenants
                | AdminOp::ViewCluster
                | AdminOp::ViewTenant
                | AdminOp::ViewMembers
                | AdminOp::ViewAgents
                | AdminOp::ViewKeys
                | AdminOp::ViewCredentials
                | AdminOp::ViewChannels
                | AdminOp::ViewSessions
                | AdminOp::ViewMemory
                | AdminOp::ViewSkills
                | AdminOp::ViewCron
                | AdminOp::ViewHooks
                | AdminOp::ViewApprovals
                | AdminOp::ViewUsage
                | AdminOp::ViewTokens
                | AdminOp::ViewAudit
        )
    }
}

/// The one permission decision: may a caller standing so perform `op`?
pub fn allows(standing: Standing, op: AdminOp) -> bool {
    match standing {
        Standing::Operator => true,
        Standing::Member(_) if op.is_installation() => false,
        Standing::Member(MemberRole::Owner) => true,
        Standing::Member(MemberRole::Admin) => !matches!(op, AdminOp::ManageOwners | AdminOp::ExportTenant),
        Standing::Member(MemberRole::Member) => op.is_read() && op != AdminOp::ViewAudit,
    }
}

/// The operation that changing a membership to or from `role` needs: owners are the owners'.
pub fn op_for_role_change(from: Option<MemberRole>, to: Option<MemberRole>) -> AdminOp {
    if from == Some(MemberRole::Owner) || to == Some(MemberRole::Owner) {
        AdminOp::ManageOwners
    } else if to.is_none() {
        AdminOp::RemoveMembers
    } else if from.is_none() {
        AdminOp::InviteMembers
    } else {
        AdminOp::ChangeRoles
    }
}

#[cfg(test)]
mod tests;
