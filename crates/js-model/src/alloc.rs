//! The model module's global allocator: talc instead of the standard
//! library's dlmalloc, the default on `wasm32-unknown-unknown`.
//!
//! Why: linear memory never shrinks, and an embedding batch allocates
//! large tensors whose freed space dlmalloc reuses less tightly, so the
//! instance kept growing past what the model needs; the time of a batch
//! is tract's kernels, not allocation. The core module keeps dlmalloc:
//! in the baseline code a cold open runs, its allocations are cheaper
//! there. Figures: `docs/speed.md`, "Heap per memory".
//!
//! Single-threaded wasm only (`TalcSyncCell` takes no lock): a build with
//! the `atomics` target feature keeps the default allocator.

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
