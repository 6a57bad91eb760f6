//! People of the admin console: platform operators, tenants' members, and one-time sign-in
//! links. Every change is recorded in the audit log as the operator's CLI.

use clap::Subcommand;
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_core::access::Standing;
use hermes_core::{MemberRole, PersonId};
use hermes_ops::members;
use hermes_store::Store;
use hermes_wire::admin::RoleChanged;

use crate::cli::{TenantArg, print};

#[derive(Subcommand)]
pub enum OperatorCmd {
    /// Make a platform operator (all tenants, quotas, the cluster) and print a one-time
    /// sign-in link for them.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "")]
        name: String,
        /// Let them sign in through the installation's identity provider too (off by
        /// default: an operator signs in by password or link).
        #[arg(long)]
        sso: bool,
    },
    /// Let an existing operator sign in through the installation's identity provider, or
    /// (`--off`) no longer.
    Sso {
        #[arg(long)]
        email: String,
        #[arg(long)]
        off: bool,
    },
    /// Make an admin token acting as an existing operator on every tenant, for
    /// `hermesctl --url` (shown once).
    Token {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "hermesctl")]
        name: String,
        /// 1 to 366.
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
}

#[derive(Subcommand)]
pub enum PersonCmd {
    /// Print a new one-time sign-in link for an existing person.
    Link {
        #[arg(long)]
        email: String,
    },
}

#[derive(Subcommand)]
pub enum MemberCmd {
    /// Add a person (made if new) to a tenant, or change their role; prints a sign-in link.
    Add {
        #[command(flatten)]
        tenant: TenantArg,
        #[arg(long)]
        email: String,
        /// owner, admin or member (read-only).
        #[arg(long, default_value = "member")]
        role: MemberRole,
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Change a member's role (the tenant keeps at least one owner).
    Role {
        #[command(flatten)]
        tenant: TenantArg,
        #[arg(long)]
        email: String,
        /// owner, admin or member (read-only).
        #[arg(long)]
        role: MemberRole,
    },
    /// Remove a member: their console access to the tenant and their tokens for it end at
    /// once (the last owner cannot be removed).
    Remove {
        #[command(flatten)]
        tenant: TenantArg,
        #[arg(long)]
        email: String,
    },
    /// List a tenant's members.
    List {
        #[command(flatten)]
        tenant: TenantArg,
    },
}

/// Says what a role change did (both doors print the same).
pub fn print_role_changed(json_mode: bool, email: &str, tenant: &str, changed: &RoleChanged) {
    let human = format!("{email} is {} of {tenant} (was {})", changed.role, changed.before);
    print(json_mode, json!(changed), human);
}

/// The person with `email`, or an error that says there is none.
async fn person_by_email(store: &Store, email: &str) -> anyhow::Result<PersonId> {
    match store.admin().sign_in_record(email).await? {
        Some(record) => Ok(record.person.id),
        None => anyhow::bail!("no person has the email {email:?}"),
    }
}

async fn link(config: &HermesConfig, store: &Store, person: hermes_core::PersonId) -> anyhow::Result<String> {
    let valid_for = std::time::Duration::from_secs(config.admin.link_minutes.max(1) * 60);
    let token = store.admin().create_sign_in_link(person, valid_for).await?;
    Ok(config.console_link("link", &token))
}

pub async fn run_operator(
    json_mode: bool,
    config: &HermesConfig,
    store: &Store,
    cmd: OperatorCmd,
) -> anyhow::Result<()> {
    match cmd {
        OperatorCmd::Create { email, name, sso } => {
            let person = store.admin().ensure_person(&email, &name, true, &crate::audit_trail::cli_actor()).await?;
            if sso {
                store.admin().set_operator_sso(person.id, true, &crate::audit_trail::cli_actor()).await?;
            }
            let url = link(config, store, person.id).await?;
            let minutes = config.admin.link_minutes;
            print(
                json_mode,
                json!({ "person": person, "sign_in_link": url }),
                format!("operator {}\nsign in within {minutes} minutes (the link works once):\n{url}", person.email),
            );
        }
        OperatorCmd::Sso { email, off } => {
            let person = person_by_email(store, &email).await?;
            match store.admin().set_operator_sso(person, !off, &crate::audit_trail::cli_actor()).await {
                Ok(()) => {}
                Err(hermes_store::StoreError::NotFound) => anyhow::bail!("{email} is not an operator"),
                Err(e) => return Err(e.into()),
            }
            let now = if off { "no longer signs" } else { "may sign" };
            print(
                json_mode,
                json!({ "email": email, "operator_sso": !off }),
                format!("{email} {now} in through the identity provider"),
            );
        }
        OperatorCmd::Token { email, name, days } => {
            let person = person_by_email(store, &email).await?;
            let lifetime = std::time::Duration::from_secs(u64::from(days.clamp(1, 366)) * 86_400);
            let made =
                store.admin().create_operator_token(person, &name, lifetime, &crate::audit_trail::cli_actor()).await;
            let (token, secret) = match made {
                Ok(made) => made,
                Err(hermes_store::StoreError::NotFound) => anyhow::bail!("{email} is not an operator"),
                Err(e) => return Err(e.into()),
            };
            print(
                json_mode,
                json!({ "token": token, "secret": secret }),
                format!(
                    "operator token {} (expires {})\n\n    {secret}\n\nUse it with hermesctl --url <console address> --token ...",
                    token.prefix, token.expires_at
                ),
            );
        }
    }
    Ok(())
}

pub async fn run_person(json_mode: bool, config: &HermesConfig, store: &Store, cmd: PersonCmd) -> anyhow::Result<()> {
    match cmd {
        PersonCmd::Link { email } => {
            let person = person_by_email(store, &email).await?;
            let url = link(config, store, person).await?;
            print(json_mode, json!({ "sign_in_link": url }), url);
        }
    }
    Ok(())
}

pub async fn run_member(json_mode: bool, config: &HermesConfig, store: &Store, cmd: MemberCmd) -> anyhow::Result<()> {
    match cmd {
        MemberCmd::Add { tenant, email, role, name } => {
            let t = tenant.resolve(store).await?;
            let person = members::add(store, &crate::audit_trail::cli_actor(), t.id, (&email, &name), role).await?;
            let url = link(config, store, person.id).await?;
            print(
                json_mode,
                json!({ "person": person, "tenant": t.name, "role": role, "sign_in_link": url }),
                format!("{} is {role} of {}\nsign-in link (works once): {url}", person.email, t.name),
            );
        }
        MemberCmd::Role { tenant, email, role } => {
            let t = tenant.resolve(store).await?;
            let who = person_by_email(store, &email).await?;
            let at = (t.id, Standing::Operator);
            let changed = members::change_role(store, &crate::audit_trail::cli_actor(), at, who, role).await?;
            print_role_changed(json_mode, &email, &t.name, &changed);
        }
        MemberCmd::Remove { tenant, email } => {
            let t = tenant.resolve(store).await?;
            let who = person_by_email(store, &email).await?;
            let before =
                members::remove(store, &crate::audit_trail::cli_actor(), (t.id, Standing::Operator), who).await?;
            let human = format!("{email} is no longer a member of {} (was {before})", t.name);
            print(json_mode, json!({ "removed": who }), human);
        }
        MemberCmd::List { tenant } => {
            let t = tenant.resolve(store).await?;
            let members = store.admin().members(t.id).await?;
            let human =
                members.iter().map(|m| format!("{:<32} {}", m.person.email, m.role)).collect::<Vec<_>>().join("\n");
            print(json_mode, json!(members), human);
        }
    }
    Ok(())
}
