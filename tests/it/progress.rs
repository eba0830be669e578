//! Progress and cancellation of the long operations (`memtide::progress`):
//! an observed ingest or import that is stopped leaves the store as before
//! the call; a stopped embedding backfill leaves whole batches of 256
//! embedded, which a reopen sees and the next attach completes; reports
//! never go back and end at the total; each text is embedded once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memtide::embed::Embedder;
use memtide::env::FixedEnvironment;
use memtide::progress::Progress;
use memtide::storage::KvStorage;
use memtide::{block_on, AsyncMemory, Error, MemoryInput, Scope, ScopeFilter, Timestamp};
use memtide_testkit::faults::MapKv;
use memtide_testkit::store::T0;

const DIMS: usize = 64;

/// A deterministic embedder (hashed words) that counts the texts it embeds.
pub(crate) struct CountingEmbedder {
    pub(crate) embedded: Arc<AtomicUsize>,
}

impl Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        "counting-test-model"
    }
    fn dimensions(&self) -> usize {
        DIMS
    }
    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        self.embedded.fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; DIMS];
                for word in t.split_whitespace() {
                    let mut h = word.bytes().fold(0x9e37_79b9u32, |h, b| {
                        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
                    });
                    for x in v.iter_mut() {
                        h = h.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                        *x += f32::from((h >> 16) as u16) / 32768.0 - 1.0;
                    }
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

/// Records the reports and stops at the `abort_at`-th checkpoint.
#[derive(Default)]
struct Recorder {
    reports: Vec<(usize, usize)>,
    checkpoints: usize,
    abort_at: Option<usize>,
}

impl Recorder {
    fn aborting_at(checkpoint: usize) -> Self {
        Recorder {
            abort_at: Some(checkpoint),
            ..Recorder::default()
        }
    }

    /// The reports never go back and the last one is `total` of `total`.
    fn assert_complete(&self, total: usize) {
        assert!(
            self.reports.windows(2).all(|w| w[0].0 <= w[1].0),
            "{:?}",
            self.reports
        );
        assert!(self.reports.iter().all(|&(_, t)| t == total));
        assert_eq!(self.reports.last(), Some(&(total, total)));
    }
}

impl Progress for Recorder {
    fn report(&mut self, done: usize, total: usize) {
        self.reports.push((done, total));
    }
    async fn checkpoint(&mut self) -> memtide::Result<()> {
        self.checkpoints += 1;
        if Some(self.checkpoints) == self.abort_at {
            return Err(Error::Aborted("stopped by the test".into()));
        }
        Ok(())
    }
}

type Store = AsyncMemory<KvStorage<MapKv>, FixedEnvironment>;

fn open(kv: &MapKv) -> Store {
    let storage = block_on(KvStorage::open(kv.clone())).unwrap().unwrap();
    let env = FixedEnvironment::new(Timestamp(T0));
    block_on(Store::open(storage, env, Default::default()))
        .unwrap()
        .unwrap()
}

/// [`open`] with a [`CountingEmbedder`] attached, and its count.
fn open_counting(kv: &MapKv) -> (Store, Arc<AtomicUsize>) {
    let mut store = open(kv);
    let counter = Arc::new(AtomicUsize::new(0));
    block_on(store.set_embedder(model(&counter)))
        .unwrap()
        .unwrap();
    (store, counter)
}

fn model(counter: &Arc<AtomicUsize>) -> Arc<dyn Embedder> {
    Arc::new(CountingEmbedder {
        embedded: counter.clone(),
    })
}

/// A word made of letters for `n`, distinct for each `n`.
fn word(mut n: usize) -> String {
    let mut w = String::from("q");
    loop {
        w.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            return w;
        }
    }
}

/// `n` inputs sharing no word, so none merges into another.
fn inputs(n: usize) -> Vec<MemoryInput> {
    (0..n)
        .map(|i| {
            let text = format!("{} {} {}", word(3 * i), word(3 * i + 1), word(3 * i + 2));
            MemoryInput::new(text, Scope::workspace("u", "w"))
        })
        .collect()
}

fn stats(store: &Store) -> memtide::Stats {
    store.stats(&ScopeFilter::default())
}

#[test]
fn a_stopped_backfill_keeps_whole_batches_and_the_next_attach_embeds_the_rest() {
    let kv = MapKv::default();
    let mut store = open(&kv);
    block_on(store.ingest(inputs(600))).unwrap().unwrap();
    let counter = Arc::new(AtomicUsize::new(0));

    // Stopped before the first batch: the store is as before.
    let mut first = Recorder::aborting_at(1);
    let error = block_on(store.set_embedder_observed(model(&counter), &mut first))
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "ABORTED");
    assert_eq!((stats(&open(&kv)).embedded, stats(&store).embedded), (0, 0));
    assert_eq!(stats(&open(&kv)).model, None);

    // Stopped before the third batch: two whole batches are stored.
    let mut third = Recorder::aborting_at(3);
    let error = block_on(store.set_embedder_observed(model(&counter), &mut third))
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "ABORTED");
    assert_eq!(third.reports, [(0, 600), (256, 600), (512, 600)]);
    let mut reopened = open(&kv);
    assert_eq!(stats(&reopened).embedded, 512);
    assert_eq!(stats(&store).embedded, 512);

    // Attaching the model again embeds only the rest.
    counter.store(0, Ordering::Relaxed);
    let mut rest = Recorder::default();
    let embedded = block_on(reopened.set_embedder_observed(model(&counter), &mut rest))
        .unwrap()
        .unwrap();
    assert_eq!((embedded, counter.load(Ordering::Relaxed)), (88, 88));
    rest.assert_complete(88);
    assert_eq!(stats(&open(&kv)).embedded, 600);
}

