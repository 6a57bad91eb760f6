//! `hermesctl --url URL --token hat_...`: the same commands over the admin API, so an
//! operator's laptop needs no database URL and no master key. The token is an operator's
//! (`hermesctl operator token`, or `POST /admin/v1/tokens` in a console session) or a tenant's
//! admin token; the API decides what it may do and records every change in the audit log as
//! that token. Commands that need the database itself say so. Bodies are `hermes_wire`'s
//! types, the ones the handlers answer with.

use anyhow::{Context, bail};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use hermes_wire::admin::{
    Agent, ApiKey, ApiKeyMade, AuditEntry, InvitationMade, Invite, McpServer, McpServerSet, Member, NewApiKey,
    NewTenant, Quotas, RoleChange, RoleChanged, Tenant, TenantMade,
};
use hermes_wire::{ErrorBody, List, Page};

use crate::cli::print;
use crate::commands::{Cli, Command, TenantCmd};
use crate::keys::KeyCmd;
use crate::people::MemberCmd;

/// What a command that needs the database answers over the API.
const NEEDS_DATABASE: &str = "this command needs the database (run it without --url where the database is reachable); \
     over the API: tenant list|create|limits, member list|add, key create|list|revoke, agent list|create, mcp, audit";

/// The admin API, as one token.
struct Remote {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Remote {
    /// `method path` with `body`, its answer as `T` (a 204 as `()`); an error answer as its
    /// message.
    async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(impl Serialize + Sync)>,
    ) -> anyhow::Result<T> {
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send().await.with_context(|| format!("cannot reach {}", self.base))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            let why = serde_json::from_str::<ErrorBody>(&text).map(|e| e.error.message).unwrap_or(text);
            bail!("{method} {path}: {status}: {why}");
        }
        let answer =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        serde_json::from_value(answer).with_context(|| format!("{method} {path}: an answer hermesctl does not read"))
    }

    /// The tenant's id, by name.
    async fn tenant(&self, name: &str) -> anyhow::Result<String> {
        let path = format!("/admin/v1/tenants?name={}", encode(name));
        let found: Page<Tenant> = self.send(Method::GET, &path, None::<&()>).await?;
        match found.data.first() {
            Some(t) => Ok(t.id.to_string()),
            None => bail!("no tenant named {name:?} (or this token may not see it)"),
        }
    }
}

fn encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Runs `cli`'s command against the admin API at `url`.
pub async fn run(cli: Cli, url: &str) -> anyhow::Result<()> {
    let token = cli.token.clone().context("--url needs --token (or HERMES_TOKEN): an admin token, hat_...")?;
    let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(60)).build()?;
    let remote = Remote { http, base: url.trim_end_matches('/').to_owned(), token };
    let json_mode = cli.json;
    match cli.command {
        Command::Tenant(cmd) => tenant(&remote, cmd, json_mode).await,
        Command::Key(cmd) => key(&remote, cmd, json_mode).await,
        Command::Member(cmd) => member(&remote, cmd, json_mode).await,
        Command::Agent(crate::agents::AgentCmd::List { tenant }) => agents(&remote, &tenant, json_mode).await,
        Command::Agent(crate::agents::AgentCmd::Create(args)) => create_agent(&remote, *args, json_mode).await,
        Command::Audit(args) => audit(&remote, args, json_mode).await,
        Command::Mcp(cmd) => mcp(&remote, cmd, json_mode).await,
        Command::Secret(cmd) => secret(&remote, cmd, json_mode).await,
        _ => bail!(NEEDS_DATABASE),
    }
}

async fn tenant(remote: &Remote, cmd: TenantCmd, json_mode: bool) -> anyhow::Result<()> {
    match cmd {
        TenantCmd::List => {
            let list: Page<Tenant> = remote.send(Method::GET, "/admin/v1/tenants?limit=500", None::<&()>).await?;
            let human = list.data.iter().map(|t| format!("{}\t{}", t.name, t.id)).collect::<Vec<_>>().join("\n");
            print(json_mode, serde_json::to_value(&list.data)?, human);
        }
        TenantCmd::Create { name, owner_email } => {
            let body = NewTenant { name, owner_email };
            let made: TenantMade = remote.send(Method::POST, "/admin/v1/tenants", Some(&body)).await?;
            crate::cli::print_tenant_made(json_mode, &made)?;
        }
        TenantCmd::Limits { tenant, requests_per_minute, concurrent_turns } => {
            let id = remote.tenant(&tenant).await?;
            let quotas = Quotas {
                requests_per_minute,
                concurrent_turns,
                web_searches_per_day: None,
                web_extracts_per_day: None,
                file_storage_mb: None,
            };
            remote.send::<()>(Method::PUT, &format!("/admin/v1/tenants/{id}/quotas"), Some(&quotas)).await?;
            let shown = serde_json::to_value(&quotas)?;
            print(json_mode, shown.clone(), format!("limits of {tenant}: {shown}"));
        }
        _ => bail!(NEEDS_DATABASE),
    }
    Ok(())
}

