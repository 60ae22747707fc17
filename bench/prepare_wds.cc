// Prepare throughput from a WebDataset tar vs from the equivalent LLaVA JSONL + image files (the
// same samples: each pair's image, and its caption as the assistant's turn), one run each, with
// the Qwen3 tokenizer. The tar is `mmpt synth --profile coco --format wds` (real COCO captions
// and sizes, synthetic JPEGs); the JSONL and files are extracted from it.
// Usage: prepare_wds [--coco N] [--threads N] [--dir DIR]
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/ingest/webdataset.h"

namespace fs = std::filesystem;
using namespace mmpt;

namespace {

void Check(const Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "prepare_wds: %s\n", status.ToString().c_str());
  std::exit(1);
}

// Write `tar`'s samples as LLaVA caption records (<out>/pairs.jsonl) and image files; the bytes
// of the images and JSONL written.
uint64_t ExtractToJsonl(const std::string& tar, const std::string& out) {
  auto file = MappedFile::Open(tar);
  Check(file.status());
  auto reader = ingest::WdsReader::Open(file->bytes(), tar);
  Check(reader.status());
  fs::create_directories(out + "/images");
  std::string jsonl;
  uint64_t bytes = 0;
  std::vector<std::string> images;
  while (true) {
    auto next = (*reader)->Next();
    Check(next.status());
    if (!*next) break;
    auto sample = ingest::WdsToSample(**next, tar, &images);
    Check(sample.status());
    const std::string path = "images/" + sample->media[0].path;
    Check(WriteFileAtomic(out + "/" + path, images[0]));
    bytes += images[0].size();
    nlohmann::json record = {{"id", sample->key},
                             {"image", path},
                             {"conversations",
                              {{{"from", "human"}, {"value", "<image>"}},
                               {{"from", "gpt"}, {"value", sample->segments.back().text}}}}};
    jsonl += record.dump() + "\n";
  }
  Check(WriteFileAtomic(out + "/pairs.jsonl", jsonl));
  return bytes + jsonl.size();
}

ingest::PrepareReport Prepare(ingest::PrepareOptions options, const std::string& input,
                              const std::string& out) {
  options.inputs = {{input, "coco"}};
  options.out_dir = out;
  auto report = ingest::Prepare(options);
  Check(report.status());
  return *report;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t coco = 300;
  size_t threads = 2;
  std::string dir = (fs::temp_directory_path() / "mmpt_prepare_wds").string();
  CLI::App app{"prepare from a WebDataset tar vs from JSONL + files"};
  app.add_option("--coco", coco, "COCO caption samples");
  app.add_option("--threads", threads, "prepare threads");
  app.add_option("--dir", dir, "scratch folder (removed first)");
  CLI11_PARSE(app, argc, argv);
  fs::remove_all(dir);
  corpora::SynthOptions synth;
  synth.profile = "coco";
  synth.samples = coco;
  synth.format = ingest::InputFormat::kWebDataset;
  synth.out_dir = dir + "/wds";
  synth.threads = threads;
  auto tar = corpora::Synthesize(synth);
  Check(tar.status());
  const uint64_t jsonl_bytes = ExtractToJsonl(tar->path, dir + "/jsonl");

  ingest::PrepareOptions options;
  options.threads = threads;
  options.progress = false;
  options.on_error = ErrorPolicy::kFail;
  options.samples_per_shard = 100;
  auto tokenizer = ingest::UseTokenizer("", options);
  Check(tokenizer.status());
  const ingest::PrepareReport from_jsonl =
      Prepare(options, dir + "/jsonl/pairs.jsonl", dir + "/ds_jsonl");
  const ingest::PrepareReport from_tar = Prepare(options, tar->path, dir + "/ds_wds");
  if (from_jsonl.samples != from_tar.samples || from_jsonl.text_tokens != from_tar.text_tokens) {
    std::fprintf(stderr, "prepare_wds: the two inputs prepared differently\n");
    return 1;
  }
  const double jsonl_rate = from_jsonl.samples / from_jsonl.seconds;
  const double tar_rate = from_tar.samples / from_tar.seconds;
  std::printf(
      "%llu samples, %llu text tokens, %zu threads\n"
      "JSONL + %llu image files (%.1f MB): %.3f s, %.0f samples/s\n"
      "WebDataset tar (%.1f MB):          %.3f s, %.0f samples/s\n"
      "ratio (tar / JSONL throughput): %.2fx\n",
      static_cast<unsigned long long>(from_tar.samples),
      static_cast<unsigned long long>(from_tar.text_tokens), threads,
      static_cast<unsigned long long>(from_jsonl.samples), jsonl_bytes / 1e6, from_jsonl.seconds,
      jsonl_rate, fs::file_size(tar->path) / 1e6, from_tar.seconds, tar_rate,
      tar_rate / jsonl_rate);
  fs::remove_all(dir);
  return 0;
}
