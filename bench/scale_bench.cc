// Planning at the seed's scale (#43): planning-only corpora of 1M, 10M and 100M samples with a
// realistic mix over 200 sources of uneven size, opened and planned by ranks in their own
// processes, against the baseline of a private copy of the table and the whole corpus costed at
// open (what every rank held before the planning table was mapped).
//
// For each size it prints: disk bytes per sample; open seconds; a rank's private (anonymous)
// memory and the mapped table's resident bytes; seconds per planned step (the seed's step:
// DP 512 × GA 100 × 8192 tokens, ~1M samples); then, for the largest, N ranks opening it at
// once on this node: the sum of their private memory and of their PSS.
//
// The corpora are written by a fast path (store::WritePlanningTable over generated samples:
// what prepare writes, with no shard files behind it); --check prepares a small corpus with
// `mmpt prepare` and checks that the fast path writes the same mmpt.plan, byte for byte, from
// the same samples.
//
// Usage: scale_bench [--samples 1000000,10000000,100000000] [--sources 200] [--ranks 8]
//                    [--baseline-max 10000000] [--steps 7] [--dp 512] [--ga 100] [--dir DIR]
//                    [--check]
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/planning_table.h"

namespace fs = std::filesystem;
using namespace mmpt;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- The corpus: what its samples look like, source by source. ----

enum class Kind { kCaption, kMultiImage, kDocument, kText, kVideo };

// Sources of each kind among 200 and the kind's share of the samples: mostly caption pairs,
// then text, multi-image posts, interleaved documents and a few videos.
struct KindSpec {
  Kind kind;
  const char* name;
  double share_of_sources;
  double share_of_samples;
};
constexpr KindSpec kKinds[] = {{Kind::kCaption, "caption", 0.75, 0.70},
                               {Kind::kText, "text", 0.09, 0.149},
                               {Kind::kMultiImage, "multi", 0.08, 0.08},
                               {Kind::kDocument, "doc", 0.07, 0.07},
                               {Kind::kVideo, "video", 0.01, 0.001}};

struct SourceSpec {
  std::string name;
  Kind kind;
  uint64_t samples;
};

// Sources of uneven size: within a kind, source k weighs 1 / (k + 1)^0.9.
std::vector<SourceSpec> Sources(uint64_t samples, uint32_t count) {
  std::vector<SourceSpec> out;
  uint64_t total = 0;
  for (const KindSpec& kind : kKinds) {
    const uint32_t n = std::max<uint32_t>(1, std::lround(kind.share_of_sources * count));
    double weights = 0;
    for (uint32_t k = 0; k < n; ++k) weights += 1.0 / std::pow(k + 1, 0.9);
    for (uint32_t k = 0; k < n; ++k) {
      const double share = kind.share_of_samples / std::pow(k + 1, 0.9) / weights;
      const uint64_t size = std::max<uint64_t>(1, std::llround(share * samples));
      out.push_back({fmt::format("{}-{:03}", kind.name, k), kind.kind, size});
      total += size;
    }
  }
  // The largest source takes the rounding, so the corpus has exactly `samples`.
  out.front().samples += samples - total;
  return out;
}

