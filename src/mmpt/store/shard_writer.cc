#include "mmpt/store/shard_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/media/image_probe.h"
#include "mmpt/media/video.h"
#include "mmpt/store/jsonl_index.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/zip_reader.h"
#include "mmpt/store/zip_writer.h"

namespace mmpt::store {

std::string_view MediaExtension(uint8_t format) {
  switch (static_cast<media::ImageFormat>(format)) {
    case media::ImageFormat::kJpeg: return "jpg";
    case media::ImageFormat::kPng: return "png";
    case media::ImageFormat::kWebp: return "webp";
    case media::ImageFormat::kGif: return "gif";
    case media::ImageFormat::kBmp: return "bmp";
    default: return "bin";
  }
}

namespace {

// The zip entry extension of a video or audio file: its path's, when short and plain
// (containers are many and a name tells tools more than FFmpeg's demuxer name).
std::string AvExtension(std::string_view path) {
  std::string extension = std::filesystem::path(path).extension().string();
  if (!extension.empty()) extension.erase(0, 1);
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool plain = !extension.empty() && extension.size() <= 5 &&
               std::all_of(extension.begin(), extension.end(),
                           [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
  return plain ? extension : "bin";
}

// The temporal groups of medium `k`: a video's from `video_groups` (when given), else 0.
uint32_t GroupsOf(const MediaRef& ref, std::span<const uint32_t> video_groups, size_t k) {
  return ref.kind == MediaKind::kVideo && !video_groups.empty() ? video_groups[k] : 0;
}

// The sound track layout of medium `k`, or null.
const SoundTrackLayout* SoundTrackOf(const MediaRef& ref,
                                     std::span<const SoundTrackLayout> sound_tracks, size_t k) {
  const bool has =
      ref.kind == MediaKind::kVideo && k < sound_tracks.size() && sound_tracks[k].records() > 0;
  return has ? &sound_tracks[k] : nullptr;
}

// Medium `media`'s records with its sound track's parts in `layout`'s token order: the
// video's temporal groups and the track's parts, each numbered in its own stream.
void AppendSoundTrack(const MediaMeta& video, const SoundTrackLayout& layout,
                      std::vector<MediaMeta>& out) {
  const auto parts =
      static_cast<uint16_t>(std::count_if(layout.part_samples.begin(), layout.part_samples.end(),
                                          [](uint32_t samples) { return samples > 0; }));
  const auto groups = static_cast<uint16_t>(layout.records() - parts);
  uint16_t group = 0, part = 0;
  for (size_t r = 0; r < layout.records(); ++r) {
    const uint32_t samples = layout.part_samples[r];
    MediaMeta m = video;
    if (samples == 0) {
      m.group = group++;
      m.groups = groups;
    } else {
      m.kind = MediaKind::kAudio;
      m.width = m.height = m.fps_milli = 0;
      m.frames = samples;
      m.duration_ms = layout.duration_ms;
      m.sample_rate_hz = layout.sample_rate_hz;
      m.flags |= kMediaSoundTrack;
      if (r < layout.joins_previous.size() && layout.joins_previous[r] != 0) {
        m.flags |= kMediaJoinsPreviousPart;
      }
      m.group = part++;
      m.groups = parts;
    }
    out.push_back(m);
  }
}

}  // namespace

ShardWriter::ShardWriter(std::string dataset_dir, std::string stem, std::string source)
    : dataset_dir_(std::move(dataset_dir)), stem_(std::move(stem)), source_(std::move(source)) {}

Status ShardWriter::Add(Sample sample, std::vector<MediaBlob> blobs,
                        std::span<const int32_t> tokens, std::span<const uint32_t> media_positions,
                        std::span<const uint32_t> video_groups,
                        std::span<const SoundTrackLayout> sound_tracks) {
  if (blobs.size() != sample.media.size() ||
      (!video_groups.empty() && video_groups.size() != sample.media.size()) ||
      (!sound_tracks.empty() && sound_tracks.size() != sample.media.size())) {
    return Status::InvalidArgument("sample '{}': {} media items but {} blobs", sample.key,
                                   sample.media.size(), blobs.size());
  }
  if (sample.media.size() > UINT16_MAX) {
    return Status::InvalidArgument("sample '{}': {} media items (at most {})", sample.key,
                                   sample.media.size(), UINT16_MAX);
  }
  // Media are stored in segment order (the canonical form may name them in any order), so an
  // item's index, its `.meta` record and its position among the rendered tokens agree.
  std::vector<MediaRef> media_in_order;
  std::vector<MediaBlob> blobs_in_order;
  uint32_t segments_count = 0;
  for (Segment& segment : sample.segments) {
    ++segments_count;
    if (!segment.is_media) continue;
    if (segment.media_index >= sample.media.size()) {
      return Status::InvalidArgument("sample '{}': segment names media {} of {}", sample.key,
                                     segment.media_index, sample.media.size());
    }
    media_in_order.push_back(std::move(sample.media[segment.media_index]));
    blobs_in_order.push_back(std::move(blobs[segment.media_index]));
    segment.media_index = static_cast<uint32_t>(media_in_order.size() - 1);
  }
  if (media_in_order.size() != sample.media.size()) {
    return Status::InvalidArgument("sample '{}': {} media items but {} media segments", sample.key,
                                   sample.media.size(), media_in_order.size());
  }
  sample.media = std::move(media_in_order);
  blobs = std::move(blobs_in_order);
  size_t records = 0;
  for (size_t k = 0; k < sample.media.size(); ++k) {
    const uint32_t groups = GroupsOf(sample.media[k], video_groups, k);
    if (groups > UINT16_MAX) {
      return Status::InvalidArgument("sample '{}': video {} has {} groups (at most {})", sample.key,
                                     k, groups, UINT16_MAX);
    }
    const SoundTrackLayout* sound = SoundTrackOf(sample.media[k], sound_tracks, k);
    records += sound != nullptr ? sound->records() : std::max<uint32_t>(groups, 1);
  }
  if (records > UINT16_MAX || media_positions.size() != records || tokens.size() > UINT32_MAX ||
      !std::is_sorted(media_positions.begin(), media_positions.end()) ||
      (!media_positions.empty() && media_positions.back() > tokens.size())) {
    return Status::InvalidArgument(
        "sample '{}': {} image positions in {} tokens do not place its {} media in order",
        sample.key, media_positions.size(), tokens.size(), records);
  }
  SampleMeta meta{};
  meta.token_begin = tokens_.size();
  meta.text_tokens = static_cast<uint32_t>(tokens.size());
  meta.media_begin = static_cast<uint32_t>(media_.size());
  meta.num_media = static_cast<uint16_t>(records);
  meta.num_segments = segments_count;
  const size_t sample_index = samples_.size();
  size_t position = 0;
  for (size_t k = 0; k < sample.media.size(); ++k) {
    MediaRef& ref = sample.media[k];
    MediaMeta media{};
    media.width = ref.width;
    media.height = ref.height;
    media.frames = std::max<uint32_t>(ref.frames, 1);
    if (ref.start_ms != 0 || ref.end_ms != 0) {  // the planner samples the clip's frames
      Result<media::FrameRange> clip =
          media::ClipFrames(ref.frames, ref.fps_milli / 1000.0, {ref.start_ms, ref.end_ms});
      if (!clip.ok()) return clip.status().WithContext(fmt::format("sample '{}'", sample.key));
      media.frames = static_cast<uint32_t>(clip->count());
    }
    media.duration_ms = ref.duration_ms;
    media.fps_milli = ref.fps_milli;
    media.sample_rate_hz = ref.sample_rate_hz;
    media.kind = ref.kind;
    media.format = ref.kind == MediaKind::kImage ? blobs[k].format : 0;
    if (blobs[k].bytes.empty()) {
      media.flags = kMediaWithoutData;
      meta.flags |= kSampleHasMediaWithoutData;
      ref.entry.clear();
    } else {
      std::string extension = ref.kind == MediaKind::kImage
                                  ? std::string(MediaExtension(blobs[k].format))
                                  : AvExtension(ref.path);
      ref.entry = fmt::format("{:06}.{}.{}", sample_index, k, extension);
    }
    const uint32_t groups = GroupsOf(ref, video_groups, k);
    media.groups = static_cast<uint16_t>(groups);
    std::vector<MediaMeta> records_of_medium;
    if (const SoundTrackLayout* sound = SoundTrackOf(ref, sound_tracks, k)) {
      AppendSoundTrack(media, *sound, records_of_medium);
    } else {
      for (uint32_t g = 0; g < std::max<uint32_t>(groups, 1); ++g) {
        media.group = static_cast<uint16_t>(g);
        records_of_medium.push_back(media);
      }
    }
    for (size_t r = 0; r < records_of_medium.size(); ++r) {
      records_of_medium[r].text_position = media_positions[position++];
      entry_names_.push_back(r == 0 ? ref.entry : std::string());
      media_.push_back(records_of_medium[r]);
      blobs_.push_back(r == 0 ? std::move(blobs[k]) : MediaBlob{});
    }
  }
  sample.source = source_;
  samples_.push_back(meta);
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  lines_offsets_.push_back(jsonl_.size());
  AppendSampleJson(sample, jsonl_);
  return Status::OK();
}

Result<ShardInfo> ShardWriter::Finish() {
  const std::string base = dataset_dir_ + "/" + stem_;
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(base).parent_path(), error);
  if (error) return Status::IOError("{}: cannot create directory: {}", base, error.message());

  ShardInfo info;
  info.source = source_;
  info.stem = stem_;
  info.samples = samples_.size();
  info.media = media_.size();
  info.tokens = tokens_.size();

  // The zip first: the media table needs each entry's data offset and CRC from it.
  std::vector<ZipInput> inputs;
  std::vector<size_t> input_media;  // media index of each zip entry
  for (size_t j = 0; j < media_.size(); ++j) {
    if (blobs_[j].bytes.empty()) continue;
    inputs.push_back({entry_names_[j], std::as_bytes(std::span(blobs_[j].bytes))});
    input_media.push_back(j);
  }
  const std::string zip_path = base + ".zip";
  MMPT_RETURN_IF_ERROR(WriteStoredZip(zip_path, inputs));
  MMPT_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Open(zip_path));
  if (zip.entries().size() != inputs.size()) {
    return Status::Internal("{}: wrote {} entries, read back {}", zip_path, inputs.size(),
                            zip.entries().size());
  }
  for (size_t e = 0; e < inputs.size(); ++e) {
    const ZipEntry& entry = zip.entries()[e];
    if (entry.name != inputs[e].name || entry.method != 0 ||
        entry.compressed_size != inputs[e].data.size()) {
      return Status::Internal("{}: entry {} ('{}') did not come back as written", zip_path, e,
                              entry.name);
    }
    MediaMeta& media = media_[input_media[e]];
    media.data_offset = entry.data_offset;
    media.data_size = entry.compressed_size;
    media.crc32 = entry.crc32;
  }
  for (size_t j = 1; j < media_.size(); ++j) {  // a video's later groups share its bytes
    if (!media_[j].first_of_medium()) {
      media_[j].data_offset = media_[j - 1].data_offset;
      media_[j].data_size = media_[j - 1].data_size;
      media_[j].crc32 = media_[j - 1].crc32;
    }
  }
  info.files[".zip"] = {zip.bytes().size(), Hash64(zip.bytes())};
  blobs_.clear();

  std::vector<uint64_t> offsets = lines_offsets_;
  offsets.push_back(jsonl_.size());
  std::string idx = EncodeLineIndex(offsets);
  std::string tok(reinterpret_cast<const char*>(tokens_.data()), tokens_.size() * sizeof(int32_t));
  std::string meta = EncodeMeta(samples_, media_, tokens_.size());
  for (auto& [suffix, contents] : std::initializer_list<std::pair<const char*, const std::string*>>{
           {".jsonl", &jsonl_}, {".jsonl.idx", &idx}, {".tok", &tok}, {".meta", &meta}}) {
    MMPT_RETURN_IF_ERROR(WriteFileAtomic(base + suffix, *contents));
    info.files[suffix] = {contents->size(), Hash64(std::string_view(*contents))};
  }
  return info;
}

}  // namespace mmpt::store
