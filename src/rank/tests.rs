//! Ranking's tests: the four steps, neighbours' share, speakers, bounded
//! relevance, time and month matching (the in-place readers against the
//! collecting ones), scope and coverage, hypothesis questions.

use super::*;
use crate::item::{Kind, Source, SourceKind, Timestamp};

fn in_scope() -> Scope {
    Scope::workspace("u", "w")
}

fn memory(id: &str, text: &str, follows: Option<&str>) -> MemoryItem {
    MemoryItem {
        kind: Kind::Episodic,
        follows: follows.map(str::to_string),
        ..MemoryItem::example(id, text)
    }
}

#[test]
fn rank_runs_the_four_steps_over_the_candidates() {
    let question = memory("a", "How long have you been married?", None);
    let answer = memory("b", "Caroline: 5 years already!", Some("a"));
    let other_speaker = memory("c", "Melanie: we met in 2019", None);
    let unrelated = memory("d", "the weather was fine", None);
    let candidate = |item, lexical: f32| Candidate {
        item,
        lexical,
        coverage: lexical / 4.0,
        semantic: None,
    };
    let candidates = || {
        [
            candidate(&other_speaker, 1.0),
            candidate(&unrelated, 0.0),
            candidate(&answer, 0.0),
            candidate(&question, 2.0),
        ]
    };
    let query = "Has Caroline been married for long?";
    let params = RankParams::default();
    let hits = rank(query, &in_scope(), candidates(), 2.0, &params, 10);
    let ids: Vec<&str> = hits.iter().map(|(_, item)| item.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"], "a score of 0 is dropped");
    // Step 1: 2 / 2 + C · 0.5 for the question, inherited by the answer.
    let (answer_score, _) = hits[1];
    assert!(answer_score.inherited && (answer_score.fused - 1.1).abs() < 1e-6);
    let (other_score, _) = hits[2];
    assert!((other_score.speaker_factor - 0.7).abs() < 1e-6);
    assert!((other_score.fused - 0.7 * (0.5 + 0.2 * 0.25)).abs() < 1e-6);
    // Relevance: the coverage, inherited by the answer, scaled by the
    // speaker factor like the score, and not max-normalized.
    assert!((hits[0].0.relevance - 0.5).abs() < 1e-6);
    assert!((answer_score.relevance - 0.5).abs() < 1e-6);
    assert!((other_score.relevance - 0.7 * 0.25).abs() < 1e-6);
    assert_eq!(rank(query, &in_scope(), candidates(), 2.0, &params, 2).len(), 2);
}

#[test]
fn neighbours_inherit_a_share_of_a_strong_memory() {
    let turn = |id, text, follows| MemoryItem {
        source: Source {
            kind: SourceKind::Message,
            ..Source::default()
        },
        ..memory(id, text, follows)
    };
    let before = turn("a", "Melanie: How was your weekend?", None);
    let strong = turn("b", "Caroline: I went hiking at the lake", Some("a"));
    let after = turn("c", "Melanie: Sounds lovely!", Some("b"));
    let two_away = turn("d", "Caroline: It was.", Some("c"));
    let candidates = || {
        [&before, &strong, &after, &two_away].map(|item| Candidate {
            item,
            lexical: if item.id == "b" { 2.0 } else { 0.0 },
            coverage: if item.id == "b" { 0.8 } else { 0.0 },
            semantic: None,
        })
    };
    let hits = |params: &RankParams| -> Vec<(String, f32, f32, bool)> {
        rank("hiking lake", &in_scope(), candidates(), 2.0, params, 10)
            .into_iter()
            .map(|(b, item)| (item.id.clone(), b.fused, b.relevance, b.inherited))
            .collect()
    };
    let p = RankParams::default();
    let got = hits(&p);
    let ids: Vec<&str> = got.iter().map(|h| h.0.as_str()).collect();
    // "a" and "c" tie and break by id; "d" is two steps away.
    assert_eq!(ids, ["b", "a", "c"], "one step only: {got:?}");
    for (_, fused, relevance, inherited) in &got[1..] {
        // Half of "b"'s 2 / 2 + C · 0.8.
        assert!((fused - 0.58).abs() < 1e-6 && (relevance - 0.4).abs() < 1e-6);
        assert!(inherited);
    }
    let off = RankParams {
        neighbour_share: 0.0,
        ..p
    };
    let alone: Vec<String> = hits(&off).into_iter().map(|h| h.0).collect();
    assert_eq!(alone, ["b"]);

    // Facts entered one after another are not a dialogue: a memory that
    // is no turn neither passes nor receives a share.
    let fact = memory("e", "standup is at nine", Some("b"));
    let fact_first = memory("f", "hiking boots are in the attic", None);
    let after_fact = turn("g", "Melanie: Noted.", Some("f"));
    assert!(strong.is_turn() && !fact.is_turn());
    assert!(MemoryItem {
        speaker: Some("Caroline".into()),
        ..memory("h", "hi", None)
    }
    .is_turn());
    let candidates = [(&strong, 2.0), (&fact, 0.0), (&fact_first, 2.0), (&after_fact, 0.0)]
        .map(|(item, lexical)| Candidate {
            item,
            lexical,
            coverage: lexical / 4.0,
            semantic: None,
        });
    let ids: Vec<String> = rank("hiking", &in_scope(), candidates, 2.0, &p, 10)
        .into_iter()
        .map(|(_, item)| item.id.clone())
        .collect();
    assert!(!ids.contains(&"e".to_string()) && !ids.contains(&"g".to_string()), "{ids:?}");
}

#[test]
fn the_speaker_field_is_matched_and_a_name_prefix_still_works() {
    let by_field = |id, text, speaker: &str| MemoryItem {
        speaker: Some(speaker.to_string()),
        ..memory(id, text, None)
    };
    let caroline = by_field("a", "I went to a support group", "Caroline");
    let melanie = by_field("b", "I went to a pottery class", "Melanie");
    let prefixed = memory("c", "Melanie: I went to a concert", None);
    // The field wins over a label-like start of the text.
    let quoted = by_field("d", "Caroline: she said I went", "Melanie");
    assert_eq!(speaker_of(&caroline), Some("Caroline"));
    assert_eq!(speaker_of(&prefixed), Some("Melanie"));
    assert_eq!(speaker_of(&quoted), Some("Melanie"));
    let candidates = [&caroline, &melanie, &prefixed, &quoted].map(|item| Candidate {
        item,
        lexical: 1.0,
        coverage: 0.5,
        semantic: None,
    });
    let hits = rank(
        "Where did Caroline go?",
        &in_scope(),
        candidates,
        1.0,
        &RankParams::default(),
        10,
    );
    let factor = |id: &str| {
        hits.iter()
            .find(|(_, item)| item.id == id)
            .map(|(b, _)| b.speaker_factor)
    };
    assert_eq!(factor("a"), Some(1.0));
    for other in ["b", "c", "d"] {
        assert!((factor(other).unwrap() - 0.7).abs() < 1e-6, "{other}");
    }
    assert_eq!(hits[0].1.id, "a");
}

#[test]
fn relevance_is_bounded_and_monotone_in_its_evidence() {
    let p = RankParams::default();
    let steps = [0.0, 0.1, 0.3, 0.5, 0.9, 1.0];
    for (i, &c) in steps.iter().enumerate() {
        for (j, &cos) in steps.iter().enumerate() {
            let r = evidence(c, Some(cos), &p);
            assert!((0.0..=1.0).contains(&r));
            if i > 0 {
                assert!(r > evidence(steps[i - 1], Some(cos), &p));
            }
            if j > 0 {
                assert!(r > evidence(c, Some(steps[j - 1]), &p));
            }
        }
        assert_eq!(evidence(c, None, &p), c, "lexical-only: the coverage");
    }
    assert_eq!(evidence(1.0, Some(1.0), &p), 1.0);
    assert_eq!(evidence(0.0, Some(-0.5), &p), 0.0);
    // An answer inheriting more than its question's relevance is capped.
    let strong = RankParams {
        answer_inheritance: 3.0,
        ..p
    };
    let question = memory("q", "Where did you go?", None);
    let answer = memory("a", "To the lake.", Some("q"));
    let candidates = [
        Candidate {
            item: &question,
            lexical: 1.0,
            coverage: 0.8,
            semantic: None,
        },
        Candidate {
            item: &answer,
            lexical: 0.0,
            coverage: 0.0,
            semantic: None,
        },
    ];
    let hits = rank("where did you go", &in_scope(), candidates, 1.0, &strong, 10);
    assert!(hits.iter().all(|(b, _)| (0.0..=1.0).contains(&b.relevance)));
    let inherited = hits.iter().find(|(_, item)| item.id == "a").unwrap();
    assert_eq!(inherited.0.relevance, 1.0);
}

#[test]
fn a_when_question_prefers_memories_placed_in_time() {
    let dated = memory("a", "Caroline: I went to the support group yesterday", None);
    let undated = memory("b", "Caroline: the support group was so moving", None);
    let candidates = || {
        [
            Candidate {
                item: &dated,
                lexical: 0.8,
                coverage: 0.5,
                semantic: None,
            },
            Candidate {
                item: &undated,
                lexical: 1.0,
                coverage: 0.5,
                semantic: None,
            },
        ]
    };
    let order = |query: &str, params: &RankParams| -> Vec<(String, f32, f32)> {
        rank(query, &in_scope(), candidates(), 1.0, params, 10)
            .into_iter()
            .map(|(b, item)| (item.id.clone(), b.time_factor, b.relevance))
            .collect()
    };
    let p = RankParams::default();
    let when = "When did Caroline go to the support group?";
    let hits = order(when, &p);
    assert_eq!(hits[0].0, "a", "{hits:?}");
    assert!((hits[1].1 - 0.7).abs() < 1e-6 && hits[0].1 == 1.0);
    assert!(
        hits.iter().all(|h| h.2 == 0.5),
        "the time factor orders, it does not gate"
    );
    let off = RankParams {
        time_penalty: 0.0,
        ..p
    };
    assert_eq!(order(when, &off)[0].0, "b");
    let how_long = order("How long has Caroline gone to the support group?", &p);
    assert_eq!(how_long[0].0, "a", "how long asks for a time too");
    assert!(asks_duration("How OFTEN does Melanie go to the beach?"));
    assert!(asks_duration("how old is her dog"));
    assert!(!asks_duration("How did the support group go?"));
    let what = order("What did Caroline think of the support group?", &p);
    assert_eq!(what[0].0, "b");
    assert!(what.iter().all(|h| h.1 == 1.0));

    assert!(mentions_time("we moved in May 2021"));
    assert!(mentions_time("Three weeks ago I started"));
    assert!(mentions_time("back in 1998"));
    assert!(!mentions_time("I have 3000 photos"));
    assert!(!mentions_time("the support group was so moving"));
}

#[test]
fn a_named_month_prefers_memories_of_that_month() {
    // 2023-05-08 and 2023-07-15, noon UTC.
    let at = |id, text, ms| MemoryItem {
        created_at: Timestamp(ms),
        ..memory(id, text, None)
    };
    let may = at("a", "Melanie: we painted a sunset", 1_683_547_200_000);
    let july = at("b", "Melanie: we painted a lake", 1_689_422_400_000);
    let says_may = at("c", "Melanie: back in May we painted", 1_689_422_400_000);
    let candidates = || {
        [(&may, 0.8), (&july, 1.0), (&says_may, 0.8)].map(|(item, lexical)| Candidate {
            item,
            lexical,
            coverage: 0.5,
            semantic: None,
        })
    };
    let order = |query: &str| -> Vec<(String, f32)> {
        rank(query, &in_scope(), candidates(), 1.0, &RankParams::default(), 10)
            .into_iter()
            .map(|(b, item)| (item.id.clone(), b.time_factor))
            .collect()
    };
    let hits = order("What did Melanie paint in May 2023?");
    assert_eq!(hits[2], ("b".to_string(), 0.7), "{hits:?}");
    assert!(hits[..2].iter().all(|h| h.1 == 1.0));
    // "may" as a verb names no month.
    let hits = order("What may Melanie have painted?");
    assert_eq!(hits[0].0, "b");
    assert!(hits.iter().all(|h| h.1 == 1.0));

    // Said on 15 July: "two weeks ago" is 1 July, "last month" June.
    let weeks_ago = at("d", "Melanie: two weeks ago we painted", 1_689_422_400_000);
    let last_month = at("e", "Melanie: last month we painted", 1_689_422_400_000);
    let time_factor = |query: &str, item: &MemoryItem| {
        let candidate = Candidate {
            item,
            lexical: 1.0,
            coverage: 0.5,
            semantic: None,
        };
        rank(query, &in_scope(), [candidate], 1.0, &RankParams::default(), 1)[0]
            .0
            .time_factor
    };
    assert_eq!(time_factor("What did Melanie paint in June?", &last_month), 1.0);
    assert!((time_factor("What did Melanie paint in May?", &last_month) - 0.7).abs() < 1e-6);
    assert!((time_factor("What did Melanie paint in June?", &weeks_ago) - 0.7).abs() < 1e-6);

    assert_eq!(named_months("on 8 May, 2023"), [5]);
    assert_eq!(named_months("May 23 and June"), [5, 6]);
    assert_eq!(named_months("in may"), [5]);
    assert!(named_months("you may like it").is_empty());
    assert!(named_months("nothing dated").is_empty());
}

/// The month match without the in-place reading first: every text's
/// words collected, as `in_months` did before.
fn in_months_collecting(item: &MemoryItem, months: &[u8]) -> bool {
    let created = time::OffsetDateTime::from_unix_timestamp(item.created_at.0.div_euclid(1000))
        .map(|t| u8::from(t.month()))
        .ok();
    created.is_some_and(|m| months.contains(&m))
        || named_months(&item.text).iter().any(|m| months.contains(m))
        || crate::relative_time::resolved_months(&item.text, item.created_at.0)
            .iter()
            .any(|m| months.contains(m))
}

proptest::proptest! {
    #[test]
    fn month_match_reads_in_place_what_collecting_the_words_finds(
        words in proptest::collection::vec(
            proptest::sample::select(vec![
                "May", "may", "in", "of", "8", "2023", "JULY", "june,", "Last", "week",
                "weekend", "month", "past", "next", "night", "friday", "two", "couple",
                "days", "weeks", "ago", "yesterday", "Tomorrow", "we", "painted", "-",
                "00000000000000000005", "\u{212A}", "\u{130}",
            ]),
            0..12,
        ),
        month in 1u8..=12,
        // 2023-01-01 to 2023-12-31, noon UTC.
        day in 0i64..365,
    ) {
        let item = MemoryItem {
            created_at: Timestamp(1_672_574_400_000 + day * 86_400_000),
            ..memory("a", &words.join(" "), None)
        };
        for months in [vec![month], vec![month, month % 12 + 1]] {
            proptest::prop_assert_eq!(
                in_months(&item.text, item.created_at.0, &months),
                in_months_collecting(&item, &months),
                "{:?} {:?}", item.text, months
            );
        }
    }
}

#[test]
fn narrower_scope_wins_at_equal_relevance() {
    assert!(scope_multiplier(6, 0.1) > scope_multiplier(2, 0.1));
    assert_eq!(scope_multiplier(0, 0.1), 1.0);
    let key = |score, specificity, id| RankKey {
        score,
        specificity,
        created_at: 0,
        id,
    };
    let mut keys = [key(1.0, 0, "a"), key(1.0, 6, "b"), key(1.0, 2, "c")];
    keys.sort_by(compare);
    assert_eq!(keys.map(|k| k.id), ["b", "c", "a"]);
    assert!(3.0 * scope_multiplier(0, 0.1) > 2.0 * scope_multiplier(7, 0.1));
}

#[test]
fn fusion_normalizes_bm25_and_weights_the_cosine() {
    let p = RankParams::default();
    assert_eq!(combine(2.0, 4.0, 0.0, None, &p), 0.5);
    assert!((combine(2.0, 4.0, 0.0, Some(0.5), &p) - (0.4 * 0.5 + 0.6 * 0.5)).abs() < 1e-6);
    assert!(
        (combine(0.0, 4.0, 0.0, Some(-0.3), &p)).abs() < 1e-6,
        "negative cosines count as 0"
    );
    assert_eq!(combine(1.0, 0.0, 0.0, None, &p), 0.0);
}

#[test]
fn a_memory_holding_more_of_the_query_gains_over_a_short_partial_match() {
    // BM25 ranks the short turn with the rarest query term first; the
    // other holds every term of the query.
    let partial = memory("a", "Melanie: pottery!", None);
    let full = memory("b", "Melanie: my kids and I made bowls in our pottery class", None);
    let candidates = || {
        [(&partial, 2.0, 0.5), (&full, 1.9, 1.0)].map(|(item, lexical, coverage)| Candidate {
            item,
            lexical,
            coverage,
            semantic: None,
        })
    };
    let first = |params: &RankParams| {
        rank("pottery class kids", &in_scope(), candidates(), 2.0, params, 10)[0]
            .1
            .id
            .clone()
    };
    let p = RankParams::default();
    assert_eq!(first(&p), "b");
    let off = RankParams {
        coverage_weight: 0.0,
        ..p
    };
    assert_eq!(first(&off), "a", "without the coverage, BM25 alone");
    // With a model the coverage is part of the lexical side, weighted W.
    let hybrid = combine(1.9, 2.0, 1.0, Some(0.5), &p);
    assert!((hybrid - (0.4 * (0.95 + 0.2) + 0.6 * 0.5)).abs() < 1e-6);
}

#[test]
fn speaker_labels_and_questions_are_recognised() {
    assert_eq!(
        speaker_label("Caroline: I went to a support group"),
        Some("Caroline")
    );
    assert_eq!(speaker_label("Mary Ann Lee: hi"), Some("Mary Ann Lee"));
    assert_eq!(speaker_label("note: lowercase label"), None);
    assert_eq!(speaker_label("A B C D: too many words"), None);
    assert_eq!(speaker_label("no label here"), None);
    let words = query_words("When did Caroline's sister visit?");
    assert!(names_speaker(&words, "Caroline"));
    assert!(!names_speaker(&words, "Melanie"));
    assert!(!names_speaker(&query_words("Mary went"), "Mary Ann"));
    assert!(asks_question("How long have you been married?"));
    assert!(!asks_question("Five years."));
}

#[test]
fn a_hypothesis_question_leans_on_the_embedding() {
    assert!(asks_hypothesis("Would Caroline pursue writing as a career option?"));
    assert!(asks_hypothesis("did Melanie make the bowl?"));
    assert!(asks_hypothesis("What would Caroline's political leaning likely be?"));
    assert!(asks_hypothesis("What traits might Melanie say Caroline has?"));
    assert!(!asks_hypothesis("What did Caroline research?"));
    assert!(!asks_hypothesis("When did Melanie paint a sunrise?"));
    assert!(!asks_hypothesis("May trip plans"), "a month, not a modal");
    assert!(!asks_hypothesis("Likelihood of rain"), "a word, not a prefix");
    // The question's words in one memory, its topic in the other's
    // meaning: a recall question keeps `W`, a hypothesis one takes `H`.
    let worded = memory("a", "Caroline: writing a career, no idea", None);
    let meant = memory("b", "Caroline: I want to be a counselor", None);
    let candidates = || {
        [
            Candidate {
                item: &worded,
                lexical: 2.0,
                coverage: 0.6,
                semantic: Some(0.2),
            },
            Candidate {
                item: &meant,
                lexical: 0.5,
                coverage: 0.2,
                semantic: Some(0.6),
            },
        ]
    };
    let order = |query: &str, params: &RankParams| -> Vec<(String, f32)> {
        rank(query, &in_scope(), candidates(), 2.0, params, 10)
            .into_iter()
            .map(|(b, item)| (item.id.clone(), b.relevance))
            .collect()
    };
    let p = RankParams::default();
    // W = 0.4: a scores 0.4 · 1.12 + 0.6 · 0.2 = 0.568, b 0.4 · 0.29 + 0.6 · 0.6 = 0.476.
    let recall = order("What about Caroline writing a career?", &p);
    assert_eq!(recall[0].0, "a");
    // H = 0.2: a 0.2 · 1.12 + 0.8 · 0.2 = 0.384, b 0.2 · 0.29 + 0.8 · 0.6 = 0.538.
    let hypothesis = order("Would Caroline pursue writing as a career?", &p);
    assert_eq!(hypothesis[0].0, "b");
    // The relevance is fused with `W` for every question: the gate
    // means the same whatever the question's form.
    let relevance = |hits: &[(String, f32)], id: &str| {
        hits.iter().find(|h| h.0 == id).map(|h| h.1)
    };
    assert_eq!(relevance(&recall, "b"), relevance(&hypothesis, "b"));
    let off = RankParams {
        hypothesis_lexical_weight: p.lexical_weight,
        ..p
    };
    assert_eq!(order("Would Caroline pursue writing as a career?", &off)[0].0, "a");
}

#[test]
fn mentions_time_reads_the_words_query_words_splits() {
    // Every word a time word is compared with can be read in place.
    let names = calendar::MONTHS
        .iter()
        .chain(calendar::WEEKDAYS.iter().map(|(name, _)| name));
    let longest = TIME_WORDS.iter().chain(names).map(|w| w.len()).max();
    assert!(longest <= Some(words::SHORT_WORD));
    // The oracle collects every word of the text first.
    let oracle = |text: &str| query_words(text).iter().any(|w| is_time_word(w));
    let texts = [
        "Caroline: I went to the support group YESTERDAY.",
        "Melanie: we painted it in 2022, then again last-week",
        "Gina: the weekend trip was lovely",
        "Jon: my mentor promotes my venture",
        "Jon: I pitched it on Friday",
        "born 1899 or 20245",
        "an extraordinarilylongwordthatcannotbeatimewordatall",
        "\u{212A}ayak in \u{130}stanbul in MAY",
        "",
    ];
    for text in texts {
        assert_eq!(mentions_time(text), oracle(text), "{text}");
    }
    assert_eq!(
        texts.map(mentions_time),
        [true, true, true, false, true, false, false, true, false]
    );
}
