//! all-MiniLM-L6-v2 sentence embeddings, run by tract-onnx (pure Rust).
//!
//! [`MiniLm`] loads the int8-weight ONNX export of all-MiniLM-L6-v2 and its
//! `tokenizer.json` once, then embeds texts: WordPiece ids (at most
//! [`MAX_TOKENS`], `[CLS]`/`[SEP]` included) → the transformer's last hidden
//! state → the mean over every token (specials included) → L2 normalization.
//! The result matches the reference stack (Hugging Face tokenizers +
//! onnxruntime) to a cosine of 0.9999 or better.
//!
//! Loading rewrites one spot of the graph: the export stores the
//! 30522 × 384 word-embedding table as int8 and dequantizes all of it
//! (`Cast` + per-row `Mul`) before the `Gather` that picks the input's rows.
//! tract does not fold that 47 MB constant, so it would be recomputed on every
//! call. The rewrite gathers the int8 rows and their scales first and
//! dequantizes only those; the products are the same, so the output is
//! identical.

use std::io::Read;
use std::ops::RangeInclusive;
#[cfg(not(target_arch = "wasm32"))]
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::{AttributeProto, GraphProto, ModelProto, NodeProto};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::optim::Optimizer;
use tract_onnx::tract_hir::internal::DimLike;

use super::int8_matmul::{self, Dequantized};
use super::{Embedder, WordPiece};
use crate::Error;

/// Longest input the model sees, in tokens, `[CLS]` and `[SEP]` included;
/// longer texts are truncated at the end.
pub const MAX_TOKENS: usize = 256;

/// Largest number of tokens (batch size × padded length) run through the
/// model at once. The activations take about 8 MiB per 256-token sequence
/// (attention scores grow with the square of the length): at 1024 tokens a
/// batch of long texts peaks about 33 MiB above the loaded model, which keeps
/// the heap below its peak while loading; larger sub-batches were not faster.
const MAX_BATCH_TOKENS: usize = 1024;

/// Most sequences run together: a sub-batch holds at most
/// [`MAX_BATCH_TOKENS`] tokens after padding, and every sequence at least 2
/// (`[CLS]` and `[SEP]`).
const MAX_BATCH: usize = MAX_BATCH_TOKENS / 2;

/// The sub-batch sizes `embed_padded` runs.
const BATCH_SIZES: RangeInclusive<usize> = 1..=MAX_BATCH;
/// The padded lengths `embed_padded` runs: `[CLS]` and `[SEP]` at least.
const SEQUENCE_LENGTHS: RangeInclusive<usize> = 2..=MAX_TOKENS;

/// Name of the model's token-id input.
const INPUT_IDS: &str = "input_ids";
/// Name of the model's attention-mask input.
const ATTENTION_MASK: &str = "attention_mask";
/// Name of the model's (optional) segment input; always zeros here.
const TOKEN_TYPE_IDS: &str = "token_type_ids";

/// all-MiniLM-L6-v2 with its tokenizer, ready to embed.
///
/// Cloning is cheap: clones share the loaded model.
#[derive(Clone)]
pub struct MiniLm {
    plan: Arc<TypedRunnableModel>,
    tokenizer: Arc<WordPiece>,
    /// Which graph input each fed tensor goes to, in the plan's input order.
    inputs: Arc<[ModelInput]>,
    dimensions: usize,
    model_id: String,
}

