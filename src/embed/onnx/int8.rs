//! Matrix products on the model's int8 weights, without dequantizing them.
//!
//! The int8 export stores every weight matrix `W` (`[depth, columns]`) as
//! int8 codes `q` with one float scale per column, and multiplies by
//! `Mul(Cast<float>(q), scale)`. tract folds that into an `f32` matrix and
//! packs it: 43 MB of weights, walked once per tile of 8 tokens, for a
//! 23 MB model. [`super::rewrites::fuse`] rewrites each such `MatMul` into one
//! `Int8MatMul` node that keeps the codes (10.6 MB in all, column by
//! column in the kernel's layout) and computes
//!
//! ```text
//! y[r][c] = (Σ_i x16[r][i] · q[i][c]) · x_scale[r] · scale[c]
//! ```
//!
//! where `x16[r]` is row `r` of the activations quantized to `i16` with its
//! own scale (`x_scale[r] = max |x[r]| / 32767`, so a row's rounding does
//! not depend on the other rows: batching cannot change a result). The sum
//! is an exact integer ([`memtide_int_dot::dot_tile`]): in WebAssembly,
//! `i32x4.dot_i16x8_s` does eight multiply-adds per instruction where `f32`
//! SIMD does four in two. The weights are exact, so the only rounding
//! beyond `f32`'s is the activations' to 16 bits: each component is off by
//! at most `x_scale / 2`, a relative 1.5 · 10⁻⁵ of the row's largest
//! magnitude.

use std::sync::Arc;

use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::{NodeProto, TensorProto};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_ndarray::{ArrayD, IxDyn};

use memtide_int_dot::{dot_tile, I16Vectors, I8Vectors};

use super::initializers::Parsed;

/// Operator type of the fused nodes in the rewritten graph. The operator
/// check of [`super::PrunedOnnx`] refuses it in a model file.
pub const OPERATOR: &str = "memtide.Int8MatMul";

/// Largest magnitude of a quantized activation.
const ACTIVATION_MAX: f32 = 32767.0;
/// Activation rows per tile of the kernel.
const TILE_ROWS: usize = 4;
/// Weight columns per tile of the kernel (`TILE_ROWS · TILE_COLUMNS`
/// accumulators, see [`dot_tile`]).
const TILE_COLUMNS: usize = 2;
/// Rows and columns per block: a block's weight columns (64 × depth bytes)
/// stay in cache while every row tile of the block passes over them.
const BLOCK: usize = 64;

/// An int8 weight matrix with one scale per column, stored column by
/// column in the kernel's layout.
#[derive(Debug, Clone)]
pub struct Int8Weights {
    depth: usize,
    columns: usize,
    codes: I8Vectors,
    scales: Vec<f32>,
}

impl Int8Weights {
    /// The weights `q` (`[depth, columns]`, row-major, each byte an `i8`
    /// code: an ONNX int8 initializer's raw bytes) with `scale` (`f32`,
    /// `[1, columns]` or `[columns]`), packed straight from `codes`.
    pub fn new(
        codes: &[u8],
        [depth, columns]: [usize; 2],
        scale: &Tensor,
    ) -> TractResult<Int8Weights> {
        ensure!(
            depth.checked_mul(columns) == Some(codes.len()),
            "int8 weights of {} bytes for a {depth}×{columns} matrix",
            codes.len()
        );
        ensure!(
            scale.len() == columns && scale.shape().iter().rev().skip(1).all(|&d| d == 1),
            "scale of shape {:?} for {columns} columns",
            scale.shape()
        );
        Ok(Int8Weights {
            depth,
            columns,
            codes: I8Vectors::from_fn(columns, depth, |column, row| {
                codes[row * columns + column] as i8
            }),
            scales: scale.try_as_plain_ram()?.as_slice::<f32>()?.to_vec(),
        })
    }

