//! The builders of [`super::OPERATORS`], and memtide's own implementations
//! of the operators whose tract-onnx builders are private: the axes of
//! Squeeze and Unsqueeze, Shape with a range, the attribute form of Slice
//! and LayerNormalization, each as an expansion into public tract-core ops.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core::ops::array::{Slice, StridedSlice};
use tract_onnx::tract_core::ops::cast::cast;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::math::{add, div, mul, rsqrt, square, sub};
use tract_onnx::tract_core::ops::nn::{Reduce, Reducer};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::array;
use tract_onnx::tract_hir::ops::nn::{LayerSoftmax, Softmax};

/// The builders' result: one op, no closure inputs.
type Built = TractResult<(Box<dyn InferenceOp>, Vec<String>)>;

/// `Cast(to)`. ONNX carries shapes as int64 tensors; tract computes them as
/// `TDim` so that symbolic dimensions (`batch`, `sequence`) survive a cast to
/// int64, which therefore becomes a cast to `TDim`. Strings are not parsed.
pub(super) fn cast_op(_: &ParsingContext, node: &NodeProto) -> Built {
    let to: DatumType = node.get_attr("to")?;
    let to = if to == DatumType::I64 {
        DatumType::TDim
    } else {
        to
    };
    Ok((Box::new(cast(to)), vec![]))
}

/// `Concat(axis)`; the axis may be negative.
pub(super) fn concat(_: &ParsingContext, node: &NodeProto) -> Built {
    let axis: i64 = node.get_attr("axis")?;
    Ok((expand(array::Concat::new(axis)), vec![]))
}

/// `Gather(axis = 0)`.
pub(super) fn gather(_: &ParsingContext, node: &NodeProto) -> Built {
    let axis: i64 = node.get_attr_opt("axis")?.unwrap_or(0);
    Ok((expand(array::Gather::new(axis)), vec![]))
}

/// `GatherND(batch_dims = 0)`.
pub(super) fn gather_nd(_: &ParsingContext, node: &NodeProto) -> Built {
    let batch_dims: usize = node.get_attr_opt("batch_dims")?.unwrap_or(0);
    Ok((Box::new(array::GatherNd::new(batch_dims)), vec![]))
}

/// `Reshape(allowzero = 0)`: with `allowzero` (opset 14 on) a 0 in the new
/// shape is a zero-length axis rather than "copy the input's".
pub(super) fn reshape(_: &ParsingContext, node: &NodeProto) -> Built {
    let allowzero = node.get_attr_opt::<i64>("allowzero")?.unwrap_or(0) != 0;
    Ok((expand(array::Reshape::new(allowzero)), vec![]))
}

/// `Transpose(perm)`; no `perm` reverses the axes.
pub(super) fn transpose(_: &ParsingContext, node: &NodeProto) -> Built {
    let perm: Option<Vec<usize>> = node.get_attr_opt_vec("perm")?;
    Ok((
        expand(array::PermuteAxes::new(perm.map(TVec::from))),
        vec![],
    ))
}

/// `Softmax(axis)`. Up to opset 12 the input is seen as a matrix, the axes
/// before `axis` (default 1) as rows and the rest as columns, each row
/// normalized as a whole; from opset 13 it normalizes along `axis` alone
/// (default -1).
pub(super) fn softmax(context: &ParsingContext, node: &NodeProto) -> Built {
    let axis: Option<isize> = node.get_attr_opt("axis")?;
    if context.onnx_operator_set_version < 13 {
        Ok((expand(LayerSoftmax::new(axis.unwrap_or(1), true)), vec![]))
    } else {
        Ok((expand(Softmax::new(axis.unwrap_or(-1))), vec![]))
    }
}

/// The input axis `axis` (negative counts from the end) of a tensor of
/// `rank` axes, or an error naming `op` when there is no such axis.
fn resolve_axis(op: &str, axis: i64, rank: usize) -> TractResult<usize> {
    let rank = rank as i64;
    let resolved = if axis < 0 { axis + rank } else { axis };
    if (0..rank).contains(&resolved) {
        Ok(resolved as usize)
    } else {
        bail!("{op}: axis {axis} is out of range for rank {rank}")
    }
}

