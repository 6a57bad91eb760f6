//! Another tenant's ids reach nothing: for every tenant-scoped method of `Store` that takes an
//! id (or a name) of something, tenant `b` calling it with tenant `a`'s ids gets `NotFound`
//! (or the empty answer the method gives for "none", or `Fenced` for a fenced write), and every
//! row `a` owns is byte for byte the same afterwards. Reads are first made by `a` itself, so
//! an empty answer for `b` is not an empty world.
//!
//! Not here: the operator and system methods that take no tenant (claims, reaper, settling,
//! gateway look-ups by a platform's id, `skill_files`, prices, tenants), and methods that only
//! write the caller's own rows without naming anything of another tenant.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;

use hermes_store::{LeaseState, MemorySnapshot, StoreError};

use crate::tenant_world::{self, World};

mod reads;
mod writes;

/// What `b` saw.
#[derive(Debug)]
enum Seen {
    NotFound,
    Fenced,
    /// An empty list, `None`, `false`, nothing done.
    Nothing,
    /// Another error: refused, though not as `NotFound`.
    Refused(String),
    /// Something came back: a leak.
    Found(String),
}

impl Seen {
    fn describe(&self) -> String {
        match self {
            Seen::Refused(error) => format!("refused ({error})"),
            Seen::Found(answer) => format!("found {answer}"),
            other => format!("{other:?}"),
        }
    }
}

/// What each kind of case must see.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    NotFound,
    Fenced,
    Nothing,
    /// Any error (the method answers a database error, not `NotFound`, today).
    Refused,
}

/// The answer of a method that says "none" with a value.
trait Empty {
    fn is_empty_answer(&self) -> bool;
}

impl<T> Empty for Vec<T> {
    fn is_empty_answer(&self) -> bool {
        self.is_empty()
    }
}
impl<T> Empty for Option<T> {
    fn is_empty_answer(&self) -> bool {
        self.is_none()
    }
}
impl<T> Empty for BTreeSet<T> {
    fn is_empty_answer(&self) -> bool {
        self.is_empty()
    }
}
impl<K, V> Empty for HashMap<K, V> {
    fn is_empty_answer(&self) -> bool {
        self.is_empty()
    }
}
impl Empty for bool {
    fn is_empty_answer(&self) -> bool {
        !*self
    }
}
impl Empty for u64 {
    fn is_empty_answer(&self) -> bool {
        *self == 0
    }
}
impl Empty for () {
    fn is_empty_answer(&self) -> bool {
        true
    }
}
impl Empty for serde_json::Value {
    fn is_empty_answer(&self) -> bool {
        self.is_null() || self.as_array().is_some_and(Vec::is_empty)
    }
}
impl Empty for MemorySnapshot {
    fn is_empty_answer(&self) -> bool {
        *self == MemorySnapshot::default()
    }
}
/// A lease that is not `b`'s to extend.
impl Empty for LeaseState {
    fn is_empty_answer(&self) -> bool {
        *self == LeaseState::Lost
    }
}
/// A chat's busy turns and how many turns are open in it.
impl<T> Empty for (Vec<T>, i64) {
    fn is_empty_answer(&self) -> bool {
        self.0.is_empty() && self.1 == 0
    }
}

/// The cases run, and the ones that saw the wrong thing.
#[derive(Default)]
struct Cases {
    methods: BTreeSet<&'static str>,
    run: usize,
    wrong: Vec<String>,
}

impl Cases {
    fn error<T: Debug>(result: Result<T, StoreError>) -> Option<Seen> {
        match result {
            Ok(_) => None,
            Err(StoreError::NotFound) => Some(Seen::NotFound),
            Err(StoreError::Fenced) => Some(Seen::Fenced),
            Err(e) => Some(Seen::Refused(e.to_string())),
        }
    }

    fn record(&mut self, method: &'static str, want: Want, seen: Seen) {
        self.methods.insert(method);
        self.run += 1;
        let right = matches!(
            (want, &seen),
            (Want::NotFound, Seen::NotFound)
                | (Want::Fenced, Seen::Fenced)
                | (Want::Nothing, Seen::Nothing)
                | (Want::Refused, Seen::NotFound | Seen::Fenced | Seen::Refused(_))
        );
        if !right {
            self.wrong.push(format!("{method}: want {want:?}, saw {}", seen.describe()));
        }
    }

