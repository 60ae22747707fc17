// The golden-case runner: every tests/cases/<area>/*.test file is one case, data not C++.
// A case is `key value...` lines (the inputs), a `----` line, then the expected output exactly
// as the runner renders it. `#` starts a comment line. Areas: pack, balance, plan (see
// tests/cases/README.md). Set MMPT_GOLDEN_UPDATE=1 to rewrite the expected outputs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "mmpt/balance/balancer.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/pack/packer.h"
#include "mmpt/plan/planner.h"

namespace mmpt::plan {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::multimap<std::string, std::string> inputs;  // key → rest of the line
  std::string expected;
  std::string Get(const std::string& key, const std::string& fallback = "") const {
    auto it = inputs.find(key);
    return it == inputs.end() ? fallback : it->second;
  }
};

Result<Case> ParseCase(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  Case c;
  std::istringstream in(text);
  std::string line;
  bool in_expected = false;
  while (std::getline(in, line)) {
    if (in_expected) {
      c.expected += line + "\n";
      continue;
    }
    if (line == "----") {
      in_expected = true;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.find(' ');
    c.inputs.emplace(line.substr(0, space),
                     space == std::string::npos ? "" : line.substr(space + 1));
  }
  if (!in_expected) return Status::Corrupt("{}: no '----' line before the expected output", path);
  return c;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// "key=value key=value" → map.
std::map<std::string, std::string> Fields(const std::string& s) {
  std::map<std::string, std::string> out;
  for (const std::string& w : Words(s)) {
    size_t eq = w.find('=');
    if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return out;
}

uint32_t U32(const std::map<std::string, std::string>& f, const std::string& key, uint32_t def) {
  auto it = f.find(key);
  return it == f.end() ? def : static_cast<uint32_t>(std::stoul(it->second));
}

Result<std::string> RunPack(const Case& c) {
  pack::PackConstraints constraints;
  constraints.seq_len = static_cast<uint32_t>(std::stoul(c.Get("seq_len", "8192")));
  constraints.max_samples = static_cast<uint32_t>(std::stoul(c.Get("max_samples", "0")));
  constraints.max_images = static_cast<uint32_t>(std::stoul(c.Get("max_images", "0")));
  MMPT_ASSIGN_OR_RETURN(pack::Algorithm algorithm, pack::ParseAlgorithm(c.Get("algorithm", "bfd")));
  std::vector<pack::PackItem> items;
  for (const std::string& w : Words(c.Get("items"))) {
    size_t colon = w.find(':');
    items.push_back(
        {static_cast<uint32_t>(std::stoul(w.substr(0, colon))),
         colon == std::string::npos ? 0u : static_cast<uint32_t>(std::stoul(w.substr(colon + 1)))});
  }
  auto packing = pack::PackItems(items, constraints, algorithm);
  if (!packing.ok()) return "error " + packing.status().ToString() + "\n";
  std::string out;
  for (size_t p = 0; p < packing->num_packs(); ++p) {
    out += fmt::format("pack {}:", p);
    uint32_t images = 0;
    for (uint32_t i : packing->Pack(p)) {
      out += fmt::format(" {}", i);
      images += items[i].images;
    }
    out += fmt::format(" | tokens {} images {}\n", packing->pack_tokens[p], images);
  }
  pack::PackStats stats = pack::ComputeStats(*packing, constraints.seq_len);
  out += fmt::format("packs {} lower_bound {} efficiency {:.6f}\n", stats.packs,
                     stats.lower_bound_packs, stats.efficiency);
  return out;
}

Result<std::string> RunBalance(const Case& c) {
  auto f = Fields(c.Get("grid"));
  balance::Grid grid{U32(f, "dp", 1),    U32(f, "ga", 1), U32(f, "mbs", 1),
                     U32(f, "group", 1), U32(f, "pp", 1), balance::SyncModel::kMicrostep};
  MMPT_ASSIGN_OR_RETURN(grid.sync,
                        balance::ParseSyncModel(f.count("sync") ? f["sync"] : "microstep"));
  std::vector<balance::PackCost> packs;
  for (const std::string& w : Words(c.Get("packs"))) {
    size_t colon = w.find(':');
    packs.push_back({std::stod(w.substr(0, colon)), std::stod(w.substr(colon + 1))});
  }
  auto assignment = balance::Balance(packs, grid);
  if (!assignment.ok()) return "error " + assignment.status().ToString() + "\n";
  std::string out;
  for (uint32_t r = 0; r < grid.dp; ++r) {
    for (uint32_t m = 0; m < grid.ga; ++m) {
      out += fmt::format("rank {} micro {}:", r, m);
      for (uint32_t k = 0; k < grid.mbs; ++k) {
        out += fmt::format(" {}", (*assignment)[(size_t{r} * grid.ga + m) * grid.mbs + k]);
      }
      out += "\n";
    }
  }
  balance::Estimate e = balance::Evaluate(packs, *assignment, grid);
  std::vector<uint32_t> arrival(packs.size());
  for (uint32_t i = 0; i < arrival.size(); ++i) arrival[i] = i;
  balance::Estimate a = balance::Evaluate(packs, arrival, grid);
  out += fmt::format("step_seconds {:.6g} lower_bound {:.6g} arrival_order {:.6g}\n",
                     e.step_seconds, e.lower_bound_seconds, a.step_seconds);
  return out;
}

Result<std::string> RunPlan(const Case& c) {
  auto f = Fields(c.Get("layout"));
  PlannerConfig config;
  Layout& l = config.layout;
  l.seq_len = U32(f, "seq_len", 8192);
  l.dp = U32(f, "dp", 1);
  l.ep = U32(f, "ep", 1);
  l.pp = U32(f, "pp", 1);
  l.ga = U32(f, "ga", 1);
  l.mbs = U32(f, "mbs", 1);
  MMPT_ASSIGN_OR_RETURN(l.sync, ParseSyncModel(f.count("sync") ? f["sync"] : "microstep"));
  config.seed = std::stoull(c.Get("seed", "0"));
  MMPT_ASSIGN_OR_RETURN(config.overlong, pack::ParseOverlongPolicy(c.Get("overlong", "truncate")));
  config.max_images_per_pack = static_cast<uint32_t>(std::stoul(c.Get("max_images", "0")));
  config.allow_repeat = c.Get("allow_repeat", "no") == "yes";
  std::vector<std::string> models = Words(c.Get("models", "qwen2.5-vl qwen3-30b-a3b b200"));
  if (models.size() != 3) return Status::InvalidArgument("models: vision llm hardware");
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model,
                        cost::CostModel::FromPresets(models[0], models[1], models[2]));
  // sample SOURCE TEXT_TOKENS [WxH ...]
  cost::SampleTableBuilder builder;
  std::map<std::string, uint32_t> sources;
  for (auto [it, end] = c.inputs.equal_range("sample"); it != end; ++it) {
    std::vector<std::string> w = Words(it->second);
    auto [s, inserted] = sources.try_emplace(w.at(0), 0);
    if (inserted) s->second = builder.AddSource(w[0]);
    std::vector<cost::ImageSize> images;
    for (size_t k = 2; k < w.size(); ++k) {
      size_t x = w[k].find('x');
      images.push_back({static_cast<uint32_t>(std::stoul(w[k].substr(0, x))),
                        static_cast<uint32_t>(std::stoul(w[k].substr(x + 1)))});
    }
    MMPT_RETURN_IF_ERROR(
        builder.Add(s->second, static_cast<uint32_t>(std::stoul(w.at(1))), images));
  }
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, std::move(builder).Finish());
  MMPT_ASSIGN_OR_RETURN(cost::CostedSamples costs, cost::CostSamples(table, model));
  auto planner = Planner::Create(table, model, config);
  if (!planner.ok()) return "error " + planner.status().ToString() + "\n";
  std::string out;
  uint32_t steps = static_cast<uint32_t>(std::stoul(c.Get("steps", "1")));
  for (uint32_t step = 0; step < steps; ++step) {
    auto plan = planner->PlanStep();
    if (!plan.ok()) return out + "error " + plan.status().ToString() + "\n";
    MMPT_RETURN_IF_ERROR(plan->Validate());
    for (uint32_t r = 0; r < l.dp; ++r) {
      for (uint32_t m = 0; m < l.ga; ++m) {
        for (uint32_t k = 0; k < l.mbs; ++k) {
          const PlannedPack& p = plan->Pack(r, m, k);
          out += fmt::format("step {} rank {} micro {} slot {}:", step, r, m, k);
          for (const PlannedSequence& s : plan->Sequences(p)) {
            out += fmt::format(" {}:{}({}{}{})", table.source_names[s.source], s.index, s.tokens,
                               s.image_end > s.image_begin
                                   ? fmt::format(" img {}", s.image_end - s.image_begin)
                                   : "",
                               s.truncated ? " truncated" : "");
          }
          out += fmt::format(" | tokens {}\n", p.tokens);
        }
      }
    }
    const StepStats& st = planner->last_stats();
    out += fmt::format(
        "step {}: placed {} carried {} (deferred {}) dropped {} truncated {} efficiency {:.6f}\n",
        step, st.placed, st.carried, st.deferred, st.dropped, st.truncated, st.efficiency);
  }
  return out;
}

std::vector<std::string> CaseFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(MMPT_SOURCE_DIR "/tests/cases", ec)) {
    if (entry.path().extension() == ".test") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(GoldenCasesTest, EveryCaseMatchesItsExpectedOutput) {
  std::vector<std::string> files = CaseFiles();
  ASSERT_GE(files.size(), 6u) << "golden cases missing under tests/cases";
  bool update = std::getenv("MMPT_GOLDEN_UPDATE") != nullptr;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto c = ParseCase(path);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::string area = c->Get("area");
    Result<std::string> got =
        area == "pack"      ? RunPack(*c)
        : area == "balance" ? RunBalance(*c)
        : area == "plan"    ? RunPlan(*c)
                         : Result<std::string>(Status::InvalidArgument("unknown area '{}'", area));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (update) {
      MMPT_CHECK(ReadFileToString(path).ok());
      std::string text = *ReadFileToString(path);
      text = text.substr(0, text.find("\n----\n") + 6) + *got;
      ASSERT_TRUE(WriteFileAtomic(path, text).ok());
      continue;
    }
    EXPECT_EQ(*got, c->expected) << "got:\n" << *got;
  }
}

}  // namespace
}  // namespace mmpt::plan
