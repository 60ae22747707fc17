// Tokenizer throughput: mmpt against the reference (@lenml/tokenizers under Node.js) on the same
// texts, in one run, one thread each, per corpus: every COCO caption; every mmc4 document (its
// sentences joined by spaces). Both sides run one untimed warm-up pass, then ROUNDS timed passes
// of the encode loop alone (the reference's loading and I/O are outside its timer).
//
//   build/release/bench/tokenize_bench [ROUNDS] [TOKENIZER_JSON]
#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <simdjson.h>

#include "mmpt/core/subprocess.h"
#include "mmpt/text/corpus.h"
#include "mmpt/text/real_data.h"
#include "mmpt/text/tokenizer.h"

namespace {

using namespace mmpt;

struct Corpus {
  std::string name;
  std::vector<std::string> texts;
};

Result<std::vector<Corpus>> BenchCorpora() {
  std::vector<Corpus> corpora(2);
  corpora[0].name = "COCO captions";
  MMPT_ASSIGN_OR_RETURN(text::CocoCaptions coco,
                        text::ReadCocoCaptions(text::RealDataPath(text::kCocoCaptionsFile)));
  corpora[0].texts = coco.CaptionTexts();
  corpora[1].name = "mmc4 documents";
  MMPT_ASSIGN_OR_RETURN(auto documents,
                        text::ReadMmc4Documents(text::RealDataPath(text::kMmc4DocsFile)));
  for (const text::Mmc4Document& document : documents) {
    corpora[1].texts.push_back(document.JoinedText());
  }
  return corpora;
}

Result<text::TokenizeStats> RunReference(const std::vector<std::string>& texts, const std::string& tokenizer, int rounds) {
  const auto input = std::filesystem::temp_directory_path() / fmt::format("mmpt_tokenize_bench_{}.jsonl", ::getpid());
  MMPT_RETURN_IF_ERROR(text::WriteTextsAsJsonLines(texts, input.string()));
  const std::string command = fmt::format("node {}/tests/text/reference_tokenize.js --tokenizer '{}' --bench {} {}",
                                          MMPT_SOURCE_DIR, tokenizer, rounds, input.string());
  auto run = RunCommand(command);
  std::filesystem::remove(input);
  if (!run.ok()) return run.status().WithContext("reference failed (needs node and scripts/install-deps.sh)");
  const std::string& output = *run;
  simdjson::dom::parser parser;
  simdjson::dom::element result;
  if (parser.parse(output).get(result)) return Status::Corrupt("reference printed no JSON: {}", output);
  text::TokenizeStats stats;
  int64_t texts_done = 0, tokens = 0;
  if (result["texts"].get(texts_done) || result["tokens"].get(tokens) || result["seconds"].get(stats.seconds)) {
    return Status::Corrupt("reference printed unexpected JSON: {}", output);
  }
  stats.texts = size_t(texts_done);
  stats.tokens = size_t(tokens);
  return stats;
}

Status Main(int rounds, const std::string& tokenizer_path) {
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(tokenizer_path));
  MMPT_ASSIGN_OR_RETURN(std::vector<Corpus> corpora, BenchCorpora());
  fmt::print("tokenize_bench: {} rounds per corpus, one thread each, tokenizer {}\n", rounds, tokenizer_path);
  for (const Corpus& corpus : corpora) {
    MMPT_ASSIGN_OR_RETURN(text::TokenizeStats mine, text::MeasureTokenize(*tokenizer, corpus.texts, rounds));
    MMPT_ASSIGN_OR_RETURN(text::TokenizeStats reference, RunReference(corpus.texts, tokenizer_path, rounds));
    if (reference.tokens != mine.tokens) {
      return Status::Internal("{}: token counts differ: mmpt {} vs reference {}", corpus.name, mine.tokens, reference.tokens);
    }
    fmt::print("{}: {} texts, {} tokens per round\n", corpus.name, corpus.texts.size(), mine.tokens / size_t(rounds));
    fmt::print("  {:<30} {:>9.3f} s {:>12.0f} tokens/s\n", "reference (@lenml/tokenizers)", reference.seconds,
               reference.tokens_per_second());
    fmt::print("  {:<30} {:>9.3f} s {:>12.0f} tokens/s\n", "mmpt", mine.seconds, mine.tokens_per_second());
    fmt::print("  speedup: {:.1f}x\n", mine.tokens_per_second() / reference.tokens_per_second());
  }
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string tokenizer = argc > 2 ? argv[2] : text::DefaultTokenizerPath();
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: tokenize_bench [ROUNDS > 0] [TOKENIZER_JSON]\n");
    return 2;
  }
  const Status status = Main(rounds, tokenizer);
  if (!status.ok()) {
    std::fprintf(stderr, "tokenize_bench: error: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
