//! A new agent's toolsets when whoever makes it names none: the base set every installation
//! can run, and each optional toolset whose service the operator configured. One rule for the
//! admin API, the console and `hermesctl agent create`, and the choices the console offers.

use hermes_config::HermesConfig;
use hermes_core::ToolsetName;
use hermes_core::model_names::reads_only_text;
use hermes_core::toolsets::{OperatorService, TOOLSETS};
use hermes_wire::admin::{NewAgent, ToolsetChoice};

/// What every new agent gets: the toolsets that need only its model and its sandbox
/// (`hermesctl agent create`'s list before defaults followed the installation). `mcp`,
/// `messaging` and `cronjob` act on the team's servers, bots and schedule, so they are asked for.
pub const BASE: [ToolsetName; 9] = [
    ToolsetName::Terminal,
    ToolsetName::File,
    ToolsetName::CodeExecution,
    ToolsetName::Todo,
    ToolsetName::Memory,
    ToolsetName::SessionSearch,
    ToolsetName::Skills,
    ToolsetName::Clarify,
    ToolsetName::Delegation,
];

/// Offered by default when their service is there (`vision` when the agent can see).
const OPTIONAL: [ToolsetName; 5] =
    [ToolsetName::Web, ToolsetName::Vision, ToolsetName::ImageGen, ToolsetName::Tts, ToolsetName::Browser];

/// Which of the operator's services this installation has, read from its configuration as the
/// worker reads it when it builds the tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Installed {
    web_search: bool,
    image_gen: bool,
    tts: bool,
    browser_image: bool,
}

impl Installed {
    pub fn from_config(config: &HermesConfig) -> Self {
        Self {
            web_search: config.web.searches(),
            image_gen: config.image_gen.endpoint().is_ok(),
            tts: config.tts.unusable(config.stt.openai_api_key.as_deref()).is_none(),
            browser_image: config.browser.in_sandbox_image,
        }
    }

    pub fn has(self, service: OperatorService) -> bool {
        match service {
            OperatorService::WebSearch => self.web_search,
            OperatorService::ImageGen => self.image_gen,
            OperatorService::Tts => self.tts,
            OperatorService::BrowserImage => self.browser_image,
        }
    }

    /// Whether the installation has what `toolset` needs.
    pub fn configured(self, toolset: ToolsetName) -> bool {
        toolset.needs().is_none_or(|service| self.has(service))
    }

    /// Whether a new agent gets `toolset` when its maker names none (for `vision`: one whose
    /// model can see; [`defaults_for`](Self::defaults_for) knows the model).
    pub fn default_on(self, toolset: ToolsetName) -> bool {
        BASE.contains(&toolset) || (OPTIONAL.contains(&toolset) && self.configured(toolset))
    }

    /// The toolsets of `new` when it names none: the defaults, without `vision` for an agent
    /// none of whose models can see (its tool would only fail).
    pub fn defaults_for(self, new: &NewAgent) -> Vec<String> {
        let sees = new.vision_model.is_some()
            || new.auxiliary.as_ref().is_some_and(|m| !reads_only_text(&m.model))
            || !reads_only_text(&new.model);
        let wanted = |t: &ToolsetName| self.default_on(*t) && (*t != ToolsetName::Vision || sees);
        ToolsetName::ALL.iter().filter(|t| wanted(t)).map(|t| t.as_str().to_owned()).collect()
    }

