#include "mmpt/text/utf8.h"

#include <simdjson.h>

namespace mmpt::text {

bool IsValidUtf8(std::string_view text) {
  return simdjson::validate_utf8(text.data(), text.size());
}

void AppendSanitizedUtf8(std::string_view text, std::string* out) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  out->reserve(out->size() + n);
  size_t i = 0;
  while (i < n) {
    const unsigned char lead = bytes[i];
    if (lead < 0x80) {
      out->push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    // Expected length and the allowed range of the first continuation byte (Unicode Table 3-7).
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    if (length == 0) {  // not a lead byte at all: one replacement for this byte
      out->append(kReplacement);
      ++i;
      continue;
    }
    size_t consumed = 1;
    bool complete = true;
    for (size_t k = 1; k < length; ++k) {
      if (i + k >= n) {
        complete = false;
        break;
      }
      const unsigned char c = bytes[i + k];
      const unsigned char lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
      if (c < lo || c > hi) {
        complete = false;
        break;
      }
      ++consumed;
    }
    if (complete) {
      out->append(text.substr(i, length));
    } else {
      out->append(kReplacement);  // the maximal subpart; the offending byte is looked at again
    }
    i += consumed;
  }
}

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  AppendSanitizedUtf8(text, &out);
  return out;
}

char32_t DecodeUtf8(std::string_view text, size_t* pos) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data()) + *pos;
  if (b[0] < 0x80) {
    *pos += 1;
    return b[0];
  }
  if (b[0] < 0xE0) {
    *pos += 2;
    return (char32_t(b[0] & 0x1F) << 6) | (b[1] & 0x3F);
  }
  if (b[0] < 0xF0) {
    *pos += 3;
    return (char32_t(b[0] & 0x0F) << 12) | (char32_t(b[1] & 0x3F) << 6) | (b[2] & 0x3F);
  }
  *pos += 4;
  return (char32_t(b[0] & 0x07) << 18) | (char32_t(b[1] & 0x3F) << 12) |
         (char32_t(b[2] & 0x3F) << 6) | (b[3] & 0x3F);
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsJsSpace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string_view TrimJsSpaceStart(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = pos;
    if (!IsJsSpace(DecodeUtf8(text, &next))) break;
    pos = next;
  }
  return text.substr(pos);
}

std::string_view TrimJsSpaceEnd(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!IsJsSpace(DecodeUtf8(text, &pos))) break;
    end = start;
  }
  return text.substr(0, end);
}

}  // namespace mmpt::text
