//! Vectors packed for tiles of dot products: the matrix products of int8
//! weights by `i16` activations.
//!
//! Each vector is padded with zeros to whole blocks of [`BLOCK_LEN`]
//! components and stored block by block in the layout the kernel loads:
//! with WebAssembly SIMD an `i8` block is one `v128` and an `i16` block two,
//! so the tile reads whole registers, without shuffles or bounds checks in
//! its loop; elsewhere plain arrays. Padding adds zero products, so sums are
//! unchanged.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use core::arch::wasm32::{
    i16x8, i16x8_extend_high_i8x16, i16x8_extend_low_i8x16, i32x4_add, i32x4_dot_i16x8,
    i32x4_splat, i8x16, v128,
};

/// Components per block.
pub const BLOCK_LEN: usize = 16;

/// Blocks an `i32` accumulator sums before it is widened to `i64`. With
/// SIMD a lane adds 4 products per block (2 per `i32x4.dot_i16x8_s`, one
/// for each half of the block), so 256 products of at most 2¹⁵ · 2⁷ = 2²²:
/// below 2³¹, whatever the values.
const WIDEN_BLOCKS: usize = 64;

/// Sixteen `i16` components.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
type WideBlock = [v128; 2];
/// Sixteen `i16` components.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
type WideBlock = [i16; BLOCK_LEN];

/// Sixteen `i8` components.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
type NarrowBlock = v128;
/// Sixteen `i8` components.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
type NarrowBlock = [i8; BLOCK_LEN];

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn wide_block(v: [i16; BLOCK_LEN]) -> WideBlock {
    [
        i16x8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]),
        i16x8(v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]),
    ]
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn wide_block(v: [i16; BLOCK_LEN]) -> WideBlock {
    v
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn narrow_block(v: [i8; BLOCK_LEN]) -> NarrowBlock {
    i8x16(
        v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13],
        v[14], v[15],
    )
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn narrow_block(v: [i8; BLOCK_LEN]) -> NarrowBlock {
    v
}

/// A component type and its packed block of [`BLOCK_LEN`] components.
pub trait Component: Copy + Default {
    /// The packed form of a block.
    type Block: Copy + std::fmt::Debug;

    /// Packs one block.
    fn block(values: [Self; BLOCK_LEN]) -> Self::Block;
}

impl Component for i16 {
    type Block = WideBlock;

    fn block(values: [i16; BLOCK_LEN]) -> WideBlock {
        wide_block(values)
    }
}

impl Component for i8 {
    type Block = NarrowBlock;

    fn block(values: [i8; BLOCK_LEN]) -> NarrowBlock {
        narrow_block(values)
    }
}

/// Vectors of one length, each packed into blocks.
#[derive(Debug, Clone)]
pub struct Vectors<T: Component> {
    blocks: usize,
    data: Vec<T::Block>,
}

/// One vector of a [`Vectors`].
#[derive(Debug, Clone, Copy)]
pub struct Vector<'a, T: Component>(&'a [T::Block]);

/// Vectors of `i16` components (the activations of a product).
pub type I16Vectors = Vectors<i16>;
/// Vectors of `i8` components (the weights of a product).
pub type I8Vectors = Vectors<i8>;

impl<T: Component> Vectors<T> {
    /// The vectors of `len` components laid one after the other in
    /// `values` (a trailing partial vector is dropped).
    pub fn new(values: &[T], len: usize) -> Vectors<T> {
        let count = values.len().checked_div(len).unwrap_or(0);
        Vectors::from_fn(count, len, |vector, component| {
            values[vector * len + component]
        })
    }

    /// `count` vectors of `len` components, component `i` of vector `v`
    /// being `value(v, i)`. Why: the weights of a product are the columns
    /// of a row-major matrix; packing them from it directly holds no
    /// column-major copy, and the blocks are one allocation of their exact
    /// size (collecting would grow it by doubling, leaving holes).
    pub fn from_fn(count: usize, len: usize, value: impl Fn(usize, usize) -> T) -> Vectors<T> {
        let blocks = len.div_ceil(BLOCK_LEN);
        let mut data = Vec::with_capacity(count * blocks);
        for vector in 0..count {
            for start in (0..len).step_by(BLOCK_LEN) {
                let padded = std::array::from_fn(|offset| {
                    let component = start + offset;
                    if component < len {
                        value(vector, component)
                    } else {
                        T::default()
                    }
                });
                data.push(T::block(padded));
            }
        }
        Vectors { blocks, data }
    }