/// The values of an axes tensor (an int64 input of Squeeze, Unsqueeze).
fn axes_of(tensor: &Tensor) -> TractResult<Vec<i64>> {
    let axes = tensor.cast_to::<i64>()?;
    Ok(axes.try_as_plain_ram()?.as_slice::<i64>()?.to_vec())
}

/// The axes of `node`'s `inputs[1]` once it is known to be a constant.
fn constant_axes(op: &str, model: &TypedModel, inputs: &[OutletId]) -> TractResult<Vec<i64>> {
    let outlet = inputs
        .get(1)
        .ok_or_else(|| format_err!("{op}: no axes input"))?;
    match model.outlet_fact(*outlet)?.konst.as_ref() {
        Some(axes) => axes_of(axes),
        None => bail!("{op}: the axes must be a constant"),
    }
}

/// Where the axes of a Squeeze or Unsqueeze come from: an attribute up to
/// opset 12, the optional second input from opset 13.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
enum AxesFrom {
    /// The `axes` attribute.
    Attribute(Vec<i64>),
    /// The second input, which must be a constant.
    Input,
    /// Neither: Squeeze removes every axis of length 1.
    Absent,
}

impl AxesFrom {
    /// The axes source of `node` at the model's opset.
    fn of(context: &ParsingContext, node: &NodeProto) -> TractResult<AxesFrom> {
        if context.onnx_operator_set_version < 13 {
            Ok(match node.get_attr_opt_vec::<i64>("axes")? {
                Some(axes) => AxesFrom::Attribute(axes),
                None => AxesFrom::Absent,
            })
        } else if node.input.get(1).is_some_and(|name| !name.is_empty()) {
            Ok(AxesFrom::Input)
        } else {
            Ok(AxesFrom::Absent)
        }
    }

    /// How many inputs the node takes.
    fn arity(&self) -> usize {
        1 + usize::from(*self == AxesFrom::Input)
    }
}

/// `Squeeze`: removes axes of length 1, the given ones (negative counting
/// from the end of the input) or, with none given, all of them.
pub(super) fn squeeze(context: &ParsingContext, node: &NodeProto) -> Built {
    let axes = AxesFrom::of(context, node)?;
    Ok((
        expand(UnitAxes {
            squeeze: true,
            axes,
        }),
        vec![],
    ))
}

/// `Unsqueeze`: inserts axes of length 1 at the given positions of the
/// output (negative counting from the end of the output).
pub(super) fn unsqueeze(context: &ParsingContext, node: &NodeProto) -> Built {
    let axes = AxesFrom::of(context, node)?;
    if axes == AxesFrom::Absent {
        bail!("Unsqueeze `{}` has no axes", node.name);
    }
    Ok((
        expand(UnitAxes {
            squeeze: false,
            axes,
        }),
        vec![],
    ))
}

/// The Squeeze of [`squeeze`] or the Unsqueeze of [`unsqueeze`].
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct UnitAxes {
    /// Squeeze (remove axes) rather than Unsqueeze (insert them).
    squeeze: bool,
    axes: AxesFrom,
}

impl UnitAxes {
    /// The operator's ONNX name, for errors.
    fn op(&self) -> &'static str {
        if self.squeeze {
            "Squeeze"
        } else {
            "Unsqueeze"
        }
    }

    /// The axes removed or inserted, as tract's axis changes in the order to
    /// apply them, for an input of `shape` and the given `axes` (`None`: the
    /// Squeeze of every axis of length 1).
    fn changes(&self, shape: &[TDim], axes: Option<&[i64]>) -> TractResult<Vec<AxisOp>> {
        let op = self.op();
        let mut changed = match axes {
            None if self.squeeze => (0..shape.len()).filter(|&a| shape[a].is_one()).collect(),
            None => bail!("{op} has no axes"),
            Some(axes) => {
                let rank = if self.squeeze {
                    shape.len()
                } else {
                    shape.len() + axes.len()
                };
                let resolved = axes
                    .iter()
                    .map(|&axis| resolve_axis(op, axis, rank))
                    .collect::<TractResult<Vec<usize>>>()?;
                if let Some(&axis) = resolved
                    .iter()
                    .find(|&&a| self.squeeze && !shape[a].is_one())
                {
                    bail!("{op}: axis {axis} has length {}, not 1", shape[axis]);
                }
                resolved
            }
        };
        changed.sort_unstable();
        if changed.windows(2).any(|pair| pair[0] == pair[1]) {
            bail!("{op}: repeated axis in {axes:?}");
        }
        // Removed from the last so that the positions of the others hold;
        // inserted from the first, at their positions in the output.
        Ok(if self.squeeze {
            changed.into_iter().rev().map(AxisOp::Rm).collect()
        } else {
            changed.into_iter().map(AxisOp::Add).collect()
        })
    }

    /// The output shape for an input of `shape`.
    fn output_shape(&self, shape: &[TDim], axes: Option<&[i64]>) -> TractResult<TVec<TDim>> {
        let mut output: TVec<TDim> = shape.iter().cloned().collect();
        for change in self.changes(shape, axes)? {
            match change {
                AxisOp::Rm(axis) => {
                    output.remove(axis);
                }
                AxisOp::Add(axis) => output.insert(axis, TDim::from(1)),
                _ => {}
            }
        }
        Ok(output)
    }
}

