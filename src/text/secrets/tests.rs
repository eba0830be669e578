//! The scanner's tests: what it cuts and marks, its prefilter and the
//! credential-name check against the readings they replaced.

use super::*;
use proptest::prelude::*;

/// `names_credential` as it was before it compared in place: the
/// oracle of the property below.
fn names_credential_lowercasing(name: &str) -> Option<bool> {
    let lower = name.to_ascii_lowercase();
    let lower = lower.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let last = lower
        .rsplit(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default();
    let tail = KEY_WORDS
        .iter()
        .find(|w| last == **w || (last.ends_with(*w) && camel_tail(name, w.len())))?;
    Some(PASSWORD_WORDS.contains(tail))
}

/// Texts made of the pieces every scanner looks for (prefixes, key
/// bodies, separators, credential words in several cases) and filler.
fn pieces() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "sk-", "AKIA", "ghp_", "github_pat_", "sk_live_", "xoxb-", "AIza", "ya29.",
            "GOCSPX-", "whsec_", "eyJ", "hbGciOiJIUzI1NiJ9", ".", "://", "user:pw@", "host",
            "hooks.slack.com/services/", "-----BEGIN ", "RSA ", "PRIVATE KEY-----",
            "-----END ", "\n", " ", "=", ": ", "\"", "password", "Token", "API_KEY",
            "accessToken", "Secret", "is", "7Fh2kQ9zLm3Xp8Rt", "ABCDEFGH12345678",
            "0123456789", "aB3dE5fG7hJ9kL1m", "é", "note", "_", "-", "pwd", "PASS",
            "passphrase", "bearer", "AUTH", "Authorization", "key", "Credentials", "tok",
            "secre", "ke", "hunter2", "my",
        ]),
        0..30,
    )
    .prop_map(|parts| parts.concat())
}

/// The prefilter that skips nothing: every byte, and credential words.
fn everything() -> Present {
    Present {
        bytes: ByteSet([u64::MAX; 4]),
        credential_words: true,
    }
}

#[test]
fn every_credential_word_holds_a_root() {
    for word in KEY_WORDS {
        assert!(KEY_WORD_ROOTS.iter().any(|root| word.contains(root)), "{word}");
        assert!(holds_key_word_root(word), "{word}");
        assert!(holds_key_word_root(&word.to_ascii_uppercase()), "{word}");
    }
    assert!(!holds_key_word_root("a plain sentence about the garden"));
    assert!(holds_key_word_root("the keyboard"));
}

#[test]
fn locomo_turns_scrub_as_without_the_prefilter() {
    for turn in crate::text::tests::locomo_turns() {
        assert_eq!(scrub(turn.clone()), scrub_present(&turn, false, &everything()), "{turn:?}");
        for word in turn.split_whitespace() {
            assert_eq!(names_credential(word), names_credential_lowercasing(word), "{word:?}");
        }
    }
}

proptest! {
    /// Skipping the scanners whose marker has a byte the text lacks,
    /// and the credential-word scan of a text without their roots,
    /// changes no output; a text handed over is scrubbed alike.
    #[test]
    fn the_prefilter_changes_nothing(text in pieces(), keep_lines: bool) {
        prop_assert_eq!(
            scrub_with(&text, keep_lines),
            scrub_present(&text, keep_lines, &everything())
        );
        prop_assert_eq!(scrub(text.clone()), scrub_with(&text, false));
    }

    /// Credential names are recognized as they were when the name was
    /// lowercased first.
    #[test]
    fn names_are_compared_as_before(name in pieces(), extra in "[a-zA-Z_:=\"'é-]{0,12}") {
        for name in [name.clone(), format!("{extra}{name}"), format!("{name}{extra}")] {
            prop_assert_eq!(names_credential(&name), names_credential_lowercasing(&name), "{}", name);
        }
    }
}

fn scrubbed(text: &str) -> String {
    scrub(text.to_string()).text
}

