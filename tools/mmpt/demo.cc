// `mmpt demo`: the main job on the embedded default. For now: tokenize a text corpus (the real
// COCO captions and mmc4 documents when ../shared/data/real is there, else a generated one) with
// the default tokenizer and print what was measured.
#include <filesystem>

#include <fmt/format.h>

#include "command.h"
#include "mmpt/text/corpus.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::cli {
namespace {

struct DemoOptions {
  int rounds = 3;
};

Result<std::vector<std::string>> DemoCorpus(std::string* description) {
  const std::string coco = std::string(MMPT_SOURCE_DIR) + "/" + text::kCocoCaptionsPath;
  const std::string mmc4 = std::string(MMPT_SOURCE_DIR) + "/" + text::kMmc4DocsPath;
  if (!std::filesystem::exists(coco) || !std::filesystem::exists(mmc4)) {
    *description = "generated corpus (../shared/data/real absent): 20000 texts";
    return text::GenerateCorpus(20000, 1);
  }
  MMPT_ASSIGN_OR_RETURN(std::vector<std::string> texts, text::ReadCocoCaptions(coco));
  const size_t captions = texts.size();
  MMPT_ASSIGN_OR_RETURN(auto documents, text::ReadMmc4TextLists(mmc4));
  for (const auto& sentences : documents) {
    std::string joined;
    for (const std::string& sentence : sentences) joined += (joined.empty() ? "" : " ") + sentence;
    texts.push_back(std::move(joined));
  }
  *description = fmt::format("{} COCO captions + {} mmc4 documents", captions, documents.size());
  return texts;
}

Status Run(const DemoOptions& options) {
  const std::string path = text::DefaultTokenizerPath();
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(path));
  std::string description;
  MMPT_ASSIGN_OR_RETURN(std::vector<std::string> texts, DemoCorpus(&description));
  MMPT_ASSIGN_OR_RETURN(text::TokenizeStats stats, text::MeasureTokenize(*tokenizer, texts, options.rounds));
  fmt::print("mmpt demo: tokenize\n");
  fmt::print("  tokenizer   {} ({} tokens in vocabulary)\n", path, tokenizer->vocab_size());
  fmt::print("  corpus      {}\n", description);
  fmt::print("  texts       {} ({} rounds)\n", stats.texts, options.rounds);
  fmt::print("  tokens      {} ({:.2f} bytes/token)\n", stats.tokens, double(stats.bytes) / double(std::max<size_t>(stats.tokens, 1)));
  fmt::print("  time        {:.3f} s on one thread\n", stats.seconds);
  fmt::print("  throughput  {:.2f} M tokens/s, {:.1f} MB/s\n", stats.tokens_per_second() / 1e6,
             double(stats.bytes) / std::max(stats.seconds, 1e-9) / 1e6);
  return Status::OK();
}

const bool registered = RegisterCommand({
    "demo",
    "Run the main job on the embedded default (for now: tokenize a text corpus and report)",
    [](CLI::App& app) -> Action {
      auto options = std::make_shared<DemoOptions>();
      app.add_option("--rounds", options->rounds, "Timed passes over the corpus")->capture_default_str()->check(CLI::PositiveNumber);
      return [options] { return Run(*options); };
    },
});

}  // namespace
}  // namespace mmpt::cli
