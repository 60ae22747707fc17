#include "mmpt/cost/sample_table.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "mmpt/core/hash.h"

namespace mmpt::cost {

uint32_t SampleTable::SourceOfRow(uint64_t row) const {
  auto it = std::upper_bound(source_begin.begin(), source_begin.end(), row);
  return static_cast<uint32_t>(it - source_begin.begin() - 1);
}

uint32_t SpreadTextPosition(uint32_t text_tokens, size_t i, size_t count) {
  return static_cast<uint32_t>(text_tokens / (count + 1) * (i + 1));
}

std::vector<uint32_t> SpreadImageStarts(uint32_t text_tokens,
                                        std::span<const uint32_t> image_tokens) {
  std::vector<uint32_t> starts;
  starts.reserve(image_tokens.size());
  uint32_t before = 0;  // tokens of the images before this one
  for (size_t i = 0; i < image_tokens.size(); ++i) {
    starts.push_back(SpreadTextPosition(text_tokens, i, image_tokens.size()) + before);
    before += image_tokens[i];
  }
  return starts;
}

uint32_t SampleTableBuilder::AddSource(std::string name) {
  names_.push_back(std::move(name));
  return static_cast<uint32_t>(names_.size() - 1);
}

namespace {

// OK when the items' text positions are non-decreasing and at most `text_tokens`.
template <typename Item>
Status CheckPositions(std::span<const Item> items, uint32_t text_tokens, std::string_view kind) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].text_position > text_tokens ||
        (i > 0 && items[i].text_position < items[i - 1].text_position)) {
      return Status::InvalidArgument(
          "{} {} at text position {}: not in order within the "
          "sample's {} text tokens",
          kind, i, items[i].text_position, text_tokens);
    }
  }
  return Status::OK();
}

Status CheckAv(AvItems av, uint32_t text_tokens) {
  for (size_t i = 0; i < av.videos.size(); ++i) {
    const VideoItem& v = av.videos[i];
    if (v.width == 0 || v.height == 0) {
      return Status::InvalidArgument("video {} has size {}x{}: a zero side", i, v.width, v.height);
    }
    if (v.frames == 0 || v.fps_milli == 0) {
      return Status::InvalidArgument("video {} has {} frames at {} fps: no frames to sample", i,
                                     v.frames, v.fps_milli / 1000.0);
    }
    const bool follows =
        i > 0 && av.videos[i - 1].groups == v.groups && av.videos[i - 1].group + 1 == v.group;
    if ((v.groups > 0 && v.group >= v.groups) || (v.group > 0 && !follows)) {
      return Status::InvalidArgument("video {} is group {} of {}: out of sequence", i, v.group,
                                     v.groups);
    }
  }
  for (size_t i = 0; i < av.audios.size(); ++i) {
    if (av.audios[i].samples == 0) {
      return Status::InvalidArgument("audio {} has zero length", i);
    }
  }
  MMPT_RETURN_IF_ERROR(CheckPositions(av.videos, text_tokens, "video"));
  return CheckPositions(av.audios, text_tokens, "audio");
}

// Append the items [begin[i], begin[i + 1]) of `from` to `to`.
template <typename T>
void AppendRange(const std::vector<T>& from, const std::vector<uint64_t>& begin, uint64_t i,
                 std::vector<T>* to) {
  to->insert(to->end(), from.begin() + static_cast<ptrdiff_t>(begin[i]),
             from.begin() + static_cast<ptrdiff_t>(begin[i + 1]));
}

// The planning table's header (SampleTable::bytes()): counts and record sizes, then the
// sections in this order, each starting at a multiple of 8 bytes: the source names (each a
// uint32 length and its bytes), source_begin, text_tokens, image_begin, images,
// image_text_positions, video_rows, video_begin, videos, audio_rows, audio_begin, audios.
struct TableHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint64_t num_sources;
  uint64_t num_samples;
  uint64_t num_images;
  uint64_t num_video_rows;
  uint64_t num_videos;
  uint64_t num_audio_rows;
  uint64_t num_audios;
  uint64_t names_bytes;  // the names section, padded to 8 bytes
  uint32_t image_bytes;  // sizeof(ImageSize)
  uint32_t video_bytes;  // sizeof(VideoItem)
  uint32_t audio_bytes;  // sizeof(AudioItem)
  uint32_t reserved0;
  uint64_t data_xxh3;    // XXH3-64 of every byte after the header
  uint64_t total_bytes;  // the whole table, header included
  uint64_t reserved[2];
};
static_assert(sizeof(TableHeader) == 128);