/// One input of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelInput {
    InputIds,
    AttentionMask,
    TokenTypeIds,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("model_id", &self.model_id)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// Loads the model from the bytes of its ONNX file and the text of its
    /// `tokenizer.json`.
    ///
    /// Takes ownership of `onnx` and frees it as soon as it is parsed, so the
    /// file and the loaded model are not both held longer than needed. Fails
    /// with [`Error::InvalidInput`] for a bad tokenizer and [`Error::Model`]
    /// for a model tract cannot load or that does not look like a BERT
    /// encoder (inputs `input_ids`, `attention_mask`, optional
    /// `token_type_ids`; output `[batch, sequence, dimensions]`) whose
    /// vocabulary covers the tokenizer's.
    pub fn from_bytes(onnx: Vec<u8>, tokenizer_json: &str) -> crate::Result<MiniLm> {
        let tokenizer = WordPiece::from_tokenizer_json(tokenizer_json)?;
        let digest = Sha256::digest(&onnx);
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let model_id = format!("all-MiniLM-L6-v2-int8/{hash}/mean/{MAX_TOKENS}");

        // In WebAssembly, tract's f32 products run on memtide's kernel; its
        // registry entries must be linked before tract plans the model.
        #[cfg(target_arch = "wasm32")]
        memtide_wasm_gemm::register();
        let onnx_framework = super::onnx_ops::onnx().with_ignore_value_info(true);
        let mut proto = onnx_framework
            .proto_model_for_read(&mut OwnedBytes(onnx))
            .map_err(|e| model_error("cannot parse the ONNX file", e))?;
        let graph = proto
            .graph
            .as_mut()
            .ok_or_else(|| Error::Model("the ONNX file has no graph".into()))?;
        let vocab_rows = gather_before_dequantize(graph)?;
        // In WebAssembly the int8 products are faster than tract's f32 ones
        // and keep a quarter of the weights' memory. Natively tract's
        // AVX/FMA f32 kernels are several times faster than the portable
        // integer loop, so the graph is left as it is.
        #[cfg(target_arch = "wasm32")]
        int8_matmul::fuse(graph);
        if tokenizer.vocab_size() > vocab_rows {
            return Err(Error::Model(format!(
                "the tokenizer has {} tokens but the model's embedding table only {vocab_rows}",
                tokenizer.vocab_size()
            )));
        }
        let inputs: Arc<[ModelInput]> = graph_inputs(graph)?.into();
        let model = load_model(&onnx_framework, proto, inputs.len())?;
        let dimensions = output_dimensions(&model)?;
        let plan = model
            .into_runnable()
            .map_err(|e| model_error("cannot prepare the model to run", e))?;
        Ok(MiniLm {
            plan,
            tokenizer: Arc::new(tokenizer),
            inputs,
            dimensions,
            model_id,
        })
    }

    /// Loads `model.onnx` and `tokenizer.json` from `dir` (the layout
    /// `scripts/fetch-model.sh` produces). Unreadable files are
    /// [`Error::Model`] errors naming the path.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_dir(dir: &Path) -> crate::Result<MiniLm> {
        let read_error = |path: &Path, e: std::io::Error| {
            Error::Model(format!("cannot read {}: {e}", path.display()))
        };
        let onnx_path = dir.join("model.onnx");
        let onnx = std::fs::read(&onnx_path).map_err(|e| read_error(&onnx_path, e))?;
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_json =
            std::fs::read_to_string(&tokenizer_path).map_err(|e| read_error(&tokenizer_path, e))?;
        MiniLm::from_bytes(onnx, &tokenizer_json)
    }

    /// The token ids fed to the model for `text`: `[CLS] … [SEP]`, at most
    /// [`MAX_TOKENS`].
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, MAX_TOKENS)
    }

    /// Runs the model on texts already tokenized, all of the same length
    /// after padding to the longest, and returns their pooled, normalized
    /// embeddings.
    fn embed_padded(&self, sequences: &[&[u32]]) -> crate::Result<Vec<Vec<f32>>> {
        let batch = sequences.len();
        let length = sequences.iter().map(|ids| ids.len()).max().unwrap_or(0);
        check_run_shape(batch, length)?;
        let mut ids = vec![0i64; batch * length];
        let mut mask = vec![0i64; batch * length];
        for (row, sequence) in sequences.iter().enumerate() {
            for (column, &id) in sequence.iter().enumerate() {
                ids[row * length + column] = i64::from(id);
                mask[row * length + column] = 1;
            }
        }
        let zeros = vec![0i64; batch * length];
        let shape = [batch, length];
        let tensor = |values: &[i64]| {
            Tensor::from_shape(&shape, values).map_err(|e| model_error("cannot build inputs", e))
        };
        let inputs = self
            .inputs
            .iter()
            .map(|input| {
                Ok(match input {
                    ModelInput::InputIds => tensor(&ids)?,
                    ModelInput::AttentionMask => tensor(&mask)?,
                    ModelInput::TokenTypeIds => tensor(&zeros)?,
                }
                .into_tvalue())
            })
            .collect::<crate::Result<TVec<TValue>>>()?;
        let outputs = self
            .plan
            .run(inputs)
            .map_err(|e| model_error("inference failed", e))?;
        let hidden = outputs
            .first()
            .ok_or_else(|| Error::Model("the model returned no output".into()))?;
        let expected_shape = [batch, length, self.dimensions];
        if hidden.shape() != expected_shape {
            return Err(Error::Model(format!(
                "the model returned shape {:?}, expected {expected_shape:?}",
                hidden.shape()
            )));
        }
        let view = hidden
            .try_as_plain_ram()
            .map_err(|e| model_error("cannot read the output", e))?;
        let values = view
            .as_slice::<f32>()
            .map_err(|e| model_error("cannot read the output", e))?;
        Ok(sequences
            .iter()
            .enumerate()
            .map(|(row, sequence)| {
                let rows = &values[row * length * self.dimensions..];
                mean_pool(&rows[..sequence.len() * self.dimensions], self.dimensions)
            })
            .collect())
    }
}

