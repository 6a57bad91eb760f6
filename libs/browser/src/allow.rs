//! What `browser_cdp` may send: an allow-list of the commands page automation needs, none of
//! which can read or write a file in the sandbox. Anything else is refused with the list, so a
//! new or unlisted method (`Browser.setDownloadBehavior`, `DOM.setFileInputFiles`,
//! `Input.dispatchDragEvent` with files, `Network.loadNetworkResource`, `IO.read`,
//! `Target.exposeDevToolsProtocol`, ...) never reaches the browser.
//!
//! Navigations open http(s) pages or about:blank only; browser-wide commands stay in the
//! conversation's own in-memory browser context and never close its page. The browser itself
//! also blocks `file://` (`crate::launch`), for navigations a page starts on its own.

use serde_json::{Map, Value, json};

/// Where an allowed command is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The conversation's page (its session).
    Page,
    /// The browser (no session).
    Browser,
}

struct Domain {
    name: &'static str,
    route: Route,
    methods: &'static [&'static str],
}

/// The allowed commands. Left out on purpose: Page/Runtime/Network `enable`/`disable` (the tools
/// rely on their events), screenshots and PDFs (too big for the answer; `browser_vision` sees
/// the page), and every domain that touches files, downloads, other targets' sessions, the
/// debugger, tracing or the browser's own lifetime.
const ALLOWED: &[Domain] = &[
    Domain {
        name: "Page",
        route: Route::Page,
        methods: &[
            "navigate",
            "reload",
            "stopLoading",
            "getFrameTree",
            "getNavigationHistory",
            "navigateToHistoryEntry",
            "resetNavigationHistory",
            "getLayoutMetrics",
            "getResourceTree",
            "getResourceContent",
            "handleJavaScriptDialog",
            "bringToFront",
            "addScriptToEvaluateOnNewDocument",
            "removeScriptToEvaluateOnNewDocument",
            "createIsolatedWorld",
            "setBypassCSP",
            "setDocumentContent",
        ],
    },
    Domain {
        name: "Runtime",
        route: Route::Page,
        methods: &[
            "evaluate",
            "callFunctionOn",
            "awaitPromise",
            "getProperties",
            "releaseObject",
            "releaseObjectGroup",
            "compileScript",
            "runScript",
            "globalLexicalScopeNames",
            "getHeapUsage",
        ],
    },
    Domain {
        name: "DOM",
        route: Route::Page,
        methods: &[
            "enable",
            "disable",
            "getDocument",
            "querySelector",
            "querySelectorAll",
            "describeNode",
            "resolveNode",
            "requestNode",
            "requestChildNodes",
            "pushNodesByBackendIdsToFrontend",
            "getAttributes",
            "getOuterHTML",
            "setOuterHTML",
            "setAttributeValue",
            "setAttributesAsText",
            "removeAttribute",
            "removeNode",
            "setNodeValue",
            "focus",
            "scrollIntoViewIfNeeded",
            "getBoxModel",
            "getContentQuads",
            "getNodeForLocation",
            "getFrameOwner",
            "performSearch",
            "getSearchResults",
            "discardSearchResults",
        ],
    },
    Domain {
        name: "CSS",
        route: Route::Page,
        methods: &["enable", "getComputedStyleForNode", "getInlineStylesForNode", "getMatchedStylesForNode"],
    },
    Domain { name: "DOMSnapshot", route: Route::Page, methods: &["captureSnapshot"] },
    Domain {
        name: "DOMStorage",
        route: Route::Page,
        methods: &["enable", "getDOMStorageItems", "setDOMStorageItem", "removeDOMStorageItem", "clear"],
    },
    Domain {
        name: "Accessibility",
        route: Route::Page,
        methods: &[
            "getFullAXTree",
            "getPartialAXTree",
            "queryAXTree",
            "getChildAXNodes",
            "getRootAXNode",
            "getAXNodeAndAncestors",
        ],
    },
    Domain {
        name: "Input",
        route: Route::Page,
        methods: &[
            "dispatchMouseEvent",
            "dispatchKeyEvent",
            "insertText",
            "dispatchTouchEvent",
            "synthesizeScrollGesture",
            "synthesizeTapGesture",
        ],
    },
    Domain {
        name: "Network",
        route: Route::Page,
        methods: &[
            "getCookies",
            "getAllCookies",
            "setCookie",
            "setCookies",
            "deleteCookies",
            "clearBrowserCookies",
            "clearBrowserCache",
            "getResponseBody",
            "getRequestPostData",
            "setExtraHTTPHeaders",
            "setUserAgentOverride",
            "setCacheDisabled",
            "setBlockedURLs",
            "emulateNetworkConditions",
        ],
    },
    Domain {
        name: "Emulation",
        route: Route::Page,
        methods: &[
            "setDeviceMetricsOverride",
            "clearDeviceMetricsOverride",
            "setGeolocationOverride",
            "clearGeolocationOverride",
            "setUserAgentOverride",
            "setLocaleOverride",
            "setTimezoneOverride",
            "setEmulatedMedia",
            "setEmulatedVisionDeficiency",
            "setTouchEmulationEnabled",
            "setScriptExecutionDisabled",
            "setCPUThrottlingRate",
            "setIdleOverride",
            "clearIdleOverride",
            "setScrollbarsHidden",
            "setFocusEmulationEnabled",
            "setDefaultBackgroundColorOverride",
        ],
    },
    Domain { name: "Performance", route: Route::Page, methods: &["enable", "getMetrics"] },
    Domain {
        name: "Target",
        route: Route::Browser,
        methods: &["getTargets", "getTargetInfo", "createTarget", "closeTarget", "activateTarget"],
    },
    Domain {
        name: "Browser",
        route: Route::Browser,
        methods: &[
            "getVersion",
            "getWindowForTarget",
            "getWindowBounds",
            "setWindowBounds",
            "grantPermissions",
            "resetPermissions",
        ],
    },
];