uint64_t Padded(uint64_t bytes) { return (bytes + 7) / 8 * 8; }

// Byte sizes of the sections after the names, in order; false when the counts overflow.
bool SectionSizes(const TableHeader& h, std::array<uint64_t, 11>* sizes) {
  const uint64_t limit = uint64_t{1} << 56;  // no count near this fits any file
  for (uint64_t n : {h.num_sources, h.num_samples, h.num_images, h.num_video_rows, h.num_videos,
                     h.num_audio_rows, h.num_audios, h.names_bytes}) {
    if (n >= limit / 32) return false;
  }
  *sizes = {8 * (h.num_sources + 1),
            Padded(4 * h.num_samples),
            8 * (h.num_samples + 1),
            8 * h.num_images,
            Padded(4 * h.num_images),
            8 * h.num_video_rows,
            8 * (h.num_video_rows + 1),
            Padded(sizeof(VideoItem) * h.num_videos),
            8 * h.num_audio_rows,
            8 * (h.num_audio_rows + 1),
            Padded(sizeof(AudioItem) * h.num_audios)};
  return true;
}

template <typename T>
std::span<const T> Section(std::span<const std::byte> bytes, uint64_t* at, uint64_t count,
                           uint64_t padded) {
  auto out = std::span<const T>(reinterpret_cast<const T*>(bytes.data() + *at), count);
  *at += padded;
  return out;
}

// Writes a table's byte image in order.
class TableWriter {
 public:
  explicit TableWriter(uint64_t bytes) : words_((bytes + 7) / 8, 0) {}
  template <typename T>
  void Put(std::span<const T> items) {
    std::memcpy(data() + at_, items.data(), items.size_bytes());
    at_ = Padded(at_ + items.size_bytes());
  }
  void PutName(std::string_view name) {
    const uint32_t length = static_cast<uint32_t>(name.size());
    std::memcpy(data() + at_, &length, 4);
    std::memcpy(data() + at_ + 4, name.data(), name.size());
    at_ += 4 + name.size();
  }
  void Align() { at_ = Padded(at_); }
  std::byte* data() { return reinterpret_cast<std::byte*>(words_.data()); }
  uint64_t at() const { return at_; }
  std::vector<uint64_t> Take() && { return std::move(words_); }

 private:
  std::vector<uint64_t> words_;
  uint64_t at_ = 0;
};

// The rows' items as a sparse kind: the rows that have any, their ranges, and the items.
template <typename T>
struct SparseItems {
  std::vector<uint64_t> rows;
  std::vector<uint64_t> begin{0};
  std::vector<T> items;
};

// Each sample's checks, for Add and CheckRow alike: a non-zero length, items' sizes and text
// positions in order within the sample.
Status CheckSample(uint32_t text_tokens, std::span<const ImageSize> images,
                   std::span<const uint32_t> positions, AvItems av) {
  if (text_tokens == 0 && images.empty() && av.videos.empty() && av.audios.empty()) {
    return Status::InvalidArgument("sample has zero length: no text tokens and no media");
  }
  MMPT_RETURN_IF_ERROR(CheckAv(av, text_tokens));
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].width == 0 || images[i].height == 0) {
      return Status::InvalidArgument("image {} has size {}x{}: a zero side", i, images[i].width,
                                     images[i].height);
    }
  }
  if (positions.empty()) return Status::OK();
  if (positions.size() != images.size()) {
    return Status::InvalidArgument("{} text positions for {} images", positions.size(),
                                   images.size());
  }
  for (size_t i = 0; i < images.size(); ++i) {
    if (positions[i] > text_tokens || (i > 0 && positions[i] < positions[i - 1])) {
      return Status::InvalidArgument(
          "image {} at text position {}: not in order within the sample's {} text tokens", i,
          positions[i], text_tokens);
    }
  }
  return Status::OK();
}

// Index of `row` in a sparse kind's rows, or rows.size() when it has no items of the kind.
size_t SparseIndex(std::span<const uint64_t> rows, uint64_t row) {
  auto it = std::lower_bound(rows.begin(), rows.end(), row);
  return it != rows.end() && *it == row ? static_cast<size_t>(it - rows.begin()) : rows.size();
}

