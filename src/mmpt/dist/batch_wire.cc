#include "mmpt/dist/batch_wire.h"

#include <cstring>
#include <string>

namespace mmpt::dist {

using namespace load;  // the Batch and its field table
namespace {

constexpr uint32_t kMagic = 0x4250'4d4d;  // "MMPB"
constexpr uint16_t kVersion = 3;          // 2: videos; 3: audio
constexpr uint64_t kAlign = 64;

// Fixed-size head of the encoding; the array table follows it.
struct Header {
  uint32_t magic;
  uint16_t version;
  uint16_t arrays;
  uint32_t fields;
  uint32_t reserved;
  BatchScalars scalars;
};
static_assert(sizeof(BatchScalars) == 72 && sizeof(Header) == 88);
struct Entry {
  uint64_t offset;
  uint64_t bytes;
};

// kBatchArrays, then the dropped samples.
constexpr uint16_t kArrays = std::tuple_size_v<decltype(kBatchArrays)> + 1;
constexpr uint64_t kTableEnd = sizeof(Header) + kArrays * sizeof(Entry);

uint64_t AlignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The dropped samples: count, then per sample source, pack, index, reason length, reason.
std::vector<std::byte> EncodeDropped(const std::vector<DroppedSample>& dropped) {
  std::vector<std::byte> out;
  auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  };
  const uint32_t count = static_cast<uint32_t>(dropped.size());
  put(&count, 4);
  for (const DroppedSample& d : dropped) {
    const uint32_t reason = static_cast<uint32_t>(d.reason.size());
    put(&d.source, 4);
    put(&d.pack, 4);
    put(&d.index, 8);
    put(&reason, 4);
    put(d.reason.data(), d.reason.size());
  }
  return out;
}

Result<std::vector<DroppedSample>> DecodeDropped(std::span<const std::byte> in) {
  size_t at = 0;
  auto get = [&](void* p, size_t n) {
    if (in.size() - at < n) return false;
    std::memcpy(p, in.data() + at, n);
    at += n;
    return true;
  };
  uint32_t count = 0;
  if (!get(&count, 4)) return Status::Corrupt("encoded batch: dropped samples cut short");
  std::vector<DroppedSample> out;
  for (uint32_t i = 0; i < count; ++i) {
    DroppedSample d;
    uint32_t reason = 0;
    if (!get(&d.source, 4) || !get(&d.pack, 4) || !get(&d.index, 8) || !get(&reason, 4) ||
        in.size() - at < reason) {
      return Status::Corrupt("encoded batch: dropped sample {} of {} cut short", i, count);
    }
    d.reason.assign(reinterpret_cast<const char*>(in.data() + at), reason);
    at += reason;
    out.push_back(std::move(d));
  }
  return out;
}

// OK when the arrays present agree with the shapes the header states; else Corrupt naming the
// first array that does not.
Status CheckShapes(const BatchView& v) {
  const uint64_t t = v.scalars.num_tokens;
  auto expect = [&](uint32_t field, uint64_t got, uint64_t want, std::string_view name) -> Status {
    if ((v.fields & field) == field && got != want) {
      return Status::Corrupt("encoded batch: {} has {} elements, expected {}", name, got, want);
    }
    return Status::OK();
  };
  Status status;
  ForEachBatchArray([&](const auto& array) {
    if (!status.ok() ||
        (array.shape != ArrayShape::kTokens && array.shape != ArrayShape::kPositions)) {
      return;
    }
    const uint64_t rows = array.shape == ArrayShape::kPositions ? v.scalars.position_rows : 1;
    status = expect(array.field, (v.*array.viewed).size(), t * rows, array.name);
  });
  MMPT_RETURN_IF_ERROR(status);
  MMPT_RETURN_IF_ERROR(
      expect(kShapeFields, v.cu_seqlens_padded.size(), v.cu_seqlens.size(), "cu_seqlens_padded"));
  MMPT_RETURN_IF_ERROR(
      expect(kShapeFields, v.sample_index.size(), v.sample_source.size(), "sample_index"));
  if (v.has(kPixelField)) {
    const uint32_t patch_dim = v.scalars.patch_dim;
    for (auto [pixels, grids] : {std::pair{v.pixel_values, v.image_grid_thw},
                                 std::pair{v.pixel_values_videos, v.video_grid_thw}}) {
      if (grids.size() % 3 != 0 ||
          (patch_dim == 0 ? !pixels.empty() : pixels.size() % patch_dim != 0)) {
        return Status::Corrupt("encoded batch: {} pixel floats of {} per patch, {} grid values",
                               pixels.size(), patch_dim, grids.size());
      }
    }
    MMPT_RETURN_IF_ERROR(expect(kPixelField, v.encoded_images.size(), v.image_grid_thw.size() / 3,
                                "encoded_images"));
    MMPT_RETURN_IF_ERROR(expect(kPixelField, v.encoded_videos.size(), v.video_grid_thw.size() / 3,
                                "encoded_videos"));
    MMPT_RETURN_IF_ERROR(expect(kPixelField, v.second_per_grid_ts.size(),
                                v.video_grid_thw.size() / 3, "second_per_grid_ts"));
    const uint64_t clips = v.encoded_audios.size(), frames = v.scalars.feature_frames;
    MMPT_RETURN_IF_ERROR(expect(kPixelField, v.input_features.size(),
                                clips * v.scalars.mel_bins * frames, "input_features"));
    MMPT_RETURN_IF_ERROR(expect(kPixelField, v.feature_attention_mask.size(), clips * frames,
                                "feature_attention_mask"));
  }
  MMPT_RETURN_IF_ERROR(
      expect(kRoutingField, v.image_encoder.size(), v.image_rows.size(), "image_encoder"));
  MMPT_RETURN_IF_ERROR(
      expect(kRoutingField, v.audio_encoder.size(), v.audio_rows.size(), "audio_encoder"));
  return Status::OK();
}

}  // namespace

