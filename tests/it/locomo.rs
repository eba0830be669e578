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
/// 0.505, `docs/design.md`, "Ranking"); the last measured figures are in the
/// README.
#[test]
fn lexical_recall_stays_above_the_bm25_reference() {
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/locomo_dev.json"
    ))
    .unwrap();
    let recall = locomo::evaluate(&json, None).unwrap();
    assert_eq!(recall.questions, 231);
    assert!(recall.at5 > 0.505, "recall@5 fell to {:.3}", recall.at5);
    assert!(recall.at10 >= recall.at5 && recall.at5 >= recall.at1);
}

#[cfg(feature = "semantic")]
use memtide_testkit::model::model_dir;

/// Hybrid retrieval (BM25 + MiniLM + the conversational signals of
/// `memtide::rank`) must reach the milestone's targets: recall@5 ≥ 0.65 and
/// recall@10 ≥ 0.75, and beat lexical retrieval.
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
    let hybrid = locomo::evaluate(&json, Some(Arc::new(model))).unwrap();
    let lexical = locomo::evaluate(&json, None).unwrap();
    println!(
        "hybrid recall@1/5/10 {:.3}/{:.3}/{:.3}, lexical {:.3}/{:.3}/{:.3}",
        hybrid.at1, hybrid.at5, hybrid.at10, lexical.at1, lexical.at5, lexical.at10
    );
    assert!(hybrid.at5 >= 0.65, "recall@5 {:.3}", hybrid.at5);
    assert!(hybrid.at10 >= 0.75, "recall@10 {:.3}", hybrid.at10);
    assert!(hybrid.at5 > lexical.at5 && hybrid.at10 > lexical.at10);
}
