// `mmpt demo` (what `make demo` runs): the tokenizer's throughput on the demo corpus (distinct
// texts, each encoded once after an untimed warm-up on others), then the
// seed's ablation simulated on the mixed real-data corpus (a built-in profile when
// ../shared/data/real is absent), printed as tables and written to report.html; then a few real
// batches loaded from the prepared real-file sample, with their shapes and timing.
#include <fmt/format.h>

#include <filesystem>
#include <span>

#include "command.h"
#include "mmpt/app/batch_summary.h"
#include "mmpt/app/demo.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/corpora/text_corpus.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::cli {
namespace {

struct DemoOptions {
  uint32_t batches = 3;
  app::DemoOptions sim;
};

Result<std::vector<std::string>> DemoCorpus(std::string* description) {
  const std::string coco = corpora::RealDataPath(corpora::kCocoCaptionsFile);
  const std::string mmc4 = corpora::RealDataPath(corpora::kMmc4DocsFile);
  if (!std::filesystem::exists(coco) || !std::filesystem::exists(mmc4)) {
    *description =
        "generated corpus (../shared/data/real absent): 20000 texts of a 44-word vocabulary, so "
        "nearly every word is a word-cache hit";
    return corpora::DistinctTexts(corpora::GenerateCorpus(20000, 1));
  }
  MMPT_ASSIGN_OR_RETURN(corpora::CocoCaptions captions_file, corpora::ReadCocoCaptions(coco));
  std::vector<std::string> texts = captions_file.CaptionTexts();
  const size_t captions = texts.size();
  MMPT_ASSIGN_OR_RETURN(auto documents, corpora::ReadMmc4Documents(mmc4));
  for (const corpora::Mmc4Document& document : documents) texts.push_back(document.JoinedText());
  *description = fmt::format("{} COCO captions + {} mmc4 documents", captions, documents.size());
  return corpora::DistinctTexts(texts);
}

// The tokenizer section: measured on this machine, printed and kept for the report. Every text
// is distinct and encoded once (a repeated text would measure the word cache); the first tenth
// warms up, untimed.
Result<std::string> TokenizerStats() {
  MMPT_ASSIGN_OR_RETURN(const std::string path, text::FindTokenizer());
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(path));
  std::string description;
  MMPT_ASSIGN_OR_RETURN(std::vector<std::string> texts, DemoCorpus(&description));
  const std::span<const std::string> all(texts);
  const size_t warmup = texts.size() / 10;
  MMPT_ASSIGN_OR_RETURN(
      corpora::TokenizeStats stats,
      corpora::MeasureTokenize(*tokenizer, all.first(warmup), all.subspan(warmup)));
  std::string out;
  out += fmt::format("  tokenizer   {} ({} tokens in vocabulary)\n", path, tokenizer->vocab_size());
  out += fmt::format("  corpus      {}\n", description);
  out += fmt::format(
      "  texts       {} distinct: {} encoded untimed to warm up, then {} timed, each "
      "once\n",
      texts.size(), warmup, stats.texts);
  out += fmt::format("  tokens      {} ({:.2f} bytes/token)\n", stats.tokens,
                     double(stats.bytes) / double(std::max<size_t>(stats.tokens, 1)));
  out += fmt::format("  time        {:.3f} s on one thread\n", stats.seconds);
  out +=
      fmt::format("  throughput  {:.2f} M tokens/s, {:.1f} MB/s\n", stats.tokens_per_second() / 1e6,
                  double(stats.bytes) / std::max(stats.seconds, 1e-9) / 1e6);
  return out;
}

Status Run(DemoOptions& options) {
  MMPT_ASSIGN_OR_RETURN(std::string tokenizer, TokenizerStats());
  fmt::print("mmpt demo: tokenize\n{}\n", tokenizer);
  app::ReportSection section;
  section.id = "tokenizer";
  section.title = "Tokenizer throughput (measured on this machine)";
  section.preformatted = tokenizer;
  options.sim.extra_sections.push_back(section);
  MMPT_ASSIGN_OR_RETURN(std::string text, app::RunDemo(options.sim));
  fmt::print("{}", text);

  // RunDemo prepared a real-file sample under work_dir when the real data is present.
  const std::string dataset = options.sim.work_dir + "/dataset";
  if (!std::filesystem::exists(dataset + "/mmpt.json")) return Status::OK();
  load::PlanStreamConfig config;
  config.planner.layout.seq_len = 4096;
  config.planner.layout.ga = options.batches;
  MMPT_ASSIGN_OR_RETURN(std::string batches,
                        app::LoadAndSummarize(dataset, config, options.batches));
  fmt::print("\nmmpt demo: load {} batches of DP rank 0 from {}\n{}", options.batches, dataset,
             batches);
  return Status::OK();
}

}  // namespace

Command DemoCommand() {
  return {
      "demo",
      "Run the demo: tokenizer throughput, then the seed's ablation simulated on a mixed corpus, "
      "written to report.html",
      [](CLI::App& app) -> Action {
        auto options = std::make_shared<DemoOptions>();
        app.add_option("--batches", options->batches,
                       "Real batches loaded and described at the end")
            ->capture_default_str()
            ->check(CLI::PositiveNumber);
        app.add_option("--report", options->sim.report_path, "Where to write the HTML report")
            ->capture_default_str();
        app.add_option("--steps", options->sim.steps, "Steps simulated per stage")
            ->capture_default_str();
        app.add_flag("--builtin-profile", options->sim.force_builtin_profile,
                     "Use the built-in corpus profile even when ../shared/data/real is present");
        return [options] { return Run(*options); };
      },
  };
}

}  // namespace mmpt::cli
