//! The ONNX framework memtide loads its model with: the operators the model
//! uses, and no others.
//!
//! Layers, each using only those below it: this module (the registry and the
//! operator check) builds on `ops` (the operators' builders),
//! [`rewrites`] (rewrites of the graph before tract parses it), [`int8`]
//! (the int8 matrix products the rewrites introduce) and how the file gets
//! into tract: [`stream`] (the file decoded a window at a time, the word
//! table left in it), [`initializers`] (the weights handed to tract one at
//! a time, which the int8 products take theirs from) and [`word_table`]
//! (the word table read after tract is done, which memtide gathers from).
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
//! To add an operator: write a builder for it in `ops` (tract-onnx's own one,
//! under `src/ops/` of the tract-onnx crate, shows how tract maps the
//! operator, but those modules are private), mind how its inputs and
//! attributes changed across opsets (the [`Builder`] gets the model's opset),
//! add it to [`OPERATORS`] and test it on a tiny model in this module's tests.

use std::io::Read;
use std::ops::Deref;

use tract_onnx::model::{OnnxOpRegister, ParsingContext};
use tract_onnx::pb::{ModelProto, NodeProto};
use tract_onnx::tract_core::ops::logic::{And, CompGTE};
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::array;
use tract_onnx::tract_hir::ops::binary::Nary;
use tract_onnx::tract_hir::ops::logic::Iff;
use tract_onnx::tract_hir::ops::matmul::MatMulInference;
use tract_onnx::Onnx;

use stream::OnnxFile;

pub mod initializers;
pub mod int8;
mod ops;
pub mod rewrites;
pub mod stream;
pub mod word_table;

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
    ("Cast", ops::cast_op),
    ("Concat", ops::concat),
    ("Div", |_, _| Ok((math::Div.into_hir(), vec![]))),
    ("Erf", |_, _| Ok((math::erf().into_hir(), vec![]))),
    ("Expand", |_, _| {
        Ok((expand(array::MultiBroadcastTo), vec![]))
    }),
    ("Gather", ops::gather),
    ("GatherND", ops::gather_nd),
    ("GreaterOrEqual", |_, _| Ok((CompGTE.into_hir(), vec![]))),
    ("IsNaN", |_, _| Ok((math::is_nan().into_hir(), vec![]))),
    ("LayerNormalization", ops::layer_normalization),
    ("MatMul", |_, _| {
        Ok((expand(MatMulInference::default()), vec![]))
    }),
    // Variadic: the maximum of all its inputs, broadcast.
    ("Max", |_, _| {
        Ok((Box::new(Nary(Box::new(math::Max), false)), vec![]))
    }),
    ("Mul", |_, _| Ok((math::Mul.into_hir(), vec![]))),
    ("Range", |_, _| Ok((expand(array::Range), vec![]))),
    ("Reshape", ops::reshape),
    ("Shape", ops::shape),
    ("Slice", ops::slice),
    ("Softmax", ops::softmax),
    ("Squeeze", ops::squeeze),
    ("Transpose", ops::transpose),
    ("Unsqueeze", ops::unsqueeze),
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
    register.insert(int8::OPERATOR, int8::build);
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

/// An ONNX file as [`PrunedOnnx::decode_rewritten`] reads it.
#[derive(Debug)]
pub struct Rewritten {
    pub proto: ModelProto,
    /// The file's SHA-256.
    pub digest: [u8; 32],
    pub lookup: rewrites::Lookup,
}

impl PrunedOnnx {
    /// Decodes `file` ([`stream::decode`], the word table left in the file
    /// for [`word_table::WordCodes::read`]), checks its operators and
    /// rewrites its word-embedding lookup of input `ids`
    /// ([`rewrites::gather_before_dequantize`]). Every other field left in
    /// the file is read back before this returns.
    pub fn decode_rewritten<F: OnnxFile + ?Sized>(
        &self,
        file: &F,
        ids: &str,
    ) -> crate::Result<Rewritten> {
        self.decode_rewritten_leaving(file, ids, stream::LEFT_FROM)
    }

    /// [`PrunedOnnx::decode_rewritten`] leaving fields of `left_from`
    /// bytes or more. A field left that is not an initializer's (a string
    /// tensor's, a sparse one's) cannot be read back where it was, so the
    /// file is then decoded again with nothing left.
    fn decode_rewritten_leaving<F: OnnxFile + ?Sized>(
        &self,
        file: &F,
        ids: &str,
        left_from: usize,
    ) -> crate::Result<Rewritten> {
        let rewritten = match self.rewritten(file, ids, left_from)? {
            Some(rewritten) => Some(rewritten),
            None => self.rewritten(file, ids, usize::MAX)?,
        };
        // With nothing left, every field is accounted for.
        rewritten.ok_or_else(|| {
            crate::Error::Model("the ONNX file decoded with a field left out".into())
        })
    }

