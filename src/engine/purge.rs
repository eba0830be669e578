//! Expiry: erasing the memories whose retention has passed
//! ([`crate::retention`]). An expired memory is hard-deleted like
//! `delete(id, hard)` erases one: its record, its embedding, the links of
//! the memories that followed it, and, by the layout, every stored version
//! of its text in the same commit.

use std::collections::BTreeSet;

use super::catalog::Entries;
use super::txn::Txn;
use super::{Config, Engine, PurgeResult};
use crate::error::Result;
use crate::item::Timestamp;

impl Engine {
    /// Hard-deletes every memory expired at `now`, soft-deleted ones
    /// included (expiry ends the suppression a soft delete keeps too).
    ///
    /// The expired are the front of the expiry index
    /// ([`Engine::expiry_index`]), so a purge visits only them, not every
    /// memory. They are erased in the order of their expiry (and doc
    /// number); the end state does not depend on it: erasing one only
    /// rewrites links to it (followers, supersessions) and erases the
    /// summaries of its sources, none of which changes when another
    /// expires (`docs/memory-model.md`, "Erasure").
    pub fn purge_expired(&mut self, now: Timestamp, txn: &mut Txn) -> Result<PurgeResult> {
        let owners = &self.doc_owner;
        let expired: Vec<String> = Self::expiry_index(&mut self.by_expiry, &self.entries, &self.config)
            .iter()
            .take_while(|(end, _)| *end <= now.0)
            .filter_map(|(_, doc)| Some(owners.get(*doc as usize)?.as_deref()?.to_string()))
            .collect();
        for id in &expired {
            // A summary erased with its source is already gone.
            if self.entries.contains_key(id) {
                self.delete(id, true, now, txn)?;
            }
        }
        Ok(PurgeResult {
            purged: expired.len(),
        })
    }

