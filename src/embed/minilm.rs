//! all-MiniLM-L6-v2 sentence embeddings, run by tract-onnx (pure Rust).
//!
//! [`MiniLm`] loads the int8-weight ONNX export of all-MiniLM-L6-v2 and its
//! `tokenizer.json` once, then embeds texts: WordPiece ids (at most
//! [`MAX_TOKENS`], `[CLS]`/`[SEP]` included) → the transformer's last hidden
//! state → the mean over every token (specials included) → L2 normalization.
//! The result matches the reference stack (Hugging Face tokenizers +
//! onnxruntime) to a cosine of 0.9999 or better.
//!
//! Loading rewrites one spot of the graph
//! ([`super::onnx::rewrites::gather_before_dequantize`]): the export stores the
//! 30522 × 384 word-embedding table as int8 and dequantizes all of it
//! (`Cast` + per-row `Mul`) before the `Gather` that picks the input's rows.
//! tract does not fold that 47 MB constant, so it would be recomputed on every
//! call. The rewrite gathers the int8 rows and their scales first and
//! dequantizes only those; the products are the same, so the output is
//! identical. The int8 rows are gathered here, from the table's codes
//! taken out of the graph ([`WordTable`]), and fed to the plan as an
//! input. The table is left in the file while tract loads the rest and
//! read last (`onnx::stream`, `onnx::word_table`).

use std::ops::RangeInclusive;
#[cfg(not(target_arch = "wasm32"))]
use std::path::Path;
use std::sync::Arc;

use tract_onnx::pb::{GraphProto, ModelProto};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::optim::Optimizer;
use tract_onnx::tract_hir::internal::DimLike;

use super::onnx::stream::OnnxFile;
use super::onnx::word_table::WordTable;
use super::onnx::{self, initializers, int8, rewrites};
use super::{Embedder, WordPiece};
use crate::Error;

/// Longest input the model sees, in tokens, `[CLS]` and `[SEP]` included;
/// longer texts are truncated at the end.
pub const MAX_TOKENS: usize = 256;

/// Largest number of tokens (batch size × padded length) padded together:
/// a sub-batch's sequences are padded to its longest. Each sequence's
/// padded length, and so its embedding to the last bit, depends on it.
const MAX_BATCH_TOKENS: usize = 1024;

/// Largest number of tokens run through the model at once: a sub-batch
/// runs in slices of at most this many tokens, each padded to the
/// sub-batch's length, so its embeddings are the ones of a single run (a
/// sequence's depend on its padded length, not on the rows run beside
/// it). It bounds the activations (attention scores grow with the square
/// of the length), which set the model module's high-water mark once a
/// batch of long texts is embedded (`docs/speed.md`, "Heap per memory").
/// One sequence of the longest length: twice that held two such
/// sequences' activations at once for no faster embedding
/// (`docs/speed.md`, "Sixteenth session").
const MAX_RUN_TOKENS: usize = MAX_TOKENS;