    /// `b`'s call must fail with `want` (any `Ok` is a leak).
    fn fails<T: Debug>(&mut self, method: &'static str, want: Want, result: Result<T, StoreError>) {
        let seen = match result {
            Ok(found) => Seen::Found(format!("{found:?}")),
            Err(e) => Self::error::<T>(Err(e)).unwrap_or(Seen::Nothing),
        };
        self.record(method, want, seen);
    }

    fn not_found<T: Debug>(&mut self, method: &'static str, result: Result<T, StoreError>) {
        self.fails(method, Want::NotFound, result);
    }

    fn fenced<T: Debug>(&mut self, method: &'static str, result: Result<T, StoreError>) {
        self.fails(method, Want::Fenced, result);
    }

    fn refused<T: Debug>(&mut self, method: &'static str, result: Result<T, StoreError>) {
        self.fails(method, Want::Refused, result);
    }

    /// `b`'s call must answer "none".
    fn nothing<T: Debug + Empty>(&mut self, method: &'static str, result: Result<T, StoreError>) {
        let seen = match result {
            Ok(answer) if answer.is_empty_answer() => Seen::Nothing,
            Ok(answer) => Seen::Found(format!("{answer:?}")),
            Err(e) => Self::error::<T>(Err(e)).unwrap_or(Seen::Nothing),
        };
        self.record(method, Want::Nothing, seen);
    }

    /// `b`'s call must answer exactly `expected` (a method whose "none" is a value).
    fn answers<T: Debug + PartialEq>(&mut self, method: &'static str, expected: T, result: Result<T, StoreError>) {
        let seen = match result {
            Ok(answer) if answer == expected => Seen::Nothing,
            Ok(answer) => Seen::Found(format!("{answer:?}")),
            Err(e) => Self::error::<T>(Err(e)).unwrap_or(Seen::Nothing),
        };
        self.record(method, Want::Nothing, seen);
    }
}

/// The owner's own read must find what the other tenant is then refused.
fn owner_finds<T: Debug>(method: &str, result: Result<T, StoreError>) {
    if let Err(e) = result {
        panic!("{method}: the owner cannot read its own data: {e}");
    }
}

/// The owner's own read must find something, so that `b`'s empty answer means something.
fn owner_finds_some<T: Debug + Empty>(method: &str, result: Result<T, StoreError>) {
    match result {
        Ok(answer) => assert!(!answer.is_empty_answer(), "{method}: the owner's own read is empty: {answer:?}"),
        Err(e) => panic!("{method}: the owner cannot read its own data: {e}"),
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn another_tenants_ids_find_nothing_and_change_nothing(pool: sqlx::PgPool) {
    let w: World = tenant_world::world(&pool).await;
    let before = tenant_world::rows_of(&w.db, w.a.id).await;
    let mut cases = Cases::default();
    reads::check(&w, &mut cases).await;
    writes::check(&w, &mut cases).await;
    let after = tenant_world::rows_of(&w.db, w.a.id).await;

    let changed: Vec<&String> = before.keys().filter(|table| before.get(*table) != after.get(*table)).collect();
    eprintln!("{} cases over {} methods of Store", cases.run, cases.methods.len());
    assert!(
        cases.wrong.is_empty() && changed.is_empty(),
        "another tenant's ids reached something:\n{}\nand changed these tables of the owner: {changed:?}",
        cases.wrong.join("\n")
    );
    assert!(cases.methods.len() >= 100, "the table covers {} methods", cases.methods.len());
}

/// Who the admin writes of these cases are recorded as.
fn audit() -> hermes_store::admin::Audit {
    use hermes_store::admin::{Actor, ActorKind, Audit};
    Audit {
        actor: Actor { kind: ActorKind::Cli, id: "t".into(), label: "t".into() },
        request_id: None,
        source_address: None,
    }
}
