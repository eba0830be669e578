//! The random workloads: scopes, texts, inputs and operations.

use super::*;

#[derive(Debug, Clone)]
pub(super) struct ScopeSpec {
    pub(super) user: u8,
    pub(super) workspace: u8,
    pub(super) project: Option<u8>,
    pub(super) card: bool,
    pub(super) session: bool,
}

impl ScopeSpec {
    pub(super) fn scope(&self) -> Scope {
        let mut scope = Scope::workspace(format!("u{}", self.user), format!("w{}", self.workspace));
        if let Some(project) = self.project {
            scope = scope.with_project(format!("p{project}"));
            if self.card {
                scope = scope.with_card("c1");
            }
        }
        if self.session {
            scope = scope.with_session("s1");
        }
        scope
    }
}

/// Every scope a workload of `users` users can name.
pub(super) fn all_scopes(users: u8) -> Vec<Scope> {
    let mut scopes = Vec::new();
    for user in 0..users {
        for workspace in 0..WORKSPACES {
            for (project, card) in [
                (None, false),
                (Some(0), false),
                (Some(0), true),
                (Some(1), false),
                (Some(1), true),
            ] {
                for session in [false, true] {
                    scopes.push(
                        ScopeSpec {
                            user,
                            workspace,
                            project,
                            card,
                            session,
                        }
                        .scope(),
                    );
                }
            }
        }
    }
    scopes
}

/// A raw text made of one of the phrases, with optional noise the capture
/// pipeline must remove.
#[derive(Debug, Clone)]
pub(super) struct TextSpec {
    pub(super) phrase: usize,
    pub(super) capitalize: bool,
    pub(super) private_at: Option<usize>,
    pub(super) messy_spacing: bool,
    pub(super) no_memory: bool,
}

impl TextSpec {
    pub(super) fn words(&self) -> Vec<String> {
        let mut words: Vec<String> = PHRASES[self.phrase]
            .split(' ')
            .map(str::to_string)
            .collect();
        if self.capitalize {
            let first = &words[0];
            words[0] = first[..1].to_uppercase() + &first[1..];
        }
        words
    }

    pub(super) fn raw(&self) -> String {
        let mut parts = self.words();
        if let Some(at) = self.private_at {
            let at = at.min(parts.len());
            parts.insert(at, format!("<private>{SECRET} {SECRET}</private>"));
        }
        let mut raw = parts.join(if self.messy_spacing { "  \t" } else { " " });
        if self.messy_spacing {
            raw = format!("\n  {raw} \n");
        }
        if self.no_memory {
            raw.push_str(" <no-memory>");
        }
        raw
    }

    /// The stored form, or `None` when the text opts out of memory.
    pub(super) fn expected(&self) -> Option<String> {
        (!self.no_memory).then(|| self.words().join(" "))
    }
}

#[derive(Debug, Clone)]
pub(super) struct InputSpec {
    pub(super) text: TextSpec,
    pub(super) scope: ScopeSpec,
    pub(super) status: Status,
    pub(super) pinned: bool,
    pub(super) privacy: Privacy,
}