    /// Every toolset as the console offers it: described, and whether the installation has
    /// what it needs and new agents get it.
    pub fn choices(self) -> Vec<ToolsetChoice> {
        TOOLSETS
            .iter()
            .map(|t| ToolsetChoice {
                name: t.name().to_owned(),
                description: t.description.to_owned(),
                configured: self.configured(t.id),
                needs: t.id.needs(),
                default: self.default_on(t.id),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_agent(model: &str) -> NewAgent {
        NewAgent { name: "a".into(), model: model.into(), ..NewAgent::default() }
    }

    #[test]
    fn a_bare_installation_gives_the_base_set_and_speech_from_edge() {
        let mut config = HermesConfig::default();
        let installed = Installed::from_config(&config);
        let got = installed.defaults_for(&new_agent("gpt-4o"));
        let base: Vec<&str> = BASE.iter().map(|t| t.as_str()).collect();
        // Edge TTS needs no key, so an installation that did not turn speech off has it.
        assert_eq!(got, [&base[..], &["vision", "tts"]].concat());
        config.tts.enabled = false;
        assert!(!Installed::from_config(&config).defaults_for(&new_agent("gpt-4o")).contains(&"tts".to_owned()));
    }

    #[test]
    fn each_configured_service_adds_its_toolset() {
        let mut config = HermesConfig::default();
        config.web.searxng_url = Some("http://searxng.internal:8080".into());
        config.image_gen.fal_key = Some("fal-key".into());
        config.browser.in_sandbox_image = true;
        let got = Installed::from_config(&config).defaults_for(&new_agent("gpt-4o"));
        for toolset in ["web", "image_gen", "browser", "terminal"] {
            assert!(got.contains(&toolset.to_owned()), "{toolset} in {got:?}");
        }
        assert!(!got.contains(&"mcp".to_owned()) && !got.contains(&"cronjob".to_owned()), "asked for only: {got:?}");
    }

    #[test]
    fn a_service_half_configured_adds_nothing() {
        let mut config = HermesConfig::default();
        // Extraction alone works everywhere; the toolset is there for search.
        config.web.extract_backend = Some(hermes_config::WebBackend::Builtin);
        // A search backend chosen without its key, and an image provider without its key.
        config.web.backend = Some(hermes_config::WebBackend::Tavily);
        config.image_gen.provider = Some(hermes_config::ImageGenProvider::Openai);
        config.tts.provider = hermes_config::TtsProvider::Elevenlabs;
        let installed = Installed::from_config(&config);
        let got = installed.defaults_for(&new_agent("gpt-4o"));
        for toolset in ["web", "image_gen", "tts", "browser"] {
            assert!(!got.contains(&toolset.to_owned()), "{toolset} in {got:?}");
        }
        // A search backend named for web_search that cannot search is the worker's error too.
        config.web.tavily_api_key = Some("tvly-key".into());
        config.web.search_backend = Some(hermes_config::WebBackend::Builtin);
        assert!(!Installed::from_config(&config).configured(ToolsetName::Web));
        config.web.search_backend = None;
        assert!(Installed::from_config(&config).configured(ToolsetName::Web));
    }

    #[test]
    fn vision_only_for_an_agent_that_can_see() {
        let installed = Installed::default();
        let vision = "vision".to_owned();
        assert!(!installed.defaults_for(&new_agent("deepseek-chat")).contains(&vision), "a text-only model");
        let eye = hermes_wire::admin::ModelRef {
            model: "gpt-4o-mini".into(),
            base_url: "https://api.openai.com/v1".into(),
            api_mode: None,
        };
        let with_eye = NewAgent { vision_model: Some(eye), ..new_agent("deepseek-chat") };
        assert!(installed.defaults_for(&with_eye).contains(&vision), "its vision model sees");
    }

    #[test]
    fn the_choices_say_what_is_missing_and_what_is_default() {
        let choices = Installed::default().choices();
        assert_eq!(choices.len(), ToolsetName::ALL.len());
        let web = choices.iter().find(|c| c.name == "web").unwrap();
        assert_eq!((web.configured, web.needs, web.default), (false, Some(OperatorService::WebSearch), false));
        let mcp = choices.iter().find(|c| c.name == "mcp").unwrap();
        assert_eq!((mcp.configured, mcp.needs, mcp.default), (true, None, false), "ready but asked for");
        let terminal = choices.iter().find(|c| c.name == "terminal").unwrap();
        assert!(terminal.configured && terminal.default && !terminal.description.is_empty());
    }
}