// One sample of `kind`, drawn with `rng`, added to `builder`. Sizes are web-scale pretraining
// data's (images mostly at most 640 px, as LAION-style captions are stored): a sample is ~400
// tokens on average, so the seed's step holds about a million (as COCO's pairs make it).
Status AddSample(Kind kind, uint32_t source, std::mt19937_64& rng,
                 cost::SampleTableBuilder& builder) {
  auto uniform = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  auto image = [&](uint32_t largest) {
    const uint32_t w = uniform(224, largest);
    const double aspect = std::exp(std::uniform_real_distribution<double>(-0.5, 0.5)(rng));
    return cost::ImageSize{w, std::max<uint32_t>(56, static_cast<uint32_t>(w * aspect))};
  };
  cost::ImageSize images[8];
  switch (kind) {
    case Kind::kCaption:
      images[0] = image(640);
      return builder.Add(source, uniform(20, 100), {images, 1});
    case Kind::kMultiImage: {
      const uint32_t n = uniform(2, 4);
      for (uint32_t i = 0; i < n; ++i) images[i] = image(448);
      return builder.Add(source, uniform(30, 150), {images, n});
    }
    case Kind::kDocument: {
      const uint32_t n = uniform(2, 6);
      for (uint32_t i = 0; i < n; ++i) images[i] = image(512);
      return builder.Add(source, uniform(200, 1200), {images, n});
    }
    case Kind::kText: return builder.Add(source, uniform(50, 900), {});
    case Kind::kVideo: {
      const uint32_t text = uniform(30, 150);
      const uint32_t fps = uniform(0, 1) == 0 ? 25000 : 30000;
      const cost::VideoItem video{.width = 640,
                                  .height = 360,
                                  .frames = uniform(2, 20) * fps / 1000,
                                  .fps_milli = fps,
                                  .text_position = text / 2};
      return builder.Add(source, text, {}, {}, {{&video, 1}, {}});
    }
  }
  return Status::OK();
}

Result<cost::SampleTable> Generate(const std::vector<SourceSpec>& sources, uint64_t seed) {
  cost::SampleTableBuilder builder;
  for (uint32_t s = 0; s < sources.size(); ++s) {
    builder.AddSource(sources[s].name);
    std::mt19937_64 rng(seed * 1000003 + s);
    for (uint64_t i = 0; i < sources[s].samples; ++i) {
      MMPT_RETURN_IF_ERROR(AddSample(sources[s].kind, s, rng, builder));
    }
  }
  return std::move(builder).Finish();
}

// The manifest of a planning-only corpus: default presets, and its sources' samples listed as
// shards of `per_shard` samples with no files behind them (the planner reads only mmpt.plan).
store::Manifest PlanningOnlyManifest(const cost::SampleTable& table, uint64_t per_shard) {
  store::Manifest manifest;
  manifest.tokenizer = "(planning-only corpus)";
  manifest.vision = cost::Defaults::kVision;
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    for (uint64_t begin = 0, n = 0; begin < table.source_size(s); begin += per_shard, ++n) {
      store::ShardInfo shard;
      shard.source = table.source_names[s];
      shard.stem = fmt::format("{}/{:05}", shard.source, n);
      shard.samples = std::min(per_shard, table.source_size(s) - begin);
      for (const char* suffix : store::kShardSuffixes) shard.files[suffix] = {};
      manifest.shards.push_back(std::move(shard));
    }
  }
  return manifest;
}

// ---- A rank: its own process, opening and planning; what it holds, from /proc. ----

struct Memory {
  uint64_t anonymous_kib = 0;  // private heap and stacks: what the rank holds itself
  uint64_t private_kib = 0;    // Private_Clean + Private_Dirty (a file's pages only it maps)
  uint64_t pss_kib = 0;
  uint64_t table_rss_kib = 0;  // mmpt.plan's resident pages (page cache, shared by ranks)
  uint64_t table_pss_kib = 0;
};

Memory ReadMemory() {
  Memory m;
  std::ifstream rollup("/proc/self/smaps_rollup");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  std::string line;
  while (std::getline(rollup, line)) {
    std::istringstream in(line);
    if (!(in >> key >> value)) continue;
    if (key == "Anonymous:") m.anonymous_kib = value;
    if (key == "Pss:") m.pss_kib = value;
    if (key == "Private_Clean:" || key == "Private_Dirty:") m.private_kib += value;
  }
  std::ifstream smaps("/proc/self/smaps");
  bool in_table = false;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') != std::string::npos && line.find(':') != 1) {
      in_table = line.size() >= 9 && line.ends_with(store::kPlanningTableName);
      continue;
    }
    if (!in_table) continue;
    std::istringstream in(line);
    if (!(in >> key >> value)) continue;
    if (key == "Rss:") m.table_rss_kib += value;
    if (key == "Pss:") m.table_pss_kib += value;
  }
  return m;
}

