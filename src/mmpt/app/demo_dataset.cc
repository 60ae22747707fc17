#include "mmpt/app/demo_dataset.h"

namespace mmpt::app {

// Moved here from the store module; its names are used unqualified.
using namespace mmpt::store;
using namespace mmpt::corpora;

namespace {

// Prepare `inputs` (path, source name) into `out_dir` as the demo does, through `chat_template`
// with `tokenizer` ("": the options').
Result<ingest::PrepareReport> PrepareDemo(
    std::vector<ingest::InputSpec> inputs, const std::string& out_dir,
    const DemoDatasetOptions& options,
    std::string_view chat_template = cost::Defaults::kChatTemplate,
    const std::string& tokenizer = "") {
  ingest::PrepareOptions prepare;
  prepare.chat_template = chat_template;
  prepare.inputs = std::move(inputs);
  prepare.out_dir = out_dir;
  prepare.vision = options.vision;
  prepare.threads = options.threads;
  prepare.progress = options.progress;
  prepare.samples_per_shard = 100;
  MMPT_ASSIGN_OR_RETURN(
      auto loaded,
      ingest::UseTokenizer(tokenizer.empty() ? options.tokenizer_path : tokenizer, prepare));
  return ingest::Prepare(prepare);
}

}  // namespace

Result<DemoDataset> BuildDemoDataset(const DemoDatasetOptions& options) {
  if (options.work_dir.empty()) return Status::InvalidArgument("demo dataset: no work_dir");
  DemoDataset demo;
  SynthOptions synth;
  synth.out_dir = options.work_dir + "/corpus";
  synth.format = ingest::InputFormat::kLlava;
  synth.threads = options.threads;
  synth.profile = "coco";
  synth.samples = options.coco_samples;
  MMPT_ASSIGN_OR_RETURN(demo.coco, Synthesize(synth));
  synth.profile = "mmc4";
  synth.format = ingest::InputFormat::kMmc4;
  synth.samples = options.mmc4_docs;
  synth.image_format = "mix";
  MMPT_ASSIGN_OR_RETURN(demo.mmc4, Synthesize(synth));

  demo.dataset_dir = options.work_dir + "/dataset";
  MMPT_ASSIGN_OR_RETURN(
      demo.prepare,
      PrepareDemo({{demo.coco.path, "coco"}, {demo.mmc4.path, "mmc4"}}, demo.dataset_dir, options));
  return demo;
}

Result<OmniDataset> BuildOmniDataset(const DemoDatasetOptions& options, uint64_t samples) {
  if (options.work_dir.empty()) return Status::InvalidArgument("omni dataset: no work_dir");
  OmniDataset omni;
  SynthOptions synth;
  synth.out_dir = options.work_dir + "/corpus";
  synth.profile = "omni";
  synth.samples = samples;
  synth.metadata_only = true;
  synth.threads = options.threads;
  MMPT_ASSIGN_OR_RETURN(omni.synth, Synthesize(synth));
  omni.dataset_dir = options.work_dir + "/omni-dataset";
  // Speech renders through Qwen2.5-Omni's template and tokenizer (synth writes the latter).
  MMPT_ASSIGN_OR_RETURN(omni.prepare, PrepareDemo({{omni.synth.path, "omni"}}, omni.dataset_dir,
                                                  options, "qwen_omni", omni.synth.tokenizer));
  return omni;
}

Result<Qwen3VlDataset> BuildQwen3VlDataset(const DemoDatasetOptions& options, uint64_t images,
                                           uint64_t videos) {
  if (options.work_dir.empty()) return Status::InvalidArgument("qwen3-vl dataset: no work_dir");
  Qwen3VlDataset demo;
  SynthOptions synth;
  synth.out_dir = options.work_dir + "/corpus";
  synth.metadata_only = true;
  synth.threads = options.threads;
  synth.profile = "coco";
  synth.samples = images;
  MMPT_ASSIGN_OR_RETURN(demo.images, Synthesize(synth));
  synth.profile = "video";
  synth.samples = videos;
  MMPT_ASSIGN_OR_RETURN(demo.videos, Synthesize(synth));
  demo.dataset_dir = options.work_dir + "/qwen3-vl-dataset";
  DemoDatasetOptions qwen3 = options;
  qwen3.vision = "qwen3-vl";
  MMPT_ASSIGN_OR_RETURN(demo.prepare,
                        PrepareDemo({{demo.images.path, "coco"}, {demo.videos.path, "video"}},
                                    demo.dataset_dir, qwen3, "qwen3_vl"));
  return demo;
}

}  // namespace mmpt::app
