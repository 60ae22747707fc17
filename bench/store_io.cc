// Store benchmarks, baseline and mmpt from one run, printed with their ratio:
//   1. index build: mmpt's .jsonl.idx (BuildLineIndex + write) vs `wc -l` on the same file;
//   2. random sample reads/s: Dataset::Sample + StoredSample::Read vs a Python reader of the same
//      .jsonl.idx
//      (Energon's method: seek + readline + json.loads, Debian's /usr/bin/python3);
//   3. prepare throughput vs copying the same input bytes (`cp -r` then `sync`).
// Inputs come from ../shared/data/real/ through `mmpt synth` (COCO sizes and captions, mmc4
// documents). Usage: store_io [--index-mb N] [--reads N] [--coco N] [--threads N] [--dir DIR]
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/jsonl_index.h"
#include "mmpt/store/prefetcher.h"

namespace fs = std::filesystem;
using namespace mmpt;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of the calling thread: the shared machine's load does not count against it.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

template <typename Fn>
double BestCpuOf(int rounds, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    double start = ThreadCpuSeconds();
    fn();
    best = std::min(best, ThreadCpuSeconds() - start);
  }
  return best;
}

template <typename Fn>
double BestOf(int rounds, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    auto start = Clock::now();
    fn();
    best = std::min(best, Seconds(start));
  }
  return best;
}

void Check(const Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "store_io: %s\n", status.ToString().c_str());
    std::exit(1);
  }
}

uint64_t DirBytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

const char* kPythonReader = R"PY(
import bisect, json, struct, sys, time
shards = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
begins, files = [], []
total = 0
for jsonl, idx, n in shards:
    begins.append(total); total += int(n)
    files.append((open(jsonl, 'rb'), open(idx, 'rb')))
indices = [int(x) for x in open(sys.argv[2]).read().split()]
start = time.process_time()
checksum = 0
for i in indices:
    s = bisect.bisect_right(begins, i) - 1
    data, idx = files[s]
    idx.seek(8 * (i - begins[s]))
    offset, = struct.unpack('<Q', idx.read(8))
    data.seek(offset)
    sample = json.loads(data.readline())
    checksum += len(sample['segments'])
elapsed = time.process_time() - start
print(len(indices) / elapsed, checksum)
)PY";

}  // namespace

