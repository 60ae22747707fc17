#include "mmpt/store/sample_reader.h"

#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "mmpt/media/audio.h"

namespace mmpt::store {
namespace {

// Eight bytes at a time: the high bit of each byte of the result is set for a '"', a '\\' or
// a control character (< 0x20) in `word`. Bits above the first hit may be spurious (borrows),
// the lowest one never is, and only the lowest is used.
inline uint64_t StringSpecialBytes(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  auto zero_bytes = [&](uint64_t x) { return (x - kOnes) & ~x & kHighs; };
  return zero_bytes(word ^ (kOnes * '"')) | zero_bytes(word ^ (kOnes * '\\')) |
         ((word - kOnes * 0x20) & ~word & kHighs);
}

// The first '"', '\\' or control character in [p, end), or end. 16 bytes at a time with
// SSE2 (every x86-64 CPU has it), else 8 at a time in a word; never reads past `end`.
inline const char* FindStringSpecial(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control_max = _mm_set1_epi8(0x1F);
  for (; end - p >= 16; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(bytes, control_max), bytes);
    const __m128i hits = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)), control);
    if (const int mask = _mm_movemask_epi8(hits)) return p + std::countr_zero(unsigned(mask));
  }
#endif
  if constexpr (std::endian::native == std::endian::little) {
    for (; end - p >= 8; p += 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if (uint64_t hits = StringSpecialBytes(word)) return p + std::countr_zero(hits) / 8;
    }
  }
  for (; p < end; ++p) {
    auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20) return p;
  }
  return end;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at `p` (bounds checked by the caller) as a UTF-16 code unit, or -1.
