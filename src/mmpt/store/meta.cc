#include "mmpt/store/meta.h"

#include <algorithm>
#include <cstring>

#include "mmpt/media/audio.h"

namespace mmpt::store {

std::string EncodeMeta(std::span<const SampleMeta> samples, std::span<const MediaMeta> media,
                       uint64_t num_tokens) {
  MetaHeader header{};
  std::memcpy(header.magic, kMetaMagic, sizeof(kMetaMagic));
  header.version = kMetaVersion;
  header.header_bytes = sizeof(MetaHeader);
  header.sample_record_bytes = sizeof(SampleMeta);
  header.media_record_bytes = sizeof(MediaMeta);
  header.num_samples = samples.size();
  header.num_media = media.size();
  header.num_tokens = num_tokens;
  std::string out;
  out.reserve(sizeof(header) + samples.size_bytes() + media.size_bytes());
  out.append(reinterpret_cast<const char*>(&header), sizeof(header));
  out.append(reinterpret_cast<const char*>(samples.data()), samples.size_bytes());
  out.append(reinterpret_cast<const char*>(media.data()), media.size_bytes());
  return out;
}

namespace {

// The header of a `.meta` table, checked against this build's layout and the table's size.
Result<MetaHeader> CheckHeader(std::span<const std::byte> bytes, std::string_view name) {
  if (bytes.size() < sizeof(MetaHeader)) {
    return Status::Corrupt("{}: {} bytes, shorter than the {}-byte header", name, bytes.size(),
                           sizeof(MetaHeader));
  }
  MetaHeader header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, kMetaMagic, sizeof(kMetaMagic)) != 0) {
    return Status::Corrupt("{}: not an mmpt .meta file (bad magic)", name);
  }
  if (header.version < kOldestMetaVersion) {
    return Status::InvalidArgument(
        "{}: .meta version {} predates version {} (media token positions for exact CP "
        "planning); prepare the dataset again with this mmpt (`mmpt prepare`)",
        name, header.version, kOldestMetaVersion);
  }
  if (header.version > kMetaVersion) {
    return Status::Corrupt("{}: .meta version {} is newer than this build reads ({})", name,
                           header.version, kMetaVersion);
  }
  if (header.header_bytes != sizeof(MetaHeader) ||
      header.sample_record_bytes != sizeof(SampleMeta) ||
      header.media_record_bytes != sizeof(MediaMeta)) {
    return Status::Corrupt("{}: record sizes {}/{}/{} differ from {}/{}/{}", name,
                           header.header_bytes, header.sample_record_bytes,
                           header.media_record_bytes, sizeof(MetaHeader), sizeof(SampleMeta),
                           sizeof(MediaMeta));
  }
  // Bound the counts before multiplying so a bit flip cannot overflow the size check.
  const uint64_t limit = bytes.size();
  if (header.num_samples > limit / sizeof(SampleMeta) ||
      header.num_media > limit / sizeof(MediaMeta) ||
      sizeof(MetaHeader) + header.num_samples * sizeof(SampleMeta) +
              header.num_media * sizeof(MediaMeta) !=
          bytes.size()) {
    return Status::Corrupt("{}: {} bytes do not hold {} samples and {} media records", name,
                           bytes.size(), header.num_samples, header.num_media);
  }
  return header;
}

// Each kind has its own fields, and only those.
bool FieldsFitKind(const MediaMeta& m) {
  const bool no_data = (m.flags & kMediaWithoutData) != 0;
  switch (m.kind) {
    case MediaKind::kImage:
      return m.width > 0 && m.height > 0 && m.duration_ms == 0 && m.fps_milli == 0 &&
             m.sample_rate_hz == 0;
    case MediaKind::kVideo:
      return m.width > 0 && m.height > 0 && m.duration_ms > 0 && m.fps_milli > 0 &&
             m.sample_rate_hz == 0;
    case MediaKind::kAudio:
      // A metadata-only item may leave the rate out: audio encoders resample anyway.
      return m.width == 0 && m.height == 0 && m.frames > 0 && m.duration_ms > 0 &&
             m.fps_milli == 0 && (m.sample_rate_hz > 0 || no_data);
  }
  return false;
}

// A grouped video's records: group g of `groups` follows group g - 1 of the same video
// (`previous`, its stream's record before it). A sound track's part p follows part p - 1 or,
// for part 0, a record of its video, with the video's bytes; only a later part joins the one
// before it.
bool GroupFits(const MediaMeta& m, const MediaMeta* previous) {
  if (m.joins_previous_part() && (!m.sound_track() || m.group == 0)) return false;
  if (m.sound_track()) {
    if (m.kind != MediaKind::kAudio || m.group >= m.groups || previous == nullptr) return false;
    const bool same_bytes = previous->data_offset == m.data_offset &&
                            previous->data_size == m.data_size && previous->crc32 == m.crc32;
    return same_bytes && (m.group == 0 ? previous->kind == MediaKind::kVideo
                                       : previous->sound_track() && previous->groups == m.groups &&
                                             previous->group + 1 == m.group);
  }
  if (m.groups == 0) return m.group == 0;
  if (m.kind != MediaKind::kVideo || m.group >= m.groups) return false;
  if (m.group == 0) return true;
  return previous != nullptr && previous->groups == m.groups && previous->group + 1 == m.group &&
         previous->data_offset == m.data_offset && previous->data_size == m.data_size &&
         previous->crc32 == m.crc32 && previous->frames == m.frames &&
         previous->fps_milli == m.fps_milli && previous->flags == m.flags;
}