impl InputSpec {
    pub(super) fn input(&self) -> MemoryInput {
        MemoryInput {
            status: Some(self.status),
            pinned: Some(self.pinned),
            privacy: Some(self.privacy),
            ..MemoryInput::new(self.text.raw(), self.scope.scope())
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct QuerySpec {
    pub(super) scope: ScopeSpec,
    pub(super) words: Vec<usize>,
    pub(super) include_pending: bool,
    pub(super) include_pii: bool,
    pub(super) dry_run: bool,
}

impl QuerySpec {
    pub(super) fn query(&self) -> RetrieveQuery {
        let text: Vec<&str> = self.words.iter().map(|&w| VOCAB[w]).collect();
        RetrieveQuery {
            include_pending: self.include_pending,
            include_pii: self.include_pii,
            dry_run: self.dry_run,
            ..RetrieveQuery::new(text.join(" "), self.scope.scope())
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct PatchSpec {
    pub(super) text: Option<TextSpec>,
    pub(super) status: Option<Status>,
    pub(super) pinned: Option<bool>,
    pub(super) privacy: Option<Privacy>,
    pub(super) deleted: Option<bool>,
}

impl PatchSpec {
    pub(super) fn patch(&self) -> MemoryPatch {
        MemoryPatch {
            text: self.text.as_ref().map(TextSpec::raw),
            status: self.status,
            pinned: self.pinned,
            privacy: self.privacy,
            deleted: self.deleted,
            ..MemoryPatch::default()
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Ingest(Vec<InputSpec>),
    Retrieve {
        query: QuerySpec,
        default_limit: bool,
    },
    Inject {
        query: QuerySpec,
        budget: usize,
    },
    Update {
        target: Index,
        patch: PatchSpec,
    },
    Delete {
        target: Index,
        hard: bool,
    },
    DeleteAll {
        user: u8,
        workspace: Option<u8>,
        project: Option<u8>,
        hard: bool,
    },
    AdvanceDays(u32),
}

pub(super) fn scope_spec(users: u8) -> impl Strategy<Value = ScopeSpec> {
    (
        0..users,
        0..WORKSPACES,
        prop::option::weighted(0.35, 0..2u8),
        prop::bool::weighted(0.4),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(user, workspace, project, card, session)| ScopeSpec {
            user,
            workspace,
            project,
            card: card && project.is_some(),
            session,
        })
}

pub(super) fn words() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..VOCAB.len(), 1..=3)
}

pub(super) fn text_spec() -> impl Strategy<Value = TextSpec> {
    (
        0..PHRASES.len(),
        prop::bool::weighted(0.15),
        prop::option::weighted(0.15, 0..4usize),
        any::<bool>(),
        prop::bool::weighted(0.05),
    )
        .prop_map(
            |(phrase, capitalize, private_at, messy_spacing, no_memory)| TextSpec {
                phrase,
                capitalize,
                private_at,
                messy_spacing,
                no_memory,
            },
        )
}

pub(super) fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        6 => Just(Status::Approved),
        2 => Just(Status::Pending),
        2 => Just(Status::Rejected),
    ]
}

pub(super) fn privacy() -> impl Strategy<Value = Privacy> {
    (
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.15),
        prop::option::weighted(0.3, 1..=3u32),
    )
        .prop_map(|(pii, private, retention_days)| Privacy {
            pii,
            private,
            retention_days,
        })
}

pub(super) fn input_spec(users: u8) -> impl Strategy<Value = InputSpec> {
    (
        text_spec(),
        scope_spec(users),
        status(),
        prop::bool::weighted(0.2),
        privacy(),
    )
        .prop_map(|(text, scope, status, pinned, privacy)| InputSpec {
            text,
            scope,
            status,
            pinned,
            privacy,
        })
}

pub(super) fn query_spec(users: u8) -> impl Strategy<Value = QuerySpec> {
    (
        scope_spec(users),
        words(),
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(scope, words, include_pending, include_pii, dry_run)| QuerySpec {
                scope,
                words,
                include_pending,
                include_pii,
                dry_run,
            },
        )
}

pub(super) fn patch_spec() -> impl Strategy<Value = PatchSpec> {
    (
        prop::option::weighted(0.4, text_spec()),
        prop::option::weighted(0.3, status()),
        prop::option::weighted(0.2, any::<bool>()),
        prop::option::weighted(0.2, privacy()),
        prop::option::weighted(0.2, any::<bool>()),
    )
        .prop_map(|(text, status, pinned, privacy, deleted)| PatchSpec {
            text,
            status,
            pinned,
            privacy,
            deleted,
        })
}

pub(super) fn op(users: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => prop::collection::vec(input_spec(users), 1..=3).prop_map(Op::Ingest),
        3 => (query_spec(users), any::<bool>())
            .prop_map(|(query, default_limit)| Op::Retrieve { query, default_limit }),
        // Small budgets too, so injection leaves memories out (`dropped`).
        2 => (query_spec(users), prop_oneof![10usize..40, 40usize..500])
            .prop_map(|(query, budget)| Op::Inject { query, budget }),
        2 => (any::<Index>(), patch_spec()).prop_map(|(target, patch)| Op::Update { target, patch }),
        1 => (any::<Index>(), prop::bool::weighted(0.4))
            .prop_map(|(target, hard)| Op::Delete { target, hard }),
        1 => (0..users, prop::option::of(0..WORKSPACES), prop::option::weighted(0.3, 0..2u8), prop::bool::weighted(0.3))
            .prop_map(|(user, workspace, project, hard)| Op::DeleteAll { user, workspace, project, hard }),
        1 => (0..=3u32).prop_map(Op::AdvanceDays),
    ]
}
