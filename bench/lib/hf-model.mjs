// The model directory transformers.js expects, laid out from memtide's model
// files so both sides run the same ONNX file: config.json,
// tokenizer_config.json, tokenizer.json and onnx/model_quantized.onnx (a
// symbolic link to model.onnx).
import fs from "node:fs";
import path from "node:path";
import { BUILD_DIR } from "./paths.mjs";

/** Name of the model under transformers.js's `env.localModelPath`. */
export const HF_MODEL_NAME = "all-MiniLM-L6-v2-int8";
export const HF_ROOT = path.join(BUILD_DIR, "hf-models");
/** memtide truncates at 256 tokens and does not pad (`docs/design.md`, "Embeddings"). */
const MAX_TOKENS = 256;

// all-MiniLM-L6-v2: a 6-layer BERT, hidden 384, 12 heads, uncased WordPiece.
const CONFIG = {
  architectures: ["BertModel"],
  model_type: "bert",
  hidden_size: 384,
  num_hidden_layers: 6,
  num_attention_heads: 12,
  intermediate_size: 1536,
  hidden_act: "gelu",
  max_position_embeddings: 512,
  type_vocab_size: 2,
  vocab_size: 30522,
  pad_token_id: 0,
};

const TOKENIZER_CONFIG = {
  tokenizer_class: "BertTokenizer",
  do_lower_case: true,
  tokenize_chinese_chars: true,
  strip_accents: null,
  clean_up_tokenization_spaces: true,
  model_max_length: MAX_TOKENS,
  cls_token: "[CLS]",
  sep_token: "[SEP]",
  pad_token: "[PAD]",
  unk_token: "[UNK]",
  mask_token: "[MASK]",
};

/** Lays out the directory (idempotent); returns its root for `env.localModelPath`. */
export function layOutHfModel(memtideModelDir) {
  const dir = path.join(HF_ROOT, HF_MODEL_NAME);
  fs.mkdirSync(path.join(dir, "onnx"), { recursive: true });
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(CONFIG, null, 2));
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(TOKENIZER_CONFIG, null, 2));
  // The shipped tokenizer.json pads to 128 and truncates at 128; memtide does
  // neither (it truncates at 256), so the copy matches memtide's settings.
  const tokenizer = JSON.parse(fs.readFileSync(path.join(memtideModelDir, "tokenizer.json"), "utf8"));
  tokenizer.padding = null;
  tokenizer.truncation = { direction: "Right", max_length: MAX_TOKENS, strategy: "LongestFirst", stride: 0 };
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(tokenizer));
  const link = path.join(dir, "onnx", "model_quantized.onnx");
  fs.rmSync(link, { force: true });
  fs.symlinkSync(path.join(memtideModelDir, "model.onnx"), link);
  return HF_ROOT;
}
