//! The calibrated relevance of retrieval hits and the gate on it
//! (`minRelevance`): comparable across queries, so a question about nothing
//! the store holds injects nothing (`docs/design.md`, "Ranking").

use memtide::{InjectQuery, MemoryInput, MemoryPatch, RetrieveQuery, Scope};
use memtide_testkit::store::{open, Mem};

fn scope() -> Scope {
    Scope::workspace("u", "w")
}

/// A store holding one small conversation between Caroline and Melanie.
fn conversation() -> Mem {
    let mut mem = open();
    let turns = [
        "Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
        "Melanie: I painted a lake sunrise last week, it's my favourite painting.",
        "Caroline: I'm researching adoption agencies, I want to build a family.",
        "Melanie: We went camping at the beach with the kids in June.",
        "Caroline: My grandmother gave me this necklace when I was young.",
    ];
    let inputs = turns
        .iter()
        .map(|text| MemoryInput::new(*text, scope()))
        .collect();
    mem.ingest(inputs).unwrap();
    mem
}

fn query(text: &str) -> RetrieveQuery {
    RetrieveQuery {
        dry_run: true,
        explain: true,
        ..RetrieveQuery::new(text, scope())
    }
}

fn relevance_of(mem: &mut Mem, text: &str, memory: &str) -> f32 {
    mem.retrieve(&query(text))
        .unwrap()
        .into_iter()
        .find(|h| h.item.text.contains(memory))
        .map(|h| h.relevance)
        .unwrap()
}

#[test]
fn relevance_is_bounded_absolute_and_monotone_in_the_query_terms_held() {
    let mut mem = conversation();
    let hits = mem.retrieve(&query("Caroline support group")).unwrap();
    assert!(!hits.is_empty());
    for hit in &hits {
        assert!((0.0..=1.0).contains(&hit.relevance), "{}", hit.relevance);
        let explain = hit.explain.unwrap();
        assert_eq!(explain.relevance, hit.relevance);
        assert!((0.0..=1.0).contains(&explain.coverage));
    }
    // The memory holding every query term is fully relevant.
    assert_eq!(hits[0].relevance, 1.0);
    assert!(hits[0].item.text.contains("support group"));
    // A query term the memory lacks lowers its relevance; a term no memory
    // holds lowers it too, where a max-normalized score would not move.
    let full = relevance_of(&mut mem, "support group", "support group");
    let partial = relevance_of(&mut mem, "support group painting", "support group");
    let unheard = relevance_of(&mut mem, "support group trombone", "support group");
    assert_eq!(full, 1.0);
    assert!(partial < full && unheard < full, "{partial} {unheard}");
    // The score is relative to the query's best match, but for the share
    // of the query held (`rank.coverageWeight`): it moves far less.
    let score = |mem: &mut Mem, text: &str| mem.retrieve(&query(text)).unwrap()[0].score;
    let kept = score(&mut mem, "support group trombone") / score(&mut mem, "support group");
    assert!(
        kept < 1.0 && kept > unheard,
        "score kept {kept}, relevance {unheard}"
    );
}

#[test]
fn min_relevance_filters_retrieval_without_reordering() {
    let mut mem = conversation();
    let text = "Caroline adoption agencies family painting";
    let all = mem.retrieve(&query(text)).unwrap();
    assert!(all.len() >= 3);
    let cut = all[1].relevance;
    assert!(
        all.iter().any(|h| h.relevance < cut),
        "the cut must drop something"
    );
    let gated = mem
        .retrieve(&RetrieveQuery {
            min_relevance: Some(cut),
            ..query(text)
        })
        .unwrap();
    let kept: Vec<&str> = all
        .iter()
        .filter(|h| h.relevance >= cut)
        .map(|h| h.item.id.as_str())
        .collect();
    let gated_ids: Vec<&str> = gated.iter().map(|h| h.item.id.as_str()).collect();
    assert_eq!(gated_ids, kept);
    for bad in [-0.1, 1.5, f32::NAN] {
        let err = mem
            .retrieve(&RetrieveQuery {
                min_relevance: Some(bad),
                ..query(text)
            })
            .unwrap_err();
        assert!(err.to_string().contains("minRelevance"), "{err}");
    }
}

fn inject(mem: &mut Mem, text: &str, min_relevance: Option<f32>) -> Vec<String> {
    let query = RetrieveQuery {
        min_relevance,
        ..query(text)
    };
    mem.inject(&InjectQuery::new(query, 1_000)).unwrap().used
}

#[test]
fn an_unrelated_question_injects_nothing_under_the_default_gate() {
    let mut mem = conversation();
    // Other people, other lives: the names and topics are unheard of here;
    // only "week" matches a memory.
    let unrelated = "What instrument does Jon play in his band every week?";
    assert!(
        !mem.retrieve(&query(unrelated)).unwrap().is_empty(),
        "retrieval alone still returns the weak match"
    );
    assert!(inject(&mut mem, unrelated, None).is_empty());
    assert!(!inject(&mut mem, unrelated, Some(0.0)).is_empty());
    let related = "When did Caroline go to the support group?";
    let used = inject(&mut mem, related, None);
    assert!(!used.is_empty());
    let first = mem.get(&used[0]).unwrap();
    assert!(first.text.contains("support group"), "{}", first.text);
}

#[test]
fn pinned_memories_pass_the_gate() {
    let mut mem = conversation();
    let id = mem
        .ingest(vec![MemoryInput::new("Always answer in French.", scope())])
        .unwrap()
        .remove(0)
        .id
        .unwrap();
    mem.update(
        &id,
        MemoryPatch {
            pinned: Some(true),
            ..MemoryPatch::default()
        },
    )
    .unwrap();
    let used = inject(&mut mem, "What instrument does Jon play in his band?", None);
    assert_eq!(used, [id]);
}
