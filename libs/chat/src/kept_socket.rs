//! How a platform's kept socket (Slack Socket Mode, the WeCom AI bot) is opened: a gateway pod
//! holds one a bot, a thousand or more at once, and their frames are small.

use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The most a frame or message from a platform may be: their envelopes are a few KB.
const MAX_MESSAGE: usize = 4 << 20;

/// An 8 KiB read buffer instead of tungstenite's eager 128 KiB (most of a socket bot's memory:
/// 249 KB a Slack app before), and messages of at most 4 MiB.
pub fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(8 << 10)
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
}