    /// `x · W` for activation rows `x` (`[rows, depth]`, row-major), as
    /// `[rows, columns]`. A row with a non-finite value gives a row of NaN.
    pub fn multiply(&self, x: &[f32]) -> Vec<f32> {
        let (activations, row_scales) = quantize_rows(x, self.depth);
        let rows = row_scales.len();
        let mut out = vec![0.0f32; rows * self.columns];
        for row_block in (0..rows).step_by(BLOCK) {
            let row_end = rows.min(row_block + BLOCK);
            for column_block in (0..self.columns).step_by(BLOCK) {
                let column_end = self.columns.min(column_block + BLOCK);
                for row in (row_block..row_end).step_by(TILE_ROWS) {
                    for column in (column_block..column_end).step_by(TILE_COLUMNS) {
                        let tile = Tile {
                            row,
                            column,
                            rows: TILE_ROWS.min(row_end - row),
                            columns: TILE_COLUMNS.min(column_end - column),
                        };
                        let sums = tile.sums(&activations, &self.codes);
                        tile.store(&sums, &row_scales, &self.scales, &mut out);
                    }
                }
            }
        }
        out
    }
}

/// A tile of the product: up to [`TILE_ROWS`] rows from `row` and
/// [`TILE_COLUMNS`] columns from `column`.
struct Tile {
    row: usize,
    column: usize,
    rows: usize,
    columns: usize,
}

/// The sums of a tile.
type TileSums = [[i64; TILE_COLUMNS]; TILE_ROWS];

impl Tile {
    /// The exact sums of the tile, in a full-size array (entries past
    /// `rows` / `columns` are zero).
    fn sums(&self, activations: &I16Vectors, weights: &I8Vectors) -> TileSums {
        let rows = |i| activations.get(self.row + i);
        let columns = |j| weights.get(self.column + j);
        if self.rows == TILE_ROWS && self.columns == TILE_COLUMNS {
            return dot_tile(std::array::from_fn(rows), std::array::from_fn(columns));
        }
        let mut sums = [[0i64; TILE_COLUMNS]; TILE_ROWS];
        macro_rules! run {
            ($rows:literal, $columns:literal) => {{
                let part = dot_tile::<$rows, $columns>(
                    std::array::from_fn(rows),
                    std::array::from_fn(columns),
                );
                for (into, from) in sums.iter_mut().zip(part) {
                    into[..$columns].copy_from_slice(&from);
                }
            }};
        }
        match (self.rows, self.columns) {
            (4, _) => run!(4, 1),
            (3, 2) => run!(3, 2),
            (3, _) => run!(3, 1),
            (2, 2) => run!(2, 2),
            (2, _) => run!(2, 1),
            (_, 2) => run!(1, 2),
            _ => run!(1, 1),
        }
        sums
    }

    /// Writes the tile's outputs, `sum · row scale · column scale`, into
    /// `out` (`[rows, column_scales.len()]`).
    fn store(&self, sums: &TileSums, row_scales: &[f32], column_scales: &[f32], out: &mut [f32]) {
        let width = column_scales.len();
        let column_scales = &column_scales[self.column..self.column + self.columns];
        for (i, row_sums) in sums.iter().enumerate().take(self.rows) {
            let row = self.row + i;
            let out_row = &mut out[row * width + self.column..][..self.columns];
            for ((value, &sum), &column_scale) in
                out_row.iter_mut().zip(row_sums).zip(column_scales)
            {
                *value = sum as f32 * (row_scales[row] * column_scale);
            }
        }
    }
}