async fn key(remote: &Remote, cmd: KeyCmd, json_mode: bool) -> anyhow::Result<()> {
    match cmd {
        KeyCmd::Create { tenant, agent, name, toolsets } => {
            let id = remote.tenant(&tenant).await?;
            let body = NewApiKey { name, agent, expires_in_days: None, toolsets: crate::keys::only(toolsets) };
            let made: ApiKeyMade =
                remote.send(Method::POST, &format!("/admin/v1/tenants/{id}/keys"), Some(&body)).await?;
            let mut value = serde_json::to_value(&made.key)?;
            value["key"] = json!(made.secret);
            let human = format!(
                "created API key {} for tenant {tenant}\n\n    {}\n\nStore it now: it is not shown again.",
                made.key.id, made.secret
            );
            print(json_mode, value, human);
        }
        KeyCmd::Revoke { tenant, id: key } => {
            let id = remote.tenant(&tenant).await?;
            remote.send::<()>(Method::DELETE, &format!("/admin/v1/tenants/{id}/keys/{key}"), None::<&()>).await?;
            print(json_mode, json!({ "revoked": key }), format!("revoked API key {key}"));
        }
        KeyCmd::List { tenant } => {
            let id = remote.tenant(&tenant).await?;
            let list: List<ApiKey> =
                remote.send(Method::GET, &format!("/admin/v1/tenants/{id}/keys"), None::<&()>).await?;
            let human = list
                .data
                .iter()
                .map(|k| {
                    let revoked = if k.revoked_at.is_some() { "  (revoked)" } else { "" };
                    format!("{}\t{}\t{}{revoked}", k.prefix, k.name, k.id)
                })
                .collect::<Vec<_>>()
                .join("\n");
            print(json_mode, serde_json::to_value(&list.data)?, human);
        }
        KeyCmd::Limits { .. } => bail!(NEEDS_DATABASE),
    }
    Ok(())
}

async fn member(remote: &Remote, cmd: MemberCmd, json_mode: bool) -> anyhow::Result<()> {
    match cmd {
        MemberCmd::List { tenant } => {
            let id = remote.tenant(&tenant.tenant).await?;
            let list: List<Member> =
                remote.send(Method::GET, &format!("/admin/v1/tenants/{id}/members"), None::<&()>).await?;
            let human =
                list.data.iter().map(|m| format!("{:<32} {}", m.person.email, m.role)).collect::<Vec<_>>().join("\n");
            print(json_mode, serde_json::to_value(&list.data)?, human);
        }
        MemberCmd::Add { tenant, email, role, .. } => {
            // Over the API a new member is invited: the link is theirs to open.
            let id = remote.tenant(&tenant.tenant).await?;
            let body = Invite { email: email.clone(), role };
            let made: InvitationMade =
                remote.send(Method::POST, &format!("/admin/v1/tenants/{id}/invitations"), Some(&body)).await?;
            let human =
                format!("invited {email} as {role} of {}\ninvitation link (works once): {}", tenant.tenant, made.link);
            print(json_mode, serde_json::to_value(&made)?, human);
        }
        MemberCmd::Role { tenant, email, role } => {
            let id = remote.tenant(&tenant.tenant).await?;
            let who = member_by_email(remote, &id, &email).await?;
            let path = format!("/admin/v1/tenants/{id}/members/{who}");
            let changed: RoleChanged = remote.send(Method::PATCH, &path, Some(&RoleChange { role })).await?;
            crate::people::print_role_changed(json_mode, &email, &tenant.tenant, &changed);
        }
        MemberCmd::Remove { tenant, email } => {
            let id = remote.tenant(&tenant.tenant).await?;
            let who = member_by_email(remote, &id, &email).await?;
            remote.send::<()>(Method::DELETE, &format!("/admin/v1/tenants/{id}/members/{who}"), None::<&()>).await?;
            print(json_mode, json!({ "removed": who }), format!("{email} is no longer a member of {}", tenant.tenant));
        }
    }
    Ok(())
}

/// The id of the tenant's member with `email` (compared as the store keeps addresses).
async fn member_by_email(remote: &Remote, tenant: &str, email: &str) -> anyhow::Result<hermes_core::PersonId> {
    let list: List<Member> =
        remote.send(Method::GET, &format!("/admin/v1/tenants/{tenant}/members"), None::<&()>).await?;
    let wanted = hermes_store::admin::normalize_email(email);
    let found = list.data.into_iter().find(|m| m.person.email == wanted);
    found.map(|m| m.person.id).ok_or_else(|| anyhow::anyhow!("{email} is not a member of this tenant"))
}

