//! Any text the model writes is rendered for Telegram (HTML) and Slack (mrkdwn) and split into
//! messages without a panic, and no part is longer than the platform's limit (UTF-16 units).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let html = hermes_chat::markdown::telegram_html(text);
    let _ = hermes_chat::slack::mrkdwn(text);
    for part in hermes_chat::split::split(&html, 4096) {
        let units = part.encode_utf16().count();
        assert!(units <= 4096, "a part of {units} UTF-16 units");
    }
});
