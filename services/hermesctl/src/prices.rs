//! `hermesctl price ...`: the model price table that usage is costed with (US dollars per
//! million tokens; media models per image, per million characters spoken or per audio
//! minute). A price applies to calls made after it is set.

use clap::Subcommand;
use serde_json::json;

use hermes_store::{ModelPrice, Store};

use crate::cli::{print, print_lines};

#[derive(Subcommand)]
pub enum PriceCmd {
    /// Set a model's price; `--model` is a model id, or a prefix ending in '*' (gpt-4o*).
    Set(PriceArgs),
    /// List the prices.
    List,
}

/// `hermesctl price set`'s flags.
#[derive(clap::Args)]
pub struct PriceArgs {
    #[arg(long)]
    model: String,
    /// Input tokens, USD per million (a media model with a unit price may leave it out: 0).
    #[arg(long)]
    input: Option<f64>,
    /// Output tokens, USD per million (as `--input`).
    #[arg(long)]
    output: Option<f64>,
    /// Cache reads (default: the input price).
    #[arg(long)]
    cached_input: Option<f64>,
    /// Cache writes (default: the input price).
    #[arg(long)]
    cache_write: Option<f64>,
    /// Image generation: USD per picture.
    #[arg(long)]
    per_image: Option<f64>,
    /// Text to speech: USD per million characters spoken.
    #[arg(long)]
    per_mchar: Option<f64>,
    /// Speech to text: USD per minute of audio.
    #[arg(long)]
    per_audio_minute: Option<f64>,
    /// What a call on the provider's priority tier (`/fast`) costs over the token prices
    /// (OpenAI's priority about 2, Anthropic's fast mode up to 6); unset: the standard prices.
    #[arg(long)]
    priority_multiplier: Option<f64>,
}

pub async fn run_price(json_mode: bool, store: &Store, cmd: PriceCmd) -> anyhow::Result<()> {
    match cmd {
        PriceCmd::Set(args) => {
            let media = args.per_image.is_some() || args.per_mchar.is_some() || args.per_audio_minute.is_some();
            let (input, output) = match (args.input, args.output) {
                (Some(input), Some(output)) => (input, output),
                (input, output) if media => (input.unwrap_or(0.0), output.unwrap_or(0.0)),
                _ => anyhow::bail!(
                    "give --input and --output (USD per million tokens), or a media price (--per-image, --per-mchar, \
                     --per-audio-minute)"
                ),
            };
            let price = ModelPrice {
                model: args.model,
                input,
                output,
                cached_input: args.cached_input,
                cache_write: args.cache_write,
                per_image: args.per_image,
                per_mchar: args.per_mchar,
                per_audio_minute: args.per_audio_minute,
                priority_multiplier: args.priority_multiplier,
            };
            store.tenancy().set_model_price(&price).await?;
            print(json_mode, json!(price), format!("{}: {}", price.model, describe(&price)));
        }
        PriceCmd::List => {
            let prices = store.tenancy().model_prices().await?;
            print_lines(json_mode, &prices, |p| format!("{:<32} {}", p.model, describe(p)));
        }
    }
    Ok(())
}

/// A price as one line: tokens, and each unit price set.
fn describe(p: &ModelPrice) -> String {
    let mut parts = vec![format!("${}/M in, ${}/M out", p.input, p.output)];
    for (price, unit) in [(p.per_image, "image"), (p.per_mchar, "M chars"), (p.per_audio_minute, "audio minute")] {
        if let Some(price) = price {
            parts.push(format!("${price}/{unit}"));
        }
    }
    if let Some(m) = p.priority_multiplier {
        parts.push(format!("x{m} on the priority tier"));
    }
    parts.join(", ")
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
        Some(a) => Some(store.agents().agent_by_name(t.id, a).await.map_err(|_| anyhow::anyhow!("no agent {a:?}"))?.id),
        None => None,
    };
    let budget = hermes_store::Budget { agent_id, period, hard_usd: hard, soft_usd: soft };
    store.tenancy().set_budget(t.id, &budget).await?;
    let scope = agent.unwrap_or_else(|| t.name.clone());
    print(json_mode, json!(budget), format!("{} budget of {scope}: hard {hard:?}, soft {soft:?} USD", budget.period));
    Ok(())
}
