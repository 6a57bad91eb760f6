use chrono::{Duration, TimeZone, Utc};

use super::*;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn berlin() -> Tz {
    time_zone("Europe/Berlin").unwrap()
}

#[test]
fn intervals_take_every_unit_and_are_stored_in_the_largest_whole_one() {
    let now = at("2026-11-30T10:00:00Z");
    for (text, minutes, spec) in [
        ("every 30m", 30, "every 30m"),
        ("every 2 hours", 120, "every 2h"),
        ("EVERY 1d", 1440, "every 1d"),
        ("every 90min", 90, "every 90m"),
        ("every 3 hr", 180, "every 3h"),
        ("every 2 days", 2880, "every 2d"),
    ] {
        let s = Schedule::parse(text, now, chrono_tz::UTC).unwrap();
        assert_eq!((s.kind(), s.spec()), ("interval", spec.to_owned()), "{text}");
        assert_eq!(s.next_after(now, chrono_tz::UTC).unwrap(), Some(now + Duration::minutes(minutes)));
        // Stored and read again: the same schedule.
        assert_eq!(Schedule::parse(&s.spec(), now, chrono_tz::UTC).unwrap().spec(), spec);
    }
}

#[test]
fn a_bare_duration_is_a_one_shot_from_now_and_stored_as_its_instant() {
    let now = at("2026-11-30T10:00:00Z");
    let s = Schedule::parse("30m", now, berlin()).unwrap();
    assert_eq!(s.kind(), "once");
    assert_eq!(s.first_run(now, berlin()).unwrap(), at("2026-11-30T10:30:00Z"));
    assert_eq!(s.next_after(now, berlin()).unwrap(), None, "a one-shot runs once");
    // Reading the stored form later does not move it.
    let later = now + Duration::hours(5);
    assert_eq!(
        Schedule::parse(&s.spec(), later, berlin()).unwrap().first_run(later, berlin()).unwrap(),
        at("2026-11-30T10:30:00Z")
    );
    assert_eq!(s.display(berlin()), "once at 2026-11-30 11:30 Europe/Berlin");
}

#[test]
fn timestamps_without_an_offset_are_read_in_the_jobs_time_zone() {
    let now = at("2026-01-01T00:00:00Z");
    let winter = Schedule::parse("2026-12-01 08:00", now, berlin()).unwrap();
    assert_eq!(winter.first_run(now, berlin()).unwrap(), at("2026-12-01T07:00:00Z"));
    let summer = Schedule::parse("2026-07-01T08:00", now, berlin()).unwrap();
    assert_eq!(summer.first_run(now, berlin()).unwrap(), at("2026-07-01T06:00:00Z"));
    let explicit = Schedule::parse("2026-07-01T08:00:00+09:00", now, berlin()).unwrap();
    assert_eq!(explicit.first_run(now, berlin()).unwrap(), at("2026-06-30T23:00:00Z"));
    // The clocks skip 02:00-03:00 on 29 March 2026 in Berlin.
    let gap = Schedule::parse("2026-03-29 02:30", now, berlin()).unwrap_err();
    assert!(gap.to_string().contains("does not exist"), "{gap}");
}

#[test]
fn cron_expressions_keep_local_time_across_daylight_saving_changes() {
    let daily = Schedule::parse("0 8 * * *", at("2026-03-01T00:00:00Z"), berlin()).unwrap();
    assert_eq!(daily.kind(), "cron");
    // Before the change 08:00 is UTC+1, after it UTC+2.
    assert_eq!(daily.next_after(at("2026-03-27T12:00:00Z"), berlin()).unwrap(), Some(at("2026-03-28T07:00:00Z")));
    assert_eq!(daily.next_after(at("2026-03-28T12:00:00Z"), berlin()).unwrap(), Some(at("2026-03-29T06:00:00Z")));
    // And back in October.
    assert_eq!(daily.next_after(at("2026-10-24T12:00:00Z"), berlin()).unwrap(), Some(at("2026-10-25T07:00:00Z")));
    // Weekdays at 09:30 in Shanghai (no daylight saving), from a Friday evening: Monday.
    let shanghai = time_zone("Asia/Shanghai").unwrap();
    let weekdays = Schedule::parse("30 9 * * 1-5", at("2026-11-27T12:00:00Z"), shanghai).unwrap();
    assert_eq!(weekdays.next_after(at("2026-11-27T12:00:00Z"), shanghai).unwrap(), Some(at("2026-11-30T01:30:00Z")));
}