/// Most sequences the plan is prepared to run together: a sub-batch holds
/// at most [`MAX_BATCH_TOKENS`] tokens after padding, and every sequence at
/// least 2 (`[CLS]` and `[SEP]`). Runs take fewer ([`MAX_RUN_TOKENS`]); the
/// bound stays the sub-batch's so that tract plans the model as before.
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
    /// The word-embedding table's codes, when the plan takes the rows of
    /// its input's tokens from memtide ([`ModelInput::WordCodes`]).
    word_table: Option<Arc<WordTable>>,
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
    /// The rows of the word-embedding table for the token ids
    /// ([`rewrites::WORD_CODES`]).
    WordCodes,
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
    /// `tokenizer.json`, as [`MiniLm::from_file`] (the bytes are freed once
    /// the model is loaded).
    pub fn from_bytes(onnx: Vec<u8>, tokenizer_json: &str) -> crate::Result<MiniLm> {
        MiniLm::from_file(onnx, tokenizer_json)
    }

    /// Loads the model from its ONNX file and the text of its
    /// `tokenizer.json`.
    ///
    /// The file is read a window at a time (a host can keep its bytes out
    /// of the model's memory, `onnx::stream`); the weights then go from the
    /// decoded file into tract one at a time (`onnx::initializers`), so the
    /// weights are held about once, not twice. The word table is read from
    /// the file last, once tract has planned the rest (`onnx::word_table`).
    /// Fails with [`Error::InvalidInput`] for a bad tokenizer and
    /// [`Error::Model`] for a model tract cannot load or that does not look
    /// like a BERT encoder (inputs `input_ids`, `attention_mask`, optional
    /// `token_type_ids`; output `[batch, sequence, dimensions]`) whose
    /// vocabulary covers the tokenizer's.
    pub fn from_file(onnx: impl OnnxFile, tokenizer_json: &str) -> crate::Result<MiniLm> {
        let tokenizer = WordPiece::from_tokenizer_json(tokenizer_json)?;
        // In WebAssembly, tract's f32 products run on memtide's kernel; its
        // registry entries must be linked before tract plans the model.
        #[cfg(target_arch = "wasm32")]
        memtide_wasm_gemm::register();
        let onnx_framework = onnx::onnx().with_ignore_value_info(true);
        let onnx::Rewritten {
            mut proto,
            digest,
            lookup,
        } = onnx_framework.decode_rewritten(&onnx, INPUT_IDS)?;
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let model_id = format!("all-MiniLM-L6-v2-int8/{hash}/mean/{MAX_TOKENS}");
        let graph = proto
            .graph
            .as_mut()
            .ok_or_else(|| Error::Model("the ONNX file has no graph".into()))?;
        // In WebAssembly the int8 products are faster than tract's f32 ones
        // and keep a quarter of the weights' memory. Natively tract's
        // AVX/FMA f32 kernels are several times faster than the portable
        // integer loop, so the graph is left as it is.
        #[cfg(target_arch = "wasm32")]
        rewrites::fuse(graph);
        if tokenizer.vocab_size() > lookup.rows {
            return Err(Error::Model(format!(
                "the tokenizer has {} tokens but the model's embedding table only {}",
                tokenizer.vocab_size(),
                lookup.rows
            )));
        }
        let inputs: Arc<[ModelInput]> = graph_inputs(graph)?.into();
        let word_width = lookup.table.as_ref().map(|table| table.width());
        let model = load_model(&onnx_framework, proto, &inputs, word_width)?;
        let dimensions = output_dimensions(&model)?;
        let plan = model
            .into_runnable()
            .map_err(|e| model_error("cannot prepare the model to run", e))?;
        // Read last, into the holes tract's work left (`word_table`).
        let word_table = lookup.table.map(|codes| Arc::new(codes.read(&onnx)));
        Ok(MiniLm {
            plan,
            tokenizer: Arc::new(tokenizer),
            word_table,
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

    /// Runs the model on texts already tokenized, each padded to `length`
    /// (at least its own), and returns their pooled, normalized embeddings.
    fn embed_padded(&self, sequences: &[&[u32]], length: usize) -> crate::Result<Vec<Vec<f32>>> {
        let batch = sequences.len();
        check_run_shape(batch, length)?;
        let mut ids = vec![0i64; batch * length];
        let mut mask = vec![0i64; batch * length];
        for ((ids, mask), sequence) in ids
            .chunks_exact_mut(length)
            .zip(mask.chunks_exact_mut(length))
            .zip(sequences)
        {
            for ((id, present), &token) in ids.iter_mut().zip(mask.iter_mut()).zip(*sequence) {
                *id = i64::from(token);
                *present = 1;
            }
        }
        let zeros = vec![0i64; batch * length];
        let shape = [batch, length];
        let tensor = |values: &[i64]| {
            Tensor::from_shape(&shape, values).map_err(|e| model_error("cannot build inputs", e))
        };
        let word_codes = || {
            let table = self
                .word_table
                .as_ref()
                .ok_or_else(|| Error::Model("the plan takes word codes but has no table".into()))?;
            let codes = table
                .gather(&ids)
                .ok_or_else(|| Error::Model("a token id past the embedding table".into()))?;
            Tensor::from_shape(&[batch, length, table.width()], &codes)
                .map_err(|e| model_error("cannot build inputs", e))
        };
        let inputs = self
            .inputs
            .iter()
            .map(|input| {
                Ok(match input {
                    ModelInput::InputIds => tensor(&ids)?,
                    ModelInput::AttentionMask => tensor(&mask)?,
                    ModelInput::TokenTypeIds => tensor(&zeros)?,
                    ModelInput::WordCodes => word_codes()?,
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
            let length = padded.iter().map(|ids| ids.len()).max().unwrap_or(0);
            let per_run = (MAX_RUN_TOKENS / length.max(1)).max(1);
            for (run, indices) in padded.chunks(per_run).zip(batch.chunks(per_run)) {
                for (&index, embedding) in indices.iter().zip(self.embed_padded(run, length)?) {
                    embeddings[index] = embedding;
                }
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
            rewrites::WORD_CODES => Ok(ModelInput::WordCodes),
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

/// Turns the parsed graph into an optimized tract model whose `inputs` are
/// `i64` tensors of shape `[batch, sequence]` (symbolic), but the word
/// codes, `i8` of shape `[batch, sequence, word_width]`. The protobuf's
/// weights are freed as tract takes its own copies.
fn load_model(
    onnx_framework: &tract_onnx::Onnx,
    proto: ModelProto,
    inputs: &[ModelInput],
    word_width: Option<usize>,
) -> crate::Result<TypedModel> {
    let mut model = initializers::parse(onnx_framework, proto)
        .and_then(|mut parsed| {
            int8::load_weights(&mut parsed)?;
            parsed.into_model()
        })
        .map_err(|e| model_error("cannot load the ONNX graph", e))?;
    let batch = model.symbols.sym("batch");
    let sequence = model.symbols.sym("sequence");
    for assertion in symbol_bounds() {
        model
            .symbols
            .add_assertion(assertion)
            .map_err(|e| model_error("cannot bound the input shapes", e))?;
    }
    for (index, input) in inputs.iter().enumerate() {
        let fact = match (input, word_width) {
            (ModelInput::WordCodes, Some(width)) => InferenceFact::dt_shape(
                i8::datum_type(),
                [batch.to_dim(), sequence.to_dim(), width.to_dim()],
            ),
            (ModelInput::WordCodes, None) => {
                return Err(Error::Model("word codes without a table".into()))
            }
            _ => InferenceFact::dt_shape(i64::datum_type(), [batch.to_dim(), sequence.to_dim()]),
        };
        model
            .set_input_fact(index, fact)
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
/// them; without them they stay generic broadcasting loops
/// (`docs/speed.md`, "Where the time goes").
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

/// Wraps a tract error with what was being done.
fn model_error(doing: &str, error: impl std::fmt::Display) -> Error {
    Error::Model(format!("{doing}: {error:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    use crate::embed::onnx::tests::{node, one_node};

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

    /// A model with an operator the registry lacks fails to load, before
    /// anything runs.
    #[test]
    fn a_model_with_an_operator_outside_the_registry_is_a_model_error() {
        let proto = one_node(17, node("Relu", &["x"], &["y"], vec![]), vec![]);
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
}
