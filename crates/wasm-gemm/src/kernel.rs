//! The 4×8 kernel and its registry entries.

use std::arch::wasm32::*;
use std::sync::LazyLock;

use tract_data::prelude::DatumType;
use tract_linalg::isa::{Arch, Isa, IsaReq, IsaSet};
use tract_linalg::mmm::{DynKernel, FusedKerSpec, OutputStoreKer, Query, Suitable};
use tract_linalg::mmm_routines::MmmRoutine;
use tract_linalg::mmm_tiers::MmmTier;
use tract_linalg::pack::Packing;
use tract_linalg::Scaler;

use super::KERNEL_NAME;

/// Rows of the output tile: the left operand is packed in panels of 4.
const ROWS: usize = 4;
/// Columns of the output tile: the right operand is packed in panels of 8,
/// two `v128` per row of the tile.
const COLUMNS: usize = 8;

static KERNEL: LazyLock<DynKernel<ROWS, COLUMNS, f32>> = LazyLock::new(|| {
    let mut kernel = DynKernel::<ROWS, COLUMNS, f32>::new(
        KERNEL_NAME,
        run,
        f32::packing(ROWS),
        f32::packing(COLUMNS),
    )
    .with_isa(IsaReq::ANY.needing(&[Isa::Wasm32Simd128]))
    // Above tract's own kernels (boost 0): the one kept when tract picks
    // among suitable kernels for a symbolic column count.
    .with_boost(|| 1);
    kernel.arch = Some(Arch::Wasm32Simd128);
    kernel
});

inventory::submit! {
    MmmRoutine { make: || KERNEL.mmm() }
}

inventory::submit! {
    MmmTier {
        arch: Some(Arch::Wasm32Simd128),
        // tract's own wasm tier has precedence 1.
        precedence: 2,
        name: "memtide-wasm-gemm",
        applies: |_| true,
        preferred,
    }
}

/// The tier's choice: this kernel for every `f32` product.
fn preferred(
    _isa: &IsaSet,
    accumulator: DatumType,
    _query: &Query,
    _suitable: &[Suitable],
) -> Option<&'static str> {
    (accumulator == DatumType::F32).then_some(KERNEL_NAME)
}

/// Referenced by [`crate::register`] so that the linker keeps this module.
pub fn link() {
    std::hint::black_box(run as unsafe fn(&[FusedKerSpec<f32>]) -> isize);
}

/// Applies `$op` to every accumulator: `$acc = $op($acc)`.
macro_rules! each {
    ($c:ident, $op:expr) => {{
        let op = $op;
        for row in $c.iter_mut() {
            row[0] = op(row[0]);
            row[1] = op(row[1]);
        }
    }};
}

