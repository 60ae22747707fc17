#include "mmpt/text/pre_tokenizer.h"

#include "mmpt/text/utf8.h"

namespace mmpt::text {
namespace {

// Call fn(begin, end, is_match) for the alternating segments of text[begin, end) that the
// non-empty matches of `regex` cut it into, as Hugging Face's Pattern::find_matches does.
template <typename Fn>
Status ForEachSegment(const Regex& regex, std::string_view text, uint32_t begin, uint32_t end,
                      bool invert, Fn&& fn) {
  const std::string_view piece = text.substr(begin, end - begin);
  size_t pos = 0, last = 0;
  while (pos <= piece.size()) {
    size_t match_begin = 0, match_end = 0;
    MMPT_ASSIGN_OR_RETURN(bool found, regex.Find(piece, pos, &match_begin, &match_end));
    if (!found) break;
    if (match_end == match_begin) {  // empty match: step over one character
      if (match_end >= piece.size()) break;
      size_t next = match_end;
      DecodeUtf8(piece, &next);
      pos = next;
      continue;
    }
    if (match_begin > last) fn(uint32_t(begin + last), uint32_t(begin + match_begin), invert);
    fn(uint32_t(begin + match_begin), uint32_t(begin + match_end), !invert);
    last = pos = match_end;
  }
  if (last < piece.size()) fn(uint32_t(begin + last), end, invert);
  return Status::OK();
}

}  // namespace

Result<SplitBehavior> ParseSplitBehavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return Status::InvalidArgument("Split behavior '{}' is not supported", name);
}

Status PreTokenizer::ApplySplit(const SplitStage& stage, std::string_view text,
                                const std::vector<Piece>& in, std::vector<Piece>* out) const {
  out->clear();
  for (const Piece& piece : in) {
    const size_t first = out->size();
    bool merge_next = false;  // MergedWithNext: the last emitted piece waits for its successor
    bool previous_match = false;
    auto emit = [&](uint32_t begin, uint32_t end, bool is_match) {
      switch (stage.behavior) {
        case SplitBehavior::kRemoved:
          if (!is_match) out->push_back({begin, end, false});
          break;
        case SplitBehavior::kIsolated: out->push_back({begin, end, false}); break;
        case SplitBehavior::kMergedWithPrevious:
          if (is_match && out->size() > first) {
            out->back().end = end;
          } else {
            out->push_back({begin, end, false});
          }
          break;
        case SplitBehavior::kMergedWithNext:
          if (merge_next) {
            out->back().end = end;
          } else {
            out->push_back({begin, end, false});
          }
          merge_next = is_match;
          break;
        case SplitBehavior::kContiguous:
          if (is_match && previous_match) {
            out->back().end = end;
          } else {
            out->push_back({begin, end, false});
          }
          break;
      }
      previous_match = is_match;
    };
    MMPT_RETURN_IF_ERROR(
        ForEachSegment(stage.regex, text, piece.begin, piece.end, stage.invert, emit));
  }
  return Status::OK();
}

Status PreTokenizer::ApplyByteLevel(std::string_view text, const std::vector<Piece>& in,
                                    std::vector<Piece>* out) const {
  out->clear();
  thread_local std::string prefixed;
  for (const Piece& piece : in) {
    const bool prefix = add_prefix_space_ && (piece.begin == piece.end || text[piece.begin] != ' ');
    if (!byte_level_regex_) {
      out->push_back({piece.begin, piece.end, prefix});
      continue;
    }
    // The GPT-2 regex keeps only its matches (the reference uses String.match), which cover
    // every character of any text.
    std::string_view subject = text.substr(piece.begin, piece.end - piece.begin);
    if (prefix) {
      prefixed.assign(1, ' ');
      prefixed.append(subject);
      subject = prefixed;
    }
    const uint32_t offset = piece.begin - (prefix ? 1 : 0);  // maps subject positions to text
    size_t pos = 0;
    while (pos < subject.size()) {
      size_t match_begin = 0, match_end = 0;
      MMPT_ASSIGN_OR_RETURN(bool found,
                            byte_level_regex_->Find(subject, pos, &match_begin, &match_end));
      if (!found) break;
      if (match_end == match_begin) {
        size_t next = match_end;
        if (next >= subject.size()) break;
        DecodeUtf8(subject, &next);
        pos = next;
        continue;
      }
      if (prefix && match_begin == 0) {
        out->push_back({piece.begin, uint32_t(offset + match_end), true});
      } else {
        out->push_back({uint32_t(offset + match_begin), uint32_t(offset + match_end), false});
      }
      pos = match_end;
    }
  }
  return Status::OK();
}

Status PreTokenizer::Run(std::string_view text, std::vector<Piece>* pieces,
                         std::vector<Piece>* scratch) const {
  pieces->assign(1, Piece{0, uint32_t(text.size()), false});
  for (const SplitStage& stage : splits_) {
    MMPT_RETURN_IF_ERROR(ApplySplit(stage, text, *pieces, scratch));
    pieces->swap(*scratch);
  }
  if (add_prefix_space_ || byte_level_regex_) {
    MMPT_RETURN_IF_ERROR(ApplyByteLevel(text, *pieces, scratch));
    pieces->swap(*scratch);
  }
  return Status::OK();
}

}  // namespace mmpt::text
