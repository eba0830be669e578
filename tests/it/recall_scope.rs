//! Session recall and scope order as policy (`docs/memory-model.md`,
//! "Kept and found"): a query reaches the other sessions of its workspace
//! unless it asks for its own only, its own session first; `scopeOrder:
//! "strict"` fills the block from the narrowest scope; pinned memories take
//! at most their share of the budget; `archive: false` injects hot memory
//! only.

use memtide::{InjectQuery, MemoryInput, RetrieveQuery, Scope, ScopeOrder, Sessions, Timestamp};
use memtide_testkit::store::{open, Mem, T0};

fn workspace() -> Scope {
    Scope::workspace("u", "w")
}

fn add(mem: &mut Mem, text: &str, scope: Scope) -> String {
    add_input(mem, MemoryInput::new(text, scope))
}

fn add_input(mem: &mut Mem, input: MemoryInput) -> String {
    let input = MemoryInput {
        created_at: Some(Timestamp(T0)),
        ..input
    };
    mem.ingest(vec![input]).unwrap().remove(0).id.unwrap()
}

fn ids(mem: &mut Mem, query: RetrieveQuery) -> Vec<String> {
    let query = RetrieveQuery {
        dry_run: true,
        ..query
    };
    mem.retrieve(&query)
        .unwrap()
        .into_iter()
        .map(|h| h.item.id)
        .collect()
}

#[test]
fn a_query_reaches_every_session_of_its_workspace_its_own_first() {
    let mut mem = open();
    let mine = add(
        &mut mem,
        "we planned the canoe trip to the lake",
        workspace().with_session("today"),
    );
    let earlier = add(
        &mut mem,
        "we planned the canoe trip to the lake last spring",
        workspace().with_session("march"),
    );
    let other_project = add(
        &mut mem,
        "the canoe trip budget",
        workspace().with_project("p").with_session("x"),
    );
    let today = workspace().with_session("today");
    // The default is every session, the query's own first.
    let all = ids(
        &mut mem,
        RetrieveQuery::new("canoe trip lake", today.clone()),
    );
    assert_eq!(all, vec![mine.clone(), earlier.clone()]);
    assert!(
        !all.contains(&other_project),
        "a project still bounds a query"
    );
    // A new chat (no session yet) sees the earlier ones.
    assert_eq!(
        ids(&mut mem, RetrieveQuery::new("canoe trip lake", workspace())).len(),
        2
    );
    // `current`: today's behaviour before session recall.
    let current = RetrieveQuery {
        sessions: Sessions::Current,
        ..RetrieveQuery::new("canoe trip lake", today)
    };
    assert_eq!(ids(&mut mem, current), vec![mine]);
    let new_chat = RetrieveQuery {
        sessions: Sessions::Current,
        ..RetrieveQuery::new("canoe trip lake", workspace())
    };
    assert!(ids(&mut mem, new_chat).is_empty());
    // Another user's or workspace's sessions never.
    assert!(ids(
        &mut mem,
        RetrieveQuery::new("canoe trip lake", Scope::workspace("u", "other"))
    )
    .is_empty());
}

#[test]
fn strict_scope_order_fills_from_the_narrowest_scope() {
    let mut mem = open();
    let project = workspace().with_project("dossier");
    let card = project.clone().with_card("c1");
    // The project memory matches the query better than the card one.
    let broad = add(
        &mut mem,
        "the deadline for the dossier review is friday, the dossier review deadline",
        project.clone(),
    );
    let narrow = add(&mut mem, "this card's review deadline moved", card.clone());
    let blend = ids(
        &mut mem,
        RetrieveQuery::new("dossier review deadline", card.clone()),
    );
    assert_eq!(
        blend,
        vec![broad.clone(), narrow.clone()],
        "blend: relevance first"
    );
    let strict = RetrieveQuery {
        scope_order: ScopeOrder::Strict,
        ..RetrieveQuery::new("dossier review deadline", card.clone())
    };
    assert_eq!(
        ids(&mut mem, strict.clone()),
        vec![narrow.clone(), broad.clone()]
    );
    let injection = mem
        .inject(&InjectQuery::new(
            RetrieveQuery {
                dry_run: true,
                ..strict
            },
            1000,
        ))
        .unwrap();
    assert_eq!(injection.used, vec![narrow, broad]);
}