int main(int argc, char** argv) {
  uint64_t index_mb = 256, reads = 200000, coco = 1000;
  size_t threads = 2;
  std::string dir = (fs::temp_directory_path() / "mmpt_store_io").string();
  CLI::App app{"index build, random reads and prepare vs their Python baselines"};
  app.add_option("--index-mb", index_mb, "size of the JSONL the index is built over");
  app.add_option("--reads", reads, "random reads");
  app.add_option("--coco", coco, "COCO caption samples to prepare");
  app.add_option("--threads", threads, "prepare threads");
  app.add_option("--dir", dir, "scratch folder (removed first)");
  CLI11_PARSE(app, argc, argv);
  fs::remove_all(dir);
  fs::create_directories(dir);

  // Inputs: COCO caption pairs (real sizes) and every mmc4 document (seeded COCO sizes).
  corpora::SynthOptions synth;
  synth.out_dir = dir + "/corpus";
  synth.threads = threads;
  synth.profile = "coco";
  synth.samples = coco;
  auto coco_report = corpora::Synthesize(synth);
  Check(coco_report.status());
  synth.profile = "mmc4";
  synth.samples = 0;
  synth.format = ingest::InputFormat::kMmc4;
  auto mmc4_report = corpora::Synthesize(synth);
  Check(mmc4_report.status());

  // 3. prepare vs copy (first, so the dataset it writes serves the read benchmark).
  const uint64_t input_bytes = DirBytes(dir + "/corpus");
  Check(ReadFileToString(coco_report->path).status());  // warm the page cache
  std::string copy_cmd = fmt::format("cp -r {0}/corpus {0}/copy && sync -f {0}/copy", dir);
  double copy_s = BestOf(3, [&] {
    fs::remove_all(dir + "/copy");
    if (std::system(copy_cmd.c_str()) != 0) Check(Status::IOError("cp failed"));
  });
  ingest::PrepareOptions prepare;
  prepare.inputs = {{coco_report->path, "coco"}, {mmc4_report->path, "mmc4"}};
  prepare.out_dir = dir + "/dataset";
  prepare.threads = threads;
  prepare.progress = false;
  prepare.samples_per_shard = 200;
  auto tokenizer = ingest::UseTokenizer("", prepare);
  Check(tokenizer.status());
  ingest::PrepareReport report;
  double prepare_s = BestOf(3, [&] {
    auto result = ingest::Prepare(prepare);
    Check(result.status());
    report = *result;
  });
  ingest::PrepareOptions no_tokens = prepare;  // the same with a trivial tokenizer: I/O + parse
  struct NullTokenizer : text::Tokenizer {
    Result<std::vector<text::TokenId>> Encode(std::string_view) const override {
      return std::vector<text::TokenId>{};
    }
    Result<std::string> Decode(const std::vector<text::TokenId>&) const override {
      return std::string();
    }
    // Every token exists (the chat template's image pad must), all as id 0.
    std::optional<text::TokenId> TokenToId(std::string_view) const override { return 0; }
    size_t vocab_size() const override { return 1; }
  } null_tokenizer;
  no_tokens.tokenizer = &null_tokenizer;
  no_tokens.out_dir = dir + "/dataset_null";
  double prepare_io_s = BestOf(3, [&] { Check(ingest::Prepare(no_tokens).status()); });

  // 1. index build vs wc -l on one large JSONL of real canonical lines.
  std::string lines;
  for (const char* source : {"coco", "mmc4"}) {
    for (const auto& entry : fs::directory_iterator(dir + "/dataset/" + source)) {
      if (entry.path().extension() == ".jsonl") lines += *ReadFileToString(entry.path().string());
    }
  }
  const std::string big = dir + "/big.jsonl";
  {
    std::ofstream out(big, std::ios::binary);
    uint64_t written = 0;
    while (written < index_mb << 20) {
      out << lines;
      written += lines.size();
    }
  }
  auto big_file = MappedFile::Open(big);
  Check(big_file.status());
  uint64_t big_bytes = big_file->size_bytes();
  uint64_t lines_counted = 0;
  std::string wc_cmd = fmt::format("wc -l < {} > {}/wc.out", big, dir);
  double wc_s = BestOf(3, [&] {
    if (std::system(wc_cmd.c_str()) != 0) Check(Status::IOError("wc failed"));
  });
  double index_s = BestOf(3, [&] {
    std::vector<uint64_t> offsets = store::BuildLineIndex(big_file->text());
    lines_counted = offsets.size() - 1;
  });
  double index_write_s = BestOf(3, [&] {
    std::vector<uint64_t> offsets = store::BuildLineIndex(big_file->text());
    std::ofstream(big + ".idx", std::ios::binary) << store::EncodeLineIndex(offsets);
  });
  uint64_t wc_lines = std::stoull(*ReadFileToString(dir + "/wc.out"));
  if (wc_lines != lines_counted) Check(Status::Internal("wc -l {} != {}", wc_lines, lines_counted));

  // 2. random reads: the same indices through mmpt and through the Python reader.
  auto dataset = store::Dataset::Open(dir + "/dataset");
  Check(dataset.status());
  std::vector<uint64_t> indices(reads);
  std::mt19937_64 rng(42);
  for (uint64_t& i : indices) i = rng() % dataset->num_samples();
  {
    std::ofstream list(dir + "/indices.txt");
    for (uint64_t i : indices) list << i << '\n';
    std::ofstream shards(dir + "/shards.tsv");
    for (size_t s = 0; s < dataset->num_shards(); ++s) {
      const std::string base = fmt::format("{}/dataset/{}", dir, dataset->shards().stem(s));
      shards << base << ".jsonl\t" << base << ".jsonl.idx\t" << dataset->shards().samples(s)
             << '\n';
    }
    std::ofstream(dir + "/reader.py") << kPythonReader;
  }
  std::string py_cmd = fmt::format(
      "/usr/bin/python3 {0}/reader.py {0}/shards.tsv {0}/indices.txt > {0}/py.out", dir);
  if (std::system(py_cmd.c_str()) != 0) Check(Status::IOError("python reader failed"));
  double python_rate = std::stod(*ReadFileToString(dir + "/py.out"));
  uint64_t checksum = 0;
  double line_s = BestCpuOf(3, [&] {
    for (uint64_t i : indices) {
      auto stored = dataset->Sample(i);
      Check(stored.status());
      auto line = stored->Line();
      Check(line.status());
      checksum += line->size();
    }
  });
  store::SampleView view;  // one view, its capacity reused read after read
  double read_s = BestCpuOf(3, [&] {
    for (uint64_t i : indices) {
      auto stored = dataset->Sample(i);
      Check(stored.status());
      Check(stored->Read(view));
      checksum += view.segments.size();
    }
  });
  double owned_s = BestCpuOf(3, [&] {
    for (uint64_t i : indices) {
      auto stored = dataset->Sample(i);
      Check(stored.status());
      Check(stored->Read(view));
      store::Sample sample = view.ToSample();
      checksum += sample.segments.size();
    }
  });
  double prefetch_s = BestOf(3, [&] {
    store::Prefetcher prefetcher(*dataset, indices, {.threads = threads});
    while (auto next = prefetcher.Next()) {
      Check(next->status());
      checksum += (*next)->sample.segments.size();
    }
  });

  std::printf("store benchmarks (%s)\n\n", dir.c_str());
  std::printf("%-58s %14s %14s %8s\n", "benchmark", "baseline", "mmpt", "ratio");
  auto mbs = [](uint64_t bytes, double s) { return fmt::format("{:.0f} MB/s", bytes / s / 1e6); };
  std::printf(
      "%-58s %14s %14s %7.2fx\n",
      fmt::format("index {} MB, {} lines: wc -l | BuildLineIndex", big_bytes >> 20, wc_lines)
          .c_str(),
      mbs(big_bytes, wc_s).c_str(), mbs(big_bytes, index_s).c_str(), wc_s / index_s);
  std::printf("%-58s %14s %14s %7.2fx\n", "  same, index written to .idx",
              mbs(big_bytes, wc_s).c_str(), mbs(big_bytes, index_write_s).c_str(),
              wc_s / index_write_s);
  std::printf("%-58s %14s %14s %7.2fx\n",
              fmt::format("random reads (CPU), {} samples: python seek+json.loads | Sample+Read",
                          dataset->num_samples())
                  .c_str(),
              fmt::format("{:.0f}/s", python_rate).c_str(),
              fmt::format("{:.0f}/s", reads / read_s).c_str(), reads / read_s / python_rate);
  std::printf("%-58s %14s %14s %7.2fx\n", "  same, copied into an owning Sample (+ ToSample)",
              fmt::format("{:.0f}/s", python_rate).c_str(),
              fmt::format("{:.0f}/s", reads / owned_s).c_str(), reads / owned_s / python_rate);
  std::printf("%-58s %14s %14s %7.2fx\n", "  same, the line only (zero-copy view, no parse)",
              fmt::format("{:.0f}/s", python_rate).c_str(),
              fmt::format("{:.0f}/s", reads / line_s).c_str(), reads / line_s / python_rate);
  std::printf("%-58s %14s %14s %7.2fx\n",
              fmt::format("  same through Prefetcher, {} threads (wall)", threads).c_str(),
              fmt::format("{:.0f}/s", python_rate).c_str(),
              fmt::format("{:.0f}/s", reads / prefetch_s).c_str(),
              reads / prefetch_s / python_rate);
  std::printf("%-58s %14s %14s %7.2fx\n",
              fmt::format("prepare {} MB ({} samples, {} threads): cp+sync | prepare",
                          input_bytes >> 20, report.samples, threads)
                  .c_str(),
              mbs(input_bytes, copy_s).c_str(), mbs(input_bytes, prepare_s).c_str(),
              copy_s / prepare_s);
  std::printf("%-58s %14s %14s %7.2fx\n", "  same without tokenizing (I/O, parse, probe, zip)",
              mbs(input_bytes, copy_s).c_str(), mbs(input_bytes, prepare_io_s).c_str(),
              copy_s / prepare_io_s);
  std::printf("\n(%llu text tokens; read checksum %llu)\n",
              static_cast<unsigned long long>(report.text_tokens),
              static_cast<unsigned long long>(checksum));
  return 0;
}