impl Embedder for MiniLm {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Embeds `texts` in sub-batches of similar lengths (at most 1024
    /// tokens after padding, which adds at most a quarter), so a batch of
    /// long texts does not blow up the activations' memory and short texts
    /// are not padded to long ones.
    fn embed_batch(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>> {
        let sequences: Vec<Vec<u32>> = texts.iter().map(|text| self.token_ids(text)).collect();
        let lengths: Vec<usize> = sequences.iter().map(Vec::len).collect();
        let mut embeddings = vec![Vec::new(); sequences.len()];
        for batch in sub_batches(&lengths, MAX_BATCH_TOKENS) {
            let padded: Vec<&[u32]> = batch.iter().map(|&index| &sequences[index][..]).collect();
            for (index, embedding) in batch.into_iter().zip(self.embed_padded(&padded)?) {
                embeddings[index] = embedding;
            }
        }
        Ok(embeddings)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer.count_tokens(text)
    }
}

/// Groups the indices of sequences of the given `lengths` into sub-batches
/// to run together, each padded to its longest sequence: indices in order of
/// length, cut so that a sub-batch holds at most `max_tokens` tokens after
/// padding (unless one sequence alone is longer) and padding adds at most a
/// quarter to its real tokens.
fn sub_batches(lengths: &[usize], max_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&index| lengths[index]);
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut real_tokens = 0;
    for index in order {
        // Lengths ascend, so `length` is the padded length if it joins.
        let length = lengths[index];
        let joins = |batch: &Vec<usize>| {
            let padded = (batch.len() + 1) * length;
            padded <= max_tokens && 4 * padded <= 5 * (real_tokens + length)
        };
        match batches.last_mut() {
            Some(batch) if joins(batch) => {
                batch.push(index);
                real_tokens += length;
            }
            _ => {
                batches.push(vec![index]);
                real_tokens = length;
            }
        }
    }
    batches
}

/// The mean of the `dimensions`-wide rows of `hidden`, L2-normalized.
fn mean_pool(hidden: &[f32], dimensions: usize) -> Vec<f32> {
    let mut sum = vec![0f32; dimensions];
    for row in hidden.chunks_exact(dimensions) {
        for (total, value) in sum.iter_mut().zip(row) {
            *total += value;
        }
    }
    // The mean's scale cancels out in the normalization, but it is kept so
    // the rounding follows the reference (mean, then normalize).
    let count = (hidden.len() / dimensions).max(1) as f32;
    sum.iter_mut().for_each(|value| *value /= count);
    let norm = sum.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        sum.iter_mut().for_each(|value| *value /= norm);
    }
    sum
}

/// Hands owned bytes to tract's reader without copying them: tract reads the
/// whole file into a `Vec` with `read_to_end`, which here just moves ours.
struct OwnedBytes(Vec<u8>);

impl Read for OwnedBytes {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let count = buffer.len().min(self.0.len());
        buffer[..count].copy_from_slice(&self.0[..count]);
        self.0.drain(..count);
        Ok(count)
    }

    fn read_to_end(&mut self, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
        let count = self.0.len();
        if buffer.is_empty() {
            std::mem::swap(buffer, &mut self.0);
        } else {
            buffer.append(&mut self.0);
        }
        Ok(count)
    }
}