impl Expansion for UnitAxes {
    fn name(&self) -> StaticName {
        format!("memtide.{}", self.op()).into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, self.axes.arity())?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        match &self.axes {
            AxesFrom::Input => s.given_2(&inputs[0].shape, &inputs[1].value, |s, shape, axes| {
                s.equals(
                    &outputs[0].shape,
                    self.output_shape(&shape, Some(&axes_of(&axes)?))?,
                )
            }),
            AxesFrom::Attribute(axes) => s.given(&inputs[0].shape, move |s, shape| {
                s.equals(&outputs[0].shape, self.output_shape(&shape, Some(axes))?)
            }),
            AxesFrom::Absent => s.given(&inputs[0].shape, |s, shape| {
                s.equals(&outputs[0].shape, self.output_shape(&shape, None)?)
            }),
        }
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let axes = match &self.axes {
            AxesFrom::Input => Some(constant_axes(self.op(), model, inputs)?),
            AxesFrom::Attribute(axes) => Some(axes.clone()),
            AxesFrom::Absent => None,
        };
        let shape = model.outlet_fact(inputs[0])?.shape.to_tvec();
        let mut wire = inputs[0];
        for (index, change) in self
            .changes(&shape, axes.as_deref())?
            .into_iter()
            .enumerate()
        {
            wire = model.wire_node(format!("{prefix}.{index}"), change, &[wire])?[0];
        }
        Ok(tvec!(wire))
    }
}

/// `Shape(start = 0, end)`: the input's dimensions `start..end` (opset 15
/// on; negative counting from the end, both clamped to the rank), as a
/// constant of `TDim`s so symbolic dimensions flow on.
pub(super) fn shape(_: &ParsingContext, node: &NodeProto) -> Built {
    let start: i64 = node.get_attr_opt("start")?.unwrap_or(0);
    let end: Option<i64> = node.get_attr_opt("end")?;
    Ok((expand(ShapeRange { start, end }), vec![]))
}

/// The Shape of [`shape`].
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct ShapeRange {
    start: i64,
    end: Option<i64>,
}

impl ShapeRange {
    /// The dimensions of `shape` this Shape returns.
    fn pick(&self, shape: &[TDim]) -> Tensor {
        let rank = shape.len() as i64;
        let bound = |index: i64| (if index < 0 { index + rank } else { index }).clamp(0, rank);
        let start = bound(self.start) as usize;
        let end = (self.end.map_or(rank, bound) as usize).max(start);
        tensor1(&shape[start..end])
    }
}

impl Expansion for ShapeRange {
    fn name(&self) -> StaticName {
        "memtide.Shape".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].rank, 1)?;
        s.equals(&outputs[0].datum_type, TDim::datum_type())?;
        s.given(&inputs[0].shape, move |s, shape| {
            s.equals(&outputs[0].value, self.pick(&shape).into_arc_tensor())
        })
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let shape = model.outlet_fact(inputs[0])?.shape.to_tvec();
        Ok(tvec!(model.add_const(prefix, self.pick(&shape))?))
    }
}

