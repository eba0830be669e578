//! memtide's WebAssembly matrix-product kernel (`crates/wasm-gemm`) against
//! tract's own `wasm_f32_8x8`, through tract's public kernel interface.
//!
//! Both kernels accumulate each output over `k` in the same order with
//! separate multiplies and adds, and apply the same element-wise operations,
//! so their results must be identical bit for bit, whatever the shape (edge
//! tiles included), the fused operations and the output layout. The kernel
//! only exists in WebAssembly with SIMD: these tests run in headless Chromium
//! (`scripts/test-browser.sh`).
#![cfg(all(target_arch = "wasm32", target_feature = "simd128"))]

use memtide_wasm_gemm::KERNEL_NAME;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::tract_linalg::mmm::{
    retain_best, AsInputValue, FusedSpec, MatMatMul, Query, RoundingPolicy,
};
use tract_onnx::tract_core::internal::tract_linalg::{BinOp, MmmDispatch};
use wasm_bindgen_test::wasm_bindgen_test;

use memtide_testkit::rng::Rng;

/// tract's kernel for `f32` products in WebAssembly.
const TRACT_KERNEL: &str = "wasm_f32_8x8";

fn kernel(name: &str) -> Box<dyn MatMatMul> {
    assert!(
        memtide_wasm_gemm::register(),
        "built for wasm32 with simd128"
    );
    MmmDispatch::native()
        .runnable()
        .iter()
        .find(|kernel| kernel.name() == name)
        .unwrap_or_else(|| panic!("{name} is not runnable"))
        .clone()
}

#[wasm_bindgen_test]
fn tract_picks_the_kernel_for_every_f32_product() {
    assert!(memtide_wasm_gemm::register());
    for n in [None, Some(1), Some(2), Some(17), Some(128)] {
        let query = Query::plain(DatumType::F32, Some(384), Some(384), n);
        let picked = MmmDispatch::native().pick(&query).expect("a kernel");
        assert_eq!(picked.0.name(), KERNEL_NAME, "n = {n:?}");
        // With a symbolic n tract chooses among the best suitable kernels.
        let mut suitable = MmmDispatch::native().suitable(&query);
        retain_best(&mut suitable);
        let names: Vec<&str> = suitable.iter().map(|s| s.0.name()).collect();
        assert_eq!(names, [KERNEL_NAME], "n = {n:?}");
    }
}

/// The operands of one product `c = a × b` and of the fused operations.
struct Case {
    m: usize,
    k: usize,
    n: usize,
    a: Tensor,
    b: Tensor,
    per_row: Tensor,
    per_column: Tensor,
    rows: Tensor,
    columns: Tensor,
    addend: Tensor,
    scalar: Tensor,
    alpha: Tensor,
}

impl Case {
    fn new(rng: &mut Rng, m: usize, k: usize, n: usize) -> Case {
        let mut matrix = |rows: usize, columns: usize| {
            let values: Vec<f32> = (0..rows * columns).map(|_| rng.signed()).collect();
            Tensor::from_shape(&[rows, columns], &values).expect("shape")
        };
        let (a, b, addend) = (matrix(m, k), matrix(k, n), matrix(m, n));
        let (per_row, rows) = (matrix(1, m).into_shape(&[m]), matrix(1, m).into_shape(&[m]));
        let (per_column, columns) = (matrix(1, n).into_shape(&[n]), matrix(1, n).into_shape(&[n]));
        Case {
            m,
            k,
            n,
            a,
            b,
            per_row: per_row.expect("rows"),
            per_column: per_column.expect("columns"),
            rows: rows.expect("rows"),
            columns: columns.expect("columns"),
            addend,
            scalar: tensor0(0.25f32),
            alpha: tensor0(0.1f32),
        }
    }