    /// Vector `index`. Panics past the last.
    #[inline]
    pub fn get(&self, index: usize) -> Vector<'_, T> {
        Vector(&self.data[index * self.blocks..(index + 1) * self.blocks])
    }
}

/// Every `Σ a[r]_i · b[c]_i`, exact, as `sums[r][c]`: the dot products of
/// `R` `i16` vectors with `C` `i8` vectors, over the blocks of the
/// shortest. Per block, each vector is loaded once and used `C` (or `R`)
/// times; with SIMD, in `R · C` `i32x4` accumulators, which with
/// `R · C` ≤ 8 fit V8's 15 SIMD registers on x86-64 beside the loaded
/// blocks.
#[inline]
pub fn dot_tile<const R: usize, const C: usize>(
    a: [Vector<'_, i16>; R],
    b: [Vector<'_, i8>; C],
) -> [[i64; C]; R] {
    let blocks = a
        .iter()
        .map(|v| v.0.len())
        .chain(b.iter().map(|v| v.0.len()))
        .min()
        .unwrap_or(0);
    // Slices of exactly `blocks`, so the loops need no bounds checks.
    let a = a.map(|v| &v.0[..blocks]);
    let b = b.map(|v| &v.0[..blocks]);
    let mut sums = [[0i64; C]; R];
    for start in (0..blocks).step_by(WIDEN_BLOCKS) {
        let end = blocks.min(start + WIDEN_BLOCKS);
        let part = block_sums(&a, &b, start, end);
        for (row_sums, row_part) in sums.iter_mut().zip(part) {
            for (sum, value) in row_sums.iter_mut().zip(row_part) {
                *sum += value;
            }
        }
    }
    sums
}

/// The sums of blocks `start..end` (at most [`WIDEN_BLOCKS`]), in `i32`
/// lanes.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn block_sums<const R: usize, const C: usize>(
    a: &[&[WideBlock]; R],
    b: &[&[NarrowBlock]; C],
    start: usize,
    end: usize,
) -> [[i64; C]; R] {
    let mut lanes = [[i32x4_splat(0); C]; R];
    for k in start..end {
        let codes = b.map(|v| v[k]);
        let low = codes.map(|v| i16x8_extend_low_i8x16(v));
        let high = codes.map(|v| i16x8_extend_high_i8x16(v));
        for (row_lanes, v) in lanes.iter_mut().zip(a) {
            let [x_low, x_high] = v[k];
            for ((lane, &w_low), &w_high) in row_lanes.iter_mut().zip(&low).zip(&high) {
                *lane = i32x4_add(*lane, i32x4_dot_i16x8(x_low, w_low));
                *lane = i32x4_add(*lane, i32x4_dot_i16x8(x_high, w_high));
            }
        }
    }
    lanes.map(|row| row.map(crate::simd::lane_sum))
}

/// The sums of blocks `start..end` (at most [`WIDEN_BLOCKS`]), in `i32`
/// lanes (one product per lane per block).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn block_sums<const R: usize, const C: usize>(
    a: &[&[WideBlock]; R],
    b: &[&[NarrowBlock]; C],
    start: usize,
    end: usize,
) -> [[i64; C]; R] {
    a.map(|x| {
        b.map(|w| {
            let mut lanes = [0i32; BLOCK_LEN];
            for (x_block, w_block) in x[start..end].iter().zip(&w[start..end]) {
                for ((lane, &x), &w) in lanes.iter_mut().zip(x_block).zip(w_block) {
                    *lane += i32::from(x) * i32::from(w);
                }
            }
            lanes.iter().map(|&lane| i64::from(lane)).sum()
        })
    })
}