json MemoryJson(const Memory& m) {
  return {{"anonymous_kib", m.anonymous_kib},
          {"private_kib", m.private_kib},
          {"pss_kib", m.pss_kib},
          {"table_rss_kib", m.table_rss_kib},
          {"table_pss_kib", m.table_pss_kib}};
}

// The step: DP `dp` × GA `ga` packs of 8192 tokens (EP 8), each sample once per step; the
// seed's is DP 512 × GA 100.
load::PlanStreamConfig Step(uint32_t dp, uint32_t ga) {
  load::PlanStreamConfig config;
  config.planner.layout.dp = dp;
  config.planner.layout.ep = 8;
  config.planner.layout.ga = ga;
  config.planner.layout.seq_len = 8192;
  return config;
}

// The baseline's open: the table copied into this process's memory and every sample costed, as
// a rank held them before the planning table was mapped (it also parsed every .meta; this
// copy is faster, so the baseline's open time is a lower bound).
struct Baseline {
  std::shared_ptr<std::vector<uint64_t>> copy;
  cost::SampleTable table;
  cost::CostedSamples costs;
};

// A rank: open `dir` (mmpt's or the baseline's way), plan `steps` steps, print one JSON line;
// with `wait`, print "ready" first and wait for a line on stdin before measuring (so ranks
// opened together are measured together).
int RunRank(const std::string& dir, bool baseline, int steps, const load::PlanStreamConfig& step,
            bool wait) {
  // The loader's open first (store::Dataset, behind DatasetSource and mmpt.Dataset: the
  // manifest and the shard table; no shard is opened until it is read), closed before the
  // planner's is measured.
  double loader_seconds = 0;
  uint64_t loader_kib = 0;
  if (!baseline) {
    const Memory unopened = ReadMemory();
    const auto open_start = Clock::now();
    Result<store::Dataset> reader = store::Dataset::Open(dir);
    loader_seconds = Seconds(open_start);
    if (!reader.ok()) {
      std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
      return 2;
    }
    loader_kib =
        std::max(ReadMemory().anonymous_kib, unopened.anonymous_kib) - unopened.anonymous_kib;
  }
  const Memory before = ReadMemory();
  const auto start = Clock::now();
  std::shared_ptr<load::PlanStream> stream;
  std::unique_ptr<Baseline> old;
  if (baseline) {
    auto mapped = store::OpenPlanningTable(dir);
    auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                              cost::Defaults::kHardware);
    if (!mapped.ok() || !model.ok()) return 2;
    old = std::make_unique<Baseline>();
    const auto bytes = mapped->bytes();
    old->copy = std::make_shared<std::vector<uint64_t>>((bytes.size() + 7) / 8);
    std::memcpy(old->copy->data(), bytes.data(), bytes.size());
    auto copied = cost::SampleTable::FromBytes(
        old->copy, std::as_bytes(std::span<const uint64_t>(*old->copy)).first(bytes.size()),
        "(private copy)");
    if (!copied.ok()) return 2;
    old->table = std::move(*copied);
    auto costs = cost::CostSamples(old->table, *model);
    if (!costs.ok()) return 2;
    old->costs = std::move(*costs);
    auto created = load::PlanStream::Create(old->table, step);
    if (!created.ok()) return 2;
    stream = *created;
  } else {
    auto opened = load::PlanStream::Open(dir, step);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
      return 2;
    }
    stream = *opened;
  }
  const double open_seconds = Seconds(start);
  const Memory opened = ReadMemory();
  json step_seconds = json::array();
  uint64_t samples = 0;
  for (int s = 0; s < steps; ++s) {
    const auto t = Clock::now();
    auto plan = stream->Plan(s);
    if (!plan.ok()) {
      std::fprintf(stderr, "%s\n", plan.status().ToString().c_str());
      return 2;
    }
    step_seconds.push_back(Seconds(t));
    samples = (*plan)->sequences.size();
  }
  const plan::StepStats::Phases phase = stream->LastStats().phase_seconds;
  char go[8];
  if (wait) {
    std::printf("ready\n");
    std::fflush(stdout);
    if (std::fgets(go, sizeof go, stdin) == nullptr) return 2;
  }
  const Memory after = ReadMemory();
  const json out = {{"open_seconds", open_seconds},
                    {"loader_open_seconds", loader_seconds},
                    {"loader_private_kib", loader_kib},
                    {"step_seconds", step_seconds},
                    {"samples_per_step", samples},
                    {"before", MemoryJson(before)},
                    {"opened", MemoryJson(opened)},
                    {"planned", MemoryJson(after)},
                    {"last_step_phases",
                     {{"draw", phase.draw},
                      {"pack", phase.pack},
                      {"cp", phase.cp},
                      {"balance", phase.balance},
                      {"assemble", phase.assemble}}}};
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  // Alive until every rank has measured: a rank that exits early leaves the others its share
  // of the table's pages.
  if (wait && std::fgets(go, sizeof go, stdin) == nullptr) return 2;
  return 0;
}

