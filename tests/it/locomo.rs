//! Retrieval-quality regression check on the LoCoMo development set (see
//! [`memtide_testkit::locomo`] for the protocol and `tests/data/README.md`
//! for the data's source and licence).

use memtide_testkit::locomo;

#[test]
fn session_dates_parse() {
    let t = locomo::parse_session_date("1:56 pm on 8 May, 2023").unwrap();
    assert_eq!(t.to_rfc3339(), "2023-05-08T13:56:00.000Z");
    let t = locomo::parse_session_date("12:09 am on 13 September, 2023").unwrap();
    assert_eq!(t.to_rfc3339(), "2023-09-13T00:09:00.000Z");
    assert!(locomo::parse_session_date("sometime in May").is_none());
}

/// Lexical retrieval must stay above the plain BM25 reference (recall@5 =
/// 0.505, `docs/design.md`, "Ranking"), in each conversation as on the whole
/// dev set, find an evidence session among its first five for most
/// questions, and keep what time match and query coverage gain at 1, query
/// coverage at 5, and the neighbour share, month match and query coverage
/// at 10; the last measured figures are in the README.
#[test]
fn lexical_recall_stays_above_the_bm25_reference() {
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo_dev.json"
    ))
    .unwrap();
    let mut loaded = locomo::load(&json, None).unwrap();
    let parts = locomo::recall_by_conversation(&mut loaded).unwrap();
    assert_eq!(
        parts.iter().map(|r| r.questions).collect::<Vec<_>>(),
        [150, 81]
    );
    let recall = locomo::Recall::pooled(&parts);
    for r in parts.iter().chain([&recall]) {
        assert!(r.at5 > 0.505, "recall@5 fell to {:.3}", r.at5);
        assert!(r.at10 >= r.at5 && r.at5 >= r.at1);
        assert!(r.session_at10 >= r.session_at5 && r.session_at5 >= r.session_at1);
    }
    assert!(
        recall.session_at5 >= 0.85,
        "session recall@5 fell to {:.3}",
        recall.session_at5
    );
    // Time match (`memtide::rank`) lifted recall@1 from 0.442 to 0.472;
    // the neighbour share and month match recall@10 from 0.745 to 0.759;
    // query coverage recall@1/5/10 to 0.494/0.701/0.762.
    assert!(recall.at1 >= 0.49, "recall@1 fell to {:.3}", recall.at1);
    assert!(recall.at5 >= 0.70, "recall@5 fell to {:.3}", recall.at5);
    assert!(recall.at10 >= 0.76, "recall@10 fell to {:.3}", recall.at10);
}

/// Speakers recorded in the `speaker` field rank at least as well as the
/// same speakers written into the text as `Name: text` (the figures of both
/// are in the README).
#[test]
fn speakers_in_the_field_recall_at_least_as_much_as_name_prefixes() {
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo_dev.json"
    ))
    .unwrap();
    let recall = |speakers| {
        let mut loaded =
            locomo::load_with(&json, None, memtide::Config::default(), speakers).unwrap();
        locomo::recall(&mut loaded).unwrap()
    };
    let prefix = recall(locomo::Speakers::Prefix);
    let field = recall(locomo::Speakers::Field);
    assert!(
        field.at5 >= prefix.at5 && field.at10 >= prefix.at10,
        "field {:.3}/{:.3}, prefix {:.3}/{:.3}",
        field.at5,
        field.at10,
        prefix.at5,
        prefix.at10
    );
}

/// The relevance gate across conversations (`docs/design.md`, "Ranking"):
/// under inject's default, most questions of the other conversation inject
/// nothing, and a conversation's own questions keep most of their evidence.
#[test]
fn the_default_gate_silences_unrelated_questions_and_keeps_evidence() {
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo_dev.json"
    ))
    .unwrap();
    let mut loaded = locomo::load(&json, None).unwrap();
    check_gate(&mut loaded, LEXICAL_FLOORS);
}

/// Least figures of the default gate: unrelated questions injecting
/// nothing, own evidence kept at 1,000 tokens (the README gives the
/// measured ones).
struct Floors {
    unrelated_empty: f64,
    own_kept: f64,
}

const LEXICAL_FLOORS: Floors = Floors {
    unrelated_empty: 0.8,
    own_kept: 0.6,
};

fn check_gate(loaded: &mut locomo::Loaded, floors: Floors) {
    let unrelated = loaded.unrelated_empty(None, None).unwrap();
    let kept = loaded.evidence_kept(None, 1_000, None).unwrap();
    let ungated = loaded.evidence_kept(None, 1_000, Some(0.0)).unwrap();
    let ungated_unrelated = loaded.unrelated_empty(None, Some(0.0)).unwrap();
    println!("default gate: unrelated empty {unrelated:.3}, evidence kept {kept:.3} (ungated {ungated:.3})");
    assert!(
        unrelated >= floors.unrelated_empty,
        "unrelated questions injecting nothing: {unrelated:.3}"
    );
    assert!(kept >= floors.own_kept, "own evidence kept: {kept:.3}");
    assert!(
        kept <= ungated && ungated_unrelated < 0.2,
        "the gate is what silences them"
    );
}

