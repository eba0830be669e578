//! Retention that removes (`docs/memory-model.md`, "Expiry and erasure"):
//! a store-wide default and per-scope overrides, expired memories erased
//! by `purgeExpired` and by any write of a store with a policy, and scopes
//! that capture nothing.

use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{
    Config, Error, IngestOutcome, IngestReason, Memory, MemoryInput, Privacy, RetentionConfig,
    RetrieveQuery, Scope, ScopeFilter, Timestamp,
};
use memtide_testkit::store::{contains, open, records, scope, stored_bytes, Mem, T0};

const DAY: i64 = Timestamp::DAY_MS;

fn with_retention(retention: &str) -> Mem {
    let config = Config {
        retention: serde_json::from_str::<RetentionConfig>(retention).unwrap(),
        ..Config::default()
    };
    Memory::open(
        MemoryStorage::new(),
        FixedEnvironment::new(Timestamp(T0)),
        config,
    )
    .unwrap()
}

fn add(mem: &mut Mem, text: &str, scope: Scope) -> String {
    let r = mem
        .ingest(vec![MemoryInput::new(text, scope)])
        .unwrap()
        .remove(0);
    assert_eq!(r.outcome, IngestOutcome::Added, "{r:?}");
    r.id.unwrap()
}

fn holds(mem: &Mem, text: &str) -> bool {
    contains(&stored_bytes(mem.storage()), text)
}

fn found(mem: &mut Mem, query: &str, scope: Scope) -> usize {
    mem.retrieve(&RetrieveQuery {
        dry_run: true,
        ..RetrieveQuery::new(query, scope)
    })
    .unwrap()
    .len()
}

#[test]
fn per_scope_rules_override_the_store_default_narrowest_first() {
    let mut mem = with_retention(
        r#"{"days": 30, "scopes": [
            {"scope": {"userId": "alice", "workspaceId": "home", "projectId": "tax"}, "days": 7},
            {"scope": {"userId": "alice", "workspaceId": "home", "projectId": "keep"}, "days": null}
        ]}"#,
    );
    let home = scope();
    let tax = home.clone().with_project("tax");
    let keep = home.clone().with_project("keep");
    add(&mut mem, "workspace note about quokka habits", home.clone());
    add(&mut mem, "tax note about quokka receipts", tax.clone());
    add(&mut mem, "kept note about quokka photos", keep.clone());
    assert_eq!(found(&mut mem, "quokka", tax.clone()), 2);

    mem.env_mut().advance_ms(8 * DAY);
    // Day 8: the tax project's 7 days have passed; reading does not erase.
    assert_eq!(found(&mut mem, "quokka", tax.clone()), 1);
    assert!(holds(&mem, "quokka receipts"));
    assert_eq!(mem.purge_expired().unwrap().purged, 1);
    assert!(!holds(&mem, "quokka receipts"));

    mem.env_mut().advance_ms(30 * DAY);
    // Day 38: the store default took the workspace note; `null` kept the
    // other project's. A write erases what expired in its own commit.
    add(&mut mem, "a fresh note about wombats", home.clone());
    assert!(!holds(&mem, "quokka habits"));
    assert!(holds(&mem, "quokka photos"));
    assert_eq!(found(&mut mem, "quokka", keep), 1);
    assert_eq!(mem.purge_expired().unwrap().purged, 0);
}

#[test]
fn purge_erases_every_trace_and_a_reopened_store_agrees() {
    let mut mem = open();
    let follows = add(&mut mem, "we discussed the zeppelin itinerary", scope());
    let expiring = mem
        .ingest(vec![MemoryInput {
            privacy: Some(Privacy {
                retention_days: Some(1),
                ..Privacy::default()
            }),
            ..MemoryInput::new("the zeppelin gate code is behind the bakery", scope())
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    // Soft-deleted and expired: erased as well.
    let soft = mem
        .ingest(vec![MemoryInput {
            privacy: Some(Privacy {
                retention_days: Some(1),
                ..Privacy::default()
            }),
            ..MemoryInput::new("an old zeppelin rumour from the hangar", scope())
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    mem.delete(&soft, false).unwrap();
    assert!(holds(&mem, "behind the bakery"));
    // Without a retention policy nothing is erased before its time, nor
    // after it by a write alone.
    mem.env_mut().advance_ms(2 * DAY);
    add(&mut mem, "an unrelated walrus note", scope());
    assert!(holds(&mem, "behind the bakery"));
    assert_eq!(mem.purge_expired().unwrap().purged, 2);
    assert!(matches!(mem.get(&expiring), Err(Error::NotFound(_))));
    assert!(!holds(&mem, "behind the bakery"));
    assert!(!holds(&mem, "from the hangar"));
    assert!(!mem.export().contains("bakery"));
    assert!(mem.get(&follows).is_ok());
    // The records a reopened store reads are those of the live memories.
    let kept: Vec<String> = records(mem.storage())
        .into_keys()
        .filter(|k| k.starts_with("item/"))
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let reopened = Memory::open(
        mem.into_storage(),
        FixedEnvironment::new(Timestamp(T0 + 3 * DAY)),
        Config::default(),
    )
    .unwrap();
    assert_eq!(reopened.stats(&ScopeFilter::default()).items, 2);
}

#[test]
fn a_scope_with_capture_off_stores_nothing() {
    let mut mem = with_retention(
        r#"{"scopes": [
            {"scope": {"userId": "alice", "workspaceId": "home", "sessionId": "incognito"}, "capture": false}
        ]}"#,
    );
    let incognito = scope().with_session("incognito");
    let r = mem
        .ingest(vec![
            MemoryInput::new("the incognito chat about lighthouses", incognito.clone()),
            MemoryInput::new("the normal chat about lighthouses", scope()),
        ])
        .unwrap();
    assert_eq!(r[0].outcome, IngestOutcome::Skipped);
    assert_eq!(r[0].reason, Some(IngestReason::NotCaptured));
    assert_eq!(r[1].outcome, IngestOutcome::Added);
    assert!(!holds(&mem, "incognito chat"));
    assert_eq!(mem.stats(&ScopeFilter::default()).items, 1);
    // Its inputs are still checked.
    let bad = mem.ingest(vec![MemoryInput::new("", incognito)]);
    assert!(matches!(bad, Err(Error::InvalidInput(_))));
}

#[test]
fn a_rule_without_a_user_is_refused() {
    let config = Config {
        retention: serde_json::from_str(
            r#"{"scopes": [{"scope": {"workspaceId": "home"}, "days": 1}]}"#,
        )
        .unwrap(),
        ..Config::default()
    };
    let opened = Memory::open(
        MemoryStorage::new(),
        FixedEnvironment::new(Timestamp(T0)),
        config,
    );
    assert!(
        matches!(&opened, Err(Error::InvalidInput(m)) if m.contains("retention.scopes[0]")),
        "{:?}",
        opened.err()
    );
}