    /// One try of [`PrunedOnnx::decode_rewritten_leaving`]: `None` when a
    /// field left is not an initializer's.
    fn rewritten<F: OnnxFile + ?Sized>(
        &self,
        file: &F,
        ids: &str,
        left_from: usize,
    ) -> crate::Result<Option<Rewritten>> {
        let cannot_parse = |e: &dyn std::fmt::Display| {
            crate::Error::Model(format!("cannot parse the ONNX file: {e:#}"))
        };
        let stream::Decoded {
            mut proto,
            digest,
            left,
        } = stream::decode(file, left_from).map_err(|e| cannot_parse(&e))?;
        self.check_operators(&proto).map_err(|e| cannot_parse(&e))?;
        let graph = proto
            .graph
            .as_mut()
            .ok_or_else(|| crate::Error::Model("the ONNX file has no graph".into()))?;
        let lookup = rewrites::gather_before_dequantize(graph, ids, &left)?;
        let taken: Vec<stream::Span> = lookup
            .table
            .iter()
            .filter_map(|codes| codes.left_span())
            .collect();
        Ok(left.restore(graph, &taken, file).then_some(Rewritten {
            proto,
            digest,
            lookup,
        }))
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use prost::Message;
    use tract_onnx::pb::attribute_proto::AttributeType;
    use tract_onnx::pb::tensor_proto::DataType;
    use tract_onnx::pb::{AttributeProto, GraphProto, TensorProto};

    use super::int8::tests::Values;
    use super::int8::OPERATOR;
    use super::rewrites::tests::{dequantizing_model, lookup_model, model_of, value, IDS};
    use super::rewrites::{fuse, gather_before_dequantize, WORD_CODES};
    use super::stream::Left;
    use super::word_table::WordTable;
    use memtide_testkit::rng::Rng;

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

    pub(in crate::embed) fn node(
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
    pub(in crate::embed) fn one_node(
        opset: i64,
        node: NodeProto,
        initializers: Vec<TensorProto>,
    ) -> ModelProto {
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
        assert!(framework.op_register.0.contains_key(OPERATOR));
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

    /// Runs `proto` as memtide does once it has rewritten a checked graph:
    /// through the framework the operator check wraps, the int8 products
    /// given their weights.
    fn run_rewritten(proto: &ModelProto, x: &Tensor) -> Vec<f32> {
        let mut parsed = initializers::parse(&onnx(), proto.clone()).unwrap();
        int8::load_weights(&mut parsed).unwrap();
        // Packed, the codes are freed; a graph reading them keeps them.
        let fused = parsed.model().nodes.iter().any(|n| n.op.name() == OPERATOR);
        assert_eq!(parsed.tensor("q").is_err(), fused);
        let model = parsed
            .into_model()
            .unwrap()
            .with_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), x.shape()))
            .unwrap();
        let plan = model.into_optimized().unwrap().into_runnable().unwrap();
        let output = plan.run(tvec![x.clone().into_tvalue()]).unwrap();
        assert_eq!(output[0].shape(), [2, 3, 5]);
        let view = output[0].try_as_plain_ram().unwrap();
        view.as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn fused_graphs_compute_the_dequantized_product() {
        let mut values = Values(Rng(11));
        let (depth, columns) = (24, 5);
        let original = dequantizing_model(depth, columns, &mut values);
        let mut fused = original.clone();
        let graph = fused.graph.as_mut().unwrap();
        assert_eq!(fuse(graph), 1, "only the int8 product is fused");
        let ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(ops, [OPERATOR, "MatMul"], "the Cast and Mul are gone");
        // The weights are named, not read: tract makes no tensor of them.
        assert_eq!(graph.node[0].input, ["x"]);
        let named: Vec<(&str, &[u8])> = graph.node[0]
            .attribute
            .iter()
            .map(|a| (a.name.as_str(), a.s.as_slice()))
            .collect();
        assert_eq!(named, [("weights", &b"q"[..]), ("scale", b"scale")]);

        let x: Vec<f32> = (0..2 * 3 * depth).map(|_| values.next()).collect();
        let x = Tensor::from_shape(&[2, 3, depth], &x).unwrap();
        let want = run_rewritten(&original, &x);
        let got = run_rewritten(&fused, &x);
        // Activations in (-1, 1] round by at most 1.5e-5; through 24 weights
        // of up to 2.56 and a float product of 5, outputs stay within 2e-3
        // (a wrong weight layout is off by whole units).
        let largest = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(largest > 0.5, "{want:?}");
        for (got, want) in got.iter().zip(&want) {
            assert!((got - want).abs() <= 2e-3, "{got} against {want}");
        }
    }

    #[test]
    fn model_files_cannot_use_the_fused_operator() {
        let mut values = Values(Rng(5));
        let mut model = dequantizing_model(8, 5, &mut values);
        fuse(model.graph.as_mut().unwrap());
        let error = onnx().check_operators(&model).unwrap_err();
        assert!(format!("{error}").contains(OPERATOR), "{error}");
    }

    /// Runs a lookup model on ids `[[3, 0, 2], [1, 1, 3]]`, with the word
    /// codes gathered from `table` when the model takes them.
    fn run_lookup(proto: &ModelProto, table: Option<&WordTable>) -> Vec<f32> {
        let ids = [3i64, 0, 2, 1, 1, 3];
        let mut model = onnx()
            .with_ignore_value_info(true)
            .model_for_proto_model(proto)
            .unwrap()
            .with_input_fact(0, InferenceFact::dt_shape(i64::datum_type(), [2, 3]))
            .unwrap();
        let mut inputs = tvec![Tensor::from_shape(&[2, 3], &ids).unwrap().into_tvalue()];
        if let Some(table) = table {
            let shape = [2, 3, table.width()];
            model = model
                .with_input_fact(1, InferenceFact::dt_shape(i8::datum_type(), shape))
                .unwrap();
            let codes = table.gather(&ids).unwrap();
            inputs.push(Tensor::from_shape(&shape, &codes).unwrap().into_tvalue());
        }
        let plan = model.into_optimized().unwrap().into_runnable().unwrap();
        let output = plan.run(inputs).unwrap();
        let view = output[0].try_as_plain_ram().unwrap();
        view.as_slice::<f32>().unwrap().to_vec()
    }

    fn bits(values: &[f32]) -> Vec<u32> {
        values.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn the_word_table_left_in_the_file_gathers_the_same_rows() {
        let original = lookup_model();
        let bytes = original.encode_to_vec();
        let framework = onnx();
        // Fields of 12 bytes or more are left: the table's codes (12) and
        // its scales (16), which the graph reads and gets back.
        let left = framework.decode_rewritten_leaving(&bytes, IDS, 12).unwrap();
        let whole = framework
            .decode_rewritten_leaving(&bytes, IDS, usize::MAX)
            .unwrap();
        assert_eq!(left.proto, whole.proto);
        assert_eq!(left.digest, whole.digest);
        let codes = left.lookup.table.unwrap();
        assert_eq!(codes.left_span().map(|span| span.len), Some(12));
        assert_eq!(whole.lookup.table.as_ref().unwrap().left_span(), None);
        let table = codes.read(&bytes);
        assert_eq!(table.gather(&[1, 3]).unwrap(), [1, 127, 5, 2, -2, 100]);
        let expected = run_lookup(&original, None);
        assert_eq!(
            bits(&run_lookup(&left.proto, Some(&table))),
            bits(&expected)
        );
        let held = whole.lookup.table.unwrap().read(&[][..]);
        assert_eq!(
            bits(&run_lookup(&whole.proto, Some(&held))),
            bits(&expected)
        );
    }

    #[test]
    fn a_large_field_outside_the_initializers_bytes_is_decoded_whole() {
        let mut model = lookup_model();
        // A string tensor: each string is a field of its own, and its
        // placeholder could not go back where it was.
        model.graph.as_mut().unwrap().initializer.push(TensorProto {
            name: "names".into(),
            dims: vec![1],
            data_type: DataType::String as i32,
            string_data: vec![vec![b'x'; 64]],
            ..TensorProto::default()
        });
        let bytes = model.encode_to_vec();
        let framework = onnx();
        let rewritten = framework.decode_rewritten_leaving(&bytes, IDS, 12).unwrap();
        assert_eq!(rewritten.lookup.table.as_ref().unwrap().left_span(), None);
        let whole = framework
            .decode_rewritten_leaving(&bytes, IDS, usize::MAX)
            .unwrap();
        assert_eq!(rewritten.proto, whole.proto);
        let names = rewritten
            .proto
            .graph
            .as_ref()
            .unwrap()
            .initializer
            .iter()
            .find(|t| t.name == "names");
        assert_eq!(names.unwrap().string_data, [vec![b'x'; 64]]);
    }

    #[test]
    fn gathering_before_dequantizing_gives_identical_rows() {
        let original = lookup_model();
        let mut rewritten = original.clone();
        let graph = rewritten.graph.as_mut().unwrap();
        let lookup = gather_before_dequantize(graph, IDS, &Left::default()).unwrap();
        assert_eq!(lookup.rows, 4);
        let table = lookup.table.unwrap().read(&[][..]);
        assert_eq!(table.width(), 3);
        // The whole-table Cast and Mul are gone, and the codes left the
        // graph for the table, which gathers what the graph did.
        assert!(graph.node.iter().all(|n| !n
            .input
            .iter()
            .any(|i| i == "table_f" || i == "table" || i == "q")));
        assert_eq!(graph.node.len(), 3);
        assert!(graph.initializer.iter().all(|t| t.name != "q"));
        assert_eq!(graph.input.last().unwrap().name, WORD_CODES);
        assert_eq!(table.gather(&[1, 3]).unwrap(), [1, 127, 5, 2, -2, 100]);
        assert_eq!(table.gather(&[4]), None);
        assert_eq!(table.gather(&[-1]), None);
        let expected = run_lookup(&original, None);
        assert_eq!(expected.len(), 18);
        assert_eq!(expected[..3], [2.0 * 3.7, -2.0 * 3.7, 100.0 * 3.7]);
        let got = run_lookup(&rewritten, Some(&table));
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
}