    /// The expiry index (`by_expiry`), built at its first use: every
    /// memory that expires, by expiry time and doc, sorted once and built
    /// into the tree in one pass (not inserted one by one). From then on
    /// `Engine::set` keeps it.
    fn expiry_index<'a>(
        index: &'a mut Option<BTreeSet<(i64, u32)>>,
        entries: &Entries,
        config: &Config,
    ) -> &'a BTreeSet<(i64, u32)> {
        index.get_or_insert_with(|| {
            let retention = &config.retention;
            let mut keys: Vec<(i64, u32)> = entries
                .values()
                .filter_map(|e| Some((retention.expires_at(&e.item())?.0, e.doc)))
                .collect();
            // One key per doc: the unstable sort gives the one order.
            keys.sort_unstable();
            BTreeSet::from_iter(keys)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use memtide_testkit::rng::Rng;

    use super::*;
    use crate::engine::{Config, MemoryInput, MemoryPatch, Stored, SummaryInput};
    use crate::env::{Environment, FixedEnvironment};
    use crate::item::{Privacy, Scope};
    use crate::retention::{RetentionConfig, ScopeRetention};
    use crate::text::tokens::EstimatedTokens;

    const HOUR: i64 = 3_600_000;

    /// The oracle: the purge as it was, judging every memory.
    fn purge_by_scan(engine: &mut Engine, now: Timestamp, txn: &mut Txn) -> Result<PurgeResult> {
        let retention = engine.config().retention.clone();
        let expired: Vec<String> = engine
            .items()
            .filter(|item| retention.is_expired(item, now))
            .map(|item| item.id.clone())
            .collect();
        for id in &expired {
            if engine.entries.contains_key(id) {
                engine.delete(id, true, now, txn)?;
            }
        }
        Ok(PurgeResult {
            purged: expired.len(),
        })
    }

    /// The expiry keys as a walk over every memory finds them.
    fn expiry_by_scan(engine: &Engine) -> BTreeSet<(i64, String)> {
        let retention = &engine.config().retention;
        engine
            .items()
            .filter_map(|item| Some((retention.expires_at(&item)?.0, item.id.clone())))
            .collect()
    }

    /// The keys the index holds, by id; `None` before it is built.
    fn expiry_kept(engine: &Engine) -> Option<BTreeSet<(i64, String)>> {
        let index = engine.by_expiry.as_ref()?;
        let kept: BTreeSet<(i64, String)> = index
            .iter()
            .map(|(end, doc)| {
                let id = engine.doc_owner[*doc as usize].as_deref().expect("the doc's memory");
                (*end, id.to_string())
            })
            .collect();
        assert_eq!(kept.len(), index.len(), "one key per memory");
        Some(kept)
    }

    /// Builds the index, as a first purge would.
    fn build_index(engine: &mut Engine) {
        Engine::expiry_index(&mut engine.by_expiry, &engine.entries, &engine.config);
    }

    /// Every record of the engine: the state a store holds.
    fn records(engine: &Engine) -> BTreeMap<String, Vec<u8>> {
        engine
            .record_keys()
            .into_iter()
            .filter_map(|key| Some((key.clone(), engine.record(&key)?)))
            .collect()
    }

    fn scopes() -> [Scope; 4] {
        let w = Scope::workspace("alice", "w");
        [
            w.clone(),
            w.clone().with_project("p"),
            w.with_session("s"),
            Scope::workspace("bob", "w"),
        ]
    }

    /// A random policy: a store-wide default or not, and up to three rules
    /// (days, `null` that keeps, absent that defers to the default; now and
    /// then a scope that captures nothing).
    fn retention(rng: &mut Rng) -> RetentionConfig {
        let filters = [
            r#"{"userId":"alice"}"#,
            r#"{"userId":"alice","workspaceId":"w"}"#,
            r#"{"userId":"alice","workspaceId":"w","projectId":"p"}"#,
            r#"{"userId":"bob"}"#,
        ];
        let rules = (0..rng.next_u64() % 4)
            .map(|_| ScopeRetention {
                scope: serde_json::from_str(filters[rng.next_u64() as usize % 4]).unwrap(),
                days: match rng.next_u64() % 3 {
                    0 => None,
                    1 => Some(None),
                    _ => Some(Some((rng.next_u64() % 4) as u32)),
                },
                capture: !rng.next_u64().is_multiple_of(8),
            })
            .collect();
        RetentionConfig {
            days: (!rng.next_u64().is_multiple_of(3)).then(|| (rng.next_u64() % 5) as u32),
            scopes: rules,
        }
    }

    fn text(rng: &mut Rng) -> String {
        const WORDS: [&str; 8] = ["tea", "bikes", "berlin", "cello", "rain", "sushi", "chess", "maps"];
        let mut pick = || WORDS[rng.next_u64() as usize % WORDS.len()];
        format!("alice likes {} and {}", pick(), pick())
    }

    fn input(rng: &mut Rng, now: Timestamp) -> MemoryInput {
        let scope = scopes()[rng.next_u64() as usize % 4].clone();
        let mut input = MemoryInput::new(text(rng), scope);
        if rng.next_u64().is_multiple_of(3) {
            input.created_at = Some(Timestamp(now.0 - (rng.next_u64() % 120) as i64 * HOUR));
        }
        if rng.next_u64().is_multiple_of(4) {
            input.privacy = Some(Privacy {
                retention_days: Some((rng.next_u64() % 5) as u32),
                ..Privacy::default()
            });
        }
        input
    }

    /// One random write of `engine` (the same on both engines: the same
    /// seed, ids and clock).
    fn write(engine: &mut Engine, rng: &mut Rng, env: &mut FixedEnvironment, txn: &mut Txn) -> bool {
        let ids: Vec<String> = {
            let mut ids: Vec<String> = engine.items().map(|item| item.id.clone()).collect();
            ids.sort();
            ids
        };
        let pick = |rng: &mut Rng| ids.get(rng.next_u64() as usize % ids.len().max(1)).cloned();
        let now = env.now();
        match rng.next_u64() % 7 {
            0 | 1 => {
                let inputs = (0..1 + rng.next_u64() % 3).map(|_| input(rng, now)).collect();
                engine.ingest(inputs, env, txn).is_ok()
            }
            2 => {
                let Some(id) = pick(rng) else { return false };
                let patch = match rng.next_u64() % 4 {
                    0 => MemoryPatch {
                        privacy: Some(Privacy {
                            retention_days: (rng.next_u64().is_multiple_of(2)).then(|| (rng.next_u64() % 5) as u32),
                            ..Privacy::default()
                        }),
                        ..MemoryPatch::default()
                    },
                    1 => MemoryPatch {
                        text: Some(text(rng)),
                        ..MemoryPatch::default()
                    },
                    2 => MemoryPatch {
                        deleted: Some(rng.next_u64().is_multiple_of(2)),
                        ..MemoryPatch::default()
                    },
                    _ => MemoryPatch {
                        pinned: Some(true),
                        ..MemoryPatch::default()
                    },
                };
                engine.update(&id, patch, now, txn).is_ok()
            }
            3 => {
                let Some(id) = pick(rng) else { return false };
                engine.delete(&id, rng.next_u64().is_multiple_of(2), now, txn).is_ok()
            }
            4 => {
                let scope = scopes()[rng.next_u64() as usize % 4].clone();
                let mut sources: Vec<String> = engine
                    .items()
                    .filter(|item| item.scope == scope && !item.is_deleted())
                    .filter(|item| item.summary_of.is_empty() && !item.is_file_chunk())
                    .map(|item| item.id.clone())
                    .collect();
                sources.sort();
                sources.truncate(1 + (rng.next_u64() % 2) as usize);
                let input = SummaryInput {
                    scope,
                    text: format!("a summary: {}", text(rng)),
                    sources,
                };
                engine.store_summary(input, env, txn).is_ok()
            }
            5 => {
                let scope = &scopes()[rng.next_u64() as usize % 4];
                let path = ["notes/a.md", "notes/b.md"][rng.next_u64() as usize % 2];
                let content = format!("# Notes\n\n{}\n\n## More\n\n{}\n", text(rng), text(rng));
                engine.sync_file(scope, path, &content, &EstimatedTokens, env, txn).is_ok()
            }
            _ => false,
        }
    }

    /// Purges `engine` by the index or by the scan, and says what went:
    /// the count and the ids erased.
    fn purge(engine: &mut Engine, scan: bool, now: Timestamp, txn: &mut Txn) -> (usize, Vec<String>) {
        let before: BTreeSet<String> = engine.items().map(|item| item.id.clone()).collect();
        let result = if scan {
            purge_by_scan(engine, now, txn)
        } else {
            engine.purge_expired(now, txn)
        };
        let after: BTreeSet<String> = engine.items().map(|item| item.id.clone()).collect();
        (result.unwrap().purged, before.difference(&after).cloned().collect())
    }

    /// Random ingests, updates, soft and hard deletes, summaries and files,
    /// each write purging first as a store with a policy does, some rolled
    /// back, explicit purges as the clock moves, reloads and refreshes,
    /// under random policies: the index purges the ids the scan purges,
    /// the stores end the same record for record, and the index always
    /// holds exactly the keys a walk over the memories finds.
    #[test]
    fn the_expiry_index_purges_what_the_scan_purges() {
        let mut purged = 0;
        for seed in 0..48u64 {
            let mut rng = Rng(seed);
            let config = Config {
                retention: retention(&mut rng),
                ..Config::default()
            };
            let start = Timestamp(1_700_000_000_000);
            let (mut fast, mut slow) = (Engine::new(config.clone()), Engine::new(config.clone()));
            let (mut fast_env, mut slow_env) = (FixedEnvironment::new(start), FixedEnvironment::new(start));
            let mut snapshot = records(&fast);
            for step in 0..60 {
                let at = format!("seed {seed} step {step}");
                let op = rng.next_u64();
                let now = fast_env.now();
                match op % 8 {
                    0 => {
                        let (mut a, mut b) = (Txn::default(), Txn::default());
                        let (fast_purged, slow_purged) = (purge(&mut fast, false, now, &mut a), purge(&mut slow, true, now, &mut b));
                        assert_eq!(fast_purged, slow_purged, "{at}");
                        purged += fast_purged.0;
                    }
                    1 => {
                        // A reload, or the changes since the last snapshot
                        // applied to an engine loaded from it.
                        let now_records = records(&fast);
                        let reloaded = if op.is_multiple_of(3) {
                            let mut engine = Engine::load(config.clone(), snapshot.clone().into_iter().collect(), None).unwrap();
                            // Built before the changes: `set` keeps it
                            // through a refresh.
                            build_index(&mut engine);
                            let mut changes: Vec<_> = now_records
                                .iter()
                                .filter(|(key, bytes)| snapshot.get(*key) != Some(*bytes))
                                .map(|(key, bytes)| (key.clone(), Some(Stored::Bytes(bytes.clone())), None))
                                .collect();
                            changes.extend(snapshot.keys().filter(|key| !now_records.contains_key(*key)).map(|key| (key.clone(), None, None)));
                            engine.apply_counted(changes, None).unwrap();
                            assert_eq!(expiry_kept(&engine), expiry_kept(&fast).or(Some(expiry_by_scan(&fast))), "{at}");
                            engine
                        } else {
                            let engine = Engine::load(config.clone(), now_records.clone().into_iter().collect(), None).unwrap();
                            assert!(engine.by_expiry.is_none(), "an open builds no index");
                            engine
                        };
                        fast = reloaded;
                        snapshot = now_records;
                    }
                    _ => {
                        // A write, its purge first as `Memory` does; now and
                        // then rolled back (a commit that failed).
                        let (mut a, mut b) = (Txn::default(), Txn::default());
                        let mut wrote = Vec::new();
                        for (engine, env, txn, scan, r) in [
                            (&mut fast, &mut fast_env, &mut a, false, Rng(op)),
                            (&mut slow, &mut slow_env, &mut b, true, Rng(op)),
                        ] {
                            let mut r = r;
                            let gone = purge(engine, scan, now, txn);
                            wrote.push((gone, write(engine, &mut r, env, txn)));
                        }
                        assert_eq!(wrote[0], wrote[1], "{at}");
                        purged += wrote[0].0 .0;
                        if op.is_multiple_of(5) {
                            fast.rollback(a);
                            slow.rollback(b);
                        }
                    }
                }
                assert_eq!(records(&fast), records(&slow), "{at}");
                if op % 8 != 1 {
                    assert!(fast.by_expiry.is_some(), "{at}: built by the purge");
                }
                if let Some(kept) = expiry_kept(&fast) {
                    assert_eq!(kept, expiry_by_scan(&fast), "{at}");
                }
                let hours = (rng.next_u64() % 30) as i64;
                fast_env.advance_ms(hours * HOUR);
                slow_env.advance_ms(hours * HOUR);
            }
        }
        assert!(purged > 200, "the cases expire memories: {purged}");
    }

    /// The index is built by the first purge; without a policy it holds a
    /// key only for the memories that set their own `retentionDays`.
    #[test]
    fn without_a_policy_only_memories_with_their_own_retention_are_indexed() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let scope = Scope::workspace("alice", "w");
        let mut own = MemoryInput::new("alice keeps this a day", scope.clone());
        own.privacy = Some(Privacy {
            retention_days: Some(1),
            ..Privacy::default()
        });
        let inputs = vec![MemoryInput::new("alice keeps this always", scope.clone()), own];
        engine.ingest(inputs, &mut env, &mut Txn::default()).unwrap();
        let file = "# Notes\n\nalice keeps a file\n";
        engine
            .sync_file(&scope, "notes.md", file, &EstimatedTokens, &mut env, &mut Txn::default())
            .unwrap();
        assert!(engine.by_expiry.is_none(), "no purge yet: no index");
        let result = engine.purge_expired(env.now(), &mut Txn::default()).unwrap();
        assert_eq!(result.purged, 0);
        assert_eq!(expiry_kept(&engine).map(|kept| kept.len()), Some(1));
        assert_eq!(expiry_kept(&engine), Some(expiry_by_scan(&engine)));
        env.advance_ms(24 * HOUR);
        let result = engine.purge_expired(env.now(), &mut Txn::default()).unwrap();
        assert_eq!(result.purged, 1);
        assert_eq!(expiry_kept(&engine), Some(BTreeSet::new()));
        assert_eq!(engine.len(), 2, "the lasting memory and the file's chunk");
    }
}