#[test]
fn pinned_memories_take_at_most_their_share_and_archive_false_injects_them_only() {
    let mut mem = open();
    let scope = workspace();
    let mut pinned = Vec::new();
    let instructions = [
        "always answer briefly and politely, and cite every source you used in the answer",
        "prefer metric units and ISO dates in tables, charts, schedules and travel plans",
        "never guess a figure; say which document is missing and who could provide it",
        "write code samples in Rust with error handling, tests and comments that say why",
        "summaries open with the decision taken, then the open questions, then the owners",
        "address the user as Sam, in British English, without exclamation marks or emoji",
    ];
    for instruction in instructions {
        pinned.push(add_input(
            &mut mem,
            MemoryInput {
                pinned: Some(true),
                ..MemoryInput::new(instruction, scope.clone())
            },
        ));
    }
    pinned.dedup();
    assert_eq!(pinned.len(), 6, "six distinct pinned memories");
    let relevant = add(
        &mut mem,
        "the heron nests by the old mill pond",
        scope.clone(),
    );
    let query = RetrieveQuery {
        dry_run: true,
        ..RetrieveQuery::new("where does the heron nest", scope.clone())
    };
    let budget = 300;
    let none = InjectQuery {
        pinned_share: Some(0.0),
        ..InjectQuery::new(query.clone(), budget)
    };
    let none = mem.inject(&none).unwrap();
    assert!(none.used.iter().all(|id| !pinned.contains(id)), "{none:?}");
    assert!(none.used.contains(&relevant));
    // The default share: as many pinned entries as half the budget holds,
    // and the rest for what the question needs.
    let shared = mem
        .inject(&InjectQuery::new(query.clone(), budget))
        .unwrap();
    assert!(shared.used.contains(&relevant), "{shared:?}");
    let pinned_used = shared.used.iter().filter(|id| pinned.contains(id)).count();
    assert!(pinned_used >= 1, "{shared:?}");
    assert!(
        shared.dropped.iter().any(|d| pinned.contains(&d.id)),
        "half the budget does not hold them all: {shared:?}"
    );
    assert!(shared.tokens <= budget);
    // With the whole budget theirs, more pinned memories go in.
    let all = InjectQuery {
        pinned_share: Some(1.0),
        ..InjectQuery::new(query.clone(), budget)
    };
    let all = mem.inject(&all).unwrap();
    assert!(all.used.iter().filter(|id| pinned.contains(id)).count() > pinned_used);
    // Hot memory only.
    let hot = InjectQuery {
        archive: false,
        pinned_share: Some(1.0),
        ..InjectQuery::new(query.clone(), 10_000)
    };
    let hot = mem.inject(&hot).unwrap();
    assert_eq!(hot.used.len(), 6);
    assert!(!hot.used.contains(&relevant));
    let bad = InjectQuery {
        pinned_share: Some(1.5),
        ..InjectQuery::new(query, budget)
    };
    assert!(matches!(
        mem.inject(&bad),
        Err(memtide::Error::InvalidInput(_))
    ));
}

#[test]
fn the_json_forms_are_read() {
    let query: InjectQuery = serde_json::from_str(
        r#"{"text":"q","scope":{"userId":"u","workspaceId":"w"},"budgetTokens":100,
            "sessions":"current","scopeOrder":"strict","pinnedShare":0.25,"archive":false}"#,
    )
    .unwrap();
    assert_eq!(query.query.sessions, Sessions::Current);
    assert_eq!(query.query.scope_order, ScopeOrder::Strict);
    assert_eq!(query.pinned_share, Some(0.25));
    assert!(!query.archive);
    for bad in [
        r#""pinnedShare":2"#,
        r#""archive":"no""#,
        r#""sessions":"some""#,
    ] {
        let json = format!(
            r#"{{"text":"q","scope":{{"userId":"u","workspaceId":"w"}},"budgetTokens":100,{bad}}}"#
        );
        assert!(serde_json::from_str::<InjectQuery>(&json).is_err(), "{bad}");
    }
}
