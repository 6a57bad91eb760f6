//! `hermesctl price ...`: the model price table that usage is costed with (US dollars per
//! million tokens). A price applies to calls made after it is set.

use clap::Subcommand;
use serde_json::json;

use hermes_store::{ModelPrice, Store};

use crate::cli::{print, print_lines};

#[derive(Subcommand)]
pub enum PriceCmd {
    /// Set a model's price; `--model` is a model id, or a prefix ending in '*' (gpt-4o*).
    Set {
        #[arg(long)]
        model: String,
        /// Input tokens, USD per million.
        #[arg(long)]
        input: f64,
        /// Output tokens, USD per million.
        #[arg(long)]
        output: f64,
        /// Cache reads (default: the input price).
        #[arg(long)]
        cached_input: Option<f64>,
        /// Cache writes (default: the input price).
        #[arg(long)]
        cache_write: Option<f64>,
    },
    /// List the prices.
    List,
}

pub async fn run_price(json_mode: bool, store: &Store, cmd: PriceCmd) -> anyhow::Result<()> {
    match cmd {
        PriceCmd::Set { model, input, output, cached_input, cache_write } => {
            let price = ModelPrice { model, input, output, cached_input, cache_write };
            store.set_model_price(&price).await?;
            print(json_mode, json!(price), format!("{}: ${input}/M in, ${output}/M out", price.model));
        }
        PriceCmd::List => {
            let prices = store.model_prices().await?;
            print_lines(json_mode, &prices, |p| format!("{:<32} in ${:<8} out ${}", p.model, p.input, p.output));
        }
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum BudgetCmd {
    /// Set a spending cap for the tenant, or one agent (replaces the same scope and period).
    Set {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        agent: Option<String>,
        /// day or month.
        #[arg(long)]
        period: hermes_core::BudgetPeriod,
        /// No model call once this much (USD) is spent in the period.
        #[arg(long)]
        hard: Option<f64>,
        /// Warn (logs, metrics) once this much is spent.
        #[arg(long)]
        soft: Option<f64>,
    },
}

pub async fn run_budget(json_mode: bool, store: &Store, cmd: BudgetCmd) -> anyhow::Result<()> {
    let BudgetCmd::Set { tenant: name, agent, period, hard, soft } = cmd;
    let t = crate::cli::tenant(store, &name).await?;
    let agent_id = match &agent {
        Some(a) => Some(store.agent_by_name(t.id, a).await.map_err(|_| anyhow::anyhow!("no agent {a:?}"))?.id),
        None => None,
    };
    let budget = hermes_store::Budget { agent_id, period, hard_usd: hard, soft_usd: soft };
    store.set_budget(t.id, &budget).await?;
    let scope = agent.unwrap_or_else(|| t.name.clone());
    print(json_mode, json!(budget), format!("{} budget of {scope}: hard {hard:?}, soft {soft:?} USD", budget.period));
    Ok(())
}
