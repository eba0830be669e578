//! The conversational ranking signals of `memtide::rank`: thread links, answer
//! inheritance, neighbour share and speaker match.

use memtide::{MemoryInput, RetrieveQuery, Scope, Timestamp};
use memtide_testkit::store::{open, Mem, T0};

fn chat() -> Scope {
    Scope::workspace("u", "w").with_session("s1")
}

fn say(mem: &mut Mem, text: &str, at: i64, scope: Scope) -> String {
    let input = MemoryInput {
        created_at: Some(Timestamp(at)),
        ..MemoryInput::new(text, scope)
    };
    mem.ingest(vec![input]).unwrap().remove(0).id.unwrap()
}

fn ranked(mem: &mut Mem, text: &str) -> Vec<String> {
    let query = RetrieveQuery {
        dry_run: true,
        explain: true,
        ..RetrieveQuery::new(text, chat())
    };
    mem.retrieve(&query)
        .unwrap()
        .into_iter()
        .map(|h| h.item.id)
        .collect()
}

#[test]
fn memories_follow_the_previous_one_of_their_conversation() {
    let mut mem = open();
    let first = say(&mut mem, "first message", T0, chat());
    let second = say(&mut mem, "second message", T0, chat());
    let later = say(&mut mem, "an hour later", T0 + 60 * 60_000, chat());
    let other = say(
        &mut mem,
        "other session",
        T0,
        Scope::workspace("u", "w").with_session("s2"),
    );
    assert_eq!(mem.get(&first).unwrap().follows, None);
    assert_eq!(mem.get(&second).unwrap().follows, Some(first.clone()));
    assert_eq!(
        mem.get(&later).unwrap().follows,
        None,
        "beyond the 30-minute gap"
    );
    assert_eq!(mem.get(&other).unwrap().follows, None, "other scope");
    mem.delete(&second, false).unwrap();
    let third = say(&mut mem, "third message", T0 + 1, chat());
    assert_eq!(
        mem.get(&third).unwrap().follows,
        Some(first),
        "deleted memories are skipped"
    );
}

#[test]
fn an_answer_inherits_the_relevance_of_its_question() {
    let mut mem = open();
    say(
        &mut mem,
        "Melanie: nice weather today",
        T0 - 86_400_000,
        chat(),
    );
    let question = say(
        &mut mem,
        "Caroline: What did you paint last weekend?",
        T0,
        chat(),
    );
    let answer = say(
        &mut mem,
        "Melanie: A sunrise over the lake, in oils.",
        T0,
        chat(),
    );
    let got = ranked(&mut mem, "what did they paint?");
    assert!(
        got.contains(&answer),
        "the answer has no query term but follows the question"
    );
    let hits = mem
        .retrieve(&RetrieveQuery {
            dry_run: true,
            explain: true,
            ..RetrieveQuery::new("what did they paint?", chat())
        })
        .unwrap();
    let explained = hits
        .iter()
        .find(|h| h.item.id == answer)
        .unwrap()
        .explain
        .unwrap();
    assert!(explained.inherited);
    assert_eq!(explained.lexical, 0.0);
    assert!(got.contains(&question));

    // A statement passes the turns next to it, before and after, a share
    // only (`neighbourShare`).
    let mut mem = open();
    let before = turn(&mut mem, "Melanie", "Busy weekend?");
    let statement = turn(&mut mem, "Caroline", "I painted the fence");
    let reply = turn(&mut mem, "Melanie", "Lovely colour.");
    let hits = mem
        .retrieve(&RetrieveQuery {
            dry_run: true,
            explain: true,
            ..RetrieveQuery::new("who painted the fence", chat())
        })
        .unwrap();
    let score = |id: &str| {
        hits.iter()
            .find(|h| h.item.id == id)
            .map(|h| (h.score, h.relevance))
            .unwrap()
    };
    let (s, r) = score(&statement);
    for near in [&before, &reply] {
        let (near_s, near_r) = score(near);
        assert!((near_s - 0.5 * s).abs() < 1e-6 && (near_r - 0.5 * r).abs() < 1e-6);
    }
    assert_eq!(hits[0].item.id, statement);
}

