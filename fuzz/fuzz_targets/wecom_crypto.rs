//! WeCom callbacks: any ciphertext, signature and timestamp is opened or refused without a
//! panic, and what we seal opens to itself.
#![no_main]

use arbitrary::Arbitrary;
use hermes_chat::wecom::WecomCrypt;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Callback {
    encrypted: String,
    signature: String,
    timestamp: String,
    nonce: String,
    message: String,
    random: [u8; 16],
    now: i64,
}

fuzz_target!(|c: Callback| {
    let Ok(crypt) = WecomCrypt::new("token", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", "corp") else {
        return;
    };
    let _ = crypt.decrypt(&c.encrypted);
    let _ = crypt.open_fresh((&c.timestamp, &c.nonce), &c.encrypted, &c.signature, c.now);
    let sealed = crypt.encrypt(&c.message, &c.random);
    let signature = crypt.signature(&c.timestamp, &c.nonce, &sealed);
    assert_eq!(crypt.open(&c.timestamp, &c.nonce, &sealed, &signature).ok().as_deref(), Some(c.message.as_str()));
});
