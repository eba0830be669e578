//! The ONNX operators memtide's model uses, and no others.
//!
//! `tract_onnx::onnx()` registers a builder for every operator tract knows
//! (convolutions, recurrent layers, FFT, resizing, non-max suppression, ML
//! trees, random generators, …) as function pointers in one map. The linker
//! cannot tell which of them a model will ask for, so it keeps them all: they
//! were about a third of the package's `.wasm` (docs/speed.md, "The `.wasm`
//! size"). [`onnx`] registers only the operators of the int8
//! all-MiniLM-L6-v2 export memtide embeds with (opset 17, no `Constant` nodes),
//! each built on public tract-hir/tract-core ops, so the rest is left out of
//! the build.
//!
//! A model with an operator outside [`OPERATORS`] fails to load with an
//! [`crate::Error::Model`] naming the node and its operator: [`PrunedOnnx`]
//! checks the graph before tract parses it (tract itself would build a
//! placeholder that only fails when the model is typed, with a vaguer
//! message).
//!
//! To add an operator: write a builder for it below (tract-onnx's own one,
//! under `src/ops/` of the tract-onnx crate, shows how tract maps the
//! operator, but those modules are private), mind how its inputs and
//! attributes changed across opsets (the [`Builder`] gets the model's opset),
//! add it to [`OPERATORS`] and test it on a tiny model in this module's tests.

use std::io::Read;
use std::ops::Deref;

use tract_onnx::model::{OnnxOpRegister, ParsingContext};
use tract_onnx::pb::{ModelProto, NodeProto};
use tract_onnx::tract_core::ops::array::{Slice, StridedSlice};
use tract_onnx::tract_core::ops::cast::cast;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::logic::{And, CompGTE};
use tract_onnx::tract_core::ops::math::{self, add, div, mul, rsqrt, square, sub};
use tract_onnx::tract_core::ops::nn::{Reduce, Reducer};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::array;
use tract_onnx::tract_hir::ops::binary::Nary;
use tract_onnx::tract_hir::ops::logic::Iff;
use tract_onnx::tract_hir::ops::matmul::MatMulInference;
use tract_onnx::tract_hir::ops::nn::{LayerSoftmax, Softmax};
use tract_onnx::Onnx;

use super::int8_matmul;

/// What builds the tract op of one ONNX node: the parsing context (which
/// carries the model's opset) and the node in, the op and the names of any
/// extra inputs it closes on out. The signature of tract-onnx's registry.
pub type Builder =
    fn(&ParsingContext, &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)>;

/// Every operator [`onnx`] registers, by ONNX name. The MiniLM export uses
/// exactly these (checked against the model with Python's `onnx`).
pub const OPERATORS: &[(&str, Builder)] = &[
    ("Add", |_, _| Ok((math::Add.into_hir(), vec![]))),
    ("And", |_, _| Ok((And.into_hir(), vec![]))),
    ("Cast", cast_op),
    ("Concat", concat),
    ("Div", |_, _| Ok((math::Div.into_hir(), vec![]))),
    ("Erf", |_, _| Ok((math::erf().into_hir(), vec![]))),
    ("Expand", |_, _| {
        Ok((expand(array::MultiBroadcastTo), vec![]))
    }),
    ("Gather", gather),
    ("GatherND", gather_nd),
    ("GreaterOrEqual", |_, _| Ok((CompGTE.into_hir(), vec![]))),
    ("IsNaN", |_, _| Ok((math::is_nan().into_hir(), vec![]))),
    ("LayerNormalization", layer_normalization),
    ("MatMul", |_, _| {
        Ok((expand(MatMulInference::default()), vec![]))
    }),
    // Variadic: the maximum of all its inputs, broadcast.
    ("Max", |_, _| {
        Ok((Box::new(Nary(Box::new(math::Max), false)), vec![]))
    }),
    ("Mul", |_, _| Ok((math::Mul.into_hir(), vec![]))),
    ("Range", |_, _| Ok((expand(array::Range), vec![]))),
    ("Reshape", reshape),
    ("Shape", shape),
    ("Slice", slice),
    ("Softmax", softmax),
    ("Squeeze", squeeze),
    ("Transpose", transpose),
    ("Unsqueeze", unsqueeze),
    ("Where", |_, _| Ok((expand(Iff), vec![]))),
];