/// The conversation's own browser context and page, which browser-wide commands keep to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub context: &'a str,
    pub page: &'a str,
}

/// Why `browser_cdp` did not send a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdpRefusal {
    #[error(
        "{0} is not allowed: browser_cdp sends only page-automation commands, none that opens local files, \
         writes files or changes downloads (`allowed` lists them)"
    )]
    NotAllowed(String),
    #[error("{method} opens only http:// and https:// pages (or about:blank); `{url}` is refused")]
    NotWeb { method: String, url: String },
    #[error("Target.closeTarget cannot close this conversation's own page")]
    OwnPage,
}

/// Every allowed command, by domain (what a refusal shows the model).
pub(crate) fn allowed() -> Value {
    let mut domains = Map::new();
    for domain in ALLOWED {
        let methods: Vec<String> = domain
            .methods
            .iter()
            .map(|m| match (domain.name, *m) {
                ("Page", "navigate") | ("Target", "createTarget") => format!("{m} (http, https or about:blank)"),
                _ => (*m).to_owned(),
            })
            .collect();
        domains.insert(domain.name.to_owned(), json!(methods));
    }
    Value::Object(domains)
}

/// `url`, canonical, when it is an http(s) page or about:blank.
pub(crate) fn web_url(url: &str) -> Option<String> {
    if url.trim() == "about:blank" {
        return Some("about:blank".into());
    }
    reqwest::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https")).map(String::from)
}

