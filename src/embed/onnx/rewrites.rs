//! Rewrites of the ONNX graph, made on its protobuf before tract parses it.
//!
//! The int8 export dequantizes its word-embedding table and every weight
//! matrix in the graph, `Mul(Cast<float>(q), scale)` with `q` an int8
//! initializer. [`gather_before_dequantize`] makes the word-embedding lookup
//! dequantize only the rows it picks (tract would dequantize the whole table
//! on every run), and takes the int8 table out of the graph (memtide picks
//! the rows); [`fuse`] turns the products by such matrices into the int8
//! products of [`super::int8`] (tract would fold them into `f32` matrices).

use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::{
    type_proto, AttributeProto, GraphProto, NodeProto, TypeProto, ValueInfoProto,
};

#[cfg(any(target_arch = "wasm32", test))]
use super::int8::{OPERATOR, SCALE_ATTRIBUTE, WEIGHTS_ATTRIBUTE};
use super::stream::Left;
use super::word_table::WordCodes;
use crate::Error;

/// Name of the graph input [`gather_before_dequantize`] adds: the int8
/// rows of the word-embedding table for the input's tokens, `[batch,
/// sequence, width]`, which memtide gathers from the
/// [`super::word_table::WordTable`].
pub const WORD_CODES: &str = "memtide.word_codes";

/// The word-embedding lookup after [`gather_before_dequantize`].
#[derive(Debug)]
pub struct Lookup {
    /// Rows of the embedding table: the model's vocabulary size.
    pub rows: usize,
    /// The int8 table's codes, when the lookup was rewritten to take its
    /// rows from the [`WORD_CODES`] input.
    pub table: Option<WordCodes>,
}

/// Rewrites the word-embedding lookup of `graph` to gather before it
/// dequantizes, with the gathering of the int8 rows out of the graph.
///
/// The lookup is the `Gather` (axis 0) of the input `ids`. In the int8
/// export its table is `Mul(Cast<float>(q), scale)` with `q` an int8
/// `[rows, width]` initializer and `scale` a float `[rows, 1]` one:
///
/// ```text
/// before: Gather(Mul(Cast(q), scale), ids)
/// after:  Mul(Cast(WORD_CODES), Gather(scale, ids))
/// ```
///
/// where [`WORD_CODES`] is a new input, the rows of `q` for `ids`, which
/// the caller gathers from the table of the returned [`WordCodes`]. Each output element
/// is the same product of the same two numbers, so the result is
/// bit-identical. `q`'s bytes move into the table (not copied: the largest
/// weight of the model, which tract would copy into a tensor of its own)
/// and leave the graph, unless another node reads `q`; when the decode
/// left them in the file (`left`), the table reads them from there. The `Cast` and
/// `Mul` are removed when nothing else reads them. A table that is a
/// plain initializer is left alone.
pub fn gather_before_dequantize(
    graph: &mut GraphProto,
    ids: &str,
    left: &Left,
) -> crate::Result<Lookup> {
    let unsupported = |what: &str| Error::Model(format!("unsupported embedding lookup: {what}"));
    let gather_index = graph
        .node
        .iter()
        .position(|node| {
            node.op_type == "Gather" && node.input.get(1).map(String::as_str) == Some(ids)
        })
        .ok_or_else(|| unsupported(&format!("no Gather reads {ids}")))?;
    let gather = &graph.node[gather_index];
    if attribute_int(gather, "axis").unwrap_or(0) != 0 {
        return Err(unsupported("the Gather is not on axis 0"));
    }
    let table = gather.input[0].clone();
    let initializer_rows = |name: &str, data_type: DataType, width: Option<i64>| {
        graph
            .initializer
            .iter()
            .find(|t| t.name == name && t.data_type == data_type as i32)
            .and_then(|t| match (t.dims.as_slice(), width) {
                ([rows, _], None) => Some(*rows),
                ([rows, columns], Some(width)) if *columns == width => Some(*rows),
                _ => None,
            })
            .and_then(|rows| usize::try_from(rows).ok())
    };
    if let Some(rows) = initializer_rows(&table, DataType::Float, None) {
        return Ok(Lookup { rows, table: None });
    }
    let Dequantized {
        quantized,
        scale,
        cast_output,
    } = dequantized(graph, &table).ok_or_else(|| {
        unsupported("the table is neither a float initializer nor a dequantized int8 one")
    })?;
    let rows = initializer_rows(&quantized, DataType::Int8, None)
        .ok_or_else(|| unsupported("the int8 table is not a matrix"))?;
    if initializer_rows(&scale, DataType::Float, Some(1)) != Some(rows) {
        return Err(unsupported("the scale is not one float per row"));
    }
    let codes_index = graph
        .initializer
        .iter()
        .position(|t| t.name == quantized)
        .ok_or_else(|| unsupported("the int8 table is not an initializer"))?;
    let codes = &graph.initializer[codes_index];
    let left_span = left.span_of(&codes.raw_data);
    let len = left_span.map_or(codes.raw_data.len(), |span| span.len);
    let width = codes
        .dims
        .get(1)
        .and_then(|&width| usize::try_from(width).ok())
        .filter(|&width| rows.checked_mul(width) == Some(len))
        .ok_or_else(|| unsupported("the int8 table's bytes are not rows × width"))?;
    let taken = graph.input.iter().any(|input| input.name == WORD_CODES)
        || graph
            .node
            .iter()
            .any(|node| node.output.iter().any(|o| o == WORD_CODES));
    if taken {
        return Err(unsupported(&format!(
            "the graph already names {WORD_CODES}"
        )));
    }

    let gathered_output = gather.output[0].clone();
    let named = |suffix: &str| format!("{table}/gathered_{suffix}");
    let node = |name: &str, op_type: &str, inputs: &[&str], output: &str| NodeProto {
        name: named(name),
        op_type: op_type.into(),
        input: inputs.iter().map(|input| input.to_string()).collect(),
        output: vec![output.into()],
        ..NodeProto::default()
    };
    let mut cast_rows = node("cast", "Cast", &[WORD_CODES], &named("f"));
    cast_rows.attribute.push(AttributeProto {
        name: "to".into(),
        r#type: AttributeType::Int as i32,
        i: DataType::Float as i64,
        ..AttributeProto::default()
    });
    let replacement = [
        cast_rows,
        node("scale", "Gather", &[&scale, ids], &named("scale")),
        node(
            "mul",
            "Mul",
            &[&named("f"), &named("scale")],
            &gathered_output,
        ),
    ];
    graph.node.splice(gather_index..=gather_index, replacement);
    remove_unread(graph, &[table, cast_output]);
    graph.input.push(ValueInfoProto {
        name: WORD_CODES.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: DataType::Int8 as i32,
                shape: None,
            })),
            ..TypeProto::default()
        }),
        ..ValueInfoProto::default()
    });
    let still_read = graph
        .node
        .iter()
        .any(|node| node.input.contains(&quantized));
    let codes = match left_span {
        // A placeholder the graph still reads is read back into it
        // (`Left::restore`).
        Some(span) => {
            if !still_read {
                graph.initializer.remove(codes_index);
            }
            WordCodes::left(width, span)
        }
        None if still_read => {
            WordCodes::held(width, graph.initializer[codes_index].raw_data.clone())
        }
        None => WordCodes::held(width, graph.initializer.remove(codes_index).raw_data),
    };
    Ok(Lookup {
        rows,
        table: Some(codes),
    })
}

