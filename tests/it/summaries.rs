//! Summaries (`docs/memory-model.md`, "Summaries"): one per scope, linked
//! to its sources, replaced in place, and erased with any source a hard
//! delete, a purge, a new text or a supersession erases, in the same
//! commit; withdrawn with a soft-deleted source and restored with it;
//! counted by `deleteAll`.

use memtide::env::FixedEnvironment;
use memtide::{
    Config, Error, HistoryKind, Kind, Memory, MemoryInput, MemoryItem, MemoryPatch, Operation,
    OperationsRequest, Privacy, RetrieveQuery, Scope, ScopeFilter, Status, SummaryInput,
    SummaryQuery, Timestamp,
};
use memtide_testkit::store::{contains, open, reopen, scope, stored_bytes, Mem, T0};

fn session(id: &str) -> Scope {
    Scope {
        session_id: Some(id.to_string()),
        ..scope()
    }
}

fn add(mem: &mut Mem, text: &str, scope: Scope) -> String {
    mem.ingest(vec![MemoryInput::new(text, scope)]).unwrap()[0]
        .id
        .clone()
        .unwrap()
}

fn holds(mem: &Mem, text: &str) -> bool {
    contains(&stored_bytes(mem.storage()), text)
}

fn summary(scope: Scope, text: &str, sources: &[&String]) -> SummaryInput {
    SummaryInput {
        scope,
        text: text.to_string(),
        sources: sources.iter().map(|s| s.to_string()).collect(),
    }
}

/// The export `doc` as a document, its items' checksum recomputed.
fn reseal(doc: &mut serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    let items = serde_json::to_string(&doc["items"]).unwrap();
    doc["checksum"] = format!("{:x}", Sha256::digest(items.as_bytes())).into();
    serde_json::to_string(doc).unwrap()
}

/// Stores the summary of `scope` over `sources` (see [`summary`]).
fn summarize(mem: &mut Mem, scope: Scope, text: &str, sources: &[&String]) -> MemoryItem {
    mem.store_summary(summary(scope, text, sources)).unwrap()
}

/// The filter naming session `id` of the test scope.
fn session_filter(id: &str) -> ScopeFilter {
    ScopeFilter {
        session_id: Some(id.into()),
        ..ScopeFilter::from(&scope())
    }
}

fn context(mem: &Mem, scope: Scope) -> memtide::SummaryContext {
    mem.summary_context(&SummaryQuery {
        scope,
        limit: None,
        include_pii: false,
    })
    .unwrap()
}