#[cfg(feature = "semantic")]
use memtide_testkit::model::model_dir;

/// Hybrid retrieval (BM25 + MiniLM + the conversational signals of
/// `memtide::rank`) must reach the milestone's targets: recall@5 ≥ 0.65 and
/// recall@10 ≥ 0.75, and beat lexical retrieval; it must find an evidence
/// session among its first five for ≥ 90% of the questions; its default relevance gate
/// must reach the targets (≥ 0.8 of unrelated questions inject
/// nothing, ≥ 0.65 of the own evidence kept at 1,000 tokens).
#[cfg(feature = "semantic")]
#[test]
fn hybrid_recall_reaches_the_targets() {
    use std::sync::Arc;
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo_dev.json"
    ))
    .unwrap();
    let model = memtide::embed::MiniLm::from_dir(model_dir()).unwrap();
    let mut loaded = locomo::load(&json, Some(Arc::new(model))).unwrap();
    let hybrid = locomo::recall(&mut loaded).unwrap();
    let lexical = locomo::evaluate(&json, None).unwrap();
    println!(
        "hybrid recall@1/5/10 {:.3}/{:.3}/{:.3} (sessions {:.3}/{:.3}/{:.3}), lexical {:.3}/{:.3}/{:.3}",
        hybrid.at1,
        hybrid.at5,
        hybrid.at10,
        hybrid.session_at1,
        hybrid.session_at5,
        hybrid.session_at10,
        lexical.at1,
        lexical.at5,
        lexical.at10
    );
    assert!(hybrid.at5 >= 0.65, "recall@5 {:.3}", hybrid.at5);
    assert!(hybrid.at10 >= 0.75, "recall@10 {:.3}", hybrid.at10);
    // What the ranking reached on dev with query coverage, 0.482 / 0.735 /
    // 0.806, and with the hypothesis weight, 0.487 / 0.741 / 0.806.
    assert!(
        hybrid.at1 >= 0.485 && hybrid.at5 >= 0.74 && hybrid.at10 >= 0.8,
        "below the last measured figures"
    );
    assert!(hybrid.at5 > lexical.at5 && hybrid.at10 > lexical.at10);
    assert!(
        hybrid.session_at5 >= 0.9,
        "session recall@5 {:.3}",
        hybrid.session_at5
    );
    check_gate(
        &mut loaded,
        Floors {
            unrelated_empty: 0.8,
            own_kept: 0.65,
        },
    );
}

/// The miss analysis (`locomo_eval --misses`) lists exactly the questions
/// whose evidence is not all among the first 10 hits, each missing turn
/// once, with a reason that matches what it shares with the question.
#[test]
fn misses_are_the_questions_short_of_their_evidence_with_a_reason() {
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo_dev.json"
    ))
    .unwrap();
    let mut loaded = locomo::load(&json, None).unwrap();
    let questions = locomo::recall_by_question(&mut loaded).unwrap();
    let short: usize = questions
        .iter()
        .flatten()
        .filter(|q| q.recall.at10 < 1.0)
        .count();
    let misses = locomo::misses(&mut loaded).unwrap();
    assert_eq!(misses.len(), short);
    let mut reasons = std::collections::BTreeSet::new();
    for miss in &misses {
        assert!(!miss.missed.is_empty() && miss.missed.len() <= miss.evidence);
        for turn in &miss.missed {
            assert!(turn.rank.is_none_or(|r| r > 10), "{turn:?}");
            let known = turn.reason != locomo::MissReason::UnknownTurn;
            assert_eq!(
                known && turn.shared.is_empty(),
                turn.reason == locomo::MissReason::NoSharedTerm
            );
            assert!(turn.topic_shared.iter().all(|t| turn.shared.contains(t)));
            if turn.reason == locomo::MissReason::NameOrDateOnly {
                assert!(turn.topic_shared.is_empty(), "{turn:?}");
            }
            reasons.insert(turn.reason);
        }
    }
    assert!(reasons.contains(&locomo::MissReason::NameOrDateOnly));
    // One dev question's evidence is `"D8:6; D9:17"`, no turn's id.
    assert!(reasons.contains(&locomo::MissReason::UnknownTurn));
    let counted: usize = locomo::reason_counts(&misses)
        .iter()
        .map(|(_, counts)| counts.iter().sum::<usize>())
        .sum();
    assert_eq!(
        counted,
        misses.iter().map(|m| m.missed.len()).sum::<usize>()
    );
}