uint64_t EncodedSize(const BatchView& view, uint32_t fields) {
  fields |= kShapeFields;
  uint64_t size = AlignUp(kTableEnd);
  ForEachBatchArray([&](const auto& array) {
    if ((fields & array.field) == array.field) size += AlignUp((view.*array.viewed).size_bytes());
  });
  return size + AlignUp(EncodeDropped(view.dropped).size());
}

void EncodeBatch(const BatchView& view, uint32_t fields, std::span<std::byte> out) {
  fields |= kShapeFields;
  Header h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.arrays = kArrays;
  h.fields = fields;
  h.scalars = view.scalars;
  std::memset(out.data(), 0, AlignUp(kTableEnd));
  std::memcpy(out.data(), &h, sizeof(h));
  uint64_t at = AlignUp(kTableEnd);
  int index = 0;
  auto put = [&](std::span<const std::byte> bytes) {
    const Entry e{at, bytes.size()};
    std::memcpy(out.data() + sizeof(Header) + index * sizeof(Entry), &e, sizeof(e));
    if (!bytes.empty()) std::memcpy(out.data() + at, bytes.data(), bytes.size());
    at += AlignUp(bytes.size());
    ++index;
  };
  ForEachBatchArray([&](const auto& array) {
    put((fields & array.field) == array.field ? std::as_bytes(view.*array.viewed)
                                              : std::span<const std::byte>());
  });
  put(EncodeDropped(view.dropped));
}

Result<BatchView> DecodeBatch(std::span<const std::byte> bytes) {
  Header h;
  if (bytes.size() < kTableEnd) {
    return Status::Corrupt("encoded batch: {} bytes, shorter than its header", bytes.size());
  }
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.magic != kMagic) return Status::Corrupt("encoded batch: bad magic {:#x}", h.magic);
  if (h.version != kVersion || h.arrays != kArrays) {
    return Status::Corrupt("encoded batch: version {} with {} arrays (expected {} with {})",
                           h.version, h.arrays, kVersion, kArrays);
  }
  if ((h.fields & ~kAllFields) != 0 || (h.fields & kShapeFields) == 0) {
    return Status::Corrupt("encoded batch: bad field mask {:#x}", h.fields);
  }
  if (h.scalars.position_rows != 1 && h.scalars.position_rows != 3) {
    return Status::Corrupt("encoded batch: {} position rows (expected 1 or 3)",
                           h.scalars.position_rows);
  }
  BatchView v;
  v.fields = h.fields;
  v.scalars = h.scalars;
  int index = 0;
  Status status;
  auto entry = [&](size_t size, size_t align) -> Result<std::span<const std::byte>> {
    Entry e;
    std::memcpy(&e, bytes.data() + sizeof(Header) + index * sizeof(Entry), sizeof(e));
    ++index;
    if (e.offset > bytes.size() || e.bytes > bytes.size() - e.offset) {
      return Status::Corrupt("encoded batch: array {} ({} bytes at {}) outside the {} bytes",
                             index - 1, e.bytes, e.offset, bytes.size());
    }
    const std::byte* p = bytes.data() + e.offset;
    if (e.bytes % size != 0 || reinterpret_cast<uintptr_t>(p) % align != 0) {
      return Status::Corrupt("encoded batch: array {} misaligned or of {} bytes", index - 1,
                             e.bytes);
    }
    return std::span<const std::byte>(p, e.bytes);
  };
  ForEachBatchArray([&](const auto& array) {
    using T = typename std::remove_reference_t<decltype(array)>::element_type;
    Result<std::span<const std::byte>> raw = entry(sizeof(T), alignof(T));
    if (raw.ok() && (h.fields & array.field) != array.field && !raw->empty()) {
      raw = Status::Corrupt("encoded batch: array {} has {} bytes but its field is not sent",
                            index - 1, raw->size());
    }
    if (!raw.ok()) {
      if (status.ok()) status = raw.status();
      return;
    }
    v.*array.viewed = {reinterpret_cast<const T*>(raw->data()), raw->size() / sizeof(T)};
  });
  MMPT_RETURN_IF_ERROR(status);
  MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> dropped, entry(1, 1));
  MMPT_ASSIGN_OR_RETURN(v.dropped, DecodeDropped(dropped));
  MMPT_RETURN_IF_ERROR(CheckShapes(v));
  return v;
}

}  // namespace mmpt::dist
