//! What the store benchmarks write: an agent, and a conversation of words that search can find.

use hermes_core::{AgentId, ChatMessage, SessionSource};
use hermes_store::{NewAgent, NewTurn, TurnTarget};

/// An agent whose provider is never called.
pub fn agent() -> NewAgent {
    NewAgent {
        name: "ops".into(),
        model: "m".into(),
        provider_base_url: "http://127.0.0.1:9/v1".into(),
        provider_key: None,
        soul: None,
        system_message: None,
        toolsets: vec!["session_search".into()],
        provider_key_hosts: vec![],
        fallbacks: vec![],
        api_mode: None,
        auxiliary: None,
        context_window: None,
    }
}

const WORDS: &[&str] = &[
    "deploy",
    "staging",
    "release",
    "database",
    "migration",
    "rollback",
    "latency",
    "cache",
    "redis",
    "queue",
    "postgres",
    "index",
    "query",
    "customer",
    "invoice",
    "budget",
    "meeting",
    "agenda",
    "incident",
    "alert",
    "kubernetes",
    "docker",
    "build",
    "test",
    "review",
    "branch",
    "merge",
    "credentials",
    "rotate",
    "vault",
];
const CHINESE: &[&str] =
    &["数据库迁移失败了", "请帮我回滚版本", "明天的会议议程", "客户发票有问题", "部署到预发环境", "缓存延迟太高"];

/// A small deterministic generator (xorshift), so runs are alike without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(2_654_435_761).wrapping_add(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n.max(1) as u64).unwrap_or(0)
    }
}

/// A deterministic sentence of twelve words, with a Chinese phrase one time in seven.
pub fn sentence(seed: usize) -> String {
    let mut rng = Rng::new(seed as u64);
    let mut words: Vec<&str> = (0..12).map(|_| WORDS[rng.below(WORDS.len())]).collect();
    if seed.is_multiple_of(7) {
        words.push(CHINESE[seed % CHINESE.len()]);
    }
    words.join(" ")
}

/// A conversation of `messages` lines by `user`, queued as a turn (a session, its messages and
/// an open turn).
pub fn conversation(agent: AgentId, user: &str, seed: usize, messages: usize) -> NewTurn {
    let history: Vec<ChatMessage> = (0..messages)
        .map(|m| {
            let text = sentence(seed * messages + m);
            if m % 2 == 0 { ChatMessage::user(text) } else { ChatMessage::assistant(text) }
        })
        .collect();
    let target = TurnTarget::New { source: SessionSource::Api, user_key: user.into(), history };
    NewTurn::new(agent, target, ChatMessage::user(sentence(seed)))
}

/// Percentile `q` (0 to 1) of sorted samples, in milliseconds.
pub fn ms_at(sorted: &[std::time::Duration], q: f64) -> f64 {
    let i = ((sorted.len().max(1) - 1) as f64 * q).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}