/// The graph's inputs, in order; fails unless they are `input_ids`,
/// `attention_mask` and optionally `token_type_ids`.
fn graph_inputs(graph: &GraphProto) -> crate::Result<Vec<ModelInput>> {
    let initializers: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let inputs = graph
        .input
        .iter()
        .filter(|input| !initializers.contains(&input.name.as_str()))
        .map(|input| match input.name.as_str() {
            INPUT_IDS => Ok(ModelInput::InputIds),
            ATTENTION_MASK => Ok(ModelInput::AttentionMask),
            TOKEN_TYPE_IDS => Ok(ModelInput::TokenTypeIds),
            other => Err(Error::Model(format!("unexpected model input `{other}`"))),
        })
        .collect::<crate::Result<Vec<_>>>()?;
    for required in [ModelInput::InputIds, ModelInput::AttentionMask] {
        if !inputs.contains(&required) {
            return Err(Error::Model(format!(
                "the model lacks the input {required:?}"
            )));
        }
    }
    Ok(inputs)
}

/// Turns the parsed graph into an optimized tract model whose `input_count`
/// inputs are `i64` tensors of shape `[batch, sequence]` (symbolic). The
/// protobuf is dropped once tract has its own copy of the weights.
fn load_model(
    onnx_framework: &tract_onnx::Onnx,
    proto: ModelProto,
    input_count: usize,
) -> crate::Result<TypedModel> {
    let mut model = onnx_framework
        .model_for_proto_model(&proto)
        .map_err(|e| model_error("cannot load the ONNX graph", e))?;
    drop(proto);
    let batch = model.symbols.sym("batch");
    let sequence = model.symbols.sym("sequence");
    for assertion in symbol_bounds() {
        model
            .symbols
            .add_assertion(assertion)
            .map_err(|e| model_error("cannot bound the input shapes", e))?;
    }
    for input in 0..input_count {
        let fact = InferenceFact::dt_shape(i64::datum_type(), [batch.to_dim(), sequence.to_dim()]);
        model
            .set_input_fact(input, fact)
            .map_err(|e| model_error("cannot set the input shapes", e))?;
    }
    let mut typed = model
        .into_typed()
        .map_err(|e| model_error("cannot type the model", e))?;
    // tract 0.23.9's `FoldUniformMask` pass miscompiles this export's
    // attention mask: it replaces the always-true `[1, 1, sequence, 1]`
    // operand of an `And` by a `[1, 1, 1, 1]` constant, and the `And` is then
    // folded away, so the mask loses its query axis and the plan fails at run
    // time. Decluttering without that pass keeps the mask intact.
    let mut declutter = Optimizer::declutter();
    declutter
        .passes
        .retain(|pass| !format!("{pass:?}").starts_with("FoldUniformMask"));
    declutter
        .optimize(&mut typed)
        .and_then(|()| typed.optimize())
        .map_err(|e| model_error("cannot optimize the model", e))?;
    Ok(typed)
}

/// What is known of the input shapes `[batch, sequence]`: `embed_padded`
/// runs [`BATCH_SIZES`] sequences of [`SEQUENCE_LENGTHS`] tokens. With these
/// bounds tract can prove that the
/// element-wise operations (residual additions, GELU, layer norms) are large
/// enough for its vectorized by-scalar and unicast kernels and fuses more of
/// them; without them they stay generic broadcasting loops, about a tenth of
/// the run time (`docs/speed.md`).
fn symbol_bounds() -> [String; 4] {
    [
        format!("batch >= {}", BATCH_SIZES.start()),
        format!("batch <= {}", BATCH_SIZES.end()),
        format!("sequence >= {}", SEQUENCE_LENGTHS.start()),
        format!("sequence <= {}", SEQUENCE_LENGTHS.end()),
    ]
}

/// Refuses a run outside [`symbol_bounds`], which the plan was optimized
/// for: outside them its kernel choices are not valid.
fn check_run_shape(batch: usize, length: usize) -> crate::Result<()> {
    if BATCH_SIZES.contains(&batch) && SEQUENCE_LENGTHS.contains(&length) {
        Ok(())
    } else {
        Err(Error::Model(format!(
            "cannot run {batch} sequences of {length} tokens: the plan takes {BATCH_SIZES:?} of {SEQUENCE_LENGTHS:?}"
        )))
    }
}