/// The integer attribute `name` of `node`, if set.
fn attribute_int(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// How a weight matrix is dequantized in the graph:
/// `Mul(Cast<float>(quantized), scale)`.
struct Dequantized {
    /// The int8 initializer.
    quantized: String,
    /// The float scale initializer.
    scale: String,
    /// The `Cast`'s output (the `Mul`'s output is the dequantized matrix).
    cast_output: String,
}

/// The dequantization producing `output`, when `output` is
/// `Mul(Cast<float>(q), scale)` with `q` an `i8` initializer of rank 2.
fn dequantized(graph: &GraphProto, output: &str) -> Option<Dequantized> {
    let producer = |output: &str| {
        graph
            .node
            .iter()
            .find(|n| n.output.iter().any(|o| o == output))
    };
    let mul = producer(output).filter(|n| n.op_type == "Mul" && n.input.len() == 2)?;
    let (cast, scale) = mul.input.iter().enumerate().find_map(|(side, input)| {
        let cast = producer(input).filter(|n| n.op_type == "Cast" && n.input.len() == 1)?;
        Some((cast, mul.input[1 - side].clone()))
    })?;
    let to_float = attribute_int(cast, "to") == Some(DataType::Float as i64);
    let quantized = graph.initializer.iter().find(|t| {
        t.name == cast.input[0] && t.data_type == DataType::Int8 as i32 && t.dims.len() == 2
    })?;
    to_float.then(|| Dequantized {
        quantized: quantized.name.clone(),
        scale,
        cast_output: cast.output[0].clone(),
    })
}

/// Removes the nodes producing `names` that nothing reads any more.
fn remove_unread(graph: &mut GraphProto, names: &[String]) {
    for dead in names {
        let read_elsewhere = graph.node.iter().any(|n| n.input.contains(dead))
            || graph.output.iter().any(|o| &o.name == dead);
        if !read_elsewhere {
            graph.node.retain(|n| !n.output.contains(dead));
        }
    }
}

/// Rewrites every `MatMul(x, Mul(Cast<float>(q), scale))` of `graph`, `q`
/// an int8 `[depth, columns]` initializer stored as raw bytes (which the
/// product is packed from) and `scale` a float one of `columns` values,
/// into an [`OPERATOR`] node of input `x` naming `q` and
/// `scale` in its attributes ([`WEIGHTS_ATTRIBUTE`], [`SCALE_ATTRIBUTE`]:
/// not inputs, so that tract makes no tensors of them, see
/// [`super::int8::load_weights`]); removes the `Cast` and `Mul` when
/// nothing else reads them. Returns how many it fused.
/// Only WebAssembly builds fuse (natively tract's f32 kernels are faster).
#[cfg(any(target_arch = "wasm32", test))]
pub fn fuse(graph: &mut GraphProto) -> usize {
    let scale_columns = |graph: &GraphProto, name: &str| {
        graph
            .initializer
            .iter()
            .find(|t| t.name == name && t.data_type == DataType::Float as i32)
            .filter(|t| t.dims.iter().rev().skip(1).all(|&d| d == 1))
            .and_then(|t| t.dims.last().copied())
    };
    let mut matches = Vec::new();
    for (index, node) in graph.node.iter().enumerate() {
        if node.op_type != "MatMul" || node.input.len() != 2 || !node.domain.is_empty() {
            continue;
        }
        let Some(weights) = dequantized(graph, &node.input[1]) else {
            continue;
        };
        let columns = graph
            .initializer
            .iter()
            .find(|t| t.name == weights.quantized)
            .filter(|t| {
                let len = t.dims.iter().try_fold(1i64, |len, &d| len.checked_mul(d));
                len.and_then(|len| usize::try_from(len).ok()) == Some(t.raw_data.len())
            })
            .map(|t| t.dims[1]);
        if columns.is_some() && scale_columns(graph, &weights.scale) == columns {
            matches.push((index, weights));
        }
    }
    let mut unread = Vec::new();
    for (index, weights) in &matches {
        let node = &mut graph.node[*index];
        unread.push(std::mem::take(&mut node.input[1]));
        unread.push(weights.cast_output.clone());
        node.op_type = OPERATOR.into();
        node.input.truncate(1);
        for (name, initializer) in [
            (WEIGHTS_ATTRIBUTE, &weights.quantized),
            (SCALE_ATTRIBUTE, &weights.scale),
        ] {
            node.attribute.push(AttributeProto {
                name: name.into(),
                r#type: AttributeType::String as i32,
                s: initializer.clone().into_bytes(),
                ..AttributeProto::default()
            });
        }
    }
    remove_unread(graph, &unread);
    matches.len()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::embed::onnx::int8::tests::{weights, Values};
    use memtide_testkit::rng::Rng;
    use tract_onnx::pb::{
        type_proto, ModelProto, OperatorSetIdProto, TensorProto, TypeProto, ValueInfoProto,
    };
    use tract_onnx::prelude::Tensor;

    /// The token-id input of the test models.
    pub(in crate::embed::onnx) const IDS: &str = "input_ids";

    /// An initializer of `dims` holding `raw_data`.
    pub(in crate::embed::onnx) fn initializer(
        name: &str,
        dims: &[i64],
        data_type: DataType,
        raw_data: Vec<u8>,
    ) -> TensorProto {
        TensorProto {
            name: name.into(),
            dims: dims.to_vec(),
            data_type: data_type as i32,
            raw_data,
            ..TensorProto::default()
        }
    }

    /// A graph input or output of `data_type` and unknown shape.
    pub(in crate::embed::onnx) fn value(name: &str, data_type: DataType) -> ValueInfoProto {
        let tensor = type_proto::Tensor {
            elem_type: data_type as i32,
            shape: None,
        };
        ValueInfoProto {
            name: name.into(),
            r#type: Some(TypeProto {
                value: Some(type_proto::Value::TensorType(tensor)),
                ..TypeProto::default()
            }),
            ..ValueInfoProto::default()
        }
    }

    /// A `Cast` of `input` to float.
    pub(in crate::embed::onnx) fn cast_to_float(input: &str, output: &str) -> NodeProto {
        NodeProto {
            name: format!("cast_{input}"),
            op_type: "Cast".into(),
            input: vec![input.into()],
            output: vec![output.into()],
            attribute: vec![AttributeProto {
                name: "to".into(),
                r#type: AttributeType::Int as i32,
                i: DataType::Float as i64,
                ..AttributeProto::default()
            }],
            ..NodeProto::default()
        }
    }

    /// A model of `graph` importing the default operator set `opset`.
    pub(in crate::embed::onnx) fn model_of(opset: i64, graph: GraphProto) -> ModelProto {
        ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: opset,
            }],
            graph: Some(graph),
            ..ModelProto::default()
        }
    }

    /// A node `op_type` of two inputs and one output.
    pub(in crate::embed::onnx) fn binary_node(
        name: &str,
        op_type: &str,
        input: [&str; 2],
        output: &str,
    ) -> NodeProto {
        NodeProto {
            name: name.into(),
            op_type: op_type.into(),
            input: input.iter().map(|i| i.to_string()).collect(),
            output: vec![output.into()],
            ..NodeProto::default()
        }
    }

    /// A model that only looks up `input_ids` in an int8 table dequantized
    /// per row, the way the MiniLM export does.
    pub(in crate::embed::onnx) fn lookup_model() -> ModelProto {
        let quantized: Vec<u8> = [-128i8, -1, 0, 1, 127, 5, -7, 64, 3, 2, -2, 100]
            .iter()
            .map(|&q| q as u8)
            .collect();
        let scales: Vec<u8> = [0.013f32, 0.5, 1e-3, 3.7]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        model_of(
            17,
            GraphProto {
                node: vec![
                    cast_to_float("q", "table_f"),
                    binary_node("mul", "Mul", ["table_f", "scale"], "table"),
                    binary_node("lookup", "Gather", ["table", IDS], "rows"),
                ],
                initializer: vec![
                    initializer("q", &[4, 3], DataType::Int8, quantized),
                    initializer("scale", &[4, 1], DataType::Float, scales),
                ],
                input: vec![value(IDS, DataType::Int64)],
                output: vec![value("rows", DataType::Float)],
                ..GraphProto::default()
            },
        )
    }

    /// `y = MatMul(MatMul(x, Mul(Cast(q), scale)), plain)`: one int8
    /// product to fuse and one float product to leave alone.
    pub(in crate::embed::onnx) fn dequantizing_model(
        depth: usize,
        columns: usize,
        values: &mut Values,
    ) -> ModelProto {
        let (q, scale) = weights(depth, columns, values);
        let bytes = |t: &Tensor| t.as_bytes().to_vec();
        let plain: Vec<f32> = (0..columns * columns).map(|_| values.next()).collect();
        let (depth, columns) = (depth as i64, columns as i64);
        model_of(
            17,
            GraphProto {
                node: vec![
                    cast_to_float("q", "q_f"),
                    binary_node("w", "Mul", ["q_f", "scale"], "w"),
                    binary_node("h", "MatMul", ["x", "w"], "h"),
                    binary_node("y", "MatMul", ["h", "plain"], "y"),
                ],
                initializer: vec![
                    initializer("q", &[depth, columns], DataType::Int8, bytes(&q)),
                    initializer("scale", &[1, columns], DataType::Float, bytes(&scale)),
                    TensorProto {
                        name: "plain".into(),
                        dims: vec![columns, columns],
                        data_type: DataType::Float as i32,
                        float_data: plain,
                        ..TensorProto::default()
                    },
                ],
                input: vec![value("x", DataType::Float)],
                output: vec![value("y", DataType::Float)],
                ..GraphProto::default()
            },
        )
    }

    #[test]
    fn lookups_of_another_shape_are_refused() {
        let mut model = lookup_model();
        let graph = model.graph.as_mut().unwrap();
        graph.initializer[1].dims = vec![1, 4];
        let error = gather_before_dequantize(graph, IDS, &Left::default()).unwrap_err();
        assert_eq!(error.code(), "MODEL");
        graph.node.pop();
        let error = gather_before_dequantize(graph, IDS, &Left::default()).unwrap_err();
        assert!(
            error.to_string().contains("no Gather reads input_ids"),
            "{error}"
        );
    }

    #[test]
    fn codes_not_stored_as_raw_bytes_are_not_fused() {
        let mut values = Values(Rng(5));
        let mut model = dequantizing_model(8, 5, &mut values);
        let graph = model.graph.as_mut().unwrap();
        let codes = &mut graph.initializer[0];
        codes.int32_data = codes.raw_data.iter().map(|&b| i32::from(b as i8)).collect();
        codes.raw_data.clear();
        assert_eq!(fuse(graph), 0);
        let ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(ops, ["Cast", "Mul", "MatMul", "MatMul"]);
    }

    #[test]
    fn a_dequantized_matrix_read_elsewhere_is_kept() {
        let mut values = Values(Rng(5));
        let mut model = dequantizing_model(8, 5, &mut values);
        let graph = model.graph.as_mut().unwrap();
        graph.output.push(value("w", DataType::Float));
        assert_eq!(fuse(graph), 1);
        let ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(ops, ["Cast", "Mul", OPERATOR, "MatMul"]);
    }
}