/// The ONNX framework with only memtide's [`OPERATORS`], in place of
/// `tract_onnx::onnx()`.
pub fn onnx() -> PrunedOnnx {
    let mut register = OnnxOpRegister::default();
    for &(name, builder) in OPERATORS {
        register.insert(name, builder);
    }
    // Not in OPERATORS: only memtide's own graph rewrite creates such nodes.
    register.insert(int8_matmul::OPERATOR, int8_matmul::build);
    PrunedOnnx(Onnx {
        op_register: register,
        ..Onnx::default()
    })
}

/// tract's ONNX framework with a pruned registry, which refuses a model that
/// uses another operator before tract parses its graph.
///
/// Its [`Framework`] methods check the graph first; it derefs to the wrapped
/// [`Onnx`] so it can be passed where tract's framework is expected (e.g. to
/// turn a proto it has already read, and so checked, into a model).
#[derive(Clone)]
pub struct PrunedOnnx(Onnx);

impl PrunedOnnx {
    /// Whether to ignore the graph's `value_info` (intermediate shapes),
    /// as [`Onnx::with_ignore_value_info`].
    pub fn with_ignore_value_info(self, ignore: bool) -> PrunedOnnx {
        PrunedOnnx(self.0.with_ignore_value_info(ignore))
    }

    /// Fails unless every node of the model's graph is a standard ONNX
    /// operator of the registry. Subgraphs need no check: no registered
    /// operator has one.
    pub fn check_operators(&self, proto: &ModelProto) -> TractResult<()> {
        let Some(graph) = proto.graph.as_ref() else {
            return Ok(());
        };
        for node in &graph.node {
            if !node.domain.is_empty() && node.domain != "ai.onnx" {
                bail!(
                    "node `{}` runs `{}` of the operator set `{}`; memtide reads only standard ONNX operators",
                    node.name,
                    node.op_type,
                    node.domain
                );
            }
            if !OPERATORS.iter().any(|&(name, _)| name == node.op_type) {
                let mut known: Vec<&str> = OPERATORS.iter().map(|&(name, _)| name).collect();
                known.sort_unstable();
                bail!(
                    "node `{}` runs the ONNX operator `{}`, which this build of memtide does not include (it has {})",
                    node.name,
                    node.op_type,
                    known.join(", ")
                );
            }
        }
        Ok(())
    }
}

impl Deref for PrunedOnnx {
    type Target = Onnx;

    fn deref(&self) -> &Onnx {
        &self.0
    }
}

impl Framework<ModelProto, InferenceModel> for PrunedOnnx {
    /// Reads a model and checks its operators.
    fn proto_model_for_read(&self, reader: &mut dyn Read) -> TractResult<ModelProto> {
        let proto = self.0.proto_model_for_read(reader)?;
        self.check_operators(&proto)?;
        Ok(proto)
    }

    /// Checks the model's operators, then parses its graph.
    fn model_for_proto_model_with_model_template(
        &self,
        proto: &ModelProto,
        template: InferenceModel,
    ) -> TractResult<InferenceModel> {
        self.check_operators(proto)?;
        self.0
            .model_for_proto_model_with_model_template(proto, template)
    }
}

/// The builders' result: one op, no closure inputs.
type Built = TractResult<(Box<dyn InferenceOp>, Vec<String>)>;

/// `Cast(to)`. ONNX carries shapes as int64 tensors; tract computes them as
/// `TDim` so that symbolic dimensions (`batch`, `sequence`) survive a cast to
/// int64, which therefore becomes a cast to `TDim`. Strings are not parsed.
fn cast_op(_: &ParsingContext, node: &NodeProto) -> Built {
    let to: DatumType = node.get_attr("to")?;
    let to = if to == DatumType::I64 {
        DatumType::TDim
    } else {
        to
    };
    Ok((Box::new(cast(to)), vec![]))
}

/// `Concat(axis)`; the axis may be negative.
fn concat(_: &ParsingContext, node: &NodeProto) -> Built {
    let axis: i64 = node.get_attr("axis")?;
    Ok((expand(array::Concat::new(axis)), vec![]))
}

/// `Gather(axis = 0)`.
fn gather(_: &ParsingContext, node: &NodeProto) -> Built {
    let axis: i64 = node.get_attr_opt("axis")?.unwrap_or(0);
    Ok((expand(array::Gather::new(axis)), vec![]))
}