async fn agents(remote: &Remote, tenant: &str, json_mode: bool) -> anyhow::Result<()> {
    let id = remote.tenant(tenant).await?;
    let list: List<Agent> = remote.send(Method::GET, &format!("/admin/v1/tenants/{id}/agents"), None::<&()>).await?;
    let human = list
        .data
        .iter()
        .map(|a| format!("{}\t{}\t{}\t{}", a.name, a.id, a.model, a.provider_base_url))
        .collect::<Vec<_>>()
        .join("\n");
    print(json_mode, serde_json::to_value(&list.data)?, human);
    Ok(())
}

async fn create_agent(remote: &Remote, args: crate::agents::AgentCreate, json_mode: bool) -> anyhow::Result<()> {
    let tenant = args.tenant().to_owned();
    let id = remote.tenant(&tenant).await?;
    let body = args.into_new_agent()?;
    let agent: Agent = remote.send(Method::POST, &format!("/admin/v1/tenants/{id}/agents"), Some(&body)).await?;
    crate::agents::print_created(json_mode, &agent, &tenant)
}

async fn audit(remote: &Remote, args: crate::commands::AuditArgs, json_mode: bool) -> anyhow::Result<()> {
    let id = remote.tenant(&args.tenant).await?;
    let mut query = vec![("format".to_owned(), "jsonl".to_owned())];
    for (k, v) in [("action", &args.action), ("actor", &args.actor), ("since", &args.since), ("until", &args.until)] {
        if let Some(v) = v {
            query.push((k.to_owned(), v.clone()));
        }
    }
    let qs: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(query).finish();
    let path = format!("/admin/v1/tenants/{id}/audit?{qs}");
    let resp = remote.http.get(format!("{}{path}", remote.base)).bearer_auth(&remote.token).send().await?;
    if !resp.status().is_success() {
        bail!("GET {path}: {}: {}", resp.status(), resp.text().await.unwrap_or_default());
    }
    let text = resp.text().await?;
    // Each line an entry as the API shows it; one that is not is an error, never left out.
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let entry: AuditEntry =
            serde_json::from_str(line).with_context(|| format!("GET {path}: line {} is not an audit entry", n + 1))?;
        entries.push(entry);
    }
    crate::cli::print_audit(json_mode, &entries);
    Ok(())
}

async fn mcp(remote: &Remote, cmd: crate::mcp::McpCmd, json_mode: bool) -> anyhow::Result<()> {
    match cmd {
        crate::mcp::McpCmd::Add(args) => {
            let spec = crate::mcp::spec_of(&args)?;
            let id = remote.tenant(&args.agent.tenant).await?;
            let path = crate::mcp::api_path(&id, &args.agent, Some(&args.name));
            let set: McpServerSet = remote.send(Method::PUT, &path, Some(&spec)).await?;
            print(
                json_mode,
                serde_json::to_value(&set)?,
                format!("set MCP server {} of {}", args.name, args.agent.agent),
            );
        }
        crate::mcp::McpCmd::List(who) => {
            let id = remote.tenant(&who.tenant).await?;
            let list: List<McpServer> =
                remote.send(Method::GET, &crate::mcp::api_path(&id, &who, None), None::<&()>).await?;
            print(json_mode, serde_json::to_value(&list.data)?, crate::mcp::list_lines(&list.data));
        }
        crate::mcp::McpCmd::Remove { agent: who, name } => {
            let id = remote.tenant(&who.tenant).await?;
            remote.send::<()>(Method::DELETE, &crate::mcp::api_path(&id, &who, Some(&name)), None::<&()>).await?;
            print(json_mode, json!({ "removed": name }), format!("removed MCP server {name} of {}", who.agent));
        }
    }
    Ok(())
}

async fn secret(remote: &Remote, cmd: crate::secrets::SecretCmd, json_mode: bool) -> anyhow::Result<()> {
    use crate::secrets::{SecretCmd, api_path, bind_request, lines};
    match cmd {
        SecretCmd::Bind { agent: who, name, credential, in_query, body_field, require_header } => {
            let id = remote.tenant(&who.tenant).await?;
            let body = bind_request(&credential, in_query, body_field, require_header);
            let bound: hermes_wire::admin::SecretBinding =
                remote.send(Method::PUT, &api_path(&id, &who, Some(&name)), Some(&body)).await?;
            let human = format!("bound {name} of {} to credential {credential}", who.agent);
            print(json_mode, serde_json::to_value(&bound)?, human);
        }
        SecretCmd::List(who) => {
            let id = remote.tenant(&who.tenant).await?;
            let list: List<hermes_wire::admin::SecretBinding> =
                remote.send(Method::GET, &api_path(&id, &who, None), None::<&()>).await?;
            print(json_mode, serde_json::to_value(&list.data)?, lines(&list.data));
        }
        SecretCmd::Unbind { agent: who, name } => {
            let id = remote.tenant(&who.tenant).await?;
            remote.send::<()>(Method::DELETE, &api_path(&id, &who, Some(&name)), None::<&()>).await?;
            print(json_mode, json!({ "unbound": name }), format!("unbound {name} of {}", who.agent));
        }
    }
    Ok(())
}