/// Each row of `x` (`depth` values) as `i16` codes, packed, and its
/// scale: codes `x / scale` rounded to the nearest, with `scale` = max |x| /
/// 32767 (0 for a zero row, NaN for a row with a non-finite value, whose
/// codes are zero). The codes are packed as they are computed: an unpacked
/// copy would be as large as the packed one, at the batch's high-water
/// mark.
fn quantize_rows(x: &[f32], depth: usize) -> (I16Vectors, Vec<f32>) {
    // Per row, its scale and the factor to its codes (0: all codes zero).
    let (scales, to_codes): (Vec<f32>, Vec<f32>) = x
        .chunks_exact(depth.max(1))
        .map(|row| {
            if row.iter().any(|v| !v.is_finite()) {
                return (f32::NAN, 0.0);
            }
            // A comparison, not `f32::max`: that one handles NaN (there is
            // none here) and compiles to a call in WebAssembly.
            let max_abs = row
                .iter()
                .map(|v| v.abs())
                .fold(0.0f32, |max, v| if v > max { v } else { max });
            if max_abs == 0.0 {
                (0.0, 0.0)
            } else {
                (max_abs / ACTIVATION_MAX, ACTIVATION_MAX / max_abs)
            }
        })
        .unzip();
    let codes = I16Vectors::from_fn(to_codes.len(), depth, |row, component| {
        let to_code = to_codes[row];
        if to_code == 0.0 {
            return 0;
        }
        // In [-32767, 32767], so the cast never saturates. Ties to even is
        // one WebAssembly instruction (`f32.nearest`).
        (x[row * depth + component] * to_code).round_ties_even() as i16
    });
    (codes, scales)
}

/// The typed op: `x · W` on the last axis of an `f32` input of any rank.
#[derive(Debug, Clone)]
struct Int8MatMul {
    weights: Arc<Int8Weights>,
}

/// Two ops are equal when they hold the same weights object: comparing
/// 600 KB of codes would buy nothing, as every weight matrix of a model is
/// its own.
impl PartialEq for Int8MatMul {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.weights, &other.weights)
    }
}

impl Eq for Int8MatMul {}

impl Op for Int8MatMul {
    fn name(&self) -> StaticName {
        OPERATOR.into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "int8 weights {}×{}",
            self.weights.depth, self.weights.columns
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for Int8MatMul {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let mut shape = input.shape().to_vec();
        ensure!(
            shape.last() == Some(&self.weights.depth),
            "{OPERATOR} of an input of shape {shape:?} by {}×{} weights",
            self.weights.depth,
            self.weights.columns
        );
        let out = self
            .weights
            .multiply(input.try_as_plain_ram()?.as_slice::<f32>()?);
        if let Some(last) = shape.last_mut() {
            *last = self.weights.columns;
        }
        Ok(tvec!(ArrayD::from_shape_vec(IxDyn(&shape), out)?
            .into_tensor()
            .into_tvalue()))
    }
}

impl TypedOp for Int8MatMul {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let input = inputs[0];
        ensure!(
            input.datum_type == f32::datum_type(),
            "{OPERATOR} of {input:?}"
        );
        let mut shape = input.shape.to_tvec();
        match shape.last_mut() {
            Some(last) if *last == self.weights.depth.to_dim() => {
                *last = self.weights.columns.to_dim()
            }
            _ => bail!("{OPERATOR} of {input:?} by {} rows", self.weights.depth),
        }
        Ok(tvec!(f32::fact(shape)))
    }

    as_op!();
}

/// The inference-time node: input `x`; its weights, named by the node's
/// attributes, are given by [`load_weights`] before the model is typed,
/// and it is wired as an [`Int8MatMul`] holding them.
#[derive(Debug, Clone)]
struct Int8MatMulNode {
    /// The initializers of the int8 codes and of the scales.
    quantized: String,
    scale: String,
    weights: Option<Arc<Int8Weights>>,
}

impl Int8MatMulNode {
    fn weights(&self) -> TractResult<&Arc<Int8Weights>> {
        self.weights
            .as_ref()
            .with_context(|| format!("{OPERATOR} of `{}` was given no weights", self.quantized))
    }
}

impl Expansion for Int8MatMulNode {
    fn name(&self) -> StaticName {
        OPERATOR.into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        let columns = self.weights()?.columns;
        s.equals(&inputs[0].datum_type, f32::datum_type())?;
        s.equals(&outputs[0].datum_type, f32::datum_type())?;
        s.equals(&outputs[0].rank, &inputs[0].rank)?;
        s.given(&inputs[0].rank, move |s, rank| {
            let last = usize::try_from(rank)?
                .checked_sub(1)
                .context("a matrix product of a scalar")?;
            for axis in 0..last {
                s.equals(&outputs[0].shape[axis], &inputs[0].shape[axis])?;
            }
            s.equals(&outputs[0].shape[last], columns.to_dim())
        })
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let op = Int8MatMul {
            weights: self.weights()?.clone(),
        };
        model.wire_node(prefix, op, inputs)
    }
}

