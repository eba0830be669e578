//! The fault-injecting backends, one per fault family, and the fault
//! statistics.

use super::*;

/// What one property's run did (each test runs on its own thread).
#[derive(Default)]
pub(super) struct Counts {
    pub(super) sequences: Cell<usize>,
    pub(super) operations: Cell<usize>,
    pub(super) faults: Cell<usize>,
    /// Operations that succeeded despite their fault (it struck after the
    /// commit point, or a retry got past it).
    pub(super) survived: Cell<usize>,
}

thread_local! {
    pub(super) static COUNTS: Counts = Counts::default();
}

pub(super) fn count_fault() {
    COUNTS.with(|c| c.faults.set(c.faults.get() + 1));
}

/// Disarms `trigger`, counting the fault if it fired.
pub(super) fn disarm(trigger: &Trigger) -> bool {
    let fired = trigger.disarm();
    if fired {
        count_fault();
    }
    fired
}

/// A backend family the driver can run and reopen.
pub(super) trait Faulty {
    type Store: AsyncStorage;
    /// True when a failed operation may still have completed (a journal
    /// rolled forward on reopen).
    const MAY_COMPLETE: bool;
    /// True when an armed fault means the operation runs on a view opened
    /// while the fault is active.
    const STALE_VIEW: bool = false;
    /// The error codes an injected fault may surface as.
    const FAULT_CODES: &'static [&'static str];
    /// A store over the shared durable state.
    fn store(&self) -> Self::Store;
    /// Arms a fault for the next operation.
    fn arm(&self, variant: u8, at: u8);
    /// Disarms; true when the fault fired.
    fn disarm(&self) -> bool;
    /// Every durable byte (keys and values).
    fn durable_bytes(&self) -> Vec<u8>;
}

pub(super) fn bytes_of<'a>(pairs: impl Iterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    pairs
        .flat_map(|(k, v)| k.bytes().chain(v.iter().copied()))
        .collect()
}

/// Commits to a shared in-memory store, checking the expectation.
pub(super) fn commit_to(
    state: &RefCell<MemoryStorage>,
    batch: &Batch,
    expect: Option<Expect<'_>>,
) -> Result<(), StorageError> {
    block_on(AsyncStorage::commit(
        &mut *state.borrow_mut(),
        batch,
        expect,
    ))
}

/// Atomic storage whose armed call fails with an I/O or a quota error.
#[derive(Clone, Default)]
pub(super) struct Flaky {
    pub(super) state: Rc<RefCell<MemoryStorage>>,
    pub(super) trigger: Rc<Trigger>,
    pub(super) quota: Rc<Cell<bool>>,
}

impl Flaky {
    pub(super) fn fault(&self) -> Result<(), StorageError> {
        if !self.trigger.strikes() {
            Ok(())
        } else if self.quota.get() {
            Err(StorageError::QuotaExceeded("injected".into()))
        } else {
            Err(StorageError::Io(std::io::Error::other("injected")))
        }
    }
}

impl AsyncStorage for Flaky {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.fault()?;
        Storage::get(&*self.state.borrow(), key)
    }
    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.fault()?;
        Storage::scan(&*self.state.borrow(), prefix)
    }
    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        self.fault()?;
        commit_to(&self.state, batch, expect)
    }
}

impl Faulty for Flaky {
    type Store = Flaky;
    const MAY_COMPLETE: bool = false;
    const FAULT_CODES: &'static [&'static str] = &["STORAGE", "QUOTA_EXCEEDED"];
    fn store(&self) -> Flaky {
        self.clone()
    }
    fn arm(&self, variant: u8, at: u8) {
        self.quota.set(variant == 1);
        self.trigger.arm(usize::from(at % 4));
    }
    fn disarm(&self) -> bool {
        disarm(&self.trigger)
    }
    fn durable_bytes(&self) -> Vec<u8> {
        bytes_of(self.state.borrow().entries())
    }
}

/// A key-value store without atomic batches whose process dies at the armed
/// single-key write (the earlier writes stay applied).
pub(super) type Crashing = MapKv;

impl Faulty for Crashing {
    type Store = KvStorage<Crashing>;
    const MAY_COMPLETE: bool = true;
    const FAULT_CODES: &'static [&'static str] = &["STORAGE"];
    fn store(&self) -> KvStorage<Crashing> {
        block_on(KvStorage::open(self.clone())).expect("opening the journaled store")
    }
    fn arm(&self, _variant: u8, at: u8) {
        self.trigger().arm(usize::from(at) * 2);
    }
    fn disarm(&self) -> bool {
        disarm(self.trigger())
    }
    fn durable_bytes(&self) -> Vec<u8> {
        bytes_of(self.map().iter().map(|(k, v)| (k.as_str(), v.as_slice())))
    }
}

/// Reads that lag: while armed, they see the state of `lag` commits ago;
/// commits are compare-and-set on the real state.
#[derive(Clone, Default)]
pub(super) struct Lagging {
    pub(super) history: Rc<RefCell<Vec<MemoryStorage>>>,
    pub(super) state: Rc<RefCell<MemoryStorage>>,
    /// Stale reads left to serve, and how many commits behind.
    pub(super) stale: Rc<Cell<(u8, usize)>>,
    pub(super) served_stale: Rc<Cell<bool>>,
}

impl Lagging {
    pub(super) fn read<T>(&self, read: impl Fn(&MemoryStorage) -> T) -> T {
        let (left, lag) = self.stale.get();
        let history = self.history.borrow();
        if left > 0 && lag > 0 && history.len() > lag {
            self.stale.set((left - 1, lag));
            self.served_stale.set(true);
            read(&history[history.len() - 1 - lag])
        } else {
            read(&self.state.borrow())
        }
    }
}

impl AsyncStorage for Lagging {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.read(|s| Storage::get(s, key))
    }
    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.read(|s| Storage::scan(s, prefix))
    }
    async fn snapshot(&self, prefixes: &[&str], key: &str) -> Result<Snapshot, StorageError> {
        // One consistent (possibly old) state, as a store with snapshot reads gives.
        self.read(|s| {
            let scans = prefixes
                .iter()
                .map(|p| Storage::scan(s, p))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((scans, Storage::get(s, key)?))
        })
    }
    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        commit_to(&self.state, batch, expect)?;
        let committed = self.state.borrow().clone();
        self.history.borrow_mut().push(committed);
        Ok(())
    }
}

impl Faulty for Lagging {
    type Store = Lagging;
    const MAY_COMPLETE: bool = false;
    const STALE_VIEW: bool = true;
    // A view that never catches up within the retries reports the conflict.
    const FAULT_CODES: &'static [&'static str] = &["STORAGE"];
    fn store(&self) -> Lagging {
        self.clone()
    }
    fn arm(&self, variant: u8, at: u8) {
        self.stale.set((at * 3 + 1, usize::from(variant) + 1));
        self.served_stale.set(false);
    }
    fn disarm(&self) -> bool {
        self.stale.set((0, 0));
        let served = self.served_stale.replace(false);
        if served {
            count_fault();
        }
        served
    }
    fn durable_bytes(&self) -> Vec<u8> {
        bytes_of(self.state.borrow().entries())
    }
}
