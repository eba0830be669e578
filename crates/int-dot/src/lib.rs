//! Exact integer dot products: the kernels of the vector index's int8 rows
//! and of the embedder's int8 matrix products.
//!
//! Every function returns the exact integer sum, whatever the inputs: the
//! loops accumulate in independent `i32` lanes over blocks short enough that
//! no lane can overflow, and widen to `i64` between blocks. On WebAssembly
//! with SIMD the components are widened to `i16` eight at a time and
//! multiplied pairwise into `i32` lanes (`i32x4.dot_i16x8_s`); elsewhere
//! portable loops LLVM vectorizes. Both give the same integers, so results
//! do not depend on the build.
//!
//! A crate of its own so that it is optimized in test builds too (the
//! embedding tests spend most of their time here), and tested in both
//! builds by memtide's `tests/portable/int_dot.rs`.
#![forbid(unsafe_code)]

mod packed;

pub use packed::{dot_tile, Component, I16Vectors, I8Vectors, Vector, Vectors, BLOCK_LEN};

/// Accumulators of the portable dot-product loops.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
const LANES: usize = 16;
/// Components after which the `i32` accumulators are widened to `i64`.
const BLOCK: usize = 4096;

/// `Σ a_i · b_i` of an `i16` and an `i8` vector, exact. With WebAssembly
/// SIMD, 128-bit multiply-adds ([`simd::dot`]); elsewhere the portable loop.
#[inline]
pub fn dot_i16_i8(a: &[i16], b: &[i8]) -> i64 {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd::dot(a, b);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable_dot_i16_i8(a, b)
}

/// `Σ a_i · b_i` of two `i8` vectors, exact, as [`dot_i16_i8`] computes
/// it (SIMD or portable).
#[inline]
pub fn dot_i8_i8(a: &[i8], b: &[i8]) -> i64 {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd::dot(a, b);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable_dot_i8_i8(a, b)
}

/// `Σ a_i · b_i` of an `i16` and an `i8` vector, exact: [`LANES`]
/// independent `i32` accumulators (see [`portable_dot`]).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn portable_dot_i16_i8(a: &[i16], b: &[i8]) -> i64 {
    portable_dot::<_, _, LANES>(a, b, |x, y| i32::from(x) * i32::from(y))
}

/// `Σ a_i · b_i` of two `i8` vectors, exact. The products fit in `i16`, which
/// lets LLVM use 16-bit multiplies; [`LANES`] · 2 accumulators.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn portable_dot_i8_i8(a: &[i8], b: &[i8]) -> i64 {
    portable_dot::<_, _, { 2 * LANES }>(a, b, |x, y| i32::from(i16::from(x) * i16::from(y)))
}

/// `Σ product(a_i, b_i)` in `W` independent `i32` accumulators (so LLVM
/// vectorizes the loop), widened to `i64` every [`BLOCK`] components so no
/// length can overflow them; the components past the last full chunk of a
/// block are summed in `i64`.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline]
fn portable_dot<A, B, const W: usize>(a: &[A], b: &[B], product: impl Fn(A, B) -> i32) -> i64
where
    A: Copy + Into<i64>,
    B: Copy + Into<i64>,
{
    let mut total = 0i64;
    for (a_block, b_block) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
        let (a_chunks, a_rest) = a_block.as_chunks::<W>();
        let (b_chunks, b_rest) = b_block.as_chunks::<W>();
        let mut lanes = [0i32; W];
        for (a_chunk, b_chunk) in a_chunks.iter().zip(b_chunks) {
            for ((lane, &x), &y) in lanes.iter_mut().zip(a_chunk).zip(b_chunk) {
                *lane += product(x, y);
            }
        }
        let rest: i64 = a_rest
            .iter()
            .zip(b_rest)
            .map(|(&x, &y)| x.into() * y.into())
            .sum();
        total += lanes.iter().map(|&lane| i64::from(lane)).sum::<i64>() + rest;
    }
    total
}

/// The dot products with WebAssembly's 128-bit SIMD: components are
/// widened to `i16` eight at a time and multiplied pairwise into `i32`
/// lanes (`i32x4.dot_i16x8_s`). Integer sums are exact, so the results are
/// bit-identical to the portable loops.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    use core::arch::wasm32::{
        i16x8_extend_low_i8x16, i32x4_add, i32x4_dot_i16x8, i32x4_extract_lane, i32x4_splat, u64x2,
        v128,
    };

    use super::BLOCK;

    /// Components per lane group: eight.
    const GROUP: usize = 8;
    /// Independent accumulators, each fed one group per step.
    const ACCUMULATORS: usize = 4;
    /// Components per loop step.
    const STEP: usize = GROUP * ACCUMULATORS;

    /// A component type loadable as eight `i16` lanes.
    pub(super) trait Widen: Copy + Into<i64> {
        /// Eight components as `i16` lanes.
        fn load(group: &[Self; GROUP]) -> v128;
    }

    // The loads go through integers (`from_le_bytes`), which LLVM turns
    // into plain vector loads without `unsafe`.
    // `#[inline]`: without it the callers in other crates (the vector index)
    // call a function per eight components.
    impl Widen for i16 {
        #[inline]
        fn load(group: &[i16; GROUP]) -> v128 {
            let mut bytes = [0u8; 2 * GROUP];
            for (pair, lane) in bytes.chunks_exact_mut(2).zip(group) {
                pair.copy_from_slice(&lane.to_le_bytes());
            }
            let word = u128::from_le_bytes(bytes);
            u64x2(word as u64, (word >> 64) as u64)
        }
    }

    impl Widen for i8 {
        #[inline]
        fn load(group: &[i8; GROUP]) -> v128 {
            let word = u64::from_le_bytes(group.map(|code| code as u8));
            i16x8_extend_low_i8x16(u64x2(word, 0))
        }
    }

    /// `Σ a_i · b_i`, exact. An `i32` lane adds 2 products per step and
    /// [`BLOCK`] / [`STEP`] = 128 steps before it is widened to `i64`: 256
    /// products of at most 2¹⁵ · 2⁷ = 2²², below 2³¹.
    pub(super) fn dot<A: Widen, B: Widen>(a: &[A], b: &[B]) -> i64 {
        let mut total = 0i64;
        for (a_block, b_block) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
            let (a_steps, a_rest) = a_block.as_chunks::<STEP>();
            let (b_steps, b_rest) = b_block.as_chunks::<STEP>();
            let mut lanes = [i32x4_splat(0); ACCUMULATORS];
            for (a_step, b_step) in a_steps.iter().zip(b_steps) {
                let (a_groups, _) = a_step.as_chunks::<GROUP>();
                let (b_groups, _) = b_step.as_chunks::<GROUP>();
                for ((lane, a_group), b_group) in lanes.iter_mut().zip(a_groups).zip(b_groups) {
                    let products = i32x4_dot_i16x8(A::load(a_group), B::load(b_group));
                    *lane = i32x4_add(*lane, products);
                }
            }
            total += lanes.into_iter().map(lane_sum).sum::<i64>();
            total += a_rest
                .iter()
                .zip(b_rest)
                .map(|(&x, &y)| x.into() * y.into())
                .sum::<i64>();
        }
        total
    }

    /// The sum of an accumulator's four `i32` lanes.
    #[inline]
    pub(crate) fn lane_sum(lanes: v128) -> i64 {
        i64::from(i32x4_extract_lane::<0>(lanes))
            + i64::from(i32x4_extract_lane::<1>(lanes))
            + i64::from(i32x4_extract_lane::<2>(lanes))
            + i64::from(i32x4_extract_lane::<3>(lanes))
    }
}
