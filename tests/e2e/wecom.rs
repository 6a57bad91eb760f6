//! WeCom self-built apps end to end: the published URL-verification vector, encrypted and
//! signed messages (Chinese text end to end), forged ones refused, retries taken once, the
//! access token refreshed when it expires, and a long answer in parts of 2,048 characters.

use serde_json::json;

use hermes_chat::wecom::WecomCrypt;
use hermes_store::Channel;
use hermes_testkit::ScriptedReply;
use hermes_testkit::wecom::{Sent, WecomEmulator};

use crate::harness::{TestEnv, poll_until};
use crate::telegram::{Binding, Pod, bind_channel};

// WeCom's published sample keys (doc 91144, set A).
const TOKEN: &str = "QDG6eK";
const AES_KEY: &str = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C";
pub(crate) const CORP: &str = "wx5823bf96d3bd56c7";
pub(crate) const SECRET: &str = "app-secret";

pub(crate) async fn bind(env: &TestEnv, wecom: &WecomEmulator) -> Channel {
    let binding = Binding {
        platform: "wecom",
        mode: "webhook",
        api_base: wecom.base_url(),
        credentials: json!({ "corp_id": CORP, "agent_id": 1_000_002, "secret": SECRET, "token": TOKEN, "aes_key": AES_KEY }),
        identity: "wx5823bf96d3bd56c7:1000002",
        username: None,
        dm_policy: "open",
        allow: &[],
        admins: &["zhangsan"],
    };
    bind_channel(env, binding).await
}

/// WeCom's POST for a text message from `user`, encrypted and signed.
pub(crate) fn callback(user: &str, msg_id: &str, text: &str) -> (String, String) {
    signed(&format!(
        "<xml><ToUserName><![CDATA[{CORP}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>\
         <CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[{text}]]></Content>\
         <MsgId>{msg_id}</MsgId><AgentID>1000002</AgentID></xml>"
    ))
}

/// WeCom's POST for an image message from `user` (its `MediaId`), encrypted and signed.
pub(crate) fn image_callback(user: &str, msg_id: &str, media_id: &str) -> (String, String) {
    signed(&format!(
        "<xml><ToUserName><![CDATA[{CORP}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>\
         <CreateTime>1700000000</CreateTime><MsgType><![CDATA[image]]></MsgType>\
         <PicUrl><![CDATA[http://example.invalid/p.jpg]]></PicUrl><MediaId><![CDATA[{media_id}]]></MediaId>\
         <MsgId>{msg_id}</MsgId><AgentID>1000002</AgentID></xml>"
    ))
}

/// A message's query string and body as WeCom posts it, signed now.
fn signed(inner: &str) -> (String, String) {
    signed_at(inner, chrono::Utc::now().timestamp())
}

/// The same, signed at `at` (a Unix time).
fn signed_at(inner: &str, at: i64) -> (String, String) {
    let crypt = WecomCrypt::new(TOKEN, AES_KEY, CORP).unwrap();
    let inner = inner.to_owned();
    let encrypted = crypt.encrypt(&inner, b"abcdefghijklmnop");
    let now = at.to_string();
    let sig = crypt.signature(&now, "nonce42", &encrypted);
    let body =
        format!("<xml><ToUserName><![CDATA[{CORP}]]></ToUserName><Encrypt><![CDATA[{encrypted}]]></Encrypt></xml>");
    (format!("?msg_signature={sig}&timestamp={now}&nonce=nonce42"), body)
}

async fn sent(wecom: &WecomEmulator, n: usize) -> Vec<Sent> {
    let sent = poll_until(async || Some(wecom.sent()).filter(|s| s.len() >= n)).await;
    sent.unwrap_or_else(|| panic!("the app sent {:?}, expected {n}", wecom.sent()))
}

#[tokio::test]
async fn a_wecom_app_verifies_its_url_and_answers_encrypted_chinese_messages_once() {
    let env = TestEnv::start().await;
    let wecom = WecomEmulator::start(CORP, SECRET).await.unwrap();
    let channel = bind(&env, &wecom).await;
    let pod = Pod::start(&env).await;
    let url = format!("{}/wecom/{}", pod.url, channel.id);

    // The published URL-verification vector: the body is the plaintext, nothing else.
    let verify = format!(
        "{url}?msg_signature=5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3&timestamp=1409659589&nonce=263014780\
         &echostr=P9nAzCzyDtyTWESHep1vC5X9xho%2FqYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp%2B4RPcs8TgAE7OaBO%2BFZXvnaqQ%3D%3D"
    );
    let resp = env.http.get(&verify).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "1616140317555161061");

    // A forged message (bad signature): refused, nothing stored.
    let (query, body) = callback("zhangsan", "9001", "你好");
    let forged = query.replace("msg_signature=", "msg_signature=0");
    assert_eq!(env.http.post(format!("{url}{forged}")).body(body.clone()).send().await.unwrap().status(), 401);
    // A captured callback replayed an hour later: its signature is good, its timestamp stale.
    let inner = format!(
        "<xml><ToUserName><![CDATA[{CORP}]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName>\
         <CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[重放]]></Content>\
         <MsgId>9002</MsgId><AgentID>1000002</AgentID></xml>"
    );
    let (stale, old_body) = signed_at(&inner, chrono::Utc::now().timestamp() - 3_600);
    assert_eq!(env.http.post(format!("{url}{stale}")).body(old_body).send().await.unwrap().status(), 401);
    assert_eq!(env.count("SELECT count(*) FROM inbound").await, 0);

    // Chinese end to end, and WeCom's retry of the same MsgId is taken once.
    env.llm.push(ScriptedReply::text("你好！我来帮你看看。"));
    for _ in 0..2 {
        let resp = env.http.post(format!("{url}{query}")).body(body.clone()).send().await.unwrap();
        assert_eq!(resp.status(), 200);
    }
    let got = sent(&wecom, 1).await;
    assert_eq!((got[0].to_user.as_str(), got[0].content.as_str()), ("zhangsan", "你好！我来帮你看看。"));
    let seen = env.llm.requests()[0].messages();
    assert_eq!(seen.last().unwrap()["content"], "你好");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);

    // The token expires: a new one is fetched and the answer still goes out, in 2,048-character parts.
    wecom.expire_tokens();
    env.llm.push(ScriptedReply::text("长".repeat(10_000)));
    let (query, body) = callback("zhangsan", "9002", "写长一点");
    env.http.post(format!("{url}{query}")).body(body).send().await.unwrap();
    let got = sent(&wecom, 6).await;
    assert_eq!(got.len(), 6, "10,000 characters in five parts after the first answer");
    assert!(got[1..].iter().all(|m| m.content.chars().count() <= 2048));
    assert!(got[5].content.ends_with("(5/5)"));
    assert_eq!(got[1..].iter().map(|m| m.content.matches('长').count()).sum::<usize>(), 10_000);
    assert_eq!(wecom.tokens_issued(), 2, "one refresh after the expiry");
    pod.stop_with(env).await;
}
