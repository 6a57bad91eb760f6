//! How a browser starts in the sandbox: a small shell script that gives it a fresh profile
//! directory whose preferences block `file://`, goes out the way every program in the sandbox
//! does (its `HTTP_PROXY`, or directly when it has none), and wires the CDP pipe (fds 3 and
//! 4) to the program's stdin and stdout.

use hermes_config::BrowserConfig;
use hermes_sandbox::proto::StdioStart;

/// The launch script. `$0` is the browser, `$1` its new profile directory, `$2` the profile's
/// preferences, the rest its flags.
///
/// The proxy: every backend's sandboxes set `HTTP_PROXY` to sandboxd's egress relay
/// (`hermes_sandbox::PROXY_ENV`), and the sandbox's own loopback is reached directly. Without
/// that variable (a sandbox image run some other way) the browser goes direct, ignoring any
/// other proxy variable too: it never guesses a proxy.
///
/// Trust: where the agent has bound secrets, the egress proxy answers their hosts with
/// certificates from the installation's egress CA. Chromium reads no CA file or variable, so it
/// takes chains through that CA's key by its pin ([`hermes_sandbox::spec::TRUST_PIN`]); only the
/// proxy holds that key.
const SCRIPT: &str = r#"dir=$1 prefs=$2; shift 2
mkdir -m 700 "$dir" && mkdir "$dir/Default" && printf '%s' "$prefs" >"$dir/Default/Preferences" || exit 1
if [ -n "${HTTP_PROXY:-}" ]; then
  set -- "--proxy-server=$HTTP_PROXY" '--proxy-bypass-list=<-loopback>;localhost;127.0.0.1;[::1]' "$@"
else
  set -- --no-proxy-server "$@"
fi
if [ -r /hermes/ipc/egress-ca.spki ]; then
  set -- "--ignore-certificate-errors-spki-list=$(cat /hermes/ipc/egress-ca.spki)" "$@"
fi
exec "$0" "--user-data-dir=$dir" "$@" 3<&0 4>&1 1>/dev/null"#;

/// The profile's preferences: the URL blocklist (the `URLBlocklist` policy's preference, which
/// needs no policy file in the image) keeps every `file://` page out, whoever starts the
/// navigation, in every browser context: Chromium 156 then fails a CDP `Page.navigate` to
/// `file:///etc/hostname` with `ERR_BLOCKED_BY_ADMINISTRATOR`. (The `--policy` flag is
/// ignored by release builds.)
const PREFERENCES: &str = r#"{"policy":{"url_blocklist":["file://*"]}}"#;

/// The flags of every browser. `--no-sandbox`: the tenant's sandbox is the isolation
/// (Chromium's own needs user namespaces a container rarely has), as upstream sets it for
/// containers.
const FLAGS: [&str; 13] = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--mute-audio",
    "--window-size=1280,900",
    "--remote-debugging-pipe",
];

/// The sandbox program: the browser, in a profile of its own, its CDP pipe on its stdio.
pub(crate) fn start(config: &BrowserConfig) -> StdioStart {
    let dir = format!("/tmp/hermes-browser-{}", uuid::Uuid::now_v7().simple());
    let mut args = vec!["-c".to_owned(), SCRIPT.to_owned(), config.command.clone(), dir, PREFERENCES.to_owned()];
    args.extend(FLAGS.iter().map(|f| (*f).to_owned()));
    args.extend(config.extra_args.iter().cloned());
    args.push("about:blank".into());
    // The sandbox user's, like every page it opens: never the MCP servers' user.
    StdioStart { command: "sh".into(), args, env: Default::default(), as_mcp_user: false }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn the_script_reads_the_pin_where_the_sandbox_backends_write_it() {
        assert!(SCRIPT.contains(&format!("[ -r {} ]", hermes_sandbox::spec::TRUST_PIN)));
    }

    /// Runs the launch script with a stand-in browser that writes its arguments to the CDP
    /// pipe's fd 4 (what the script makes of the program's stdout), in `env`.
    fn launched(env: &[(&str, &str)]) -> (Vec<String>, String) {
        let tmp = std::env::temp_dir().join(format!("hermes-launch-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&tmp).unwrap();
        let fake = tmp.join("chromium");
        std::fs::write(&fake, "#!/bin/sh\nprintf '%s\\n' \"$@\" >&4\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let config = BrowserConfig {
            command: fake.display().to_string(),
            extra_args: vec!["--lang=de".into()],
            ..BrowserConfig::default()
        };
        let mut start = start(&config);
        let profile = tmp.join("profile").display().to_string();
        start.args[3].clone_from(&profile);
        let out =
            Command::new(&start.command).args(&start.args).env_clear().envs(env.iter().copied()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let prefs = std::fs::read_to_string(format!("{profile}/Default/Preferences")).unwrap();
        std::fs::remove_dir_all(&tmp).unwrap();
        (String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect(), prefs)
    }

    #[test]
    fn the_browser_goes_out_through_the_sandboxs_own_proxy_and_never_guesses_one() {
        // sandboxd's relay is the sandbox's HTTP_PROXY.
        let (args, _) = launched(&[("HTTP_PROXY", "http://127.0.0.1:3128")]);
        assert_eq!(
            args[1..3],
            ["--proxy-server=http://127.0.0.1:3128", "--proxy-bypass-list=<-loopback>;localhost;127.0.0.1;[::1]"]
        );
        // Without it, other proxy variables do not make one.
        let (args, _) = launched(&[("https_proxy", "http://127.0.0.1:3128"), ("all_proxy", "http://127.0.0.1:3128")]);
        assert!(!args.iter().any(|a| a.starts_with("--proxy-server")), "{args:?}");
        assert!(args.contains(&"--no-proxy-server".to_owned()), "{args:?}");
    }

    #[test]
    fn the_browser_speaks_cdp_on_its_stdio_in_a_fresh_profile_that_blocks_file_urls() {
        let (args, prefs) = launched(&[]);
        assert!(args.iter().any(|a| a.starts_with("--user-data-dir=") && a.ends_with("/profile")), "{args:?}");
        assert!(args.contains(&"--remote-debugging-pipe".to_owned()));
        assert!(args.contains(&"--lang=de".to_owned()));
        assert_eq!(args.last().map(String::as_str), Some("about:blank"));
        let prefs: serde_json::Value = serde_json::from_str(&prefs).unwrap();
        assert_eq!(prefs["policy"]["url_blocklist"], serde_json::json!(["file://*"]));
        let start = start(&BrowserConfig::default());
        assert_eq!((start.command.as_str(), start.args[2].as_str()), ("sh", "chromium"));
    }
}
