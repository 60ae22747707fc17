#!/usr/bin/env node
// Reference token ids from @lenml/tokenizers (the pinned npm package under third_party/npm), for
// the parity tests and the tokenizer benchmark. Reads texts as JSON Lines (one JSON string per
// line), writes one JSON array of ids per line, in order.
//
//   node tests/text/reference_tokenize.js --tokenizer PATH/tokenizer.json IN.jsonl OUT.jsonl
//   node tests/text/reference_tokenize.js --tokenizer PATH --bench ROUNDS IN.jsonl
//
// --bench times only the encode loop (texts already in memory, after one warm-up round) and prints
// one JSON line: {"texts", "tokens", "seconds", "tokens_per_second"} for ROUNDS rounds.
// Plain `encode(text)` is used, the reference's default (add_special_tokens = true).
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const root = path.resolve(__dirname, "..", "..");
const requireNpm = createRequire(path.join(root, "third_party", "npm", "package.json"));
const { TokenizerLoader } = requireNpm("@lenml/tokenizers");

function usage(message) {
  process.stderr.write(`reference_tokenize: ${message}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let tokenizerPath = null;
let benchRounds = 0;
const files = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--tokenizer") tokenizerPath = args[++i];
  else if (args[i] === "--bench") benchRounds = Number(args[++i]);
  else files.push(args[i]);
}
if (!tokenizerPath) usage("--tokenizer PATH is required");
if (files.length !== (benchRounds > 0 ? 1 : 2)) usage("expected IN.jsonl [OUT.jsonl]");

const tokenizerJSON = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
const configPath = path.join(path.dirname(tokenizerPath), "tokenizer_config.json");
const tokenizerConfig = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

const texts = fs
  .readFileSync(files[0], "utf8")
  .split("\n")
  .filter((line) => line.length > 0)
  .map((line) => JSON.parse(line))
  .map((item) => (typeof item === "string" ? item : Buffer.from(item.base64, "base64").toString("utf8")));

if (benchRounds > 0) {
  let tokens = 0;
  for (const text of texts) tokens += tokenizer.encode(text).length;  // warm-up round
  const start = process.hrtime.bigint();
  for (let round = 0; round < benchRounds; ++round) {
    for (const text of texts) tokenizer.encode(text);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const total = tokens * benchRounds;
  process.stdout.write(
    JSON.stringify({ texts: texts.length * benchRounds, tokens: total, seconds, tokens_per_second: total / seconds }) + "\n");
} else {
  const out = texts.map((text) => JSON.stringify(tokenizer.encode(text))).join("\n");
  fs.writeFileSync(files[1], out.length > 0 ? out + "\n" : "");
}