#[test]
fn the_context_holds_the_scopes_memories_oldest_first_and_its_summary() {
    let mut mem = open();
    let a = add(&mut mem, "we planned the trip to Lisbon", session("s1"));
    mem.env_mut().advance_ms(1000);
    let b = add(&mut mem, "the flight leaves on Friday", session("s1"));
    let other = add(&mut mem, "the cat needs a vet visit", session("s2"));
    let pii = add(&mut mem, "my email is ada@example.com", session("s1"));
    let private = mem
        .ingest(vec![MemoryInput {
            privacy: Some(Privacy {
                private: true,
                ..Privacy::default()
            }),
            ..MemoryInput::new("a private diary line", session("s1"))
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let pending = mem
        .ingest(vec![MemoryInput {
            status: Some(Status::Pending),
            ..MemoryInput::new("an unreviewed guess about hotels", session("s1"))
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let ctx = context(&mem, session("s1"));
    let ids: Vec<&str> = ctx.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, [a.as_str(), b.as_str()], "no pii, private or pending");
    assert!(ctx.previous.is_none());
    let with_pii = mem
        .summary_context(&SummaryQuery {
            scope: session("s1"),
            limit: Some(1),
            include_pii: true,
        })
        .unwrap();
    assert_eq!(with_pii.memories.len(), 1, "the newest one");
    assert_eq!(with_pii.memories[0].id, pii);
    // The workspace's summary covers its sessions.
    let all = context(&mem, scope());
    assert_eq!(all.memories.len(), 3);
    assert!(all.memories.iter().any(|m| m.id == other));
    assert!(!all
        .memories
        .iter()
        .any(|m| m.id == private || m.id == pending));
}

#[test]
fn a_summary_is_stored_linked_replaced_in_place_and_retrieved() {
    let mut mem = open();
    let a = add(&mut mem, "we planned the trip to Lisbon", session("s1"));
    let b = add(&mut mem, "the flight leaves on Friday", session("s1"));
    let first = summarize(
        &mut mem,
        session("s1"),
        "Trip to Lisbon planned; flight on Friday.",
        &[&b, &a, &a],
    );
    assert_eq!(first.kind, Kind::Summary);
    let mut sources = vec![a.clone(), b.clone()];
    sources.sort();
    assert_eq!(first.summary_of, sources, "sorted, once each");
    assert_eq!(first.created_at, mem.get(&b).unwrap().created_at);
    let ctx = context(&mem, session("s1"));
    assert_eq!(ctx.memories.len(), 2, "summaries are not sources");
    assert_eq!(ctx.previous.as_ref().map(|p| &p.id), Some(&first.id));

    // Retrieved like any memory, within its scope.
    let hits = mem
        .retrieve(&RetrieveQuery {
            dry_run: true,
            ..RetrieveQuery::new("Lisbon trip", session("s1"))
        })
        .unwrap();
    assert!(hits.iter().any(|h| h.item.id == first.id));

    // Again: the same memory, its new text, the old text gone.
    let c = add(&mut mem, "we booked a hotel in Alfama", session("s1"));
    let second = summarize(
        &mut mem,
        session("s1"),
        "Lisbon: Friday flight, hotel in Alfama.",
        &[&a, &b, &c],
    );
    assert_eq!(second.id, first.id);
    assert_eq!(second.summary_of.len(), 3);
    assert!(!holds(&mem, "Trip to Lisbon planned"));
    assert!(holds(&mem, "hotel in Alfama."));
    let history = mem.history(&second.id).unwrap();
    assert!(history.iter().any(|e| e.event == HistoryKind::Replaced));
    let summaries = mem
        .list(&memtide::ListQuery {
            kinds: Some(vec![Kind::Summary]),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(summaries.items.len(), 1);
    // Another scope has a summary of its own.
    let w = summarize(&mut mem, scope(), "A trip is planned.", &[&a]);
    assert_ne!(w.id, first.id);
}

#[test]
fn bad_sources_are_refused_and_change_nothing() {
    let mut mem = open();
    let a = add(&mut mem, "we planned the trip to Lisbon", session("s1"));
    let other = add(&mut mem, "the cat needs a vet visit", session("s2"));
    let s = summarize(&mut mem, session("s1"), "A trip.", &[&a]);
    let before = stored_bytes(mem.storage());
    let missing = "01HZZZZZZZZZZZZZZZZZZZZZZZ".to_string();
    let bad = "not an id!".to_string();
    for (input, code) in [
        (summary(session("s1"), "x", &[]), "INVALID_INPUT"),
        (summary(session("s1"), "x", &[&missing]), "NOT_FOUND"),
        (summary(session("s1"), "x", &[&bad]), "INVALID_INPUT"),
        (summary(session("s1"), "x", &[&other]), "INVALID_INPUT"),
        (summary(session("s1"), "x", &[&s.id]), "INVALID_INPUT"),
        (
            summary(session("s1"), "<no-memory> x", &[&a]),
            "INVALID_INPUT",
        ),
        (
            summary(session("s1"), &"x".repeat(70_000), &[&a]),
            "TOO_LARGE",
        ),
        (
            summary(Scope::workspace("", "w"), "x", &[&a]),
            "INVALID_INPUT",
        ),
    ] {
        let err = mem.store_summary(input.clone()).unwrap_err();
        assert_eq!(err.code(), code, "{input:?}: {err}");
    }
    assert_eq!(
        stored_bytes(mem.storage()),
        before,
        "refused calls changed nothing"
    );
    let private = mem
        .ingest(vec![MemoryInput {
            privacy: Some(Privacy {
                private: true,
                ..Privacy::default()
            }),
            ..MemoryInput::new("a private diary line", session("s1"))
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let before = stored_bytes(mem.storage());
    let err = mem
        .store_summary(summary(session("s1"), "x", &[&private]))
        .unwrap_err();
    assert!(err.to_string().contains("is private"), "{err}");
    assert_eq!(stored_bytes(mem.storage()), before);
    mem.delete(&a, false).unwrap();
    let before_soft = stored_bytes(mem.storage());
    assert!(before != before_soft);
    let err = mem
        .store_summary(summary(session("s1"), "x", &[&a]))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert_eq!(stored_bytes(mem.storage()), before_soft);
}

#[test]
fn erasing_a_source_erases_its_summaries_in_the_same_commit() {
    let mut mem = open();
    let a = add(&mut mem, "the door code is 4417", session("s1"));
    let b = add(&mut mem, "the flight leaves on Friday", session("s1"));
    let c = add(&mut mem, "the cat needs a vet visit", session("s2"));
    let s1 = summarize(
        &mut mem,
        session("s1"),
        "Door code 4417; Friday flight.",
        &[&a, &b],
    );
    let ws = summarize(&mut mem, scope(), "Door 4417, Friday, vet.", &[&a, &b, &c]);
    let s2 = summarize(&mut mem, session("s2"), "Vet visit due.", &[&c]);
    mem.delete(&a, true).unwrap();
    for gone in [&a, &s1.id, &ws.id] {
        assert!(matches!(mem.get(gone), Err(Error::NotFound(_))), "{gone}");
    }
    assert!(!holds(&mem, "4417"), "no byte of the source's text");
    assert!(mem.get(&s2.id).is_ok(), "a summary without it stays");
    assert!(!mem.export().contains("4417"));

    // A new text erases the old one's summaries too.
    let s2b = mem.get(&s2.id).unwrap();
    mem.update(
        &c,
        MemoryPatch {
            text: Some("the dog needs a vet visit".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(mem.get(&s2b.id).is_err());
    assert!(!holds(&mem, "Vet visit due."));

    // So does an upsert that replaces a keyed source's text.
    let keyed = mem
        .upsert(vec![MemoryInput {
            key: Some("drink".into()),
            ..MemoryInput::new("prefers green tea", session("s4"))
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let drinks = summarize(&mut mem, session("s4"), "Drinks green tea.", &[&keyed]);
    mem.upsert(vec![MemoryInput {
        key: Some("drink".into()),
        ..MemoryInput::new("prefers black coffee", session("s4"))
    }])
    .unwrap();
    assert!(mem.get(&drinks.id).is_err());
    assert!(!holds(&mem, "Drinks green tea."));

    // A soft delete withdraws the summary and keeps its text for the user.
    let s = summarize(&mut mem, session("s1"), "Friday flight.", &[&b]);
    mem.delete(&b, false).unwrap();
    let withdrawn = mem.get(&s.id).unwrap();
    assert!(withdrawn.is_deleted());
    assert!(mem
        .history(&s.id)
        .unwrap()
        .iter()
        .any(|e| e.event == HistoryKind::Withdrawn));
    // deleteAll erases sources and summaries alike, without tripping on
    // a summary already gone with its source.
    let d = add(&mut mem, "lunch was at noon", session("s3"));
    summarize(&mut mem, session("s3"), "Lunch at noon.", &[&d]);
    let all = mem
        .delete_all(
            &ScopeFilter {
                user_id: Some("alice".into()),
                ..Default::default()
            },
            true,
        )
        .unwrap();
    assert!(all.deleted >= 3);
    assert_eq!(mem.stats(&ScopeFilter::default()).items, 0);
}

#[test]
fn a_purge_erases_the_summaries_of_expired_sources_and_a_reopened_store_agrees() {
    let mut mem = open();
    let keep = add(&mut mem, "the flight leaves on Friday", session("s1"));
    let expiring = mem
        .ingest(vec![MemoryInput {
            privacy: Some(Privacy {
                retention_days: Some(2),
                ..Privacy::default()
            }),
            ..MemoryInput::new("the gate code is behind the bakery", session("s1"))
        }])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let s = summarize(
        &mut mem,
        session("s1"),
        "Friday flight; gate code behind the bakery.",
        &[&keep, &expiring],
    );
    assert_eq!(s.privacy.retention_days, Some(2), "no later than a source");
    let only_keep = mem
        .store_summary(summary(session("s2"), "Friday.", &[&keep]))
        .ok();
    assert!(only_keep.is_none(), "keep is not within session s2");
    mem.env_mut().advance_ms(3 * Timestamp::DAY_MS);
    let err = mem
        .store_summary(summary(session("s1"), "x", &[&expiring]))
        .unwrap_err();
    assert!(err.to_string().contains("has expired"), "{err}");
    assert_eq!(
        mem.purge_expired().unwrap().purged,
        2,
        "the source and its summary"
    );
    assert!(!holds(&mem, "bakery"));
    let reopened = Memory::open(
        mem.into_storage(),
        FixedEnvironment::new(Timestamp(T0 + 3 * Timestamp::DAY_MS)),
        Config::default(),
    )
    .unwrap();
    assert_eq!(reopened.stats(&ScopeFilter::default()).items, 1);
    assert!(reopened
        .summary_context(&SummaryQuery {
            scope: session("s1"),
            limit: None,
            include_pii: false,
        })
        .unwrap()
        .previous
        .is_none());
}

#[test]
fn a_summary_survives_reopen_export_and_import() {
    let mut mem = open();
    let a = add(&mut mem, "we planned the trip to Lisbon", session("s1"));
    let s = summarize(&mut mem, session("s1"), "A Lisbon trip.", &[&a]);
    let export = mem.export();
    let mut reopened = reopen(mem);
    assert_eq!(reopened.get(&s.id).unwrap().summary_of, vec![a.clone()]);
    // The reopened store knows the link: erasing the source erases it.
    reopened.delete(&a, true).unwrap();
    assert!(reopened.get(&s.id).is_err());

    let mut fresh = open();
    fresh.import(&export).unwrap();
    let again = summarize(&mut fresh, session("s1"), "A trip to Lisbon.", &[&a]);
    assert_eq!(again.id, s.id, "the imported summary is the scope's");
    fresh.delete(&a, true).unwrap();
    assert!(fresh.get(&s.id).is_err());
    // A summary whose source is neither stored nor imported is refused:
    // an export of the summary alone (its metadata selects it).
    let flight = b(&mut fresh);
    let ws = summarize(&mut fresh, scope(), "Lisbon.", &[&flight]);
    fresh
        .update(
            &ws.id,
            MemoryPatch {
                metadata: Some(serde_json::from_str(r#"{"only":true}"#).unwrap()),
                ..Default::default()
            },
        )
        .unwrap();
    let only_summary = fresh.export_filtered(&ScopeFilter {
        user_id: Some("alice".into()),
        metadata: Some(serde_json::from_str(r#"{"only":true}"#).unwrap()),
        ..Default::default()
    });
    let mut orphan = open();
    let err = orphan.import(&only_summary).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    assert_eq!(orphan.stats(&ScopeFilter::default()).items, 0);
    // Nor may a scope hold two summaries.
    let mut two = open();
    for i in 0..4 {
        add(&mut two, &format!("filler note {i}"), session("s9")); // ids of its own
    }
    let own = add(&mut two, "we planned the trip to Lisbon", scope());
    summarize(&mut two, scope(), "Mine.", &[&own]);
    let err = two.import(&fresh.export()).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
}

fn b(mem: &mut Mem) -> String {
    add(mem, "the flight leaves on Friday", session("s1"))
}

#[test]
fn an_import_whose_summary_lists_its_sources_out_of_order_or_a_summary_is_refused() {
    let mut mem = open();
    let a = add(&mut mem, "we planned the trip to Lisbon", session("s1"));
    let b = add(&mut mem, "the flight leaves on Friday", session("s1"));
    summarize(
        &mut mem,
        session("s1"),
        "A Lisbon trip on Friday.",
        &[&a, &b],
    );
    let mut doc: serde_json::Value = serde_json::from_str(&mem.export()).unwrap();
    // Resealed unchanged, the export imports.
    assert!(open().import(&reseal(&mut doc)).is_ok());
    for item in doc["items"].as_array_mut().unwrap() {
        if let Some(sources) = item.get_mut("summaryOf") {
            sources.as_array_mut().unwrap().reverse();
        }
    }
    let mut fresh = open();
    let err = fresh.import(&reseal(&mut doc)).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    assert_eq!(fresh.stats(&ScopeFilter::default()).items, 0);

    // Nor may a summary summarize a summary.
    let s1 = summarize(&mut mem, session("s1"), "A Lisbon trip.", &[&a]);
    let ws = summarize(&mut mem, scope(), "Lisbon.", &[&b]);
    let mut doc: serde_json::Value = serde_json::from_str(&mem.export()).unwrap();
    for item in doc["items"].as_array_mut().unwrap() {
        if item["id"] == ws.id.as_str() {
            item["summaryOf"] = serde_json::json!([s1.id]);
        }
    }
    let mut fresh = open();
    let err = fresh.import(&reseal(&mut doc)).unwrap_err();
    assert!(err.to_string().contains("is a summary"), "{err}");
    assert_eq!(fresh.stats(&ScopeFilter::default()).items, 0);
}

#[test]
fn an_import_whose_summary_lists_a_superseded_memory_is_refused() {
    let mut mem = open();
    let coffee = add(&mut mem, "I take my coffee as a cortado", scope());
    let city = add(&mut mem, "I live in Porto", scope());
    let ws = summarize(
        &mut mem,
        scope(),
        "Cortado drinker in Porto.",
        &[&coffee, &city],
    );
    let export = mem.export();
    // The same export, but the coffee superseded (as an extractor's update
    // leaves it, which would have erased the summary).
    let mut doc: serde_json::Value = serde_json::from_str(&export).unwrap();
    for item in doc["items"].as_array_mut().unwrap() {
        if item["id"] == coffee.as_str() {
            item["supersededAt"] = item["updatedAt"].clone();
        }
    }
    let stale = reseal(&mut doc);
    let mut fresh = open();
    let err = fresh.import(&stale).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    assert!(err.to_string().contains("is superseded"), "{err}");
    assert_eq!(
        fresh.stats(&ScopeFilter::default()).items,
        0,
        "nothing imported"
    );
    // Into the store that holds the summary, nothing changes either.
    let before = mem.export();
    let err = mem.import(&stale).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
    assert_eq!(mem.export(), before);
    assert!(!mem.get(&coffee).unwrap().is_superseded());
    // Without the summary, the superseded memory imports as it is.
    let mut doc: serde_json::Value = serde_json::from_str(&stale).unwrap();
    doc["items"]
        .as_array_mut()
        .unwrap()
        .retain(|item| item["id"] != ws.id.as_str());
    doc["itemCount"] = 2.into();
    let mut fresh = open();
    fresh.import(&reseal(&mut doc)).unwrap();
    assert!(fresh.get(&coffee).unwrap().is_superseded());
    // And the unchanged export imports with its summary.
    let mut fresh = open();
    fresh.import(&export).unwrap();
    assert_eq!(fresh.get(&ws.id).unwrap().summary_of.len(), 2);
}

#[test]
fn superseding_a_source_erases_its_summaries_so_no_old_value_stays() {
    let mut mem = open();
    let coffee = add(&mut mem, "I take my coffee as a cortado", scope());
    let city = add(&mut mem, "I live in Porto", scope());
    let other = add(&mut mem, "the cat needs a vet visit", session("s1"));
    let ws = summarize(
        &mut mem,
        scope(),
        "Cortado drinker in Porto.",
        &[&coffee, &city],
    );
    let s1 = summarize(&mut mem, session("s1"), "Vet visit due.", &[&other]);
    // An extractor's `update` supersedes the coffee: the summary saying
    // "cortado" goes in the same commit, the other scope's stays.
    let done = mem
        .apply_operations(OperationsRequest {
            scope: scope(),
            allowed: vec![coffee.clone()],
            operations: vec![serde_json::from_value::<Operation>(serde_json::json!(
                {"op": "update", "id": coffee, "text": "I take my coffee as a flat white"}
            ))
            .unwrap()],
        })
        .unwrap();
    assert_eq!(done.superseded.len(), 1);
    assert!(matches!(mem.get(&ws.id), Err(Error::NotFound(_))));
    assert!(
        !holds(&mem, "Cortado drinker"),
        "no byte of the old summary"
    );
    assert!(
        mem.get(&coffee).unwrap().is_superseded(),
        "the source stays readable"
    );
    assert!(mem.get(&s1.id).is_ok());
    assert!(context(&mem, scope()).previous.is_none());

    // `upsert` with `supersede` of a keyed source does the same.
    let keyed = |text: &str| MemoryInput {
        key: Some("drink".into()),
        supersede: Some(true),
        ..MemoryInput::new(text, session("s2"))
    };
    let tea = mem.upsert(vec![keyed("prefers green tea")]).unwrap()[0]
        .id
        .clone()
        .unwrap();
    let drinks = summarize(&mut mem, session("s2"), "Drinks green tea.", &[&tea]);
    mem.upsert(vec![keyed("prefers black coffee")]).unwrap();
    assert!(mem.get(&tea).unwrap().is_superseded());
    assert!(mem.get(&drinks.id).is_err());
    assert!(!holds(&mem, "Drinks green tea."));

    // A reopened store agrees.
    let mem = reopen(mem);
    assert!(mem.get(&ws.id).is_err() && mem.get(&drinks.id).is_err());
    assert!(mem.get(&s1.id).is_ok());
}

#[test]
fn delete_all_counts_the_summaries_it_deletes_with_their_sources() {
    for hard in [false, true] {
        let mut mem = open();
        let a = add(&mut mem, "the door code is 4417", session("s1"));
        let b = add(&mut mem, "the flight leaves on Friday", session("s2"));
        // The workspace's summary is outside a filter naming session s1;
        // the session's summary is inside it.
        let ws = summarize(&mut mem, scope(), "Door 4417, Friday.", &[&a, &b]);
        let s1 = summarize(&mut mem, session("s1"), "Door 4417.", &[&a]);
        let filter = session_filter("s1");
        let result = mem.delete_all(&filter, hard).unwrap();
        assert_eq!(
            (result.deleted, result.summaries, result.hard),
            (3, 1, hard),
            "a, its session's summary, and the workspace's summary with it"
        );
        for id in [&a, &s1.id, &ws.id] {
            match mem.get(id) {
                Ok(item) => assert!(!hard && item.is_deleted(), "{id}"),
                Err(e) => assert!(hard && matches!(e, Error::NotFound(_)), "{id}"),
            }
        }
        assert!(!mem.get(&b).unwrap().is_deleted());
        // Nothing left to delete: nothing counted.
        let again = mem.delete_all(&filter, hard).unwrap();
        assert_eq!((again.deleted, again.summaries), (0, 0));
    }
}

#[test]
fn delete_all_counts_a_summary_of_many_selected_sources_once() {
    let mut mem = open();
    let a = add(&mut mem, "the door code is 4417", session("s1"));
    let b = add(&mut mem, "the flight leaves on Friday", session("s1"));
    let c = add(&mut mem, "the cat needs a vet visit", session("s2"));
    let both = summarize(&mut mem, scope(), "Door 4417, Friday.", &[&a, &b]);
    let filter = session_filter("s1");
    // Soft: a, b, and the summary withdrawn with them, counted once.
    let soft = mem.delete_all(&filter, false).unwrap();
    assert_eq!((soft.deleted, soft.summaries), (3, 1));
    assert!(mem.get(&both.id).unwrap().is_deleted());
    // Hard: the soft-deleted sources are selected again and the withdrawn
    // summary, outside the filter, is erased with them.
    let hard = mem.delete_all(&filter, true).unwrap();
    assert_eq!((hard.deleted, hard.summaries), (3, 1));
    assert!(matches!(mem.get(&both.id), Err(Error::NotFound(_))));
    assert!(!mem.get(&c).unwrap().is_deleted());
}

#[test]
fn a_summary_withdrawn_more_events_ago_than_its_history_keeps_still_comes_back() {
    let mut mem = open();
    let a = add(&mut mem, "the door code is 4417", scope());
    let c = add(&mut mem, "the cat needs a vet visit", session("s1"));
    let ws = summarize(&mut mem, scope(), "Door 4417.", &[&a]);
    let s1 = summarize(&mut mem, session("s1"), "Vet visit due.", &[&c]);
    let patch = |pinned: Option<bool>, deleted: Option<bool>| MemoryPatch {
        pinned,
        deleted,
        ..MemoryPatch::default()
    };
    mem.delete(&a, false).unwrap();
    mem.delete(&c, false).unwrap();
    let withdrawn = mem.get(&ws.id).unwrap();
    assert!(withdrawn.is_deleted() && withdrawn.withdrawn);
    // More events than the history keeps (32 by default): the `withdrawn`
    // event drops out of it.
    for i in 0..40 {
        mem.update(&ws.id, patch(Some(i % 2 == 0), None)).unwrap();
    }
    let events = mem.history(&ws.id).unwrap();
    assert!(
        events.iter().all(|e| e.event != HistoryKind::Withdrawn),
        "{events:?}"
    );
    // The other summary: restored by the user, then deleted on its own.
    mem.update(&s1.id, patch(None, Some(false))).unwrap();
    assert!(
        !mem.get(&s1.id).unwrap().withdrawn,
        "a restore clears the mark"
    );
    mem.delete(&s1.id, false).unwrap();
    // The mark is stored: a reopened store still knows.
    let mut mem = reopen(mem);
    assert!(mem.get(&ws.id).unwrap().withdrawn);
    mem.update(&a, patch(None, Some(false))).unwrap();
    mem.update(&c, patch(None, Some(false))).unwrap();
    let back = mem.get(&ws.id).unwrap();
    assert!(!back.is_deleted() && !back.withdrawn);
    let events = mem.history(&ws.id).unwrap();
    assert_eq!(events.last().map(|e| e.event), Some(HistoryKind::Restored));
    assert!(
        mem.get(&s1.id).unwrap().is_deleted(),
        "deleted on its own: stays deleted"
    );
}

#[test]
fn an_import_may_mark_only_a_soft_deleted_summary_withdrawn() {
    let mut mem = open();
    let a = add(&mut mem, "the door code is 4417", scope());
    let ws = summarize(&mut mem, scope(), "Door 4417.", &[&a]);
    mem.delete(&a, false).unwrap();
    let export = mem.export();
    // The withdrawn summary round-trips with its mark.
    let mut fresh = open();
    fresh.import(&export).unwrap();
    assert!(fresh.get(&ws.id).unwrap().withdrawn);
    fresh
        .update(
            &a,
            MemoryPatch {
                deleted: Some(false),
                ..MemoryPatch::default()
            },
        )
        .unwrap();
    assert!(!fresh.get(&ws.id).unwrap().is_deleted());
    // The mark on a live summary, or on a memory that is not a summary,
    // is refused.
    for (id, drop_deletion) in [(&ws.id, true), (&a, false)] {
        let mut doc: serde_json::Value = serde_json::from_str(&export).unwrap();
        for item in doc["items"].as_array_mut().unwrap() {
            if item["id"] == id.as_str() {
                item["withdrawn"] = true.into();
                if drop_deletion {
                    item.as_object_mut().unwrap().remove("deletedAt");
                }
            }
        }
        let mut fresh = open();
        let err = fresh.import(&reseal(&mut doc)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{err}");
        assert!(err.to_string().contains("withdrawn"), "{err}");
    }
}

#[test]
fn restoring_sources_restores_the_summaries_withdrawn_with_them() {
    let mut mem = open();
    let a = add(&mut mem, "the door code is 4417", scope());
    let b = add(&mut mem, "the flight leaves on Friday", scope());
    let c = add(&mut mem, "the cat needs a vet visit", session("s1"));
    let ws = summarize(&mut mem, scope(), "Door 4417, Friday.", &[&a, &b]);
    let s1 = summarize(&mut mem, session("s1"), "Vet visit due.", &[&c]);
    let restore = MemoryPatch {
        deleted: Some(false),
        ..MemoryPatch::default()
    };
    mem.delete(&a, false).unwrap();
    mem.delete(&b, false).unwrap();
    assert!(mem.get(&ws.id).unwrap().is_deleted());
    // One source back: the summary still repeats the other, deleted one.
    mem.update(&a, restore.clone()).unwrap();
    assert!(mem.get(&ws.id).unwrap().is_deleted());
    // Both back: so is the summary, with a `restored` event.
    mem.update(&b, restore.clone()).unwrap();
    let back = mem.get(&ws.id).unwrap();
    assert!(!back.is_deleted());
    let events: Vec<HistoryKind> = mem
        .history(&ws.id)
        .unwrap()
        .iter()
        .map(|e| e.event)
        .collect();
    assert!(
        events.ends_with(&[HistoryKind::Withdrawn, HistoryKind::Restored]),
        "{events:?}"
    );
    let hits = mem
        .retrieve(&RetrieveQuery {
            dry_run: true,
            ..RetrieveQuery::new("door 4417 Friday", scope())
        })
        .unwrap();
    assert!(hits.iter().any(|h| h.item.id == ws.id));

    // A summary the user deleted on its own stays deleted when a source
    // comes back.
    mem.delete(&s1.id, false).unwrap();
    mem.delete(&c, false).unwrap();
    mem.update(&c, restore).unwrap();
    assert!(mem.get(&s1.id).unwrap().is_deleted());

    // A reopened store agrees.
    let mem = reopen(mem);
    assert!(!mem.get(&ws.id).unwrap().is_deleted());
    assert!(mem.get(&s1.id).unwrap().is_deleted());
}
