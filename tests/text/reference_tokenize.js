#!/usr/bin/env node
// Reference token ids from the pinned npm packages under third_party/npm, for the parity tests
// and the tokenizer benchmark: `@lenml/tokenizers` (JavaScript, the default) or, with --hf,
// Hugging Face's own `tokenizers` (Rust, prebuilt native Node bindings; `encodeBatch`). Reads
// texts as JSON Lines (one JSON string per line), writes one JSON array of ids per line, in order.
//
//   node tests/text/reference_tokenize.js [--hf] --tokenizer PATH/tokenizer.json IN.jsonl OUT.jsonl
//   node tests/text/reference_tokenize.js [--hf] --tokenizer PATH --bench WARMUP IN.jsonl OUT.jsonl
//
// --bench encodes the first WARMUP texts untimed, then times one pass over the rest (texts already
// in memory; each encoded once; with --hf one `encodeBatch`, reading the ids out after), writes the ids of the timed texts to OUT.jsonl and prints one
// JSON line: {"texts", "tokens", "seconds", "tokens_per_second"}. For one core, run --hf with
// RAYON_NUM_THREADS=1 (tokenize_bench does). Special tokens are added as each package does by
// default (add_special_tokens = true; Qwen's post-processor adds none).
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const root = path.resolve(__dirname, "..", "..");
const requireNpm = createRequire(path.join(root, "third_party", "npm", "package.json"));

function usage(message) {
  process.stderr.write(`reference_tokenize: ${message}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let tokenizerPath = null;
let benchWarmup = -1;
let hf = false;
const files = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--tokenizer") tokenizerPath = args[++i];
  else if (args[i] === "--bench") benchWarmup = Number(args[++i]);
  else if (args[i] === "--hf") hf = true;
  else files.push(args[i]);
}
if (!tokenizerPath) usage("--tokenizer PATH is required");
if (files.length !== 2) usage("expected IN.jsonl OUT.jsonl");
if (Number.isNaN(benchWarmup)) usage("--bench takes the number of warm-up texts");

// {encode(texts) → encodings (async), ids(encodings) → one array of ids per text}.
function lenmlEncoder() {
  const { TokenizerLoader } = requireNpm("@lenml/tokenizers");
  const tokenizerJSON = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
  const configPath = path.join(path.dirname(tokenizerPath), "tokenizer_config.json");
  const tokenizerConfig = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
  const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  return { encode: async (texts) => texts.map((text) => tokenizer.encode(text)), ids: (all) => all };
}

function hfEncoder() {
  const { Tokenizer } = requireNpm("tokenizers");
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  return {
    encode: (texts) => tokenizer.encodeBatch(texts),
    ids: (all) => all.map((encoding) => encoding.getIds()),
  };
}

async function main() {
  const encoder = hf ? hfEncoder() : lenmlEncoder();
  const texts = fs
    .readFileSync(files[0], "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line))
    .map((item) => (typeof item === "string" ? item : Buffer.from(item.base64, "base64").toString("utf8")));
  let ids;
  if (benchWarmup >= 0) {
    await encoder.encode(texts.slice(0, benchWarmup));
    const timed = texts.slice(benchWarmup);
    const start = process.hrtime.bigint();
    const encodings = await encoder.encode(timed);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    ids = encoder.ids(encodings);
    const tokens = ids.reduce((sum, one) => sum + one.length, 0);
    process.stdout.write(
      JSON.stringify({ texts: timed.length, tokens, seconds, tokens_per_second: tokens / seconds }) + "\n");
  } else {
    ids = encoder.ids(await encoder.encode(texts));
  }
  const out = ids.map((one) => JSON.stringify(Array.from(one))).join("\n");
  fs.writeFileSync(files[1], out.length > 0 ? out + "\n" : "");
}

main().catch((error) => {
  process.stderr.write(`reference_tokenize: ${error.stack || error}\n`);
  process.exit(1);
});