/// `Slice`: from opset 10 starts, ends and the optional axes and steps are
/// inputs (tract's strided slice); before, starts, ends and the optional
/// axes are attributes and there are no steps.
pub(super) fn slice(context: &ParsingContext, node: &NodeProto) -> Built {
    if context.onnx_operator_set_version >= 10 {
        // The position among the inputs actually given of the optional
        // input `index`, if given.
        let given = |index: usize| -> Option<usize> {
            let present = |name: &String| !name.is_empty();
            node.input.get(index).filter(|name| present(name)).map(|_| {
                node.input[..index]
                    .iter()
                    .filter(|name| present(name))
                    .count()
            })
        };
        let op = StridedSlice {
            optional_axes_input: given(3),
            optional_steps_input: given(4),
            begin_mask: 0,
            end_mask: 0,
            shrink_axis_mask: 0,
        };
        return Ok((Box::new(op), vec![]));
    }
    let starts: Vec<i64> = node.get_attr_vec("starts")?;
    let ends: Vec<i64> = node.get_attr_vec("ends")?;
    let axes: Option<Vec<i64>> = node.get_attr_opt_vec("axes")?;
    let axes_len = axes.as_ref().map_or(starts.len(), Vec::len);
    if ends.len() != starts.len() || axes_len != starts.len() {
        bail!(
            "Slice `{}`: starts, ends and axes differ in length",
            node.name
        );
    }
    Ok((expand(SliceAttributes { starts, ends, axes }), vec![]))
}

/// The attribute-form Slice (opset 1 to 9) of [`slice`].
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct SliceAttributes {
    starts: Vec<i64>,
    ends: Vec<i64>,
    /// The sliced axes, in the order of `starts`; by default the first ones.
    axes: Option<Vec<i64>>,
}

/// An end at or past this (ONNX exporters write `i32::MAX` or `i64::MAX`)
/// means "to the end", even of a symbolic dimension.
const TO_THE_END: i64 = i32::MAX as i64;

impl SliceAttributes {
    /// Each sliced axis of an input of `shape` with its start and end,
    /// resolved as ONNX does: negative counting from the end, clamped to the
    /// dimension (a symbolic one is assumed to contain a non-negative bound
    /// below [`TO_THE_END`]).
    fn ranges(&self, shape: &[TDim]) -> TractResult<Vec<(usize, TDim, TDim)>> {
        let axes = match &self.axes {
            Some(axes) => axes.clone(),
            None => (0..self.starts.len() as i64).collect(),
        };
        axes.iter()
            .zip(self.starts.iter().zip(&self.ends))
            .map(|(&axis, (&start, &end))| {
                let axis = resolve_axis("Slice", axis, shape.len())?;
                let dim = &shape[axis];
                let (start, end) = match dim.to_i64() {
                    Ok(length) => {
                        let bound = |index: i64| {
                            (if index < 0 { index + length } else { index }).clamp(0, length)
                        };
                        let start = bound(start);
                        (start.to_dim(), bound(end).max(start).to_dim())
                    }
                    Err(_) => {
                        let bound = |index: i64| {
                            if index < 0 {
                                dim.clone() + index
                            } else if index >= TO_THE_END {
                                dim.clone()
                            } else {
                                index.to_dim()
                            }
                        };
                        (bound(start), bound(end))
                    }
                };
                Ok((axis, start, end))
            })
            .collect()
    }
}

impl Expansion for SliceAttributes {
    fn name(&self) -> StaticName {
        "memtide.Slice1".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].rank, &inputs[0].rank)?;
        s.given(&inputs[0].shape, move |s, shape| {
            let mut output = shape.clone();
            for (axis, start, end) in self.ranges(&shape)? {
                output[axis] = end - start;
            }
            s.equals(&outputs[0].shape, output)
        })
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let shape = model.outlet_fact(inputs[0])?.shape.to_tvec();
        let mut wire = inputs[0];
        for (axis, start, end) in self.ranges(&shape)? {
            if start == TDim::from(0) && end == shape[axis] {
                continue;
            }
            let op = Slice::new(axis, start, end);
            wire = model.wire_node(format!("{prefix}.axis-{axis}"), op, &[wire])?[0];
        }
        Ok(tvec!(wire))
    }
}

