// Tokenizer throughput: mmpt against two references on the same texts, in one run, one core each:
// @lenml/tokenizers (JavaScript) and Hugging Face's own `tokenizers` (Rust, native Node bindings,
// `encodeBatch`, RAYON_NUM_THREADS=1), both under Node.js through tests/text/reference_tokenize.js.
// Per corpus (every COCO caption; every mmc4 document, its sentences joined by spaces), texts are
// made distinct; the first WARMUP (at most a tenth) are encoded untimed, then each of the rest is
// encoded once, timed
// (a repeated text would measure the word cache, not the tokenizer). The references' loading and
// I/O are outside their timers. The ids of every timed text must be identical in all three.
//
//   build/release/bench/tokenize_bench [WARMUP] [TOKENIZER_JSON]
#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/subprocess.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/corpora/text_corpus.h"
#include "mmpt/text/tokenizer.h"

namespace {

using namespace mmpt;
using Ids = std::vector<std::vector<text::TokenId>>;

struct Corpus {
  std::string name;
  std::vector<std::string> texts;  // distinct
};

Result<std::vector<Corpus>> BenchCorpora() {
  std::vector<Corpus> corpora(2);
  corpora[0].name = "COCO captions";
  MMPT_ASSIGN_OR_RETURN(
      corpora::CocoCaptions coco,
      corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile)));
  corpora[0].texts = corpora::DistinctTexts(coco.CaptionTexts());
  corpora[1].name = "mmc4 documents";
  MMPT_ASSIGN_OR_RETURN(auto documents,
                        corpora::ReadMmc4Documents(corpora::RealDataPath(corpora::kMmc4DocsFile)));
  std::vector<std::string> joined;
  for (const corpora::Mmc4Document& document : documents) joined.push_back(document.JoinedText());
  corpora[1].texts = corpora::DistinctTexts(joined);
  return corpora;
}

// One reference: its name and the flag reference_tokenize.js selects it by.
struct Reference {
  const char* name;
  const char* flag;
};
constexpr Reference kReferences[] = {{"@lenml/tokenizers (JS)", ""},
                                     {"HF tokenizers (Rust)", "--hf"}};

// Parse one JSON array of ids per line.
Result<Ids> ParseIds(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  Ids ids;
  simdjson::dom::parser parser;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    simdjson::dom::array array;
    if (parser.parse(text.data() + pos, end - pos).get(array)) {
      return Status::Corrupt("{}:{}: not a JSON array of ids", path, ids.size() + 1);
    }
    std::vector<text::TokenId> one;
    for (simdjson::dom::element id : array) {
      int64_t value = 0;
      if (id.get(value)) return Status::Corrupt("{}:{}: not an id", path, ids.size() + 1);
      one.push_back(text::TokenId(value));
    }
    ids.push_back(std::move(one));
    pos = end + 1;
  }
  return ids;
}

// Run `reference` on `texts` (the first `warmup` untimed); its figures, and its ids in `ids`.
Result<corpora::TokenizeStats> RunReference(const Reference& reference,
                                            const std::vector<std::string>& texts, size_t warmup,
                                            const std::string& tokenizer, Ids* ids) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string input =
      (dir / fmt::format("mmpt_tokenize_bench_{}.jsonl", ::getpid())).string();
  const std::string output = input + ".ids";
  MMPT_RETURN_IF_ERROR(corpora::WriteTextsAsJsonLines(texts, input));
  const std::string command = fmt::format(
      "RAYON_NUM_THREADS=1 node {}/tests/text/reference_tokenize.js {} --tokenizer '{}' --bench {} "
      "{} {}",
      MMPT_SOURCE_DIR, reference.flag, tokenizer, warmup, input, output);
  auto run = RunCommand(command);
  std::filesystem::remove(input);
  if (!run.ok()) {
    std::filesystem::remove(output);
    return run.status().WithContext(
        fmt::format("{} failed (needs node and scripts/install-deps.sh)", reference.name));
  }
  auto parsed = ParseIds(output);
  std::filesystem::remove(output);
  MMPT_ASSIGN_OR_RETURN(*ids, std::move(parsed));
  const std::string& printed = *run;
  simdjson::dom::parser parser;
  simdjson::dom::element result;
  corpora::TokenizeStats stats;
  int64_t texts_done = 0, tokens = 0;
  if (parser.parse(printed).get(result) || result["texts"].get(texts_done) ||
      result["tokens"].get(tokens) || result["seconds"].get(stats.seconds)) {
    return Status::Corrupt("{} printed unexpected output: {}", reference.name, printed);
  }
  stats.texts = size_t(texts_done);
  stats.tokens = size_t(tokens);
  return stats;
}