/// Attribute of an [`OPERATOR`] node naming the initializer of its int8
/// codes (`[depth, columns]`).
pub const WEIGHTS_ATTRIBUTE: &str = "weights";
/// Attribute of an [`OPERATOR`] node naming the initializer of its scales
/// (one per column).
pub const SCALE_ATTRIBUTE: &str = "scale";

pub fn build(
    _ctx: &tract_onnx::model::ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let named = |attribute: &str| {
        node.attribute
            .iter()
            .find(|a| a.name == attribute)
            .map(|a| String::from_utf8_lossy(&a.s).into_owned())
            .with_context(|| format!("{OPERATOR} node `{}` has no `{attribute}`", node.name))
    };
    let op = Int8MatMulNode {
        quantized: named(WEIGHTS_ATTRIBUTE)?,
        scale: named(SCALE_ATTRIBUTE)?,
        weights: None,
    };
    Ok((expand(op), vec![]))
}

/// Gives every [`OPERATOR`] node of `parsed` its weights, packed from the
/// initializers its attributes name. Each node's codes are freed once
/// packed (unless a node of the graph reads them too), so the codes and
/// the packed weights are not all held at once, as they would be if tract
/// made constants of the codes for [`Int8MatMulNode::wire`] to pack.
pub fn load_weights(parsed: &mut Parsed) -> TractResult<()> {
    let fused: Vec<(usize, String, String)> = parsed
        .model()
        .nodes
        .iter()
        .filter_map(|node| {
            // `**`: the boxed expansion's own type, not the box's.
            let op = node.op_as::<Box<dyn Expansion>>()?;
            let op = (**op).as_any().downcast_ref::<Int8MatMulNode>()?;
            Some((node.id, op.quantized.clone(), op.scale.clone()))
        })
        .collect();
    for (index, (id, quantized, scale)) in fused.iter().enumerate() {
        let codes = parsed.initializer(quantized)?;
        let weights = matrix_shape(codes)
            .and_then(|shape| Int8Weights::new(&codes.raw_data, shape, &parsed.tensor(scale)?))
            .with_context(|| format!("{OPERATOR} of `{quantized}`"))?;
        let op = parsed
            .model_mut()
            .node_mut(*id)
            .op_as_mut::<Box<dyn Expansion>>()
            .and_then(|op| (**op).as_any_mut().downcast_mut::<Int8MatMulNode>())
            .context("a fused node changed")?;
        op.weights = Some(Arc::new(weights));
        if fused[index + 1..]
            .iter()
            .all(|(_, later, _)| later != quantized)
        {
            parsed.free_unread(quantized);
        }
    }
    Ok(())
}