/// `LayerNormalization(axis = -1, epsilon = 1e-5, stash_type = float)`
/// (opset 17): each input normalized over the axes from `axis` to the last,
/// computed in `stash_type`, then scaled and shifted. Only the first output
/// (`Y`) is supported; the optional `Mean` and `InvStdDev` are refused.
pub(super) fn layer_normalization(_: &ParsingContext, node: &NodeProto) -> Built {
    let axis: i64 = node.get_attr_opt("axis")?.unwrap_or(-1);
    let epsilon: f32 = node.get_attr_opt("epsilon")?.unwrap_or(1e-5);
    let stash: DatumType = node.get_attr_opt("stash_type")?.unwrap_or(DatumType::F32);
    if !stash.is_float() {
        bail!(
            "LayerNormalization `{}`: stash_type {stash:?} is not a float type",
            node.name
        );
    }
    if node.output.iter().skip(1).any(|name| !name.is_empty()) {
        bail!(
            "LayerNormalization `{}`: the Mean and InvStdDev outputs are not supported",
            node.name
        );
    }
    let bias = node.input.get(2).is_some_and(|name| !name.is_empty());
    Ok((
        expand(LayerNorm {
            axis,
            epsilon: epsilon.to_bits(),
            stash,
            bias,
        }),
        vec![],
    ))
}

/// The LayerNormalization of [`layer_normalization`].
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct LayerNorm {
    axis: i64,
    /// The bits of the `f32` epsilon (so the op can be `Hash` and `Eq`).
    epsilon: u32,
    stash: DatumType,
    /// Whether the optional bias input `B` is given.
    bias: bool,
}

impl Expansion for LayerNorm {
    fn name(&self) -> StaticName {
        "memtide.LayerNormalization".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2 + usize::from(self.bias))?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)?;
        Ok(())
    }

    /// The ONNX definition, step by step: `D = X - mean(X)`,
    /// `Y = D / sqrt(mean(D²) + epsilon) * Scale + B`, the means over the
    /// normalized axes, all in `stash_type`, `Y` cast back to `X`'s type.
    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        let first = resolve_axis("LayerNormalization", self.axis, fact.rank())?;
        let axes: TVec<usize> = (first..fact.rank()).collect();
        let name = |step: &str| format!("{prefix}.{step}");
        let x = model.wire_node(name("cast_x"), cast(self.stash), &[inputs[0]])?[0];
        let count: TDim = axes.iter().map(|&axis| fact.shape[axis].clone()).product();
        let count = model.add_const(name("count"), tensor0(count))?;
        let count = model.wire_node(name("cast_count"), cast(self.stash), &[count])?[0];
        let mean = mean_over(model, &name("mean"), &axes, x, count)?;
        let centered = model.wire_node(name("centered"), sub(), &[x, mean])?[0];
        let squared = model.wire_node(name("squared"), square(), &[centered])?[0];
        let variance = mean_over(model, &name("variance"), &axes, squared, count)?;
        let epsilon = tensor0(f32::from_bits(self.epsilon))
            .cast_to_dt(self.stash)?
            .into_owned();
        let epsilon = model.add_const(name("epsilon"), epsilon)?;
        let variance =
            wire_with_rank_broadcast(name("variance_eps"), model, add(), &[variance, epsilon])?[0];
        let inverse = model.wire_node(name("inv_std_dev"), rsqrt(), &[variance])?[0];
        let normalized = model.wire_node(name("normalized"), mul(), &[centered, inverse])?[0];
        let scale = model.wire_node(name("cast_scale"), cast(self.stash), &[inputs[1]])?[0];
        let mut y =
            wire_with_rank_broadcast(name("scaled"), model, mul(), &[normalized, scale])?[0];
        if self.bias {
            let bias = model.wire_node(name("cast_bias"), cast(self.stash), &[inputs[2]])?[0];
            y = wire_with_rank_broadcast(name("shifted"), model, add(), &[y, bias])?[0];
        }
        model.wire_node(prefix, cast(fact.datum_type), &[y])
    }
}

/// The mean of `wire` over `axes` (kept, of length 1), `count` being the
/// number of elements averaged.
fn mean_over(
    model: &mut TypedModel,
    name: &str,
    axes: &[usize],
    wire: OutletId,
    count: OutletId,
) -> TractResult<OutletId> {
    let reducer = Reduce {
        axes: axes.into(),
        reducer: Reducer::Sum,
    };
    let sum = model.wire_node(format!("{name}_sum"), reducer, &[wire])?[0];
    Ok(wire_with_rank_broadcast(name, model, div(), &[sum, count])?[0])
}
