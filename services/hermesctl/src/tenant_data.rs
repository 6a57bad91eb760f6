//! `hermesctl tenant export`, `tenant delete` and `tenant retention`: a tenant's whole data as
//! one archive, its deletion (`hermes_ops::tenant_data` says what each holds and does), and how
//! long it keeps its data (`hermes_store::retention_policy`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_store::Store;

use crate::cli::{print, tenant};

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(long)]
    tenant: String,
    /// The archive to write (`.tar.gz`, mode 0600); refused if it exists.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    #[arg(long)]
    tenant: String,
    /// The tenant's name again: nothing is deleted unless it matches.
    #[arg(long)]
    confirm: String,
}

pub async fn run_export(json_mode: bool, store: &Store, args: ExportArgs) -> anyhow::Result<()> {
    let t = tenant(store, &args.tenant).await?;
    // Everything the tenant owns: readable by the operator alone.
    let file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&args.out)
        .await
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut out = tokio::io::BufWriter::new(file);
    let exported = match hermes_ops::tenant_data::export(store, &t, &mut out).await {
        Ok(exported) => exported,
        Err(e) => {
            drop(out);
            let _ = tokio::fs::remove_file(&args.out).await;
            return Err(e.into());
        }
    };
    let rows: u64 = exported.tables.values().sum();
    let human = format!(
        "exported {} to {}: {rows} rows in {} tables, {} skill files, {} memory stores, {} bytes",
        t.name,
        args.out.display(),
        exported.tables.values().filter(|n| **n > 0).count(),
        exported.skill_files,
        exported.memory_stores,
        exported.bytes
    );
    print(json_mode, json!({ "path": args.out, "export": exported }), human);
    Ok(())
}

pub async fn run_delete(json_mode: bool, config: &HermesConfig, store: &Store, args: DeleteArgs) -> anyhow::Result<()> {
    if args.confirm != args.tenant {
        bail!("--confirm must repeat the tenant's name ({}); nothing was deleted", args.tenant);
    }
    let t = tenant(store, &args.tenant).await?;
    let cache = hermes_cache::Cache::connect(&config.redis.url, &config.redis.key_prefix)
        .await
        .context("cannot reach Redis to delete the tenant's keys there; nothing was deleted")?;
    let by = crate::audit_trail::cli_actor();
    let deleted = hermes_ops::tenant_data::delete(store, &by, t.id).await?;
    let cache_keys =
        cache.forget_tenant(t.id).await.context("the tenant's rows are deleted, but not its keys in Redis")?;
    let rows: u64 = deleted.removed.values().sum();
    let human = format!(
        "deleted {} ({}): {rows} rows in {} tables, {} keys in Redis; its sandboxes go when a worker next reaps",
        deleted.name,
        deleted.tenant,
        deleted.removed.values().filter(|n| **n > 0).count(),
        cache_keys
    );
    print(json_mode, json!({ "deleted": deleted, "cache_keys": cache_keys }), human);
    Ok(())
}

/// A retention period as typed: days (0 keeps forever) or `default` (the installation's).
#[derive(Debug, Clone, Copy)]
pub struct Period(Option<u32>);

impl std::str::FromStr for Period {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "default" => Ok(Self(None)),
            days => days.parse().map(|d| Self(Some(d))).map_err(|_| format!("{days:?} is neither days nor `default`")),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct RetentionArgs {
    #[arg(long)]
    tenant: String,
    /// Sessions (with their messages) this many days after their last activity.
    #[arg(long)]
    sessions_days: Option<Period>,
    /// Finished turns (with their streams, questions, stored responses and files).
    #[arg(long)]
    turns_days: Option<Period>,
    /// The files turns were given.
    #[arg(long)]
    files_days: Option<Period>,
    /// Usage detail (one row per model call; 0 or at least 35). Daily totals stay.
    #[arg(long)]
    usage_detail_days: Option<Period>,
}

/// Shows the tenant's retention periods, changing those named first. Each is days (0: forever)
/// or `default` (the installation's `retention.*`, shown beside it).
pub async fn run_retention(
    json_mode: bool,
    config: &HermesConfig,
    store: &Store,
    args: RetentionArgs,
) -> anyhow::Result<()> {
    let t = tenant(store, &args.tenant).await?;
    let mut retention = store.tenancy().retention(t.id).await?;
    let changes = [
        (&mut retention.sessions_days, args.sessions_days),
        (&mut retention.turns_days, args.turns_days),
        (&mut retention.files_days, args.files_days),
        (&mut retention.usage_detail_days, args.usage_detail_days),
    ];
    let mut changed = false;
    for (period, asked) in changes {
        if let Some(Period(days)) = asked {
            *period = days;
            changed = true;
        }
    }
    if changed {
        store.tenancy().set_retention(t.id, &retention).await?;
    }
    let defaults = &config.retention;
    let shown = |own: Option<u32>, default: u32| match own {
        Some(0) => "forever".to_owned(),
        Some(days) => format!("{days} days"),
        None if default == 0 => "forever (the installation's)".to_owned(),
        None => format!("{default} days (the installation's)"),
    };
    let human = [
        ("sessions", shown(retention.sessions_days, defaults.sessions_days)),
        ("turns", shown(retention.turns_days, defaults.turns_days)),
        ("files", shown(retention.files_days, defaults.files_days)),
        ("usage detail", shown(retention.usage_detail_days, defaults.usage_detail_days)),
    ]
    .map(|(what, kept)| format!("{what:<13} {kept}"))
    .join("\n");
    print(json_mode, json!({ "tenant": retention, "installation": defaults }), human);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Period;

    #[test]
    fn a_period_is_days_or_the_installations_default_and_nothing_else() {
        assert_eq!("30".parse::<Period>().map(|p| p.0), Ok(Some(30)));
        assert_eq!("0".parse::<Period>().map(|p| p.0), Ok(Some(0)), "0 keeps forever");
        assert_eq!("default".parse::<Period>().map(|p| p.0), Ok(None));
        assert!("-1".parse::<Period>().is_err() && "forever".parse::<Period>().is_err());
    }
}