// The nearest record of media[begin, end) from j in direction `step` (±1) of j's stream (a
// sound track's parts, or the other records), or null; a sound track's part 0 follows the
// record just before it (its video's).
const MediaMeta* Neighbour(const MediaMeta* media, uint64_t begin, uint64_t end, uint64_t j,
                           int step) {
  const bool sound = media[j].sound_track();
  if (sound && media[j].group == 0 && step < 0) return j > begin ? &media[j - 1] : nullptr;
  for (uint64_t i = j + step; i >= begin && i < end; i += step) {
    if (media[i].sound_track() == sound) return &media[i];
  }
  return nullptr;
}

}  // namespace

uint32_t MediumOfRecord(std::span<const MediaMeta> records, uint32_t k) {
  uint32_t medium = 0;
  for (uint32_t j = 1; j <= k && j < records.size(); ++j) medium += records[j].first_of_medium();
  return medium;
}

uint32_t FirstRecordOfMedium(std::span<const MediaMeta> records, uint32_t k) {
  while (k > 0 && k < records.size() && !records[k].first_of_medium()) --k;
  return k;
}

Status ValidateMeta(std::span<const std::byte> bytes, std::string_view name) {
  MMPT_ASSIGN_OR_RETURN(const MetaHeader header, CheckHeader(bytes, name));
  const auto* samples = reinterpret_cast<const SampleMeta*>(bytes.data() + sizeof(MetaHeader));
  const auto* media = reinterpret_cast<const MediaMeta*>(samples + header.num_samples);
  uint64_t next_media = 0;
  uint64_t next_token = 0;
  for (uint64_t i = 0; i < header.num_samples; ++i) {
    const SampleMeta& s = samples[i];
    if (s.media_begin != next_media || s.token_begin != next_token) {
      return Status::Corrupt(
          "{}: sample record {}: media_begin {} / token_begin {} where {} / {} expected", name, i,
          s.media_begin, s.token_begin, next_media, next_token);
    }
    next_media += s.num_media;
    next_token += s.text_tokens;
    if (next_media > header.num_media || next_token > header.num_tokens) {
      return Status::Corrupt("{}: sample record {}: media or token range past the table's end",
                             name, i);
    }
  }
  if (next_media != header.num_media || next_token != header.num_tokens) {
    return Status::Corrupt("{}: samples cover {} media and {} tokens, header says {} and {}", name,
                           next_media, next_token, header.num_media, header.num_tokens);
  }
  for (uint64_t i = 0, j = 0; i < header.num_samples; ++i) {
    uint32_t position = 0;
    const uint64_t media_begin = j;
    for (uint64_t end = j + samples[i].num_media; j < end; ++j) {
      const MediaMeta& m = media[j];
      bool no_data = (m.flags & kMediaWithoutData) != 0;
      if (m.frames == 0 || (no_data && m.data_size != 0)) {
        return Status::Corrupt("{}: media record {}: {} frames, {} data bytes without data", name,
                               j, m.frames, m.data_size);
      }
      const MediaMeta* previous = Neighbour(media, media_begin, end, j, -1);
      const MediaMeta* next = Neighbour(media, media_begin, end, j, +1);
      if (!GroupFits(m, previous) ||
          (m.groups > 0 && m.group + 1 < m.groups && (next == nullptr || next->group == 0))) {
        return Status::Corrupt("{}: media record {}: group {} of {} out of sequence", name, j,
                               m.group, m.groups);
      }
      if (!FieldsFitKind(m)) {
        return Status::Corrupt(
            "{}: media record {}: kind {} with size {}x{}, {} frames, {} ms, {} mfps, {} Hz", name,
            j, static_cast<int>(m.kind), m.width, m.height, m.frames, m.duration_ms, m.fps_milli,
            m.sample_rate_hz);
      }
      if (m.text_position < position || m.text_position > samples[i].text_tokens) {
        return Status::Corrupt(
            "{}: media record {}: text position {} outside [{}, {}] of sample "
            "record {}",
            name, j, m.text_position, position, samples[i].text_tokens, i);
      }
      position = m.text_position;
    }
  }
  return Status::OK();
}

Result<MetaTable> MetaTable::Open(const std::string& path) {
  MetaTable table;
  MMPT_ASSIGN_OR_RETURN(table.file_, MappedFile::Open(path));
  MMPT_RETURN_IF_ERROR(ValidateMeta(table.file_.bytes(), path));
  const std::byte* base = table.file_.bytes().data();
  MetaHeader header;
  std::memcpy(&header, base, sizeof(header));
  const auto* samples = reinterpret_cast<const SampleMeta*>(base + sizeof(MetaHeader));
  table.samples_ = {samples, static_cast<size_t>(header.num_samples)};
  table.media_ = {reinterpret_cast<const MediaMeta*>(samples + header.num_samples),
                  static_cast<size_t>(header.num_media)};
  table.num_tokens_ = header.num_tokens;
  const bool has_audio =
      std::any_of(table.media_.begin(), table.media_.end(),
                  [](const MediaMeta& m) { return m.kind == MediaKind::kAudio; });
  if (header.version < 4 && has_audio) {
    table.upgraded_media_.assign(table.media_.begin(), table.media_.end());
    for (MediaMeta& m : table.upgraded_media_) {
      if (m.kind == MediaKind::kAudio) m.frames = media::SamplesOfDuration(m.duration_ms);
    }
    table.media_ = table.upgraded_media_;
  }
  return table;
}

}  // namespace mmpt::store
