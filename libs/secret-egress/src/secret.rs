//! A secret as the egress proxy holds it for one sandbox: its placeholder, its real value, the
//! hosts it may go to and where in a request it may be put.

/// Where in a request to its hosts a secret's placeholder is replaced.
pub use hermes_core::secret_placement::SecretPlacement as Placement;

/// One secret of a sandbox.
#[derive(Clone)]
pub struct Secret {
    /// The variable it is bound to (`GITHUB_TOKEN`), for messages.
    pub name: String,
    pub placeholder: String,
    pub value: String,
    /// Host names, or `*.suffix` for subdomains (`hermes_core::hosts`).
    pub hosts: Vec<String>,
    pub placement: Placement,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("placeholder", &self.placeholder)
            .field("hosts", &self.hosts)
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

impl Secret {
    /// Whether the secret may go to `host`.
    pub fn goes_to(&self, host: &str) -> bool {
        hermes_core::hosts::allowed(&self.hosts, host)
    }
}

/// A sandbox's secrets.
#[derive(Debug, Clone, Default)]
pub struct Secrets(pub Vec<Secret>);

impl Secrets {
    /// The secrets that may go to `host`: when there are none, its connections are tunnelled
    /// untouched.
    pub fn for_host(&self, host: &str) -> Vec<Secret> {
        self.0.iter().filter(|s| s.goes_to(host)).cloned().collect()
    }
}