/// Runs tract's fused-operation program on one 4×8 tile.
///
/// # Safety
///
/// tract's kernel contract: every pointer in `spec` is valid for the tile
/// (`AddMatMul`'s panels hold `k` steps of 4 and 8 values, per-row operands 4
/// values, per-column operands 8, tiles 4×8 at their strides).
unsafe fn run(spec: &[FusedKerSpec<f32>]) -> isize {
    let zero = f32x4_splat(0.0);
    // c[row] = [columns 0–3, columns 4–7]
    let mut c = [[zero; 2]; ROWS];
    for operation in spec {
        match *operation {
            FusedKerSpec::Done => break,
            FusedKerSpec::Clear => c = [[zero; 2]; ROWS],
            FusedKerSpec::LoadTile(_column_major, row_major) => {
                let tile = row_major as *const v128;
                for (row, halves) in c.iter_mut().enumerate() {
                    *halves = [
                        v128_load(tile.add(2 * row)),
                        v128_load(tile.add(2 * row + 1)),
                    ];
                }
            }
            FusedKerSpec::ScalarMin(s) => each!(c, |x| f32x4_min(f32x4_splat(s), x)),
            FusedKerSpec::ScalarMax(s) => each!(c, |x| f32x4_max(f32x4_splat(s), x)),
            FusedKerSpec::ScalarAdd(s) => each!(c, |x| f32x4_add(f32x4_splat(s), x)),
            FusedKerSpec::ScalarMul(s) => each!(c, |x| f32x4_mul(f32x4_splat(s), x)),
            FusedKerSpec::ScalarSub(s) => each!(c, |x| f32x4_sub(f32x4_splat(s), x)),
            FusedKerSpec::ScalarSubF(s) => each!(c, |x| f32x4_sub(x, f32x4_splat(s))),
            FusedKerSpec::LeakyRelu(alpha) => {
                let alpha = f32x4_splat(alpha);
                each!(c, |x| v128_bitselect(
                    x,
                    f32x4_mul(alpha, x),
                    f32x4_gt(x, zero)
                ))
            }
            FusedKerSpec::PerRowMin(v) => per_row(&mut c, v, |s, x| f32x4_min(s, x)),
            FusedKerSpec::PerRowMax(v) => per_row(&mut c, v, |s, x| f32x4_max(s, x)),
            FusedKerSpec::PerRowAdd(v) => per_row(&mut c, v, |s, x| f32x4_add(s, x)),
            FusedKerSpec::PerRowMul(v) => per_row(&mut c, v, |s, x| f32x4_mul(s, x)),
            FusedKerSpec::PerRowSub(v) => per_row(&mut c, v, |s, x| f32x4_sub(s, x)),
            FusedKerSpec::PerRowSubF(v) => per_row(&mut c, v, |s, x| f32x4_sub(x, s)),
            FusedKerSpec::PerColMin(v) => per_column(&mut c, v, |s, x| f32x4_min(s, x)),
            FusedKerSpec::PerColMax(v) => per_column(&mut c, v, |s, x| f32x4_max(s, x)),
            FusedKerSpec::PerColAdd(v) => per_column(&mut c, v, |s, x| f32x4_add(s, x)),
            FusedKerSpec::PerColMul(v) => per_column(&mut c, v, |s, x| f32x4_mul(s, x)),
            FusedKerSpec::PerColSub(v) => per_column(&mut c, v, |s, x| f32x4_sub(s, x)),
            FusedKerSpec::PerColSubF(v) => per_column(&mut c, v, |s, x| f32x4_sub(x, s)),
            FusedKerSpec::QScale(shift, policy, multiplier) => {
                let scale = Scaler::from_fuse_params(shift, policy, multiplier).scale;
                each!(c, |x| f32x4_mul(f32x4_splat(scale), x))
            }
            FusedKerSpec::RoundingShiftRight(shift, _) => {
                let scale = 2f32.powi(-(shift as i32));
                each!(c, |x| f32x4_mul(f32x4_splat(scale), x))
            }
            FusedKerSpec::ShiftLeft(shift) => {
                let scale = 2f32.powi(shift as i32);
                each!(c, |x| f32x4_mul(f32x4_splat(scale), x))
            }
            FusedKerSpec::AddUnicast(tile) => {
                for (row, halves) in c.iter_mut().enumerate() {
                    let [low, high] = load_row(&tile, row);
                    *halves = [f32x4_add(halves[0], low), f32x4_add(halves[1], high)];
                }
            }
            FusedKerSpec::AddRowColProducts(rows, columns) => {
                let columns = columns as *const v128;
                let (low, high) = (v128_load(columns), v128_load(columns.add(1)));
                for (row, halves) in c.iter_mut().enumerate() {
                    let s = f32x4_splat(*rows.add(row));
                    halves[0] = f32x4_add(halves[0], f32x4_mul(s, low));
                    halves[1] = f32x4_add(halves[1], f32x4_mul(s, high));
                }
            }
            FusedKerSpec::Store(tile) => {
                for (row, halves) in c.iter().enumerate() {
                    store_row(&tile, row, *halves);
                }
            }
            FusedKerSpec::AddMatMul { k, pa, pb, .. } => {
                add_mat_mul(&mut c, k, pa as *const v128, pb as *const v128)
            }
        }
    }
    0
}