template <typename T>
std::span<const T> SparseOf(std::span<const uint64_t> rows, std::span<const uint64_t> begin,
                            std::span<const T> items, uint64_t row) {
  const size_t k = SparseIndex(rows, row);
  if (k == rows.size()) return {};
  return items.subspan(begin[k], begin[k + 1] - begin[k]);
}

}  // namespace

Status SampleTableBuilder::Add(uint32_t source, uint32_t text_tokens,
                               std::span<const ImageSize> images,
                               std::span<const uint32_t> text_positions, AvItems av) {
  if (source >= names_.size()) {
    return Status::InvalidArgument("unknown source id {} ({} sources)", source, names_.size());
  }
  MMPT_RETURN_IF_ERROR(CheckSample(text_tokens, images, text_positions, av));
  source_.push_back(source);
  text_tokens_.push_back(text_tokens);
  images_.insert(images_.end(), images.begin(), images.end());
  for (size_t i = 0; i < images.size(); ++i) {
    positions_.push_back(text_positions.empty() ? SpreadTextPosition(text_tokens, i, images.size())
                                                : text_positions[i]);
  }
  image_begin_.push_back(images_.size());
  videos_.insert(videos_.end(), av.videos.begin(), av.videos.end());
  video_begin_.push_back(videos_.size());
  audios_.insert(audios_.end(), av.audios.begin(), av.audios.end());
  audio_begin_.push_back(audios_.size());
  return Status::OK();
}

std::span<const VideoItem> SampleTable::VideosOf(uint64_t row) const {
  return SparseOf(video_rows, video_begin, videos, row);
}

std::span<const AudioItem> SampleTable::AudiosOf(uint64_t row) const {
  return SparseOf(audio_rows, audio_begin, audios, row);
}

Result<SampleTable> SampleTable::FromBytes(std::shared_ptr<const void> owner,
                                           std::span<const std::byte> bytes, std::string origin) {
  auto corrupt = [&](std::string_view what) { return Status::Corrupt("{}: {}", origin, what); };
  TableHeader h;
  if (bytes.size() < sizeof(h) || std::memcmp(bytes.data(), kSampleTableMagic, 8) != 0) {
    return corrupt("not an mmpt planning table (no MMPTPLAN header)");
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % 8 != 0) {
    return corrupt("planning table bytes are not 8-byte aligned");
  }
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.version != kSampleTableVersion) {
    return corrupt(fmt::format("planning table version {}, this build reads version {}", h.version,
                               kSampleTableVersion));
  }
  if (h.header_bytes != sizeof(TableHeader) || h.image_bytes != sizeof(ImageSize) ||
      h.video_bytes != sizeof(VideoItem) || h.audio_bytes != sizeof(AudioItem)) {
    return corrupt("record sizes differ from this build's");
  }
  std::array<uint64_t, 11> sizes;
  uint64_t total = sizeof(TableHeader) + h.names_bytes;
  if (!SectionSizes(h, &sizes) || h.names_bytes % 8 != 0) return corrupt("impossible counts");
  for (uint64_t s : sizes) total += s;
  if (total != h.total_bytes || total != bytes.size()) {
    return corrupt(
        fmt::format("truncated or extended: {} bytes, its header counts {} (sections "
                    "{})",
                    bytes.size(), h.total_bytes, total));
  }
  SampleTable t;
  uint64_t at = sizeof(TableHeader);
  const uint64_t names_end = at + h.names_bytes;
  for (uint64_t s = 0; s < h.num_sources; ++s) {
    uint32_t length = 0;
    if (at + 4 > names_end) return corrupt("source names overrun their section");
    std::memcpy(&length, bytes.data() + at, 4);
    if (at + 4 + length > names_end) return corrupt("source names overrun their section");
    t.source_names.emplace_back(reinterpret_cast<const char*>(bytes.data() + at + 4), length);
    at += 4 + length;
  }
  at = names_end;
  auto begin = Section<uint64_t>(bytes, &at, h.num_sources + 1, sizes[0]);
  t.source_begin.assign(begin.begin(), begin.end());
  t.text_tokens = Section<uint32_t>(bytes, &at, h.num_samples, sizes[1]);
  t.image_begin = Section<uint64_t>(bytes, &at, h.num_samples + 1, sizes[2]);
  t.images = Section<ImageSize>(bytes, &at, h.num_images, sizes[3]);
  t.image_text_positions = Section<uint32_t>(bytes, &at, h.num_images, sizes[4]);
  t.video_rows = Section<uint64_t>(bytes, &at, h.num_video_rows, sizes[5]);
  t.video_begin = Section<uint64_t>(bytes, &at, h.num_video_rows + 1, sizes[6]);
  t.videos = Section<VideoItem>(bytes, &at, h.num_videos, sizes[7]);
  t.audio_rows = Section<uint64_t>(bytes, &at, h.num_audio_rows, sizes[8]);
  t.audio_begin = Section<uint64_t>(bytes, &at, h.num_audio_rows + 1, sizes[9]);
  t.audios = Section<AudioItem>(bytes, &at, h.num_audios, sizes[10]);
  if (h.num_samples == 0) return corrupt("no samples");
  if (t.source_begin.front() != 0 || t.source_begin.back() != h.num_samples ||
      !std::is_sorted(t.source_begin.begin(), t.source_begin.end())) {
    return corrupt("source ranges do not cover its samples in order");
  }
  // The ends of every range array: a row's own range is checked when it is read (CheckRow).
  if (t.image_begin.front() != 0 || t.image_begin.back() != h.num_images ||
      t.video_begin.front() != 0 || t.video_begin.back() != h.num_videos ||
      t.audio_begin.front() != 0 || t.audio_begin.back() != h.num_audios) {
    return corrupt("item ranges do not end at the item counts");
  }
  t.owner_ = std::move(owner);
  t.bytes_ = bytes;
  t.origin_ = std::move(origin);
  return t;
}