/// `[depth, columns]` of an int8 initializer stored as raw bytes, the form
/// [`super::rewrites::fuse`] fuses.
fn matrix_shape(codes: &TensorProto) -> TractResult<[usize; 2]> {
    let &[depth, columns] = codes.dims.as_slice() else {
        bail!("int8 weights of shape {:?}, expected a matrix", codes.dims);
    };
    ensure!(
        codes.data_type == DataType::Int8 as i32,
        "weights of ONNX type {}, expected int8",
        codes.data_type
    );
    Ok([usize::try_from(depth)?, usize::try_from(columns)?])
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use memtide_testkit::rng::Rng;

    /// Seeded test values in (-1, 1] and int8 codes.
    pub(in crate::embed::onnx) struct Values(pub(in crate::embed::onnx) Rng);

    impl Values {
        pub(in crate::embed::onnx) fn next(&mut self) -> f32 {
            self.0.signed()
        }

        fn codes(&mut self, len: usize) -> Vec<i8> {
            (0..len).map(|_| self.0.next_u64() as i8).collect()
        }
    }

    /// Seeded int8 weights `[depth, columns]` with their `[1, columns]` scales.
    pub(in crate::embed::onnx) fn weights(
        depth: usize,
        columns: usize,
        values: &mut Values,
    ) -> (Tensor, Tensor) {
        let codes = values.codes(depth * columns);
        let scales: Vec<f32> = (0..columns).map(|_| values.next().abs() / 50.0).collect();
        (
            Tensor::from_shape(&[depth, columns], &codes).unwrap(),
            Tensor::from_shape(&[1, columns], &scales).unwrap(),
        )
    }

    /// The weights `q` (`[depth, columns]`) with `scale`, packed.
    fn packed(q: &Tensor, scale: &Tensor) -> Int8Weights {
        let &[depth, columns] = q.shape() else {
            panic!("weights of shape {:?}", q.shape());
        };
        Int8Weights::new(q.as_bytes(), [depth, columns], scale).unwrap()
    }

    /// `x · (q · scale)` in `f64`, and the bound on the error of the
    /// quantized product: each activation is off by at most half its row's
    /// step, plus `f32` rounding of the result.
    fn reference(x: &[f32], depth: usize, q: &[i8], scale: &[f32]) -> Vec<(f64, f64)> {
        let columns = scale.len();
        x.chunks(depth)
            .flat_map(|row| {
                let step = row.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64 / 32767.0;
                (0..columns).map(move |c| {
                    let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
                    for (i, &v) in row.iter().enumerate() {
                        let w = f64::from(q[i * columns + c]) * f64::from(scale[c]);
                        sum += f64::from(v) * w;
                        magnitude += w.abs();
                    }
                    (sum, magnitude * step / 2.0 + sum.abs() * 1e-6 + 1e-30)
                })
            })
            .collect()
    }

    #[test]
    fn products_stay_within_the_activation_rounding_bound() {
        let mut values = Values(Rng(7));
        // Depths across the kernel's groups of 8 and its 1024-component
        // blocks; row and column counts across tiles and 64-wide blocks.
        for (rows, depth, columns) in [
            (1, 1, 1),
            (3, 7, 5),
            (4, 8, 2),
            (5, 17, 3),
            (16, 384, 130),
            (67, 33, 66),
            (2, 1100, 9),
            (9, 2051, 4),
        ] {
            let (q, scale) = weights(depth, columns, &mut values);
            let weights = packed(&q, &scale);
            assert_eq!((weights.depth, weights.columns), (depth, columns));
            // Rows of very different magnitudes: each has its own scale.
            let x: Vec<f32> = (0..rows * depth)
                .map(|i| values.next() * [1.0, 1e-3, 40.0][(i / depth) % 3])
                .collect();
            let got = weights.multiply(&x);
            let q = q.try_as_plain_ram().unwrap();
            let scale = scale.try_as_plain_ram().unwrap();
            let want = reference(&x, depth, q.as_slice().unwrap(), scale.as_slice().unwrap());
            assert_eq!(got.len(), want.len());
            for (index, (&got, &(want, bound))) in got.iter().zip(&want).enumerate() {
                let error = (f64::from(got) - want).abs();
                assert!(
                    error <= bound,
                    "{rows}×{depth}×{columns} [{index}]: {got} against {want}, error {error:e} > {bound:e}"
                );
            }
        }
    }

    #[test]
    fn each_row_is_computed_alone_and_non_finite_rows_do_not_spread() {
        let mut values = Values(Rng(3));
        let (depth, columns) = (40, 11);
        let (q, scale) = weights(depth, columns, &mut values);
        let weights = packed(&q, &scale);
        let mut x: Vec<f32> = (0..7 * depth).map(|_| values.next()).collect();
        x[2 * depth..3 * depth].fill(0.0);
        x[4 * depth + 5] = f32::INFINITY;
        x[5 * depth + 1] = f32::NAN;
        let together = weights.multiply(&x);
        for (row, input) in x.chunks(depth).enumerate() {
            let alone = weights.multiply(input);
            let batched = &together[row * columns..(row + 1) * columns];
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(batched), bits(&alone), "row {row}");
            match row {
                2 => assert!(alone.iter().all(|&v| v == 0.0)),
                4 | 5 => assert!(alone.iter().all(|v| v.is_nan())),
                _ => assert!(alone.iter().all(|v| v.is_finite() && *v != 0.0)),
            }
        }
    }

    #[test]
    fn weights_must_be_a_matrix_with_one_scale_per_column() {
        let q = [1u8, 2, 3, 4, 5, 6];
        for scale in [
            Tensor::from_shape(&[1, 2], &[1.0f32, 2.0]).unwrap(),
            Tensor::from_shape(&[3, 1], &[1.0f32, 2.0, 3.0]).unwrap(),
        ] {
            assert!(Int8Weights::new(&q, [2, 3], &scale).is_err(), "{scale:?}");
        }
        let scale = Tensor::from_shape(&[3], &[1.0f32, 2.0, 3.0]).unwrap();
        assert!(Int8Weights::new(&q[..5], [2, 3], &scale).is_err());
        assert!(Int8Weights::new(&q, [usize::MAX, 3], &scale).is_err());
        let weights = Int8Weights::new(&q, [2, 3], &scale).unwrap();
        assert_eq!(
            weights.multiply(&[1.0, -1.0]),
            [-3.0 * 1.0, -3.0 * 2.0, -3.0 * 3.0]
        );
        // Codes are two's complement bytes.
        let weights = Int8Weights::new(
            &[0xff, 0x80],
            [1, 2],
            &Tensor::from(1.0f32)
                .broadcast_scalar_to_shape(&[2])
                .unwrap(),
        )
        .unwrap();
        assert_eq!(weights.multiply(&[1.0]), [-1.0, -128.0]);
    }

    /// The packing before weights were packed from the initializer's
    /// bytes: `q` copied column by column, then packed as vectors.
    fn packed_by_column(q: &[i8], depth: usize, columns: usize) -> I8Vectors {
        let mut by_column = vec![0i8; q.len()];
        for (i, row) in q.chunks_exact(columns.max(1)).enumerate() {
            for (c, &code) in row.iter().enumerate() {
                by_column[c * depth + i] = code;
            }
        }
        I8Vectors::new(&by_column, depth)
    }

    #[test]
    fn packing_from_the_bytes_is_the_column_by_column_packing() {
        let mut values = Values(Rng(13));
        // Depths across the blocks of 16 components, partial blocks
        // included; the model's shapes.
        for (depth, columns) in [
            (1, 1),
            (3, 5),
            (16, 2),
            (17, 3),
            (40, 11),
            (384, 384),
            (384, 1536),
            (1536, 384),
        ] {
            let (q, scale) = weights(depth, columns, &mut values);
            let codes = q.try_as_plain_ram().unwrap();
            let codes = codes.as_slice::<i8>().unwrap();
            let new = packed(&q, &scale);
            let old = packed_by_column(codes, depth, columns);
            assert_eq!(
                format!("{:?}", new.codes),
                format!("{:?}", old),
                "{depth}×{columns}"
            );
        }
    }

    #[test]
    fn only_int8_matrices_are_weights() {
        let codes = |dims: &[i64], data_type: DataType| TensorProto {
            dims: dims.to_vec(),
            data_type: data_type as i32,
            ..TensorProto::default()
        };
        assert_eq!(
            matrix_shape(&codes(&[4, 3], DataType::Int8)).unwrap(),
            [4, 3]
        );
        for (dims, data_type) in [
            (&[12][..], DataType::Int8),
            (&[1, 4, 3], DataType::Int8),
            (&[4, 3], DataType::Uint8),
            (&[-4, 3], DataType::Int8),
        ] {
            assert!(
                matrix_shape(&codes(dims, data_type)).is_err(),
                "{dims:?} {data_type:?}"
            );
        }
    }
}