/// Checks `method` against the allow-list: where it goes, and its params as sent (URLs
/// canonical, browser-wide commands held to the conversation's context).
pub(crate) fn check(method: &str, mut params: Value, scope: Scope<'_>) -> Result<(Route, Value), CdpRefusal> {
    let route = method
        .split_once('.')
        .and_then(|(domain, command)| {
            ALLOWED.iter().find(|d| d.name == domain && d.methods.contains(&command)).map(|d| d.route)
        })
        .ok_or_else(|| CdpRefusal::NotAllowed(method.to_owned()))?;
    match method {
        "Page.navigate" | "Target.createTarget" => {
            let url = params["url"].as_str().unwrap_or_default();
            let web = web_url(url).ok_or_else(|| CdpRefusal::NotWeb { method: method.into(), url: url.into() })?;
            params["url"] = json!(web);
            if method == "Target.createTarget" {
                params["browserContextId"] = json!(scope.context);
            }
        }
        "Target.closeTarget" if params["targetId"].as_str() == Some(scope.page) => return Err(CdpRefusal::OwnPage),
        "Browser.grantPermissions" | "Browser.resetPermissions" => params["browserContextId"] = json!(scope.context),
        _ => {}
    }
    Ok((route, params))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCOPE: Scope<'static> = Scope { context: "CTX", page: "PAGE" };

    fn refused(method: &str, params: Value) -> CdpRefusal {
        check(method, params, SCOPE).expect_err(method)
    }

    #[test]
    fn what_reads_or_writes_files_or_leaves_the_page_is_refused() {
        for method in [
            "Browser.setDownloadBehavior",
            "Page.setDownloadBehavior",
            "DOM.setFileInputFiles",
            "Input.dispatchDragEvent",
            "Network.loadNetworkResource",
            "IO.read",
            "Target.exposeDevToolsProtocol",
            "Target.sendMessageToTarget",
            "Target.attachToTarget",
            "Target.createBrowserContext",
            "Target.setAutoAttach",
            "Fetch.enable",
            "Tracing.start",
            "Page.captureScreenshot",
            "Page.disable",
            "Runtime.disable",
            "Browser.close",
            "Storage.getCookies",
            "SystemInfo.getInfo",
            "page.navigate",
            "Page.navigate.x",
            "Page",
            "",
        ] {
            assert_eq!(refused(method, json!({})), CdpRefusal::NotAllowed(method.into()), "{method}");
        }
    }

    #[test]
    fn navigations_open_web_pages_only() {
        for url in [
            "file:///etc/hostname",
            "FILE:///tmp/",
            " file:///proc/1/environ",
            "view-source:file:///etc/hostname",
            "data:text/html,<p>x</p>",
            "javascript:alert(1)",
            "chrome://version",
            "blob:https://a.example/x",
            "filesystem:https://a.example/temporary/x",
            "about:srcdoc",
            "not a url",
        ] {
            for method in ["Page.navigate", "Target.createTarget"] {
                assert!(matches!(refused(method, json!({ "url": url })), CdpRefusal::NotWeb { .. }), "{method} {url}");
            }
        }
        assert!(matches!(refused("Page.navigate", json!({})), CdpRefusal::NotWeb { .. }));
        let (route, params) = check("Page.navigate", json!({ "url": "  HTTPS://Example.com/a b" }), SCOPE).unwrap();
        assert_eq!((route, params["url"].as_str()), (Route::Page, Some("https://example.com/a%20b")));
        assert_eq!(check("Page.navigate", json!({ "url": "about:blank" }), SCOPE).unwrap().1["url"], "about:blank");
    }

    #[test]
    fn browser_wide_commands_stay_in_the_conversations_context_and_spare_its_page() {
        let (route, params) = check(
            "Target.createTarget",
            json!({ "url": "https://example.com", "browserContextId": "SOMEONE-ELSES" }),
            SCOPE,
        )
        .unwrap();
        assert_eq!((route, params["browserContextId"].as_str()), (Route::Browser, Some("CTX")));
        let (_, params) = check("Browser.grantPermissions", json!({ "permissions": ["geolocation"] }), SCOPE).unwrap();
        assert_eq!(params["browserContextId"], "CTX");
        assert_eq!(refused("Target.closeTarget", json!({ "targetId": "PAGE" })), CdpRefusal::OwnPage);
        assert_eq!(check("Target.closeTarget", json!({ "targetId": "POPUP" }), SCOPE).unwrap().0, Route::Browser);
    }

    #[test]
    fn page_automation_goes_to_the_page_and_the_refusal_lists_it() {
        for method in ["Runtime.evaluate", "DOM.getDocument", "Input.dispatchKeyEvent", "Network.getCookies"] {
            assert_eq!(check(method, json!({ "x": 1 }), SCOPE), Ok((Route::Page, json!({ "x": 1 }))), "{method}");
        }
        assert_eq!(check("Browser.getVersion", json!({}), SCOPE).unwrap().0, Route::Browser);
        let list = allowed();
        assert!(list["Emulation"].as_array().unwrap().contains(&json!("setGeolocationOverride")));
        assert_eq!(list["Page"][0], "navigate (http, https or about:blank)");
        assert!(list.get("IO").is_none() && list.get("Fetch").is_none());
    }
}