/// The embedding width: the last axis of the model's only output, which
/// must be `[batch, sequence, dimensions]`.
fn output_dimensions(model: &TypedModel) -> crate::Result<usize> {
    let outlet = match model.outputs.as_slice() {
        [outlet] => *outlet,
        outputs => {
            return Err(Error::Model(format!(
                "the model has {} outputs, expected 1",
                outputs.len()
            )))
        }
    };
    let fact = model
        .outlet_fact(outlet)
        .map_err(|e| model_error("cannot read the output type", e))?;
    let dims = fact.shape.dims();
    match (
        fact.datum_type,
        dims.len(),
        dims.last().and_then(|d| d.to_usize().ok()),
    ) {
        (DatumType::F32, 3, Some(dimensions)) if dimensions > 0 => Ok(dimensions),
        _ => Err(Error::Model(format!(
            "the model's output is {fact:?}, expected f32 [batch, sequence, dimensions]"
        ))),
    }
}

/// Rewrites the word-embedding lookup of `graph` to gather before it
/// dequantizes, and returns the number of rows of the embedding table (the
/// model's vocabulary size).
///
/// The lookup is the `Gather` (axis 0) of `input_ids`. In the int8 export its
/// table is `Mul(Cast<float>(q), scale)` with `q` an int8 `[rows, width]`
/// initializer and `scale` a float `[rows, 1]` one:
///
/// ```text
/// before: Gather(Mul(Cast(q), scale), ids)
/// after:  Mul(Cast(Gather(q, ids)), Gather(scale, ids))
/// ```
///
/// Each output element is the same product of the same two numbers, so the
/// result is bit-identical. The `Cast` and `Mul` are removed when nothing
/// else reads them. A table that is a plain initializer is left alone.
fn gather_before_dequantize(graph: &mut GraphProto) -> crate::Result<usize> {
    let unsupported = |what: &str| Error::Model(format!("unsupported embedding lookup: {what}"));
    let gather_index = graph
        .node
        .iter()
        .position(|node| {
            node.op_type == "Gather" && node.input.get(1).map(String::as_str) == Some(INPUT_IDS)
        })
        .ok_or_else(|| unsupported("no Gather reads input_ids"))?;
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
        return Ok(rows);
    }
    let Dequantized {
        quantized,
        scale,
        cast_output,
    } = int8_matmul::dequantized(graph, &table).ok_or_else(|| {
        unsupported("the table is neither a float initializer nor a dequantized int8 one")
    })?;
    let rows = initializer_rows(&quantized, DataType::Int8, None)
        .ok_or_else(|| unsupported("the int8 table is not a matrix"))?;
    if initializer_rows(&scale, DataType::Float, Some(1)) != Some(rows) {
        return Err(unsupported("the scale is not one float per row"));
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
    let mut cast_rows = node("cast", "Cast", &[&named("q")], &named("f"));
    cast_rows.attribute.push(AttributeProto {
        name: "to".into(),
        r#type: AttributeType::Int as i32,
        i: DataType::Float as i64,
        ..AttributeProto::default()
    });
    let replacement = [
        node("q", "Gather", &[&quantized, INPUT_IDS], &named("q")),
        cast_rows,
        node("scale", "Gather", &[&scale, INPUT_IDS], &named("scale")),
        node(
            "mul",
            "Mul",
            &[&named("f"), &named("scale")],
            &gathered_output,
        ),
    ];
    graph.node.splice(gather_index..=gather_index, replacement);
    int8_matmul::remove_unread(graph, &[table, cast_output]);
    Ok(rows)
}