    /// Runs `program` (operations after the product) through `kernel`,
    /// storing row-major or column-major.
    fn run(&self, kernel: &dyn MatMatMul, program: &[Operation], column_major: bool) -> Vec<f32> {
        let (pack_a, pack_b) = &kernel.packings()[0];
        let a = pack_a.prepare_one(&self.a, 1, 0).expect("pack a");
        let b = pack_b.prepare_one(&self.b, 0, 1).expect("pack b");
        let mut c = Tensor::zero::<f32>(&[self.m * self.n]).expect("c");
        let (row_stride, column_stride) = if column_major {
            (1, self.m as isize)
        } else {
            (self.n as isize, 1)
        };
        // SAFETY of the calls below (tract's interface is unsafe): the store
        // covers `c`, m × n f32 at these strides, the addend store covers
        // `addend` (m × n, row-major), and the per-row and per-column
        // operands have m and n values.
        let store = unsafe { kernel.c_from_data_and_strides(4, row_stride, column_stride) };
        let addend = unsafe { kernel.c_from_data_and_strides(4, self.n as isize, 1) };
        let mut spec = vec![FusedSpec::AddMatMul {
            a: AsInputValue::Borrowed(&*a),
            b: AsInputValue::Borrowed(&*b),
            packing: 0,
        }];
        for operation in program {
            spec.push(match *operation {
                Operation::Scalar(op) => FusedSpec::BinScalar(&self.scalar, op),
                Operation::PerRow(op) => FusedSpec::BinPerRow(self.per_row.view(), op),
                Operation::PerColumn(op) => FusedSpec::BinPerCol(self.per_column.view(), op),
                Operation::RowColumnProducts => {
                    FusedSpec::AddRowColProducts(&self.rows, &self.columns)
                }
                Operation::AddUnicast => {
                    FusedSpec::AddUnicast(unsafe { addend.wrap(&self.addend.view()) })
                }
                Operation::LeakyRelu => FusedSpec::LeakyRelu(&self.alpha),
                Operation::QScale => FusedSpec::QScale(3, RoundingPolicy::Even, 1 << 30),
                Operation::ShiftLeft => FusedSpec::ShiftLeft(2),
                Operation::ShiftRight => FusedSpec::RoundingShiftRight(1, RoundingPolicy::Even),
            });
        }
        spec.push(FusedSpec::Store(unsafe { store.wrap(&c.view_mut()) }));
        unsafe { kernel.run(self.m, self.n, &spec) }.expect("run");
        c.try_as_plain_ram()
            .expect("plain")
            .as_slice::<f32>()
            .expect("f32")
            .to_vec()
    }

    /// `a × b`, row-major, summed over k in order like the kernels.
    fn product(&self) -> Vec<f32> {
        let a = self.a.try_as_plain_ram().unwrap();
        let a = a.as_slice::<f32>().unwrap();
        let b = self.b.try_as_plain_ram().unwrap();
        let b = b.as_slice::<f32>().unwrap();
        let mut c = vec![0f32; self.m * self.n];
        for row in 0..self.m {
            for column in 0..self.n {
                for step in 0..self.k {
                    c[row * self.n + column] += a[row * self.k + step] * b[step * self.n + column];
                }
            }
        }
        c
    }
}

/// An operation fused after the product.
#[derive(Debug, Clone, Copy)]
enum Operation {
    Scalar(BinOp),
    PerRow(BinOp),
    PerColumn(BinOp),
    RowColumnProducts,
    AddUnicast,
    LeakyRelu,
    QScale,
    ShiftLeft,
    ShiftRight,
}

const OPS: [BinOp; 6] = [
    BinOp::Min,
    BinOp::Max,
    BinOp::Add,
    BinOp::Mul,
    BinOp::Sub,
    BinOp::SubF,
];

/// Programs covering every operation a kernel receives.
fn programs() -> Vec<Vec<Operation>> {
    let mut programs = vec![Vec::new()];
    programs.push(OPS.iter().map(|&op| Operation::Scalar(op)).collect());
    programs.push(OPS.iter().map(|&op| Operation::PerRow(op)).collect());
    programs.push(OPS.iter().map(|&op| Operation::PerColumn(op)).collect());
    programs.push(vec![
        Operation::RowColumnProducts,
        Operation::AddUnicast,
        Operation::LeakyRelu,
        Operation::QScale,
        Operation::ShiftLeft,
        Operation::ShiftRight,
    ]);
    programs
}

#[wasm_bindgen_test]
fn products_and_fused_operations_equal_tracts_kernel_bit_for_bit() {
    let ours = kernel(KERNEL_NAME);
    let tracts = kernel(TRACT_KERNEL);
    let mut rng = Rng(0x6e6d_6d5f_6765_6d6d);
    let mut checked = 0;
    for m in [1, 3, 4, 5, 8, 13] {
        for n in [1, 7, 8, 9, 16, 23] {
            for k in [1, 2, 7, 64] {
                let case = Case::new(&mut rng, m, k, n);
                let plain = case.run(&*ours, &[], false);
                let expected = case.product();
                assert!(
                    plain
                        .iter()
                        .zip(&expected)
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{m}×{k}×{n}: {plain:?} against {expected:?}"
                );
                for program in programs() {
                    for column_major in [false, true] {
                        let found = case.run(&*ours, &program, column_major);
                        let reference = case.run(&*tracts, &program, column_major);
                        let same = found
                            .iter()
                            .zip(&reference)
                            .all(|(x, y)| x.to_bits() == y.to_bits());
                        assert!(
                            same,
                            "{m}×{k}×{n}, {program:?}, column-major {column_major}: {found:?} against {reference:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 6 * 6 * 4 * 5 * 2);
}