#[test]
fn six_fields_put_seconds_first() {
    let s = Schedule::parse("30 0 8 * * *", at("2026-11-30T00:00:00Z"), chrono_tz::UTC).unwrap();
    assert_eq!(s.next_after(at("2026-11-30T00:00:00Z"), chrono_tz::UTC).unwrap(), Some(at("2026-11-30T08:00:30Z")));
    assert_eq!(s.spec(), "30 0 8 * * *");
}

#[test]
fn a_cron_time_inside_the_spring_gap_runs_once_that_day() {
    // 02:30 does not exist in Berlin on 29 March 2026; the run is not lost and not doubled.
    let s = Schedule::parse("30 2 * * *", at("2026-03-28T00:00:00Z"), berlin()).unwrap();
    let first = s.next_after(at("2026-03-28T12:00:00Z"), berlin()).unwrap().unwrap();
    let second = s.next_after(first, berlin()).unwrap().unwrap();
    assert!(first.date_naive() == Utc.with_ymd_and_hms(2026, 3, 29, 0, 0, 0).unwrap().date_naive(), "{first}");
    assert_eq!(second, at("2026-03-30T00:30:00Z"));
}

#[test]
fn what_cannot_be_read_is_refused_with_a_reason() {
    let now = at("2026-11-30T10:00:00Z");
    for (text, says) in [
        ("", "give a schedule"),
        ("every 0m", "cannot read the interval"),
        ("every 5 weeks", "cannot read the interval"),
        ("every 400d", "cannot read the interval"),
        ("61 * * * *", "cannot read the cron expression"),
        ("* * *", "5 or 6 fields"),
        ("0 0 8 * * * 2027", "5 or 6 fields"),
        ("tomorrow morning", "5 or 6 fields"),
        ("2026-13-40 08:00", "5 or 6 fields"),
    ] {
        let err = Schedule::parse(text, now, chrono_tz::UTC).unwrap_err().to_string();
        assert!(err.contains(says), "{text:?} gave {err:?}");
    }
    assert!(time_zone("Mars/Olympus").unwrap_err().to_string().contains("unknown time zone"));
    assert_eq!(time_zone("Asia/Shanghai").unwrap(), chrono_tz::Asia::Shanghai);
}

#[test]
fn late_runs_run_within_half_a_period_clamped_and_one_shots_within_two_minutes() {
    let tz = chrono_tz::UTC;
    let due = at("2026-11-30T08:00:00Z");
    let hourly = Schedule::Every(Duration::hours(1));
    assert_eq!(hourly.catch_up(due, due + Duration::minutes(20), tz), Catchup::Run);
    assert_eq!(hourly.catch_up(due, due + Duration::minutes(40), tz), Catchup::Skip);
    let daily = Schedule::Every(Duration::days(1));
    assert_eq!(daily.catch_up(due, due + Duration::minutes(119), tz), Catchup::Run, "half a day clamps to 2 h");
    assert_eq!(daily.catch_up(due, due + Duration::minutes(121), tz), Catchup::Skip);
    let minutely = Schedule::Every(Duration::minutes(1));
    assert_eq!(minutely.catch_up(due, due + Duration::seconds(100), tz), Catchup::Run, "30 s clamps up to 120 s");
    let cron = Schedule::parse("0 * * * *", due, tz).unwrap();
    assert_eq!(cron.catch_up(due, due + Duration::minutes(29), tz), Catchup::Run);
    assert_eq!(cron.catch_up(due, due + Duration::minutes(31), tz), Catchup::Skip);
    let once = Schedule::Once(due);
    assert_eq!(once.catch_up(due, due + Duration::seconds(119), tz), Catchup::Run);
    assert_eq!(once.catch_up(due, due + Duration::seconds(121), tz), Catchup::Skip);
}
