use super::{Allowed, Finding, FindingKind, Problem, problems};

/// 0059 dropping the outbox trigger on `turns`, as seen from a previous release at `previous`.
fn trigger_dropped(previous: i64) -> Finding {
    Finding {
        kind: FindingKind::TriggerDropped,
        object: "turns".into(),
        part: Some("turns_reply_to_outbox".into()),
        change: "is gone or disabled".into(),
        migrations: (previous, 59),
    }
}

/// The entry that excuses [`trigger_dropped`] by the stop `(59, 57)`.
const TRIGGER_ENTRY: Allowed = Allowed {
    kind: FindingKind::TriggerDropped,
    object: "turns",
    part: Some("turns_reply_to_outbox"),
    stop: (59, 57),
    reason: "0057's pods write the outbox rows themselves",
};

#[test]
fn a_contract_step_whose_expand_step_shipped_a_release_earlier_is_excused() {
    let found = [trigger_dropped(58)];
    assert_eq!(problems(&found, &[TRIGGER_ENTRY], 58), vec![]);
    assert_eq!(problems(&found, &[], 58), vec![Problem::Breaking(&found[0])], "without the entry it breaks");
}

#[test]
fn an_entry_excuses_only_its_own_kind_table_and_column() {
    let mut other = trigger_dropped(58);
    other.part = Some("turns_finished".into());
    let mut column = trigger_dropped(58);
    column.kind = FindingKind::ColumnDropped;
    let found = [other, column];
    let entry = [TRIGGER_ENTRY];
    let got = problems(&found, &entry, 58);
    assert_eq!(got, vec![Problem::Breaking(&found[0]), Problem::Breaking(&found[1]), Problem::Stale(&TRIGGER_ENTRY)]);
}

#[test]
fn an_entry_that_matches_nothing_fails_as_stale() {
    // The release after: 0059 is in the previous release, nothing since drops the trigger.
    assert_eq!(problems(&[], &[TRIGGER_ENTRY], 58), vec![Problem::Stale(&TRIGGER_ENTRY)]);
}

#[test]
fn an_entry_without_a_shipped_expand_step_in_upgrade_stops_excuses_nothing() {
    let entry = [TRIGGER_ENTRY];
    let from_56 = [trigger_dropped(56)];
    let got = problems(&from_56, &entry, 56);
    assert!(matches!(&got[..], [Problem::Unsafe(_, why), Problem::Breaking(_)] if why.contains("57")), "{got:?}");

    let unlisted = [Allowed { stop: (59, 58), ..TRIGGER_ENTRY }];
    let from_58 = [trigger_dropped(58)];
    let got = problems(&from_58, &unlisted, 58);
    assert!(
        matches!(&got[..], [Problem::Unsafe(_, why), Problem::Breaking(_)] if why.contains("UPGRADE_STOPS")),
        "{got:?}"
    );
}

#[test]
fn an_entry_for_a_contract_step_the_previous_release_carries_is_stale() {
    // Cut a release with 0059 in it: the entry excuses nothing, even a finding of the same name.
    let from_59 = [trigger_dropped(59)];
    let entry = [TRIGGER_ENTRY];
    assert_eq!(problems(&from_59, &entry, 59), vec![Problem::Stale(&TRIGGER_ENTRY), Problem::Breaking(&from_59[0])]);
}