/// A conversation turn: said by `speaker`, in the chat, at `T0`.
fn turn(mem: &mut Mem, speaker: &str, text: &str) -> String {
    let input = MemoryInput {
        created_at: Some(Timestamp(T0)),
        speaker: Some(speaker.to_string()),
        ..MemoryInput::new(text, chat())
    };
    mem.ingest(vec![input]).unwrap().remove(0).id.unwrap()
}

#[test]
fn only_turns_pass_a_share_and_0_turns_it_off() {
    // Facts entered one after another are no dialogue.
    let mut mem = open();
    say(&mut mem, "I painted the fence", T0, chat());
    let next_fact = say(&mut mem, "Lovely colour.", T0, chat());
    assert!(!ranked(&mut mem, "who painted the fence").contains(&next_fact));

    let mut config = memtide::Config::default();
    config.rank.neighbour_share = 0.0;
    let mut mem = memtide::Memory::open(
        memtide::storage::MemoryStorage::new(),
        memtide::env::FixedEnvironment::new(Timestamp(T0)),
        config,
    )
    .unwrap();
    turn(&mut mem, "Caroline", "I painted the fence");
    let reply = turn(&mut mem, "Melanie", "Lovely colour.");
    assert!(!ranked(&mut mem, "who painted the fence").contains(&reply));
}

#[test]
fn memories_by_the_named_speaker_rank_first() {
    let mut mem = open();
    let melanie = say(&mut mem, "Melanie: I love pottery and camping", T0, chat());
    let caroline = say(
        &mut mem,
        "Caroline: I love pottery and camping",
        T0 + 3_600_000,
        chat(),
    );
    assert_eq!(
        ranked(&mut mem, "What does Melanie love?"),
        [melanie.clone(), caroline.clone()]
    );
    assert_eq!(
        ranked(&mut mem, "What does Caroline love?"),
        [caroline, melanie]
    );
}

/// Query coverage (`rank.coverageWeight`): a memory holding every term of
/// the query gains on one holding only the rarest, through the engine's
/// own BM25 and coverage; 0 turns it off and a negative weight is refused.
#[test]
fn holding_more_of_the_query_gains_and_the_weight_is_checked() {
    let open_with = |coverage_weight: f32| {
        let mut config = memtide::Config::default();
        config.rank.coverage_weight = coverage_weight;
        memtide::Memory::open(
            memtide::storage::MemoryStorage::new(),
            memtide::env::FixedEnvironment::new(Timestamp(T0)),
            config,
        )
    };
    let ratio = |coverage_weight: f32| {
        let mut mem = open_with(coverage_weight).unwrap();
        let texts = [
            "pottery!",
            "my kids and I made bowls in our pottery class",
            "the kids had a music class",
            "the kids liked the art class",
        ];
        let ids: Vec<String> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| say(&mut mem, text, T0 + 3_600_000 * i as i64, chat()))
            .collect();
        let query = RetrieveQuery {
            dry_run: true,
            explain: true,
            ..RetrieveQuery::new("pottery class kids", chat())
        };
        let hits = mem.retrieve(&query).unwrap();
        let score = |id: &str| hits.iter().find(|h| h.item.id == id).unwrap().score;
        let full = hits.iter().find(|h| h.item.id == ids[1]).unwrap();
        let explain = full.explain.unwrap();
        assert_eq!(explain.coverage, 1.0);
        score(&ids[1]) / score(&ids[0])
    };
    let (on, off) = (ratio(0.2), ratio(0.0));
    assert!(on > off, "with coverage {on}, without {off}");
    let refused = open_with(-0.5).err().map(|e| e.code());
    assert_eq!(refused, Some("INVALID_INPUT"));
}