Result<RowItems> SampleTable::Row(uint64_t row) const {
  auto named = [&](const Status& status) {
    const uint32_t s = SourceOfRow(row);
    return Status::Corrupt("{}: source '{}' sample {}: {}", origin_, source_names[s],
                           row - source_begin[s], status.message());
  };
  auto in_range = [](std::span<const uint64_t> begin, size_t k, size_t items) {
    return begin[k] <= begin[k + 1] && begin[k + 1] <= items;
  };
  if (!in_range(image_begin, row, images.size())) return named(Status::Corrupt("image range"));
  RowItems r;
  r.row = row;
  r.text_tokens = text_tokens[row];
  r.first_image = image_begin[row];
  r.images = images.subspan(r.first_image, image_begin[row + 1] - r.first_image);
  r.image_text_positions = image_text_positions.subspan(r.first_image, r.images.size());
  if (const size_t v = SparseIndex(video_rows, row); v < video_rows.size()) {
    if (!in_range(video_begin, v, videos.size())) return named(Status::Corrupt("video range"));
    r.first_video = video_begin[v];
    r.videos = videos.subspan(r.first_video, video_begin[v + 1] - r.first_video);
  }
  if (const size_t a = SparseIndex(audio_rows, row); a < audio_rows.size()) {
    if (!in_range(audio_begin, a, audios.size())) return named(Status::Corrupt("audio range"));
    r.first_audio = audio_begin[a];
    r.audios = audios.subspan(r.first_audio, audio_begin[a + 1] - r.first_audio);
  }
  const Status status =
      CheckSample(r.text_tokens, r.images, r.image_text_positions, {r.videos, r.audios});
  if (!status.ok()) return named(status);
  return r;
}

uint64_t SampleTable::data_checksum() const {
  TableHeader h;
  std::memcpy(&h, bytes_.data(), sizeof(h));
  return h.data_xxh3;
}

Status SampleTable::Validate() const {
  for (auto rows : {video_rows, audio_rows}) {
    for (size_t k = 0; k < rows.size(); ++k) {
      if (rows[k] >= num_samples() || (k > 0 && rows[k] <= rows[k - 1])) {
        return Status::Corrupt("{}: video or audio rows out of order at entry {}", origin_, k);
      }
    }
  }
  for (uint64_t row = 0; row < num_samples(); ++row) MMPT_RETURN_IF_ERROR(CheckRow(row));
  if (Hash64(bytes_.subspan(sizeof(TableHeader))) != data_checksum()) {
    return Status::Corrupt("{}: data checksum differs from its header's", origin_);
  }
  return Status::OK();
}