/// `GatherND(batch_dims = 0)`.
fn gather_nd(_: &ParsingContext, node: &NodeProto) -> Built {
    let batch_dims: usize = node.get_attr_opt("batch_dims")?.unwrap_or(0);
    Ok((Box::new(array::GatherNd::new(batch_dims)), vec![]))
}

/// `Reshape(allowzero = 0)`: with `allowzero` (opset 14 on) a 0 in the new
/// shape is a zero-length axis rather than "copy the input's".
fn reshape(_: &ParsingContext, node: &NodeProto) -> Built {
    let allowzero = node.get_attr_opt::<i64>("allowzero")?.unwrap_or(0) != 0;
    Ok((expand(array::Reshape::new(allowzero)), vec![]))
}

/// `Transpose(perm)`; no `perm` reverses the axes.
fn transpose(_: &ParsingContext, node: &NodeProto) -> Built {
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
fn softmax(context: &ParsingContext, node: &NodeProto) -> Built {
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
fn squeeze(context: &ParsingContext, node: &NodeProto) -> Built {
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
fn unsqueeze(context: &ParsingContext, node: &NodeProto) -> Built {
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
fn shape(_: &ParsingContext, node: &NodeProto) -> Built {
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
fn slice(context: &ParsingContext, node: &NodeProto) -> Built {
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
fn layer_normalization(_: &ParsingContext, node: &NodeProto) -> Built {
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

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use tract_onnx::pb::attribute_proto::AttributeType;
    use tract_onnx::pb::tensor_proto::DataType;
    use tract_onnx::pb::{AttributeProto, GraphProto, TensorProto};

    use crate::embed::minilm::tests::{model_of, value};
    use crate::embed::MiniLm;

    fn int(name: &str, value: i64) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            r#type: AttributeType::Int as i32,
            i: value,
            ..AttributeProto::default()
        }
    }

    fn ints(name: &str, values: &[i64]) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            r#type: AttributeType::Ints as i32,
            ints: values.to_vec(),
            ..AttributeProto::default()
        }
    }

    fn float(name: &str, value: f32) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            r#type: AttributeType::Float as i32,
            f: value,
            ..AttributeProto::default()
        }
    }

    fn node(
        op_type: &str,
        inputs: &[&str],
        outputs: &[&str],
        attribute: Vec<AttributeProto>,
    ) -> NodeProto {
        NodeProto {
            name: format!("the_{op_type}"),
            op_type: op_type.into(),
            input: inputs.iter().map(|i| i.to_string()).collect(),
            output: outputs.iter().map(|o| o.to_string()).collect(),
            attribute,
            ..NodeProto::default()
        }
    }

    /// An int64 initializer of one dimension.
    fn int64s(name: &str, values: &[i64]) -> TensorProto {
        TensorProto {
            name: name.into(),
            dims: vec![values.len() as i64],
            data_type: DataType::Int64 as i32,
            int64_data: values.to_vec(),
            ..TensorProto::default()
        }
    }

    /// A float initializer.
    fn floats(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
        TensorProto {
            name: name.into(),
            dims: dims.to_vec(),
            data_type: DataType::Float as i32,
            float_data: values.to_vec(),
            ..TensorProto::default()
        }
    }

    /// A model of opset `opset` with one node reading the float input `x`
    /// (and `initializers`) and writing `y`.
    fn one_node(opset: i64, node: NodeProto, initializers: Vec<TensorProto>) -> ModelProto {
        model_of(
            opset,
            GraphProto {
                node: vec![node],
                initializer: initializers,
                input: vec![value("x", DataType::Float)],
                output: vec![value("y", DataType::Float)],
                ..GraphProto::default()
            },
        )
    }

    /// Runs `proto` through [`onnx`] and tract's optimizer on `x`.
    fn run(proto: &ModelProto, x: Tensor) -> TractResult<Tensor> {
        let model = onnx()
            .model_for_proto_model(proto)?
            .with_input_fact(0, InferenceFact::dt_shape(x.datum_type(), x.shape()))?;
        let plan = model.into_optimized()?.into_runnable()?;
        let outputs = plan.run(tvec![x.into_tvalue()])?;
        Ok(outputs[0].clone().into_tensor())
    }

    /// A tensor of `shape` holding 0, 1, 2, … as floats.
    fn counting(shape: &[usize]) -> Tensor {
        let values: Vec<f32> = (0..shape.iter().product::<usize>())
            .map(|v| v as f32)
            .collect();
        Tensor::from_shape(shape, &values).unwrap()
    }

    fn values(tensor: &Tensor) -> Vec<f32> {
        let tensor = tensor.cast_to::<f32>().unwrap();
        let view = tensor.try_as_plain_ram().unwrap();
        view.as_slice::<f32>().unwrap().to_vec()
    }

    /// The error of running `proto` on `x`, with its causes.
    fn run_error(proto: &ModelProto, x: Tensor) -> String {
        match run(proto, x) {
            Ok(y) => panic!("expected an error, got {y:?}"),
            Err(error) => format!("{error:?}"),
        }
    }

    fn assert_close(got: &Tensor, shape: &[usize], expected: &[f32]) {
        assert_eq!(got.shape(), shape);
        let got = values(got);
        for (g, e) in got.iter().zip(expected) {
            assert!((g - e).abs() < 1e-6, "{got:?} != {expected:?}");
        }
    }

    #[test]
    fn the_registry_holds_each_operator_once_and_the_fused_product() {
        let framework = onnx();
        assert_eq!(framework.op_register.0.len(), OPERATORS.len() + 1);
        assert!(framework.op_register.0.contains_key(int8_matmul::OPERATOR));
        assert_eq!(OPERATORS.len(), 24);
    }

    #[test]
    fn an_operator_outside_the_registry_fails_at_load_naming_it() {
        let proto = one_node(17, node("Relu", &["x"], &["y"], vec![]), vec![]);
        let error = onnx().model_for_proto_model(&proto).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains("node `the_Relu` runs the ONNX operator `Relu`"),
            "{message}"
        );
        assert!(message.contains("Add, And, Cast"), "{message}");

        // Through memtide's loader: an `Error::Model` before anything runs.
        let special =
            |id: u32, token: &str| serde_json::json!({"id": token, "ids": [id], "tokens": [token]});
        let tokenizer = serde_json::json!({
            "added_tokens": [],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                           "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "special_tokens": {"[CLS]": special(2, "[CLS]"), "[SEP]": special(3, "[SEP]")}
            },
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100,
                      "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4}}
        });
        let error = MiniLm::from_bytes(proto.encode_to_vec(), &tokenizer.to_string()).unwrap_err();
        assert_eq!(error.code(), "MODEL", "{error}");
        assert!(
            error
                .to_string()
                .contains("operator `Relu`, which this build"),
            "{error}"
        );
    }

    #[test]
    fn an_operator_of_another_domain_is_refused() {
        let mut add = node("Add", &["x", "x"], &["y"], vec![]);
        add.domain = "com.microsoft".into();
        let error = onnx()
            .model_for_proto_model(&one_node(17, add, vec![]))
            .unwrap_err();
        assert!(format!("{error}").contains("`com.microsoft`"), "{error}");
    }

    #[test]
    fn squeeze_takes_axes_from_an_input_or_an_attribute_or_every_unit_axis() {
        let x = || counting(&[1, 3, 1, 2]);
        let all: Vec<f32> = (0..6).map(|v| v as f32).collect();
        // Opset 13: axes as an input, negative and out of order.
        let squeeze = node("Squeeze", &["x", "axes"], &["y"], vec![]);
        let proto = one_node(13, squeeze, vec![int64s("axes", &[-2, 0])]);
        assert_close(&run(&proto, x()).unwrap(), &[3, 2], &all);
        // Opset 13 without axes: every axis of length 1.
        let proto = one_node(13, node("Squeeze", &["x"], &["y"], vec![]), vec![]);
        assert_close(&run(&proto, x()).unwrap(), &[3, 2], &all);
        // Opset 11: axes as an attribute.
        let squeeze = node("Squeeze", &["x"], &["y"], vec![ints("axes", &[2])]);
        assert_close(
            &run(&one_node(11, squeeze, vec![]), x()).unwrap(),
            &[1, 3, 2],
            &all,
        );
        // An axis not of length 1, or past the rank, is an error.
        for (axes, error) in [(1, "has length 3, not 1"), (4, "axis 4 is out of range")] {
            let squeeze = node("Squeeze", &["x", "axes"], &["y"], vec![]);
            let proto = one_node(13, squeeze, vec![int64s("axes", &[axes])]);
            let message = run_error(&proto, x());
            assert!(message.contains(error), "{message}");
        }
    }

    #[test]
    fn unsqueeze_counts_negative_axes_from_the_end_of_the_output() {
        let all: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let unsqueeze = node("Unsqueeze", &["x", "axes"], &["y"], vec![]);
        let proto = one_node(13, unsqueeze, vec![int64s("axes", &[-1, 0])]);
        let got = run(&proto, counting(&[2, 3])).unwrap();
        assert_close(&got, &[1, 2, 3, 1], &all);
        let unsqueeze = node("Unsqueeze", &["x"], &["y"], vec![ints("axes", &[1])]);
        let got = run(&one_node(11, unsqueeze, vec![]), counting(&[2, 3])).unwrap();
        assert_close(&got, &[2, 1, 3], &all);
        for (axes, error) in [(&[4][..], "out of range"), (&[0, 0], "repeated axis")] {
            let unsqueeze = node("Unsqueeze", &["x", "axes"], &["y"], vec![]);
            let proto = one_node(13, unsqueeze, vec![int64s("axes", axes)]);
            let message = run_error(&proto, counting(&[2, 3]));
            assert!(message.contains(error), "{message}");
        }
        // Opset 13 needs the axes input.
        let unsqueeze = node("Unsqueeze", &["x"], &["y"], vec![ints("axes", &[1])]);
        let message = run_error(&one_node(13, unsqueeze, vec![]), counting(&[2, 3]));
        assert!(message.contains("has no axes"), "{message}");
    }

    #[test]
    fn slice_reads_inputs_from_opset_10_and_attributes_before() {
        let x = || counting(&[3, 4]);
        // Opset 13: the last axis from -3 to -1.
        let slice = node("Slice", &["x", "starts", "ends", "axes"], &["y"], vec![]);
        let bounds = vec![
            int64s("starts", &[-3]),
            int64s("ends", &[-1]),
            int64s("axes", &[-1]),
        ];
        let proto = one_node(13, slice, bounds);
        assert_close(
            &run(&proto, x()).unwrap(),
            &[3, 2],
            &[1., 2., 5., 6., 9., 10.],
        );
        // With steps: every other row; an empty axes input is "all axes".
        let slice = node(
            "Slice",
            &["x", "starts", "ends", "", "steps"],
            &["y"],
            vec![],
        );
        let bounds = vec![
            int64s("starts", &[0, 0]),
            int64s("ends", &[i64::MAX, 4]),
            int64s("steps", &[2, 1]),
        ];
        let expected = [0., 1., 2., 3., 8., 9., 10., 11.];
        assert_close(
            &run(&one_node(13, slice, bounds), x()).unwrap(),
            &[2, 4],
            &expected,
        );
        // Opset 9: attributes, an end past the dimension, a negative start.
        let attributes = vec![
            ints("starts", &[1, -3]),
            ints("ends", &[1000, -1]),
            ints("axes", &[0, 1]),
        ];
        let proto = one_node(9, node("Slice", &["x"], &["y"], attributes), vec![]);
        assert_close(&run(&proto, x()).unwrap(), &[2, 2], &[5., 6., 9., 10.]);
        // Opset 9 without axes: the first axes in order.
        let attributes = vec![ints("starts", &[0, 2]), ints("ends", &[2, 4])];
        let proto = one_node(9, node("Slice", &["x"], &["y"], attributes), vec![]);
        assert_close(&run(&proto, x()).unwrap(), &[2, 2], &[2., 3., 6., 7.]);
        // An axis past the rank is an error.
        let attributes = vec![ints("starts", &[0]), ints("ends", &[1]), ints("axes", &[2])];
        let proto = one_node(9, node("Slice", &["x"], &["y"], attributes), vec![]);
        let message = run_error(&proto, x());
        assert!(message.contains("axis 2 is out of range"), "{message}");
    }

    #[test]
    fn softmax_normalizes_one_axis_from_opset_13_and_a_flattened_tail_before() {
        let x = || counting(&[1, 2, 2]);
        let softmax = |opset: i64, axis: Option<i64>| {
            let attributes = axis.map(|axis| int("axis", axis)).into_iter().collect();
            let proto = one_node(opset, node("Softmax", &["x"], &["y"], attributes), vec![]);
            run(&proto, x()).unwrap()
        };
        // Opset 13, axis 1: over [0, 2] and over [1, 3].
        let (low, high) = (0.119_202_92, 0.880_797_1);
        assert_close(&softmax(13, Some(1)), &[1, 2, 2], &[low, low, high, high]);
        // Opset 13 by default: the last axis, over [0, 1] and [2, 3].
        let (low, high) = (0.268_941_43, 0.731_058_6);
        assert_close(&softmax(13, None), &[1, 2, 2], &[low, high, low, high]);
        // Opset 11, axis 1 (also the default): over all of [0, 1, 2, 3].
        let flat = [0.032_058_6, 0.087_144_32, 0.236_882_82, 0.643_914_3];
        assert_close(&softmax(11, Some(1)), &[1, 2, 2], &flat);
        assert_close(&softmax(11, None), &[1, 2, 2], &flat);
    }

    #[test]
    fn shape_returns_the_dimensions_from_start_to_end() {
        let shape = |attributes: Vec<AttributeProto>| -> Vec<i64> {
            let proto = one_node(17, node("Shape", &["x"], &["y"], attributes), vec![]);
            let got = run(&proto, counting(&[2, 3, 4, 5])).unwrap();
            let got = got.cast_to::<i64>().unwrap();
            let view = got.try_as_plain_ram().unwrap();
            view.as_slice::<i64>().unwrap().to_vec()
        };
        assert_eq!(shape(vec![]), [2, 3, 4, 5]);
        assert_eq!(shape(vec![int("start", 1), int("end", -1)]), [3, 4]);
        assert_eq!(shape(vec![int("start", -2)]), [4, 5]);
        assert_eq!(shape(vec![int("start", -9), int("end", 10)]), [2, 3, 4, 5]);
        assert_eq!(shape(vec![int("start", 3), int("end", 1)]), [0i64; 0]);
    }

    #[test]
    fn layer_normalization_normalizes_the_trailing_axes_with_epsilon() {
        let x = || Tensor::from_shape(&[2, 3], &[1f32, 2., 3., 2., 4., 8.]).unwrap();
        // The last axis, epsilon 0.5, scaled and shifted.
        let layer_norm = node(
            "LayerNormalization",
            &["x", "scale", "bias"],
            &["y"],
            vec![int("axis", -1), float("epsilon", 0.5), int("stash_type", 1)],
        );
        let weights = vec![
            floats("scale", &[3], &[1., 2., 0.5]),
            floats("bias", &[3], &[0., 1., -1.]),
        ];
        let expected = [
            -0.925_820_1,
            1.0,
            -0.537_089_95,
            -1.028_518_9,
            0.485_740_5,
            -0.357_175_65,
        ];
        let got = run(&one_node(17, layer_norm, weights), x()).unwrap();
        assert_close(&got, &[2, 3], &expected);
        // Axis -2 of a matrix: all six values together; no bias, epsilon 0.
        let layer_norm = node(
            "LayerNormalization",
            &["x", "scale"],
            &["y"],
            vec![int("axis", -2), float("epsilon", 0.)],
        );
        let weights = vec![floats("scale", &[2, 3], &[1.; 6])];
        let expected = [
            -1.021_054_9,
            -0.583_46,
            -0.145_865,
            -0.583_46,
            0.291_73,
            2.042_11,
        ];
        let got = run(&one_node(17, layer_norm, weights), x()).unwrap();
        assert_close(&got, &[2, 3], &expected);
    }

    #[test]
    fn layer_normalization_refuses_what_it_does_not_compute() {
        let proto = |attributes: Vec<AttributeProto>, outputs: &[&str]| {
            let layer_norm = node("LayerNormalization", &["x", "scale"], outputs, attributes);
            one_node(17, layer_norm, vec![floats("scale", &[3], &[1.; 3])])
        };
        assert!(run(&proto(vec![], &["y"]), counting(&[2, 3])).is_ok());
        for (attributes, outputs, error) in [
            (
                vec![int("stash_type", 7)],
                &["y"][..],
                "stash_type I64 is not a float",
            ),
            (
                vec![],
                &["y", "mean"],
                "Mean and InvStdDev outputs are not supported",
            ),
            (vec![int("axis", 2)], &["y"], "axis 2 is out of range"),
        ] {
            let message = run_error(&proto(attributes, outputs), counting(&[2, 3]));
            assert!(message.contains(error), "{message}");
        }
    }
}
