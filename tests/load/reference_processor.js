#!/usr/bin/env node
// Reference token streams from Hugging Face's own processor, `@huggingface/transformers` (pinned
// in scripts/install-deps.sh, installed with --ignore-scripts), for the loader's parity test:
// AutoProcessor (Qwen2VLProcessor, or --processor Qwen3VLProcessor) loaded offline from a folder
// this script writes, with the given tokenizer.json, a chat template (--template, default
// Qwen2-VL's qwen2_vl_chat_template.jinja beside this file) and a preprocessor_config.json from a
// vision preset of presets/vision. A conversation goes
// through apply_chat_template, then the processor; a document's text (vision markers around an
// <|image_pad|> per image) goes to the processor's steps as is. Images are blank RawImages of
// the given sizes: only their grids matter here (pixels are compared against Pillow elsewhere).
//
//   node tests/load/reference_processor.js --tokenizer PATH/tokenizer.json --vision PRESET.json \
//       [--template TEMPLATE.jinja] [--processor CLASS] IN.jsonl OUT.jsonl
//
// IN.jsonl: one request per line, {"messages": [...]} or {"text": "..."}, with
// "images": [[width, height], ...] in order and, for videos, "videos": [TEXT, ...]: what
// replaces each <|vision_start|><|video_pad|><|vision_end|> in turn (the package has no
// Qwen3-VL video path: the caller computes Qwen3-VL's timestamped expansion). OUT.jsonl: one
// line per request, {"input_ids": [...], "image_grid_thw": [[t, h, w], ...]}.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { createRequire } = require("module");

const root = path.resolve(__dirname, "..", "..");
const requireNpm = createRequire(path.join(root, "third_party", "npm", "package.json"));

function usage(message) {
  process.stderr.write(`reference_processor: ${message}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let tokenizerPath = null;
let visionPath = null;
let templatePath = path.join(__dirname, "qwen2_vl_chat_template.jinja");
let processorClass = "Qwen2VLProcessor";
const files = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--tokenizer") tokenizerPath = args[++i];
  else if (args[i] === "--vision") visionPath = args[++i];
  else if (args[i] === "--template") templatePath = args[++i];
  else if (args[i] === "--processor") processorClass = args[++i];
  else files.push(args[i]);
}
if (!tokenizerPath || !visionPath) usage("--tokenizer PATH and --vision PRESET.json are required");
if (files.length !== 2) usage("expected IN.jsonl OUT.jsonl");

// The model folder AutoProcessor reads: tokenizer, its config with the chat template, and the
// image processor's config from the vision preset.
function writeModel() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mmpt-hf-processor-"));
  const model = path.join(dir, "model");
  fs.mkdirSync(model);
  fs.copyFileSync(tokenizerPath, path.join(model, "tokenizer.json"));
  const configPath = path.join(path.dirname(tokenizerPath), "tokenizer_config.json");
  const config = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
  config.chat_template = fs.readFileSync(templatePath, "utf8").replace(/\n$/, "");
  config.processor_class = processorClass;
  fs.writeFileSync(path.join(model, "tokenizer_config.json"), JSON.stringify(config));
  const rule = JSON.parse(fs.readFileSync(visionPath, "utf8")).resolution;
  fs.writeFileSync(path.join(model, "preprocessor_config.json"), JSON.stringify({
    processor_class: processorClass,
    image_processor_type: "Qwen2VLImageProcessor",
    do_resize: true, do_rescale: true, do_normalize: true, do_convert_rgb: true,
    rescale_factor: 1 / 255,
    image_mean: [0.48145466, 0.4578275, 0.40821073],
    image_std: [0.26862954, 0.26130258, 0.27577711],
    min_pixels: rule.min_pixels, max_pixels: rule.max_pixels,
    patch_size: rule.patch_size, temporal_patch_size: rule.temporal_patch, merge_size: rule.spatial_merge,
  }));
  return { dir, model };
}

async function main() {
  const { AutoProcessor, RawImage, env } = requireNpm("@huggingface/transformers");
  const { dir, model } = writeModel();
  env.allowRemoteModels = false;
  env.localModelPath = dir;
  const processor = await AutoProcessor.from_pretrained(path.basename(model));
  if (processor.constructor.name !== processorClass) {
    throw new Error(`AutoProcessor made a ${processor.constructor.name}, not a ${processorClass}`);
  }
  const requests = fs.readFileSync(files[0], "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
  // A grid depends only on the image's size: each size goes through the image processor once.
  const gridsBySize = new Map();
  const gridOf = async (w, h) => {
    const key = `${w}x${h}`;
    if (!gridsBySize.has(key)) {
      const image = new RawImage(new Uint8ClampedArray(w * h * 3), w, h, 3);
      const { image_grid_thw } = await processor.image_processor(image);
      gridsBySize.set(key, image_grid_thw.tolist()[0].map(Number));
    }
    return gridsBySize.get(key);
  };
  const out = [];
  for (const request of requests) {
    const text = request.messages ? processor.apply_chat_template(request.messages, { tokenize: false }) : request.text;
    // Qwen2VLProcessor's own steps, one image at a time: its image processor treats a list of
    // images as the frames of one (a single grid), so each image goes through it alone, and the
    // text's k-th <|image_pad|> becomes grid_t·grid_h·grid_w / merge² pads, as the processor's
    // _call expands them; then its tokenizer encodes the text.
    const grids = [];
    for (const [w, h] of request.images) grids.push(await gridOf(w, h));
    const merge = processor.image_processor.config.merge_size ** 2;
    let k = 0;
    const expanded = text.replace(/<\|image_pad\|>/g, () => {
      if (k >= grids.length) throw new Error(`more <|image_pad|> than the ${grids.length} images`);
      const [t, gh, gw] = grids[k++];
      return "<|placeholder|>".repeat((t * gh * gw) / merge);
    }).replaceAll("<|placeholder|>", "<|image_pad|>");
    if (k !== grids.length) throw new Error(`${grids.length} images but ${k} <|image_pad|>`);
    const videos = request.videos || [];
    let v = 0;
    const withVideos = expanded.replace(/<\|vision_start\|><\|video_pad\|><\|vision_end\|>/g, () => {
      if (v >= videos.length) throw new Error(`more videos than the ${videos.length} given`);
      return videos[v++];
    });
    if (v !== videos.length) throw new Error(`${videos.length} videos given but ${v} in the text`);
    const { input_ids } = processor.tokenizer(withVideos);
    out.push(JSON.stringify({ input_ids: Array.from(input_ids.data, Number), image_grid_thw: grids }));
  }
  fs.writeFileSync(files[1], out.length > 0 ? out.join("\n") + "\n" : "");
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((error) => {
  process.stderr.write(`reference_processor: ${error.stack || error}\n`);
  process.exit(1);
});
