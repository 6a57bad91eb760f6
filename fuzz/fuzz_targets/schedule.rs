//! Any schedule text in any time zone is read or refused without a panic, and a schedule that
//! reads gives its next runs without one.
#![no_main]

use arbitrary::Arbitrary;
use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    text: String,
    zone: u16,
    seconds: i64,
}

fuzz_target!(|i: Input| {
    let zones = chrono_tz::TZ_VARIANTS;
    let tz = zones[usize::from(i.zone) % zones.len()];
    let Some(now) = DateTime::<Utc>::from_timestamp(i.seconds % 8_000_000_000, 0) else { return };
    if let Ok(schedule) = hermes_schedule::Schedule::parse(&i.text, now, tz) {
        let _ = schedule.display(tz);
        let _ = schedule.spec();
        if let Ok(first) = schedule.first_run(now, tz) {
            let _ = schedule.next_after(first, tz);
            let _ = schedule.catch_up(first, now, tz);
        }
    }
    let _ = hermes_schedule::timing(&i.text, tz.name(), Some(3), now);
});