// "draw 0.41, pack 0.20, ..." from a rank's last_step_phases.
std::string PhaseList(const json& phases) {
  std::string out;
  for (const char* name : {"draw", "pack", "cp", "balance", "assemble"}) {
    out += fmt::format("{}{} {:.3f}", out.empty() ? "" : ", ", name, phases[name].get<double>());
  }
  return out;
}

// Run `ranks` rank processes on `dir` at once; their JSON lines, measured together.
std::vector<json> RunRanks(const std::string& dir, bool baseline, int steps, int ranks, uint32_t dp,
                           uint32_t ga) {
  struct Child {
    pid_t pid;
    FILE* out;
    int in;
  };
  std::vector<Child> children;
  for (int r = 0; r < ranks; ++r) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) std::abort();
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      const std::string steps_arg = std::to_string(steps), dp_arg = std::to_string(dp),
                        ga_arg = std::to_string(ga);
      std::vector<const char*> args = {"scale_bench",     "--rank", dir.c_str(),    "--steps",
                                       steps_arg.c_str(), "--dp",   dp_arg.c_str(), "--ga",
                                       ga_arg.c_str()};
      if (baseline) args.push_back("--baseline");
      args.push_back(nullptr);
      execv("/proc/self/exe", const_cast<char* const*>(args.data()));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    children.push_back({pid, fdopen(from_child[0], "r"), to_child[1]});
  }
  auto read_line = [](FILE* f) {
    std::string line;
    for (int c; (c = std::fgetc(f)) != EOF && c != '\n';) line.push_back(static_cast<char>(c));
    return line;
  };
  for (Child& c : children) {
    if (read_line(c.out) != "ready") std::abort();
  }
  // Every rank measures, then every rank exits.
  for (Child& c : children) {
    if (write(c.in, "\n", 1) != 1) std::abort();
  }
  std::vector<json> out;
  for (Child& c : children) out.push_back(json::parse(read_line(c.out)));
  for (Child& c : children) {
    if (write(c.in, "\n", 1) != 1) std::abort();
  }
  for (Child& c : children) {
    int status = 0;
    waitpid(c.pid, &status, 0);
    std::fclose(c.out);
    close(c.in);
  }
  return out;
}

// ---- The corpora on disk. ----

struct Corpus {
  std::string dir;
  uint64_t samples = 0;
  uint64_t images = 0;
  uint64_t videos = 0;
  uint64_t table_bytes = 0;
  uint64_t manifest_bytes = 0;  // mmpt.json and mmpt.shards
  uint64_t shards = 0;
  double write_seconds = 0;  // generated now (0: reused)
};

