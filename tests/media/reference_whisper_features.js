#!/usr/bin/env node
// Log-mel features from Hugging Face's own WhisperFeatureExtractor in `@huggingface/transformers`
// (pinned in scripts/install-deps.sh), a second reference for mmpt's log-mel besides
// tests/python/whisper_ref.py: a separate implementation (JavaScript FFT and filter bank).
//
//   node tests/media/reference_whisper_features.js N_MELS CHUNK_SECONDS IN.f32 OUT.f32
//
// IN.f32: mono float32 PCM at 16 kHz, little-endian. OUT.f32: input_features, float32,
// N_MELS × frames, row-major.
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const root = path.resolve(__dirname, "..", "..");
const requireNpm = createRequire(path.join(root, "third_party", "npm", "package.json"));
const { WhisperFeatureExtractor } = requireNpm("@huggingface/transformers");

async function main() {
  const [nMels, chunkSeconds, input, output] = process.argv.slice(2);
  if (!output) {
    process.stderr.write("usage: reference_whisper_features.js N_MELS CHUNK_SECONDS IN OUT\n");
    process.exit(2);
  }
  const rate = 16000, hop = 160;
  const samples = Number(chunkSeconds) * rate;
  const extractor = new WhisperFeatureExtractor({
    feature_size: Number(nMels), sampling_rate: rate, hop_length: hop, n_fft: 400,
    chunk_length: Number(chunkSeconds), n_samples: samples, nb_max_frames: samples / hop,
    padding_value: 0.0,
  });
  const bytes = fs.readFileSync(input);
  const pcm = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const { input_features } = await extractor(pcm);
  fs.writeFileSync(output, Buffer.from(input_features.data.buffer));
}

main().catch((error) => {
  process.stderr.write(`reference_whisper_features: ${error.stack}\n`);
  process.exit(1);
});