Result<SampleTable> SampleTableBuilder::Finish() && {
  if (text_tokens_.empty()) return Status::InvalidArgument("the corpus has no samples");
  const size_t num_sources = names_.size();
  const size_t n = text_tokens_.size();
  std::vector<uint64_t> source_begin(num_sources + 1, 0);
  for (uint32_t s : source_) ++source_begin[s + 1];
  for (size_t s = 0; s < num_sources; ++s) source_begin[s + 1] += source_begin[s];
  // Counting sort of rows by source, keeping input order within a source.
  std::vector<uint64_t> order(n);
  {
    std::vector<uint64_t> next(source_begin.begin(), source_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) order[next[source_[i]]++] = i;
  }
  std::vector<uint32_t> text_tokens(n);
  std::vector<uint64_t> image_begin(n + 1, 0);
  for (size_t r = 0; r < n; ++r) {
    text_tokens[r] = text_tokens_[order[r]];
    image_begin[r + 1] = image_begin[r] + image_begin_[order[r] + 1] - image_begin_[order[r]];
  }
  std::vector<ImageSize> images;
  std::vector<uint32_t> positions;
  images.reserve(images_.size());
  positions.reserve(images_.size());
  SparseItems<VideoItem> videos;
  SparseItems<AudioItem> audios;
  for (size_t r = 0; r < n; ++r) {
    const uint64_t i = order[r];
    AppendRange(images_, image_begin_, i, &images);
    AppendRange(positions_, image_begin_, i, &positions);
    if (video_begin_[i + 1] > video_begin_[i]) {
      videos.rows.push_back(r);
      AppendRange(videos_, video_begin_, i, &videos.items);
      videos.begin.push_back(videos.items.size());
    }
    if (audio_begin_[i + 1] > audio_begin_[i]) {
      audios.rows.push_back(r);
      AppendRange(audios_, audio_begin_, i, &audios.items);
      audios.begin.push_back(audios.items.size());
    }
  }
  TableHeader h{};
  std::memcpy(h.magic, kSampleTableMagic, 8);
  h.version = kSampleTableVersion;
  h.header_bytes = sizeof(TableHeader);
  h.num_sources = num_sources;
  h.num_samples = n;
  h.num_images = images.size();
  h.num_video_rows = videos.rows.size();
  h.num_videos = videos.items.size();
  h.num_audio_rows = audios.rows.size();
  h.num_audios = audios.items.size();
  for (const std::string& name : names_) h.names_bytes += 4 + name.size();
  h.names_bytes = Padded(h.names_bytes);
  h.image_bytes = sizeof(ImageSize);
  h.video_bytes = sizeof(VideoItem);
  h.audio_bytes = sizeof(AudioItem);
  std::array<uint64_t, 11> sizes;
  if (!SectionSizes(h, &sizes)) return Status::InvalidArgument("the corpus is too large");
  h.total_bytes = sizeof(TableHeader) + h.names_bytes;
  for (uint64_t s : sizes) h.total_bytes += s;
  TableWriter out(h.total_bytes);
  out.Put(std::span<const TableHeader>(&h, 1));
  for (const std::string& name : names_) out.PutName(name);
  out.Align();
  out.Put(std::span<const uint64_t>(source_begin));
  out.Put(std::span<const uint32_t>(text_tokens));
  out.Put(std::span<const uint64_t>(image_begin));
  out.Put(std::span<const ImageSize>(images));
  out.Put(std::span<const uint32_t>(positions));
  out.Put(std::span<const uint64_t>(videos.rows));
  out.Put(std::span<const uint64_t>(videos.begin));
  out.Put(std::span<const VideoItem>(videos.items));
  out.Put(std::span<const uint64_t>(audios.rows));
  out.Put(std::span<const uint64_t>(audios.begin));
  out.Put(std::span<const AudioItem>(audios.items));
  MMPT_CHECK(out.at() == h.total_bytes);
  h.data_xxh3 =
      Hash64(std::span<const std::byte>(out.data(), h.total_bytes).subspan(sizeof(TableHeader)));
  std::memcpy(out.data(), &h, sizeof(h));
  auto words = std::make_shared<std::vector<uint64_t>>(std::move(out).Take());
  const auto bytes = std::as_bytes(std::span<const uint64_t>(*words)).first(h.total_bytes);
  return SampleTable::FromBytes(std::move(words), bytes, "(in memory)");
}

}  // namespace mmpt::cost