#[test]
fn provider_keys_are_replaced_and_the_rest_is_kept() {
    let cases = [
        "sk-proj-4f9Qd2LrT8xVb1NzK7mWc3YpHs6JeA0u",
        "sk-ant-api03-Zx8Kq2Lm9Np4Rt6Vw1Yb3Cd5Ef7Gh0Jk",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "sk_live_51H8x9KfL2mN3pQ4rS5tU6vW",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "AIzaSyD3x4mpl3K3y0123456789abcdefghijkl",
        "ya29.a0AfH6SMBx1y2z3A4B5C6D7E8F9G0",
    ];
    for key in cases {
        let text = format!("deploy with {key} please");
        let out = scrub(text);
        assert_eq!(out.text, "deploy with [secret] please", "{key}");
        assert_eq!(out.secrets, 1);
    }
}

#[test]
fn tokens_urls_pem_and_assignments() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_eq!(scrubbed(&format!("token {jwt}.")), "token [secret].");
    assert_eq!(
        scrubbed("DATABASE_URL=postgres://admin:hunter2@db.example.com:5432/app"),
        "DATABASE_URL=postgres://admin:[secret]@db.example.com:5432/app"
    );
    assert_eq!(
        scrubbed("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbC\n-----END RSA PRIVATE KEY-----\nthanks"),
        "key:\n[secret]\nthanks"
    );
    assert_eq!(
        scrubbed("cut -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"),
        "cut [secret]"
    );
    assert_eq!(scrubbed("DB_PASSWORD=hunter2 ok"), "DB_PASSWORD=[secret] ok");
    assert_eq!(scrubbed("password: hunter2"), "password: [secret]");
    assert_eq!(
        scrubbed("my wifi password is Tr0ub4dor&3 ok"),
        "my wifi password is [secret] ok"
    );
    assert_eq!(
        scrubbed(r#"{"accessToken": "q8Zr2LmX0v7Tb4Nc1Kp9Wd3"}"#),
        r#"{"accessToken": "[secret]"}"#
    );
    assert_eq!(
        scrubbed("my api key is 9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c for staging"),
        "my api key is [secret] for staging"
    );
}

#[test]
fn ordinary_text_is_left_alone() {
    for text in [
        "I forgot my password again, so annoying!",
        "The key to happiness is family.",
        "Here's a token of my appreciation: thanks!",
        "Keep this secret: I'm planning a surprise party.",
        "sk-ating is fun",
        "Meet me at 3:30, the password is patience",
        "See https://example.com/a:b@c for details",
        "My phone broke; call me later",
        "I changed my password twice, it's annoying.",
    ] {
        let out = scrub(text.to_string());
        assert_eq!(out.text, text);
        assert_eq!(out.secrets, 0);
    }
}

#[test]
fn scrubbing_is_a_fixed_point() {
    for text in [
        "DB_PASSWORD=hunter2 ok",
        "password: hunter2",
        "my api key is 9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c for staging",
        "postgres://admin:hunter2@db",
        "a -----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY----- b",
    ] {
        let once = scrubbed(text);
        assert_ne!(once, text);
        assert_eq!(scrubbed(&once), once, "{text}");
    }
    assert_eq!(
        scrub_keeping_lines("a\n-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\nb").text,
        "a\n[secret]\n\n\nb",
        "five lines in, five lines out"
    );
}

#[test]
fn pii_is_detected() {
    assert!(has_pii("write to jane.doe+memo@example.co.uk today"));
    assert!(has_pii("call +44 20 7946 0958"));
    assert!(has_pii("call (415) 555-0100"));
    assert!(has_pii("call 415-555-0100."));
    assert!(has_pii("card 4111 1111 1111 1111 exp 12/29"));
    assert!(has_pii("card 4111111111111111"));
    assert!(!has_pii("card 4111 1111 1111 1112"));
    assert!(!has_pii("we met on 2023-05-08 at 10:30"));
    assert!(!has_pii("ran 5 10 15 miles in 1990 2000 2010"));
    assert!(!has_pii("ping me @jane on slack"));
    assert!(!has_pii("user:[secret]@db.example.com"));
}

#[test]
fn luhn_matches_known_numbers() {
    assert!(luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 3]));
    assert!(!luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 4]));
}