#[test]
fn a_stopped_ingest_leaves_the_store_as_before_and_a_whole_one_embeds_each_text_once() {
    let kv = MapKv::default();
    let (mut store, counter) = open_counting(&kv);
    block_on(store.ingest(inputs(10))).unwrap().unwrap();
    let before = store.export();

    let mut stopped = Recorder::aborting_at(3);
    let more = inputs(210).split_off(10);
    let error = block_on(store.ingest_observed(more.clone(), &mut stopped))
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "ABORTED");
    assert_eq!(stopped.reports, [(0, 200), (64, 200), (128, 200)]);
    assert_eq!(stats(&store).items, 10);
    assert_eq!(open(&kv).export(), before);

    counter.store(0, Ordering::Relaxed);
    let mut whole = Recorder::default();
    let results = block_on(store.ingest_observed(more, &mut whole))
        .unwrap()
        .unwrap();
    assert_eq!(results.len(), 200);
    whole.assert_complete(200);
    assert_eq!(whole.reports.len(), 5);
    assert_eq!(
        counter.load(Ordering::Relaxed),
        200,
        "each text is embedded once"
    );
    let reopened = stats(&open(&kv));
    assert_eq!((reopened.items, reopened.embedded), (210, 210));
}

#[test]
fn a_stopped_import_leaves_the_store_as_before() {
    let source_kv = MapKv::default();
    let mut source = open(&source_kv);
    block_on(source.ingest(inputs(150))).unwrap().unwrap();
    let export = source.export();

    let kv = MapKv::default();
    let (mut store, _) = open_counting(&kv);
    let mut stopped = Recorder::aborting_at(2);
    let error = block_on(store.import_observed(&export, &mut stopped))
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "ABORTED");
    assert_eq!((stats(&store).items, stats(&open(&kv)).items), (0, 0));

    let mut whole = Recorder::default();
    let result = block_on(store.import_observed(&export, &mut whole))
        .unwrap()
        .unwrap();
    assert_eq!(result.added, 150);
    whole.assert_complete(150);
    let reopened = stats(&open(&kv));
    assert_eq!((reopened.items, reopened.embedded), (150, 150));
}

#[test]
fn an_unobserved_progress_changes_nothing_of_the_operations() {
    let kv = MapKv::default();
    let mut store = open(&kv);
    let results = block_on(store.ingest_observed(inputs(3), &mut memtide::progress::Unobserved))
        .unwrap()
        .unwrap();
    assert_eq!(results.len(), 3);
    let mut empty = Recorder::default();
    block_on(store.ingest_observed(Vec::new(), &mut empty))
        .unwrap()
        .unwrap();
    assert_eq!(empty.reports, [(0, 0)]);
}

/// An observed ingest checks every input before it embeds any: a refused
/// field or a text over the size limit is the error, at its place, with
/// nothing embedded and nothing stored; a batch over the limit is refused
/// whole by the ingest, with nothing embedded either.
#[test]
fn an_observed_ingest_refuses_a_bad_input_before_embedding_any() {
    let kv = MapKv::default();
    let (mut store, counter) = open_counting(&kv);
    let mut bad_field = inputs(5);
    bad_field[3].scope = Scope::workspace("", "w");
    let mut too_long = inputs(5);
    too_long[2].text = "word ".repeat(store.config().limits.max_text_bytes / 5 + 1);
    for (batch, place, code) in [
        (bad_field, "inputs[3]", "INVALID_INPUT"),
        (too_long, "inputs[2]", "TOO_LARGE"),
    ] {
        let error = block_on(store.ingest_observed(batch, &mut Recorder::default()))
            .unwrap()
            .unwrap_err();
        assert_eq!(error.code(), code, "{error}");
        assert!(error.to_string().contains(place), "{error}");
        assert_eq!(counter.load(Ordering::Relaxed), 0);
    }
    let over = inputs(store.config().limits.max_batch + 1);
    let error = block_on(store.ingest_observed(over, &mut Recorder::default()))
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "TOO_LARGE", "{error}");
    assert_eq!(stats(&store).items, 0);
    // The same inputs, all good, are embedded once each.
    let results = block_on(store.ingest_observed(inputs(5), &mut Recorder::default()))
        .unwrap()
        .unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(counter.load(Ordering::Relaxed), 5);
}