Result<Corpus> MakeCorpus(const std::string& root, uint64_t samples, uint32_t sources,
                          uint64_t per_shard) {
  Corpus c;
  c.dir = fmt::format("{}/corpus-{}-{}-{}", root, samples, sources, per_shard);
  c.samples = samples;
  if (!fs::exists(c.dir + "/" + store::kManifestName)) {
    const auto start = Clock::now();
    fs::create_directories(c.dir);
    MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, Generate(Sources(samples, sources), 1));
    MMPT_RETURN_IF_ERROR(
        store::WritePlanningTable(c.dir, table, PlanningOnlyManifest(table, per_shard)));
    c.write_seconds = Seconds(start);
  }
  MMPT_ASSIGN_OR_RETURN(store::Manifest manifest, store::ReadManifest(c.dir));
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, store::OpenPlanningTable(c.dir, manifest));
  c.images = table.num_images();
  c.videos = table.num_videos();
  c.table_bytes = fs::file_size(c.dir + "/" + store::kPlanningTableName);
  c.manifest_bytes = fs::file_size(c.dir + "/" + store::kManifestName) +
                     fs::file_size(c.dir + "/" + store::kShardTableName);
  c.shards = manifest.shards.size();
  return c;
}

// --check: prepare a small corpus with `mmpt prepare`, then write its samples through the fast
// path (generated the same way: each sample's text tokens, images and their positions, taken
// from what prepare recorded per sample) and compare the two mmpt.plan files byte for byte.
Status CheckFastPath(const std::string& root, const std::string& mmpt) {
  const std::string raw = root + "/check-raw", prepared = root + "/check-prepared",
                    fast = root + "/check-fast";
  fs::remove_all(raw);
  fs::remove_all(prepared);
  fs::remove_all(fast);
  fs::create_directories(fast);
  auto run = [](const std::string& command) -> Status {
    if (std::system((command + " > /dev/null").c_str()) != 0) {
      return Status::Internal("failed: {}", command);
    }
    return Status::OK();
  };
  MMPT_RETURN_IF_ERROR(run(fmt::format(
      "{0} synth --profile coco --samples 300 --metadata-only --out {1} && "
      "{0} synth --profile mmc4 --samples 60 --metadata-only --out {1} && "
      "{0} prepare {1}/coco.jsonl {1}/mmc4.jsonl --out {2} --threads 2 --samples-per-shard 50",
      mmpt, raw, prepared)));
  MMPT_ASSIGN_OR_RETURN(store::Dataset dataset, store::Dataset::Open(prepared));
  // The fast path: one Add per sample, source by source, as the generator adds them.
  cost::SampleTableBuilder builder;
  for (const std::string& name : dataset.sources()) builder.AddSource(name);
  for (uint32_t s = 0; s < dataset.sources().size(); ++s) {
    for (uint64_t i = 0; i < dataset.source_size(s); ++i) {
      MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(s, i));
      MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset.Sample(global));
      std::vector<cost::ImageSize> images;
      std::vector<uint32_t> positions;
      for (const store::MediaMeta& m : stored.media()) {
        images.push_back({m.width, m.height});
        positions.push_back(m.text_position);
      }
      MMPT_RETURN_IF_ERROR(builder.Add(s, stored.meta().text_tokens, images, positions));
    }
  }
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, std::move(builder).Finish());
  MMPT_ASSIGN_OR_RETURN(store::Manifest manifest, store::ReadManifest(prepared));
  MMPT_RETURN_IF_ERROR(store::WritePlanningTable(fast, table, std::move(manifest)));
  MMPT_ASSIGN_OR_RETURN(std::string a, ReadFileToString(prepared + "/mmpt.plan"));
  MMPT_ASSIGN_OR_RETURN(std::string b, ReadFileToString(fast + "/mmpt.plan"));
  if (a != b) return Status::Internal("the fast path's mmpt.plan differs from prepare's");
  std::printf(
      "fast path check: %s/mmpt.plan (prepare, %zu bytes) and %s/mmpt.plan (fast path) "
      "are equal, byte for byte\n",
      prepared.c_str(), a.size(), fast.c_str());
  return Status::OK();
}