// OK when `theirs` equals `mine` text by text; else names the first text that differs.
Status SameIds(const Corpus& corpus, size_t warmup, const Ids& mine, const Ids& theirs,
               const char* name) {
  if (theirs.size() != mine.size()) {
    return Status::Internal("{}: {} returned ids for {} texts, mmpt for {}", corpus.name, name,
                            theirs.size(), mine.size());
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    if (theirs[i] != mine[i]) {
      return Status::Internal("{}: text {} ({:.60}...): ids differ between mmpt and {}",
                              corpus.name, warmup + i, corpus.texts[warmup + i], name);
    }
  }
  return Status::OK();
}

// The fastest of `repeats` runs of `measure` (each returning its figures and setting `ids`).
template <typename Measure>
Result<corpora::TokenizeStats> Fastest(int repeats, Ids* ids, Measure&& measure) {
  corpora::TokenizeStats best;
  for (int r = 0; r < repeats; ++r) {
    MMPT_ASSIGN_OR_RETURN(corpora::TokenizeStats stats, measure(ids));
    if (r == 0 || stats.seconds < best.seconds) best = stats;
  }
  return best;
}

Status Main(int repeats, const std::string& tokenizer_flag) {
  MMPT_ASSIGN_OR_RETURN(const std::string tokenizer_path, text::FindTokenizer(tokenizer_flag));
  constexpr size_t kMaxWarmup = 1000;
  MMPT_ASSIGN_OR_RETURN(std::vector<Corpus> corpora, BenchCorpora());
  fmt::print(
      "tokenize_bench: distinct texts, the first {} (at most a tenth) of each corpus encoded "
      "untimed, then each other text once, timed; fastest of {} runs from a fresh tokenizer; one "
      "core each; tokenizer {}\n",
      kMaxWarmup, repeats, tokenizer_path);
  for (const Corpus& corpus : corpora) {
    const size_t warmup = std::min(kMaxWarmup, corpus.texts.size() / 10);
    const std::span<const std::string> texts(corpus.texts);
    Ids mine;
    MMPT_ASSIGN_OR_RETURN(corpora::TokenizeStats stats,
                          Fastest(repeats, &mine, [&](Ids* ids) -> Result<corpora::TokenizeStats> {
                            // A fresh tokenizer: its word cache starts empty, as the references'
                            // do.
                            MMPT_ASSIGN_OR_RETURN(auto tokenizer,
                                                  text::LoadTokenizer(tokenizer_path));
                            return corpora::MeasureTokenize(*tokenizer, texts.first(warmup),
                                                            texts.subspan(warmup), ids);
                          }));
    fmt::print("{}: {} distinct texts ({} warm-up, {} timed), {} tokens timed\n", corpus.name,
               corpus.texts.size(), warmup, stats.texts, stats.tokens);
    for (const Reference& reference : kReferences) {
      Ids theirs;
      MMPT_ASSIGN_OR_RETURN(corpora::TokenizeStats ref, Fastest(repeats, &theirs, [&](Ids* ids) {
                              return RunReference(reference, corpus.texts, warmup, tokenizer_path,
                                                  ids);
                            }));
      MMPT_RETURN_IF_ERROR(SameIds(corpus, warmup, mine, theirs, reference.name));
      fmt::print("  {:<24} {:>8.3f} s {:>12.0f} tokens/s   mmpt {:.1f}x faster\n", reference.name,
                 ref.seconds, ref.tokens_per_second(),
                 stats.tokens_per_second() / ref.tokens_per_second());
    }
    fmt::print("  {:<24} {:>8.3f} s {:>12.0f} tokens/s   ids identical in all three\n", "mmpt",
               stats.seconds, stats.tokens_per_second());
  }
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string tokenizer = argc > 2 ? argv[2] : "";
  if (repeats <= 0) {
    std::fprintf(stderr, "usage: tokenize_bench [REPEATS > 0] [TOKENIZER_JSON]\n");
    return 2;
  }
  const Status status = Main(repeats, tokenizer);
  if (!status.ok()) {
    std::fprintf(stderr, "tokenize_bench: error: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
