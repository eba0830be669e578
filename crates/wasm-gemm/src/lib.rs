//! A WebAssembly SIMD kernel for tract's `f32` matrix products, tuned for V8.
//!
//! tract 0.23.9 runs every `f32` product of MiniLM in WebAssembly through its
//! `wasm_f32_8x8` kernel: an 8×8 tile held in 16 `v128` accumulators, plus
//! two vectors of the right operand and a broadcast of the left one per step.
//! V8 allocates at most 16 SIMD registers on x86-64 (one of them is its
//! scratch register), so that loop spills. The kernel here computes a 4×8
//! tile: 8 accumulators, and every operand of a step still in a register.
//! `docs/speed.md` ("The matrix-product kernel") has what it gains.
//!
//! The kernel joins tract's registries the way tract's own kernels do: an
//! `MmmRoutine` makes it runnable on `wasm32` with `simd128`, an `MmmTier`
//! of higher precedence than tract's names it for products whose column count
//! is known, and its boost makes it the best of the suitable kernels when the
//! column count is symbolic (MiniLM's plan, whose rows are
//! `batch × sequence`). Every `f32` product of the process uses it.
//!
//! On any other target the crate is empty and [`register`] returns `false`.
//! This crate holds memtide's only `unsafe` code: tract's kernel interface
//! passes raw pointers to packed panels and output tiles.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod kernel;

/// The kernel's name in tract's registry (what
/// `tract_linalg::MmmDispatch::native().pick(..)` reports).
pub const KERNEL_NAME: &str = "memtide_wasm_f32_4x8";

/// Makes sure the kernel is linked, and with it its registry entries: the
/// WebAssembly linker drops an object nothing references, static
/// constructors included. Call it before tract plans a model. Returns
/// whether this build has the kernel (`wasm32` with `simd128`).
pub fn register() -> bool {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        kernel::link();
        true
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        false
    }
}