int32_t Hex4(const char* p) {
  int32_t unit = 0;
  for (int i = 0; i < 4; ++i) {
    int digit = HexDigit(p[i]);
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

void AppendUtf8(uint32_t cp, std::vector<char>& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decode the JSON escapes of `raw` (a string's bytes between its quotes) onto `out`.
// Returns false for an invalid escape or an unpaired UTF-16 surrogate.
bool Unescape(std::string_view raw, std::vector<char>& out) {
  size_t i = 0;
  while (i < raw.size()) {
    size_t slash = raw.find('\\', i);
    if (slash == std::string_view::npos) slash = raw.size();
    out.insert(out.end(), raw.data() + i, raw.data() + slash);
    if (slash == raw.size()) break;
    if (slash + 1 >= raw.size()) return false;
    const char kind = raw[slash + 1];
    i = slash + 2;
    switch (kind) {
      case '"':
      case '\\':
      case '/': out.push_back(kind); continue;
      case 'b': out.push_back('\b'); continue;
      case 'f': out.push_back('\f'); continue;
      case 'n': out.push_back('\n'); continue;
      case 'r': out.push_back('\r'); continue;
      case 't': out.push_back('\t'); continue;
      case 'u': break;
      default: return false;
    }
    if (raw.size() - i < 4) return false;
    int32_t unit = Hex4(raw.data() + i);
    i += 4;
    if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
    uint32_t cp = static_cast<uint32_t>(unit);
    if (unit >= 0xD800 && unit <= 0xDBFF) {  // a high surrogate: its low half must follow
      if (raw.size() - i < 6 || raw[i] != '\\' || raw[i + 1] != 'u') return false;
      int32_t low = Hex4(raw.data() + i + 2);
      if (low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + static_cast<uint32_t>(low - 0xDC00);
      i += 6;
    }
    AppendUtf8(cp, out);
  }
  return true;
}

// Reads one canonical line in the layout AppendSampleJson writes (its field order, no
// whitespace), never past its end. Matching that layout literal by literal, rather than
// parsing any JSON object and dispatching on its keys, is what makes reads fast: keys are
// never scanned. Steps return false after storing the error in error_; no Status is built on
// the good path.
class LineScanner {
 public:
  LineScanner(std::string_view line, SampleView& out, std::vector<char>& arena)
      : begin_(line.data()),
        p_(line.data()),
        end_(line.data() + line.size()),
        out_(out),
        arena_(arena) {}

  Status Record() {
    bool ok = Expect("{\"key\":") && String("key", out_.key) && Expect(",\"source\":") &&
              String("source", out_.source) && Expect(",\"segments\":[") &&
              List([&] { return Segment(); }) && Expect(",\"media\":[") &&
              List([&] { return Media(); }) && Expect("}");
    if (!ok) return std::move(error_);
    if (p_ != end_) return Status::Corrupt("bytes after the record at column {}", Column());
    // Adapters always give a key (else "<file>:<line>"), so an empty one is damage.
    if (out_.key.empty()) return Status::Corrupt("the record's key is empty");
    return Status::OK();
  }

 private:
  size_t Column() const { return static_cast<size_t>(p_ - begin_) + 1; }

  // Store a Corrupt error and return false. Failures are rare: out of line and cold, so the
  // good path neither formats nor makes room for formatting.
  template <typename... Args>
  [[gnu::cold, gnu::noinline]] bool Corrupt(fmt::format_string<Args...> format, Args&&... args) {
    error_ = Status::Corrupt(format, std::forward<Args>(args)...);
    return false;
  }

  // The layout wanted `expected` here: name it, the column and what is there instead.
  [[gnu::cold, gnu::noinline]] bool Syntax(std::string_view expected) {
    if (p_ == end_) {
      return Corrupt("not a canonical record: the line ends where '{}' was expected", expected);
    }
    const std::string_view found(p_, std::min<size_t>(end_ - p_, 16));
    return Corrupt("not a canonical record: '{}' expected at column {}, found '{}'", expected,
                   Column(), found);
  }

  // Consume the string literal `literal` if the line continues with it. Its length is a
  // constant, so the comparison compiles to a few loads rather than a call to memcmp.
  template <size_t N>
  bool Literal(const char (&literal)[N]) {
    constexpr size_t kLength = N - 1;
    if (static_cast<size_t>(end_ - p_) < kLength || std::memcmp(p_, literal, kLength) != 0) {
      return false;
    }
    p_ += kLength;
    return true;
  }

  template <size_t N>
  bool Expect(const char (&literal)[N]) {
    return Literal(literal) || Syntax(std::string_view(literal, N - 1));
  }

  // Items up to the closing ']' (the '[' is consumed), each read by read_item.
  template <typename ReadItem>
  bool List(ReadItem&& read_item) {
    if (Literal("]")) return true;
    do {
      if (!read_item()) return false;
    } while (Literal(","));
    return Expect("]");
  }

  // A string value: a view into the line when it has no escapes (the usual case: canonical
  // lines escape only quotes, backslashes and control characters), else the unescaped copy.
  bool String(std::string_view what, std::string_view& out) {
    if (!Literal("\"")) return Corrupt("{} is not a string at column {}", what, Column());
    const char* start = p_;
    bool escaped = false;
    while (true) {
      p_ = FindStringSpecial(p_, end_);
      if (p_ == end_) return Syntax("\"");
      if (*p_ == '"') break;
      if (*p_ != '\\') {
        return Corrupt("not valid JSON: an unescaped control character in {} at column {}", what,
                       Column());
      }
      escaped = true;
      // Skip the escaped byte (Unescape checks it); a backslash that ends the line leaves
      // nothing to skip.
      if (end_ - p_ < 2) {
        p_ = end_;
        return Syntax("\"");
      }
      p_ += 2;
    }
    const std::string_view raw(start, static_cast<size_t>(p_++ - start));
    if (!escaped) {
      out = raw;
      return true;
    }
    // Capacity was reserved for the whole line and unescaping never lengthens a string, so
    // this never moves the copies made before.
    const size_t at = arena_.size();
    if (!Unescape(raw, arena_)) {
      return Corrupt("{} has an invalid escape sequence before column {}", what, Column());
    }
    out = std::string_view(arena_.data() + at, arena_.size() - at);
    return true;
  }

  // A JSON integer in [min, max]; fractions, exponents, signs and leading zeros are refused.
  template <typename T>
  bool Unsigned(std::string_view what, uint64_t min, uint64_t max, T& out) {
    const char* start = p_;
    uint64_t value = 0;
    bool overflow = false;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      const uint64_t digit = static_cast<uint64_t>(*p_ - '0');
      overflow |= value > (UINT64_MAX - digit) / 10;
      value = value * 10 + digit;
      ++p_;
    }
    const size_t digits = static_cast<size_t>(p_ - start);
    if (overflow || digits == 0 || (digits > 1 && *start == '0') || value < min || value > max ||
        (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E'))) {
      p_ = start;
      return Corrupt("{} is not an integer in [{}, {}] at column {}", what, min, max, Column());
    }
    out = static_cast<T>(value);
    return true;
  }

  // {"role":..,"turn":t,"media":i} or {"role":..,"turn":t,"text":..}, "role" and "turn"
  // optional.
  bool Segment() {
    SegmentView& segment = out_.segments.emplace_back();
    if (!Expect("{")) return false;
    if (Literal("\"role\":") && !(String("segment role", segment.role) && Expect(","))) {
      return false;
    }
    if (Literal("\"turn\":") &&
        !(Unsigned("segment \"turn\"", 1, UINT32_MAX, segment.turn) && Expect(","))) {
      return false;
    }
    if (Literal("\"media\":")) {
      segment.is_media = true;
      if (!Unsigned("segment \"media\"", 0, UINT32_MAX, segment.media_index)) return false;
    } else if (Literal("\"text\":")) {
      if (!String("segment text", segment.text)) return false;
    } else {
      return Syntax("\"media\": or \"text\":");
    }
    return Expect("}");
  }

  // {"path":..,"entry":..,"kind":k,"width":w,"height":h,"frames":f,"duration_ms":d,
  // "fps_milli":r,"sample_rate_hz":s,"start_ms":a,"end_ms":b}, in this order, every field optional
  // (width and height together).
  bool Media() {
    MediaView& media = out_.media.emplace_back();
    if (!Expect("{")) return false;
    bool first = true;
    // The next field is `name` (with its quotes and colon), after a comma unless first.
    auto field = [&](const auto& name) {
      const char* at = p_;
      if ((first || Literal(",")) && Literal(name)) {
        first = false;
        return true;
      }
      p_ = at;
      return false;
    };
    if (field("\"path\":") && !String("media path", media.path)) return false;
    if (field("\"entry\":") && !String("media entry", media.entry)) return false;
    if (field("\"kind\":")) {
      std::string_view name;
      if (!String("media kind", name)) return false;
      Result<MediaKind> kind = ParseMediaKind(name);
      if (!kind.ok()) return Corrupt("{} at column {}", kind.status().message(), Column());
      media.kind = *kind;
    }
    if (field("\"width\":") &&
        !(Unsigned("media \"width\"", 1, kMaxImageSide, media.width) && Expect(",\"height\":") &&
          Unsigned("media \"height\"", 1, kMaxImageSide, media.height))) {
      return false;
    }
    const bool has_frames = field("\"frames\":");
    if (has_frames && !Unsigned("media \"frames\"", 1, UINT32_MAX, media.frames)) return false;
    if (field("\"duration_ms\":") &&
        !Unsigned("media \"duration_ms\"", 1, UINT32_MAX, media.duration_ms)) {
      return false;
    }
    // A metadata-only clip without a count has as many samples as its duration makes, as the
    // input adapter reads it.
    if (!has_frames && media.kind == MediaKind::kAudio && media.path.empty()) {
      media.frames = std::max<uint32_t>(media::SamplesOfDuration(media.duration_ms), 1);
    }
    if (field("\"fps_milli\":") &&
        !Unsigned("media \"fps_milli\"", 1, UINT32_MAX, media.fps_milli)) {
      return false;
    }
    if (field("\"sample_rate_hz\":") &&
        !Unsigned("media \"sample_rate_hz\"", 1, UINT32_MAX, media.sample_rate_hz)) {
      return false;
    }
    if (field("\"start_ms\":") && !Unsigned("media \"start_ms\"", 1, UINT32_MAX, media.start_ms)) {
      return false;
    }
    if (field("\"end_ms\":") && !Unsigned("media \"end_ms\"", 1, UINT32_MAX, media.end_ms)) {
      return false;
    }
    return Expect("}");
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  SampleView& out_;
  std::vector<char>& arena_;
  Status error_;  // set by the step that returned false
};

}  // namespace

Status ReadSampleLine(std::string_view line, SampleView& out) {
  out.key = {};
  out.source = {};
  out.segments.clear();
  out.media.clear();
  out.unescaped_.clear();
  out.unescaped_.reserve(line.size());
  // UTF-8 is checked once for the whole line (SIMD); the scanner then only has to check the
  // ASCII structure around the strings.
  if (!simdjson::validate_utf8(line.data(), line.size())) {
    return Status::Corrupt("not valid UTF-8");
  }
  LineScanner scanner(line, out, out.unescaped_);
  MMPT_RETURN_IF_ERROR(scanner.Record());
  if (Status valid = ValidateSample(out); !valid.ok()) {
    return Status::Corrupt("{}", valid.message());
  }
  return Status::OK();
}

Status CheckSampleAgainstMeta(const SampleView& sample, const SampleMeta& meta,
                              std::span<const MediaMeta> media) {
  const size_t media_count = static_cast<size_t>(std::count_if(
      media.begin(), media.end(), [](const MediaMeta& m) { return m.first_of_medium(); }));
  if (sample.segments.size() != meta.num_segments || sample.media.size() != media_count) {
    return Status::Corrupt("{} segments and {} media where .meta says {} and {}",
                           sample.segments.size(), sample.media.size(), meta.num_segments,
                           media_count);
  }
  // Media are stored in segment order, so .meta's records (and their token positions, which
  // meta.h checks for order) follow the segments.
  uint32_t next = 0;
  for (const SegmentView& segment : sample.segments) {
    if (segment.is_media && segment.media_index != next++) {
      return Status::Corrupt("media {} is not in segment order (expected {})", segment.media_index,
                             next - 1);
    }
  }
  for (size_t j = 0, k = 0; j < media.size(); ++j) {  // a grouped video's records share medium k
    if (j > 0 && media[j].first_of_medium()) ++k;
    const MediaMeta& m = media[j];
    const MediaView& v = sample.media[k];
    if (m.sound_track()) {  // a part of video k's sound track: an audio record of the video
      if (v.kind != MediaKind::kVideo) {
        return Status::Corrupt("media {} is {} where .meta gives it a sound track", k,
                               MediaKindName(v.kind));
      }
      continue;
    }
    if (m.kind != v.kind) {
      return Status::Corrupt("media {} is {} where .meta says {}", k, MediaKindName(v.kind),
                             MediaKindName(m.kind));
    }
    if (m.width != v.width || m.height != v.height) {
      return Status::Corrupt("media {} is {}x{} where .meta says {}x{}", k, v.width, v.height,
                             m.width, m.height);
    }
    if (m.duration_ms != v.duration_ms || m.fps_milli != v.fps_milli ||
        m.sample_rate_hz != v.sample_rate_hz) {
      return Status::Corrupt(
          "media {} lasts {} ms at {} mfps / {} Hz where .meta says {} ms at {} mfps / {} Hz", k,
          v.duration_ms, v.fps_milli, v.sample_rate_hz, m.duration_ms, m.fps_milli,
          m.sample_rate_hz);
    }
  }
  return Status::OK();
}

}  // namespace mmpt::store