/// The product's inner loop: per step, one `v128` of the left panel (the
/// tile's 4 rows, broadcast lane by lane with shuffles) and two of the right
/// (its 8 columns). Written out so that the 8 accumulators stay registers.
#[inline(always)]
unsafe fn add_mat_mul(c: &mut [[v128; 2]; ROWS], k: usize, left: *const v128, right: *const v128) {
    let [[mut c0l, mut c0h], [mut c1l, mut c1h], [mut c2l, mut c2h], [mut c3l, mut c3h]] = *c;
    for step in 0..k {
        let rows = v128_load(left.add(step));
        let low = v128_load(right.add(2 * step));
        let high = v128_load(right.add(2 * step + 1));
        let s = i32x4_shuffle::<0, 0, 0, 0>(rows, rows);
        c0l = f32x4_add(c0l, f32x4_mul(s, low));
        c0h = f32x4_add(c0h, f32x4_mul(s, high));
        let s = i32x4_shuffle::<1, 1, 1, 1>(rows, rows);
        c1l = f32x4_add(c1l, f32x4_mul(s, low));
        c1h = f32x4_add(c1h, f32x4_mul(s, high));
        let s = i32x4_shuffle::<2, 2, 2, 2>(rows, rows);
        c2l = f32x4_add(c2l, f32x4_mul(s, low));
        c2h = f32x4_add(c2h, f32x4_mul(s, high));
        let s = i32x4_shuffle::<3, 3, 3, 3>(rows, rows);
        c3l = f32x4_add(c3l, f32x4_mul(s, low));
        c3h = f32x4_add(c3h, f32x4_mul(s, high));
    }
    *c = [[c0l, c0h], [c1l, c1h], [c2l, c2h], [c3l, c3h]];
}

/// `x = op(splat(values[row]), x)` for each row's accumulators.
#[inline(always)]
unsafe fn per_row(c: &mut [[v128; 2]; ROWS], values: *const f32, op: impl Fn(v128, v128) -> v128) {
    for (row, halves) in c.iter_mut().enumerate() {
        let s = f32x4_splat(*values.add(row));
        *halves = [op(s, halves[0]), op(s, halves[1])];
    }
}

/// `x = op(values[columns of x], x)` for every accumulator.
#[inline(always)]
unsafe fn per_column(
    c: &mut [[v128; 2]; ROWS],
    values: *const f32,
    op: impl Fn(v128, v128) -> v128,
) {
    let values = values as *const v128;
    let (low, high) = (v128_load(values), v128_load(values.add(1)));
    for halves in c.iter_mut() {
        *halves = [op(low, halves[0]), op(high, halves[1])];
    }
}

/// The 8 values of `row` of a strided tile.
#[inline(always)]
unsafe fn load_row(tile: &OutputStoreKer, row: usize) -> [v128; 2] {
    let start = (tile.ptr as *const u8).offset(tile.row_byte_stride * row as isize);
    let at = |column: isize| *(start.offset(tile.col_byte_stride * column) as *const f32);
    [
        f32x4(at(0), at(1), at(2), at(3)),
        f32x4(at(4), at(5), at(6), at(7)),
    ]
}

/// Writes `row` of a strided tile.
#[inline(always)]
unsafe fn store_row(tile: &OutputStoreKer, row: usize, [low, high]: [v128; 2]) {
    let start = tile.ptr.offset(tile.row_byte_stride * row as isize);
    let at = |column: isize| start.offset(tile.col_byte_stride * column) as *mut f32;
    *at(0) = f32x4_extract_lane::<0>(low);
    *at(1) = f32x4_extract_lane::<1>(low);
    *at(2) = f32x4_extract_lane::<2>(low);
    *at(3) = f32x4_extract_lane::<3>(low);
    *at(4) = f32x4_extract_lane::<0>(high);
    *at(5) = f32x4_extract_lane::<1>(high);
    *at(6) = f32x4_extract_lane::<2>(high);
    *at(7) = f32x4_extract_lane::<3>(high);
}
