#include "mmpt/text/pre_tokenizer.h"

#include "mmpt/text/utf8.h"

namespace mmpt::text {
namespace {

// One stretch of a piece and whether it is a match of the pattern (after `invert`).
struct Segment {
  uint32_t begin;
  uint32_t end;
  bool is_match;
};

// Find every non-empty match of `regex` in text[begin, end) and describe the piece as a sequence
// of alternating segments, as Hugging Face's Pattern::find_matches does.
Status Segments(const Regex& regex, std::string_view text, uint32_t begin, uint32_t end, bool invert,
                std::vector<Segment>* segments) {
  segments->clear();
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
    if (match_begin > last) segments->push_back({uint32_t(begin + last), uint32_t(begin + match_begin), invert});
    segments->push_back({uint32_t(begin + match_begin), uint32_t(begin + match_end), !invert});
    last = pos = match_end;
  }
  if (last < piece.size()) segments->push_back({uint32_t(begin + last), end, invert});
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

Status PreTokenizer::ApplySplit(const SplitStage& stage, std::string_view text, const std::vector<Piece>& in,
                                std::vector<Piece>* out) const {
  thread_local std::vector<Segment> segments;
  out->clear();
  for (const Piece& piece : in) {
    MMPT_RETURN_IF_ERROR(Segments(stage.regex, text, piece.begin, piece.end, stage.invert, &segments));
    const size_t first = out->size();
    bool merge_next = false;  // MergedWithNext: the last emitted piece waits for its successor
    bool previous_match = false;
    for (const Segment& s : segments) {
      switch (stage.behavior) {
        case SplitBehavior::kRemoved:
          if (!s.is_match) out->push_back({s.begin, s.end, false});
          break;
        case SplitBehavior::kIsolated:
          out->push_back({s.begin, s.end, false});
          break;
        case SplitBehavior::kMergedWithPrevious:
          if (s.is_match && out->size() > first) {
            out->back().end = s.end;
          } else {
            out->push_back({s.begin, s.end, false});
          }
          break;
        case SplitBehavior::kMergedWithNext:
          if (merge_next) {
            out->back().end = s.end;
          } else {
            out->push_back({s.begin, s.end, false});
          }
          merge_next = s.is_match;
          break;
        case SplitBehavior::kContiguous:
          if (s.is_match && previous_match) {
            out->back().end = s.end;
          } else {
            out->push_back({s.begin, s.end, false});
          }
          break;
      }
      previous_match = s.is_match;
    }
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
      MMPT_ASSIGN_OR_RETURN(bool found, byte_level_regex_->Find(subject, pos, &match_begin, &match_end));
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

Status PreTokenizer::Run(std::string_view text, std::vector<Piece>* pieces, std::vector<Piece>* scratch) const {
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
