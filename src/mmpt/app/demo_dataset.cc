#include "mmpt/app/demo_dataset.h"

namespace mmpt::app {

// Moved here from the store module; its names are used unqualified.
using namespace mmpt::store;
using namespace mmpt::corpora;

Result<DemoDataset> BuildDemoDataset(const DemoDatasetOptions& options) {
  if (options.work_dir.empty()) return Status::InvalidArgument("demo dataset: no work_dir");
  DemoDataset demo;
  SynthOptions synth;
  synth.out_dir = options.work_dir + "/corpus";
  synth.format = InputFormat::kLlava;
  synth.jobs = options.jobs;
  synth.profile = "coco";
  synth.samples = options.coco_samples;
  MMPT_ASSIGN_OR_RETURN(demo.coco, Synthesize(synth));
  synth.profile = "mmc4";
  synth.format = InputFormat::kMmc4;
  synth.samples = options.mmc4_docs;
  synth.image_format = "mix";
  MMPT_ASSIGN_OR_RETURN(demo.mmc4, Synthesize(synth));

  PrepareOptions prepare;
  prepare.inputs = {{demo.coco.path, "coco"}, {demo.mmc4.path, "mmc4"}};
  prepare.out_dir = options.work_dir + "/dataset";
  prepare.vision_preset = options.vision_preset;
  prepare.jobs = options.jobs;
  prepare.progress = options.progress;
  prepare.samples_per_shard = 100;
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, UseTokenizer(options.tokenizer_path, prepare));
  MMPT_ASSIGN_OR_RETURN(demo.prepare, Prepare(prepare));
  demo.dataset_dir = prepare.out_dir;
  return demo;
}

}  // namespace mmpt::app
