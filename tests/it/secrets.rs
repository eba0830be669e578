//! Secrets never stored (`docs/memory-model.md`, "Capture"): every kind of
//! credential the detector knows is kept out of every stored byte and every
//! output, the rest of its message is kept, personal data marks a memory
//! `pii`, and ordinary conversation is left alone (the LoCoMo dev turns).

use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::text;
use memtide::{
    Config, InjectQuery, Memory, MemoryInput, RetrieveQuery, ScopeFilter, SecretsConfig, Timestamp,
};
use memtide_testkit::store::{contains, open, scope, stored_bytes, Mem, T0};

/// One credential of each kind, with the words around it that must stay.
const SECRETS: &[(&str, &str)] = &[
    ("openai", "sk-proj-4f9Qd2LrT8xVb1NzK7mWc3YpHs6JeA0u"),
    ("anthropic", "sk-ant-api03-Zx8Kq2Lm9Np4Rt6Vw1Yb3Cd5Ef7Gh0Jk"),
    ("aws", "AKIAIOSFODNN7EXAMPLE"),
    ("github", "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"),
    ("stripe", "sk_live_51H8x9KfL2mN3pQ4rS5tU6vW"),
    (
        "slack",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    ("google", "AIzaSyD3x4mpl3K3y0123456789abcdefghijkl"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
];

/// Everything a caller can read back: retrieval, injection and export.
fn outputs(mem: &mut Mem, query: &str) -> String {
    let hits = mem.retrieve(&RetrieveQuery::new(query, scope())).unwrap();
    let injection = mem
        .inject(&InjectQuery::new(RetrieveQuery::new(query, scope()), 4000))
        .unwrap();
    format!(
        "{}\n{}\n{}",
        serde_json::to_string(&hits.iter().map(|h| &h.item).collect::<Vec<_>>()).unwrap(),
        injection.block,
        mem.export()
    )
}

#[test]
fn every_kind_of_credential_stays_out_of_storage_and_outputs() {
    let mut mem = open();
    let mut inputs: Vec<(String, String)> = SECRETS
        .iter()
        .map(|(kind, key)| {
            (
                format!("the {kind} deploy uses {key} for the nightly sync"),
                key.to_string(),
            )
        })
        .collect();
    inputs.push((
        "the orders database is postgres://app:Zq7-hunter-22@db.internal:5432/orders for the nightly sync".into(),
        "Zq7-hunter-22".into(),
    ));
    inputs.push((
        "the signing key for the nightly sync:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98\nQW1vZGVsIHNlY3JldA\n-----END RSA PRIVATE KEY-----".into(),
        "MIIEowIBAAKCAQEA7bq98".into(),
    ));
    inputs.push((
        "the nightly sync needs SYNC_API_KEY=f3c9a1e7b2d84c6f90a5e1b7 in its env".into(),
        "f3c9a1e7b2d84c6f90a5e1b7".into(),
    ));
    inputs.push((
        "my token for the nightly sync is 7Fh2kQ9zLx4Rm1Vb8NcT3pWs".into(),
        "7Fh2kQ9zLx4Rm1Vb8NcT3pWs".into(),
    ));
    inputs.push((
        "the nightly sync admin password: Tr0ub4dor&3".into(),
        "Tr0ub4dor&3".into(),
    ));
    for (message, key) in &inputs {
        let result = mem
            .ingest(vec![MemoryInput::new(message.as_str(), scope())])
            .unwrap()
            .remove(0);
        let item = mem.get(result.id.as_deref().unwrap()).unwrap();
        assert!(!item.text.contains(key.as_str()), "{message}");
        assert!(item.text.contains(text::SECRET_MARKER), "{message}");
        // The rest of the message is kept.
        assert!(item.text.contains("nightly sync"), "{}", item.text);
    }
    let bytes = stored_bytes(mem.storage());
    let out = outputs(&mut mem, "nightly sync deploy key");
    assert!(out.contains("[secret]"));
    for (_, key) in &inputs {
        assert!(!contains(&bytes, key), "{key} is in a stored byte");
        assert!(!out.contains(key.as_str()), "{key} is in an output");
    }
    // A reopened store holds the scrubbed texts only.
    let reopened = Memory::open(
        mem.into_storage(),
        FixedEnvironment::new(Timestamp(T0)),
        Config::default(),
    )
    .unwrap();
    assert!(!reopened.export().contains("sk-proj-"));
}

#[test]
fn updates_and_files_are_scrubbed_too() {
    let mut mem = open();
    let id = mem
        .ingest(vec![MemoryInput::new("the staging box", scope())])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let key = SECRETS[0].1;
    let item = mem
        .update(
            &id,
            memtide::MemoryPatch {
                text: Some(format!("the staging box key is {key}")),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(item.text, "the staging box key is [secret]");
    let file = format!("# Deploy\n\nline two\n\nuse {key} here\n\nlast line\n");
    let sync = mem.sync_file(&scope(), "notes/deploy.md", &file).unwrap();
    assert!(!sync.chunks.is_empty());
    let stored = mem.file(&scope(), "notes/deploy.md").unwrap();
    assert_eq!(stored.content.lines().count(), file.lines().count());
    assert!(stored.content.contains("use [secret] here"));
    assert!(!contains(&stored_bytes(mem.storage()), key));
}

#[test]
fn personal_data_marks_a_memory_pii_which_is_injected_only_on_request() {
    let mut mem = open();
    for text in [
        "reach the landlord at jane.doe@example.com about the lease",
        "the landlord's number is +44 20 7946 0958 about the lease",
        "the lease deposit went on card 4111 1111 1111 1111",
    ] {
        let r = mem
            .ingest(vec![MemoryInput::new(text, scope())])
            .unwrap()
            .remove(0);
        let item = mem.get(r.id.as_deref().unwrap()).unwrap();
        assert!(item.privacy.pii, "{text}");
        // Personal data is kept (for the user), not replaced.
        assert_eq!(item.text, text);
    }
    let plain = RetrieveQuery::new("landlord lease", scope());
    assert!(mem.retrieve(&plain).unwrap().is_empty());
    let injection = mem.inject(&InjectQuery::new(plain.clone(), 1000)).unwrap();
    assert!(injection.used.is_empty());
    let opted_in = RetrieveQuery {
        include_pii: true,
        ..plain
    };
    assert_eq!(mem.retrieve(&opted_in).unwrap().len(), 3);
}

#[test]
fn the_detector_can_be_turned_off() {
    let config = Config {
        secrets: SecretsConfig {
            redact: false,
            mark_pii: false,
        },
        ..Config::default()
    };
    let mut mem = Memory::open(
        MemoryStorage::new(),
        FixedEnvironment::new(Timestamp(T0)),
        config,
    )
    .unwrap();
    let key = SECRETS[2].1;
    let text = format!("mail ops@example.com with {key}");
    let r = mem
        .ingest(vec![MemoryInput::new(text.as_str(), scope())])
        .unwrap()
        .remove(0);
    let item = mem.get(r.id.as_deref().unwrap()).unwrap();
    assert_eq!(item.text, text);
    assert!(!item.privacy.pii);
    assert_eq!(mem.stats(&ScopeFilter::default()).items, 1);
}

/// Every turn of the LoCoMo development set (`tests/data/locomo_dev.json`)
/// is ordinary conversation: none may be altered, and the share marked
/// `pii` is reported.
#[test]
fn ordinary_locomo_turns_are_not_altered() {
    let json = include_str!("../data/locomo_dev.json");
    let data: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut turns = 0;
    let mut altered = Vec::new();
    let mut pii = 0;
    for conversation in data["conversations"].as_array().unwrap() {
        for session in conversation["sessions"].as_array().unwrap() {
            for turn in session["turns"].as_array().unwrap() {
                let raw = turn["text"].as_str().unwrap();
                let normalized = text::normalize(raw);
                turns += 1;
                if text::scrub(normalized.clone()).text != normalized {
                    altered.push(raw.to_string());
                }
                pii += usize::from(text::has_pii(&normalized));
            }
        }
    }
    println!(
        "LoCoMo dev: {turns} turns, {} altered by the secrets detector, {pii} marked pii ({:.2}%)",
        altered.len(),
        100.0 * pii as f64 / turns as f64
    );
    assert!(turns > 500, "the dev set has its turns");
    assert_eq!(altered, Vec::<String>::new());
    assert_eq!(pii, 0, "no dev turn holds an email, phone or card number");
}
