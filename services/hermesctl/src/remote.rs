//! `hermesctl --url URL --token hat_...`: the same commands over the admin API, so an
//! operator's laptop needs no database URL and no master key. The token is an operator's
//! (`hermesctl operator token`, or `POST /admin/v1/tokens` in a console session) or a tenant's
//! admin token; the API decides what it may do and records every change in the audit log as
//! that token. Commands that need the database itself say so.

use anyhow::{Context, bail};
use reqwest::Method;
use serde_json::{Value, json};

use crate::cli::print;
use crate::commands::{Cli, Command, TenantCmd};
use crate::keys::KeyCmd;
use crate::people::MemberCmd;

/// The admin API, as one token.
struct Remote {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Remote {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.with_context(|| format!("cannot reach {}", self.base))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if !status.is_success() {
            let why = value["error"]["message"].as_str().map(str::to_owned).unwrap_or_else(|| value.to_string());
            bail!("{method} {path}: {status}: {why}");
        }
        Ok(value)
    }

    /// The tenant's id, by name.
    async fn tenant(&self, name: &str) -> anyhow::Result<String> {
        let found = self.call(Method::GET, &format!("/admin/v1/tenants?name={}", encode(name)), None).await?;
        match found["data"][0]["id"].as_str() {
            Some(id) => Ok(id.to_owned()),
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
        Command::Tenant(TenantCmd::List) => {
            let list = remote.call(Method::GET, "/admin/v1/tenants?limit=500", None).await?;
            let human = lines(&list["data"], |t| {
                format!("{}\t{}", t["name"].as_str().unwrap_or(""), t["id"].as_str().unwrap_or(""))
            });
            print(json_mode, list["data"].clone(), human);
        }
        Command::Tenant(TenantCmd::Create { name }) => {
            let made = remote.call(Method::POST, "/admin/v1/tenants", Some(json!({ "name": name }))).await?;
            let t = &made["tenant"];
            print(
                json_mode,
                t.clone(),
                format!("created tenant {} ({})", t["name"].as_str().unwrap_or(""), t["id"].as_str().unwrap_or("")),
            );
        }
        Command::Tenant(TenantCmd::Limits { tenant, requests_per_minute, concurrent_turns }) => {
            let id = remote.tenant(&tenant).await?;
            let quotas = json!({ "requests_per_minute": requests_per_minute, "concurrent_turns": concurrent_turns });
            remote.call(Method::PUT, &format!("/admin/v1/tenants/{id}/quotas"), Some(quotas.clone())).await?;
            print(json_mode, quotas.clone(), format!("limits of {tenant}: {quotas}"));
        }
        Command::Member(MemberCmd::List { tenant }) => {
            let id = remote.tenant(&tenant.tenant).await?;
            let list = remote.call(Method::GET, &format!("/admin/v1/tenants/{id}/members"), None).await?;
            let human = lines(&list["data"], |m| {
                format!("{:<32} {}", m["email"].as_str().unwrap_or(""), m["role"].as_str().unwrap_or(""))
            });
            print(json_mode, list["data"].clone(), human);
        }
        Command::Member(MemberCmd::Add { tenant, email, role, .. }) => {
            // Over the API a new member is invited: the link is theirs to open.
            let id = remote.tenant(&tenant.tenant).await?;
            let body = json!({ "email": email, "role": role });
            let made = remote.call(Method::POST, &format!("/admin/v1/tenants/{id}/invitations"), Some(body)).await?;
            let link = made["link"].as_str().unwrap_or("").to_owned();
            print(
                json_mode,
                made,
                format!("invited {email} as {role} of {}\ninvitation link (works once): {link}", tenant.tenant),
            );
        }
        Command::Key(KeyCmd::Create { tenant, agent, name }) => {
            let id = remote.tenant(&tenant).await?;
            let label = if name.is_empty() { "hermesctl".to_owned() } else { name };
            let mut body = json!({ "name": label });
            if let Some(agent) = agent {
                body["agent"] = json!(agent);
            }
            let made = remote.call(Method::POST, &format!("/admin/v1/tenants/{id}/keys"), Some(body)).await?;
            let secret = made["secret"].as_str().unwrap_or("").to_owned();
            let mut value = made["key"].clone();
            value["key"] = json!(secret);
            let human = format!(
                "created API key {} for tenant {tenant}\n\n    {secret}\n\nStore it now: it is not shown again.",
                value["id"].as_str().unwrap_or("")
            );
            print(json_mode, value, human);
        }
        Command::Key(KeyCmd::Revoke { tenant, id: key }) => {
            let id = remote.tenant(&tenant).await?;
            remote.call(Method::DELETE, &format!("/admin/v1/tenants/{id}/keys/{key}"), None).await?;
            print(json_mode, json!({ "revoked": key }), format!("revoked API key {key}"));
        }
        Command::Key(KeyCmd::List { tenant }) => {
            let id = remote.tenant(&tenant).await?;
            let list = remote.call(Method::GET, &format!("/admin/v1/tenants/{id}/keys"), None).await?;
            let human = lines(&list["data"], |k| {
                let revoked = if k["revoked_at"].is_null() { "" } else { "  (revoked)" };
                format!(
                    "{}\t{}\t{}{revoked}",
                    k["prefix"].as_str().unwrap_or(""),
                    k["name"].as_str().unwrap_or(""),
                    k["id"].as_str().unwrap_or("")
                )
            });
            print(json_mode, list["data"].clone(), human);
        }
        Command::Agent(crate::agents::AgentCmd::List { tenant }) => {
            let id = remote.tenant(&tenant).await?;
            let list = remote.call(Method::GET, &format!("/admin/v1/tenants/{id}/agents"), None).await?;
            let human = lines(&list["data"], |a| {
                let field = |k: &str| a[k].as_str().unwrap_or("").to_owned();
                format!("{}\t{}\t{}\t{}", field("name"), field("id"), field("model"), field("provider_base_url"))
            });
            print(json_mode, list["data"].clone(), human);
        }
        Command::Audit(args) => {
            let id = remote.tenant(&args.tenant).await?;
            let mut query = vec![("format".to_owned(), "jsonl".to_owned())];
            for (k, v) in
                [("action", &args.action), ("actor", &args.actor), ("since", &args.since), ("until", &args.until)]
            {
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
            crate::cli::print_audit(json_mode, text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect());
        }
        Command::Mcp(crate::mcp::McpCmd::Add(args)) => {
            let spec = crate::mcp::spec_of(&args)?;
            let id = remote.tenant(&args.agent.tenant).await?;
            let path = crate::mcp::api_path(&id, &args.agent, Some(&args.name));
            let set = remote.call(Method::PUT, &path, Some(serde_json::to_value(&spec)?)).await?;
            print(json_mode, set, format!("set MCP server {} of {}", args.name, args.agent.agent));
        }
        Command::Mcp(crate::mcp::McpCmd::List(who)) => {
            let id = remote.tenant(&who.tenant).await?;
            let list = remote.call(Method::GET, &crate::mcp::api_path(&id, &who, None), None).await?;
            print(json_mode, list["data"].clone(), crate::mcp::list_lines(&list));
        }
        Command::Mcp(crate::mcp::McpCmd::Remove { agent: who, name }) => {
            let id = remote.tenant(&who.tenant).await?;
            remote.call(Method::DELETE, &crate::mcp::api_path(&id, &who, Some(&name)), None).await?;
            print(json_mode, json!({ "removed": name }), format!("removed MCP server {name} of {}", who.agent));
        }
        _ => bail!(
            "this command needs the database (run it without --url where the database is reachable); \
             over the API: tenant list|create|limits, member list|add, key create|list|revoke, agent list, mcp, audit"
        ),
    }
    Ok(())
}

fn lines(items: &Value, line: impl Fn(&Value) -> String) -> String {
    items.as_array().map(|a| a.iter().map(line).collect::<Vec<_>>().join("\n")).unwrap_or_default()
}
