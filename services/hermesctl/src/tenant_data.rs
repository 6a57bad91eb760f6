//! `hermesctl tenant export` and `tenant delete`: a tenant's whole data as one archive, and
//! its deletion (`hermes_ops::tenant_data` says what each holds and does).

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
    /// The archive to write (`.tar.gz`); refused if it exists.
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
    let file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
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