std::string Mib(uint64_t kib) { return fmt::format("{:.1f} MiB", kib / 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Planning at scale: open time, memory and step time by corpus size"};
  std::vector<uint64_t> sizes{1'000'000, 10'000'000, 100'000'000};
  uint32_t sources = 200;
  int ranks = 8;
  int steps = 7;
  uint32_t dp = 512, ga = 100;
  uint64_t baseline_max = 10'000'000;
  uint64_t per_shard = 1000;
  std::string dir = "/tmp/mmpt-scale";
  std::string mmpt = std::string(MMPT_SOURCE_DIR) + "/build/release/mmpt";
  std::string rank_dir;
  bool baseline = false, check = false;
  app.add_option("--samples", sizes, "corpus sizes")->delimiter(',');
  app.add_option("--sources", sources, "sources per corpus");
  app.add_option("--ranks", ranks, "ranks opening the largest corpus at once");
  app.add_option("--steps", steps,
                 "steps each rank plans (the step reported: the median of those planned once "
                 "the plan cache is full, in the memory of the plans leaving it)");
  app.add_option("--baseline-max", baseline_max, "largest corpus the baseline opens");
  app.add_option("--dp", dp, "data-parallel ranks of the step planned (the seed's: 512)");
  app.add_option("--ga", ga, "micro-steps of the step planned (the seed's: 100)");
  app.add_option("--samples-per-shard", per_shard, "samples per shard in the manifest");
  app.add_option("--dir", dir, "where the corpora are written (kept for the next run)");
  app.add_option("--mmpt", mmpt, "the mmpt binary, for --check");
  app.add_flag("--check", check, "check the fast path against mmpt prepare, byte for byte");
  app.add_option("--rank", rank_dir, "(internal) run one rank on this corpus");
  app.add_flag("--baseline", baseline, "(internal) the rank opens it the baseline's way");
  CLI11_PARSE(app, argc, argv);
  if (!rank_dir.empty()) return RunRank(rank_dir, baseline, steps, Step(dp, ga), true);

  fs::create_directories(dir);
  if (check) {
    Status status = CheckFastPath(dir, mmpt);
    if (!status.ok()) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return 1;
    }
  }
  std::printf(
      "corpora: %u sources of uneven size (caption pairs, text, multi-image posts, "
      "interleaved documents, videos), %llu samples per shard; the seed's step: DP 512 "
      "x GA 100 x 8192 tokens\n",
      sources, static_cast<unsigned long long>(per_shard));
  std::printf("%-12s %-9s %-8s | %-24s | %-30s | %-30s | %s\n", "samples", "disk B/s", "shards",
              "open s: base / mmpt", "private after open: base / mmpt",
              "table mapped (rss, shared)", "steady step s: base / mmpt");
  for (uint64_t n : sizes) {
    auto corpus = MakeCorpus(dir, n, sources, per_shard);
    if (!corpus.ok()) {
      std::fprintf(stderr, "%s\n", corpus.status().ToString().c_str());
      return 1;
    }
    const json mine = RunRanks(corpus->dir, false, steps, 1, dp, ga)[0];
    json base;
    if (n <= baseline_max) base = RunRanks(corpus->dir, true, steps, 1, dp, ga)[0];
    auto private_kib = [](const json& r) {
      return r["opened"]["anonymous_kib"].get<uint64_t>() -
             r["before"]["anonymous_kib"].get<uint64_t>();
    };
    // The steady step: the median of the steps planned once the stream's plan cache is full
    // (each in the memory of the plan leaving it); the last when there are none.
    auto last_step = [](const json& r) {
      std::vector<double> seconds;
      for (const json& s : r["step_seconds"]) seconds.push_back(s.get<double>());
      const size_t full = load::PlanStream::kCachedPlans;
      if (seconds.size() <= full) return seconds.back();
      seconds.erase(seconds.begin(), seconds.begin() + full);
      std::sort(seconds.begin(), seconds.end());
      return seconds[seconds.size() / 2];
    };
    std::printf(
        "%-12llu %-9.1f %-8llu | %-24s | %-30s | %-30s | %s\n", static_cast<unsigned long long>(n),
        static_cast<double>(corpus->table_bytes + corpus->manifest_bytes) / n,
        static_cast<unsigned long long>(corpus->shards),
        base.is_null()
            ? fmt::format("- / {:.3f}", mine["open_seconds"].get<double>()).c_str()
            : fmt::format("{:.3f} / {:.3f} ({:.0f}x)", base["open_seconds"].get<double>(),
                          mine["open_seconds"].get<double>(),
                          base["open_seconds"].get<double>() / mine["open_seconds"].get<double>())
                  .c_str(),
        base.is_null()
            ? fmt::format("- / {}", Mib(private_kib(mine))).c_str()
            : fmt::format("{} / {}", Mib(private_kib(base)), Mib(private_kib(mine))).c_str(),
        fmt::format("{} of {}", Mib(mine["planned"]["table_rss_kib"].get<uint64_t>()),
                    Mib(corpus->table_bytes / 1024))
            .c_str(),
        base.is_null() ? fmt::format("- / {:.3f}", last_step(mine)).c_str()
                       : fmt::format("{:.3f} / {:.3f}", last_step(base), last_step(mine)).c_str());
    std::printf(
        "  %s: %llu images, %llu videos; %llu samples per step; steps %s s (the last: %s); "
        "private after planning %s%s\n",
        corpus->dir.c_str(), static_cast<unsigned long long>(corpus->images),
        static_cast<unsigned long long>(corpus->videos),
        static_cast<unsigned long long>(mine["samples_per_step"].get<uint64_t>()),
        mine["step_seconds"].dump().c_str(), PhaseList(mine["last_step_phases"]).c_str(),
        Mib(mine["planned"]["anonymous_kib"].get<uint64_t>() -
            mine["before"]["anonymous_kib"].get<uint64_t>())
            .c_str(),
        corpus->write_seconds > 0
            ? fmt::format("; written in {:.1f} s", corpus->write_seconds).c_str()
            : "");
    std::printf("  loader open (store::Dataset): %.3f s for %llu shards, private +%s\n",
                mine["loader_open_seconds"].get<double>(),
                static_cast<unsigned long long>(corpus->shards),
                Mib(mine["loader_private_kib"].get<uint64_t>()).c_str());
    std::fflush(stdout);
  }
  // The node: `ranks` processes open the largest corpus at once, plan, and are measured
  // together.
  auto largest = MakeCorpus(dir, sizes.back(), sources, per_shard);
  if (!largest.ok()) return 1;
  const std::vector<json> node = RunRanks(largest->dir, false, 1, ranks, dp, ga);
  uint64_t private_kib = 0, pss_kib = 0, table_pss_kib = 0;
  double open_max = 0;
  for (const json& r : node) {
    private_kib += r["planned"]["private_kib"].get<uint64_t>();
    pss_kib += r["planned"]["pss_kib"].get<uint64_t>();
    table_pss_kib += r["planned"]["table_pss_kib"].get<uint64_t>();
    open_max = std::max(open_max, r["open_seconds"].get<double>());
  }
  std::printf(
      "%d ranks opening %llu samples at once: slowest open %.3f s; after one step, "
      "sum of private %s, sum of PSS %s (of which the mapped table %s: one copy, "
      "%s)\n",
      ranks, static_cast<unsigned long long>(sizes.back()), open_max, Mib(private_kib).c_str(),
      Mib(pss_kib).c_str(), Mib(table_pss_kib).c_str(), Mib(largest->table_bytes / 1024).c_str());
  return 0;
}