/// The integer attribute `name` of `node`, if set.
pub(super) fn attribute_int(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// Wraps a tract error with what was being done.
fn model_error(doing: &str, error: impl std::fmt::Display) -> Error {
    Error::Model(format!("{doing}: {error:#}"))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use tract_onnx::pb::{type_proto, OperatorSetIdProto, TensorProto, TypeProto, ValueInfoProto};

    #[test]
    fn sub_batches_bound_tokens_and_padding_and_cover_every_index() {
        let lengths = [3, 256, 10, 9, 11, 256, 256, 8, 2];
        let batches = sub_batches(&lengths, 600);
        assert_eq!(batches, [vec![8, 0], vec![7, 3, 2, 4], vec![1, 5], vec![6]]);
        for batch in &batches {
            let longest = batch.iter().map(|&i| lengths[i]).max().unwrap();
            assert!(batch.len() * longest <= 600);
        }
        // A sequence longer than the bound still runs, alone.
        assert_eq!(sub_batches(&[5, 700], 600), [vec![0], vec![1]]);
        assert!(sub_batches(&[], 600).is_empty());
    }

    #[test]
    fn every_sub_batch_fits_the_bounds_the_plan_was_optimized_for() {
        for length in [2, 3, 17, 128, MAX_TOKENS] {
            for count in [1, 7, MAX_BATCH, 3 * MAX_BATCH] {
                let lengths = vec![length; count];
                for batch in sub_batches(&lengths, MAX_BATCH_TOKENS) {
                    check_run_shape(batch.len(), length).unwrap();
                }
            }
        }
        check_run_shape(MAX_BATCH, 2).unwrap();
        check_run_shape(1, MAX_TOKENS).unwrap();
        for (batch, length) in [
            (0, 2),
            (1, 1),
            (1, 0),
            (MAX_BATCH + 1, 2),
            (1, MAX_TOKENS + 1),
        ] {
            assert!(
                check_run_shape(batch, length).is_err(),
                "{batch} × {length}"
            );
        }
        let bounds = symbol_bounds();
        assert!(bounds.contains(&format!("batch <= {MAX_BATCH}")));
        assert!(bounds.contains(&format!("sequence <= {MAX_TOKENS}")));
    }

    #[test]
    fn mean_pool_averages_rows_then_normalizes() {
        let pooled = mean_pool(&[2.0, 3.0, 4.0, 5.0], 2);
        assert_eq!(pooled, [0.6, 0.8]);
        assert_eq!(mean_pool(&[0.0, 0.0], 2), [0.0, 0.0]);
    }

    /// An initializer of `dims` holding `raw_data`.
    pub(in crate::embed) fn initializer(
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
    pub(in crate::embed) fn value(name: &str, data_type: DataType) -> ValueInfoProto {
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
    pub(in crate::embed) fn cast_to_float(input: &str, output: &str) -> NodeProto {
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
    pub(in crate::embed) fn model_of(opset: i64, graph: GraphProto) -> ModelProto {
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
    pub(in crate::embed) fn binary_node(
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
    fn lookup_model() -> ModelProto {
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
                    binary_node("lookup", "Gather", ["table", INPUT_IDS], "rows"),
                ],
                initializer: vec![
                    initializer("q", &[4, 3], DataType::Int8, quantized),
                    initializer("scale", &[4, 1], DataType::Float, scales),
                ],
                input: vec![value(INPUT_IDS, DataType::Int64)],
                output: vec![value("rows", DataType::Float)],
                ..GraphProto::default()
            },
        )
    }

    /// Runs a lookup model on ids `[[3, 0, 2], [1, 1, 3]]`.
    fn run_lookup(proto: &ModelProto) -> Vec<f32> {
        let model = crate::embed::onnx_ops::onnx()
            .with_ignore_value_info(true)
            .model_for_proto_model(proto)
            .unwrap()
            .with_input_fact(0, InferenceFact::dt_shape(i64::datum_type(), [2, 3]))
            .unwrap();
        let plan = model.into_optimized().unwrap().into_runnable().unwrap();
        let ids = Tensor::from_shape(&[2, 3], &[3i64, 0, 2, 1, 1, 3]).unwrap();
        let output = plan.run(tvec![ids.into_tvalue()]).unwrap();
        let view = output[0].try_as_plain_ram().unwrap();
        view.as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn gathering_before_dequantizing_gives_identical_rows() {
        let original = lookup_model();
        let mut rewritten = original.clone();
        let graph = rewritten.graph.as_mut().unwrap();
        assert_eq!(gather_before_dequantize(graph).unwrap(), 4);
        // The whole-table Cast and Mul are gone.
        assert!(graph
            .node
            .iter()
            .all(|n| !n.input.iter().any(|i| i == "table_f" || i == "table")));
        assert_eq!(graph.node.len(), 4);
        let expected = run_lookup(&original);
        assert_eq!(expected.len(), 18);
        assert_eq!(expected[..3], [2.0 * 3.7, -2.0 * 3.7, 100.0 * 3.7]);
        let got = run_lookup(&rewritten);
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn lookups_of_another_shape_are_refused() {
        let mut model = lookup_model();
        let graph = model.graph.as_mut().unwrap();
        graph.initializer[1].dims = vec![1, 4];
        let error = gather_before_dequantize(graph).unwrap_err();
        assert_eq!(error.code(), "MODEL");
        graph.node.pop();
        let error = gather_before_dequantize(graph).unwrap_err();
        assert!(
            error.to_string().contains("no Gather reads input_ids"),
            "{error}"
        );
    }
}
