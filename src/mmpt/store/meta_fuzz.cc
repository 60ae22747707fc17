// libFuzzer target: ValidateMeta on arbitrary bytes must never crash, and a table it accepts
// must keep every sample's media and token ranges inside the table — the promise MetaTable's
// unchecked accessors (media_of, Dataset::Tokens) rely on.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mmpt/store/meta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copied so the records are aligned, as they are in a page-aligned mmap.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  auto bytes = std::as_bytes(std::span(aligned)).first(size);
  if (!mmpt::store::ValidateMeta(bytes, "fuzz.meta").ok()) return 0;
  mmpt::store::MetaHeader header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  const auto* samples =
      reinterpret_cast<const mmpt::store::SampleMeta*>(bytes.data() + sizeof(header));
  const auto* media = reinterpret_cast<const mmpt::store::MediaMeta*>(samples + header.num_samples);
  for (uint64_t i = 0; i < header.num_samples; ++i) {
    const mmpt::store::SampleMeta& s = samples[i];
    if (uint64_t(s.media_begin) + s.num_media > header.num_media) std::abort();
    if (s.token_begin + s.text_tokens > header.num_tokens) std::abort();
    for (uint32_t k = 0; k < s.num_media; ++k) {
      const mmpt::store::MediaMeta& m = media[s.media_begin + k];
      if (m.frames == 0 || m.kind > mmpt::store::MediaKind::kAudio) std::abort();
      // Images and videos have a frame size, videos and audio a length.
      if ((m.kind != mmpt::store::MediaKind::kAudio) == (m.width == 0 || m.height == 0)) {
        std::abort();
      }
      if ((m.kind != mmpt::store::MediaKind::kImage) == (m.duration_ms == 0)) std::abort();
    }
  }
  // What EncodeMeta writes from the accepted records is the same table.
  std::string again = mmpt::store::EncodeMeta({samples, size_t(header.num_samples)},
                                              {media, size_t(header.num_media)}, header.num_tokens);
  if (again.size() != size ||
      std::memcmp(again.data() + sizeof(header), bytes.data() + sizeof(header),
                  size - sizeof(header)) != 0) {
    std::abort();
  }
  return 0;
}