/// LoCoMo's turn ids (`D<session>:<n>`) repeat across conversations: a
/// turn's session is looked up in its own conversation, so a hit in the
/// evidence's session counts even when another conversation has a turn of
/// the evidence's id and none of the hit's.
#[test]
fn session_recall_reads_turn_ids_per_conversation() {
    let turn = |id: &str, speaker: &str, text: &str| serde_json::json!({"id": id, "speaker": speaker, "text": text});
    let conversation = |id: &str, turns: Vec<serde_json::Value>, question: &str| {
        serde_json::json!({
            "conversation_id": id,
            "sessions": [{"date": "1:56 pm on 8 May, 2023", "turns": turns}],
            "questions": [{"question": question, "evidence": ["D1:2"], "category": 4}]
        })
    };
    let first = conversation(
        "a",
        vec![
            turn("D1:1", "Caroline", "Good morning!"),
            turn("D1:2", "Caroline", "A quiet day."),
            turn("D1:3", "Caroline", "I paddled my kayak down the river."),
        ],
        "Where did Caroline paddle her kayak?",
    );
    let second = conversation(
        "b",
        vec![
            turn("D1:1", "Jon", "Dance with me."),
            turn("D1:2", "Jon", "Music all night."),
        ],
        "Does Jon dance?",
    );
    let json = serde_json::json!({"conversations": [first, second]}).to_string();
    let mut loaded = locomo::load(&json, None).unwrap();
    let parts = locomo::recall_by_conversation(&mut loaded).unwrap();
    // Conversation 0's best hit is `D1:3`, in the session of its evidence
    // `D1:2` (an id conversation 1 has too, `D1:3` one it lacks).
    assert_eq!(parts[0].session_at1, 1.0, "{parts:?}");
}

/// Two sessions of Ann and Bo, the second turn sharing an image, with
/// `questions`.
fn ann_and_bo(questions: serde_json::Value) -> String {
    serde_json::json!({"conversations": [{
        "conversation_id": "a",
        "sessions": [
            {"date": "1:56 pm on 8 May, 2023", "turns": [
                {"id": "D1:1", "speaker": "Ann", "text": "Hi Bo!"},
                {"id": "D1:2", "speaker": "Bo", "text": "Look.", "image_caption": "a cat"}
            ]},
            {"date": "1:56 pm on 9 May, 2023", "turns": [
                {"id": "D2:1", "speaker": "Ann", "text": "Back again."}
            ]}
        ],
        "questions": questions
    }]})
    .to_string()
}

/// `locomo_eval --contextual-embedding` embeds each turn after a session's
/// first as the previous turn, a newline and the turn, each written as the
/// model sees it (`Speaker: text`, with a shared image's caption).
#[test]
fn contextual_texts_pair_each_turn_with_the_one_before_in_its_session() {
    let pairs = locomo::contextual_texts(&ann_and_bo(serde_json::json!([]))).unwrap();
    assert_eq!(
        pairs,
        [(
            "Bo: Look. [shares a cat]".to_string(),
            "Ann: Hi Bo!\nBo: Look. [shares a cat]".to_string()
        )],
        "a session's first turn has none before it"
    );
}

/// `locomo_eval --embed-without-speaker` embeds the questions without their
/// conversation's speakers' names (a possessive with the name, the
/// punctuation after it kept) and the turns without their `Speaker: `
/// label; a name inside a turn's text stays.
#[test]
fn nameless_texts_drop_the_speakers_names() {
    let json = ann_and_bo(serde_json::json!([
        {"question": "What did Ann's cat and Bo\u{2019}s dog do?", "evidence": ["D1:2"]},
        {"question": "Who supports Bo? Annie or Ann?", "evidence": ["D1:1"]}
    ]));
    let pairs = |which| locomo::nameless_texts(&json, which).unwrap();
    let turns = [
        ("Ann: Hi Bo!".to_string(), "Hi Bo!".to_string()),
        (
            "Bo: Look. [shares a cat]".to_string(),
            "Look. [shares a cat]".to_string(),
        ),
        ("Ann: Back again.".to_string(), "Back again.".to_string()),
    ];
    let questions = [
        (
            "What did Ann's cat and Bo\u{2019}s dog do?".to_string(),
            "What did cat and dog do?".to_string(),
        ),
        (
            "Who supports Bo? Annie or Ann?".to_string(),
            "Who supports ? Annie or ?".to_string(),
        ),
    ];
    assert_eq!(pairs(locomo::Nameless::Turns), turns);
    assert_eq!(pairs(locomo::Nameless::Questions), questions);
    assert_eq!(
        pairs(locomo::Nameless::Both),
        [&turns[..], &questions[..]].concat()
    );
}
