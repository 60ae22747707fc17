#include "mmpt/cost/sample_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
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

}  // namespace

// The table's layout, named (not file-local) because SampleTableWriter's file holds its rows.
namespace table_layout {

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

// A table's byte image laid out in `data` (zeroed, TableRows::Bytes long) for `counts`, its
// rows written into their sections as they come, in table order (a source's rows together,
// sources in id order): SampleTableBuilder's in memory and SampleTableWriter's in a mapped
// file alike. Close writes source_begin and the header.
class TableRows {
 public:
  TableRows(std::byte* data, const TableCounts& counts, const std::vector<std::string>& names)
      : data_(data), counts_(counts), source_rows_(names.size(), 0) {
    h_ = HeaderOf(counts, names);
    uint64_t at = sizeof(TableHeader);
    for (const std::string& name : names) {
      const uint32_t length = static_cast<uint32_t>(name.size());
      std::memcpy(data_ + at, &length, 4);
      std::memcpy(data_ + at + 4, name.data(), name.size());
      at += 4 + name.size();
    }
    at = sizeof(TableHeader) + h_.names_bytes;
    std::array<uint64_t, 11> sizes;
    SectionSizes(h_, &sizes);  // checked by HeaderOf's caller (Bytes)
    for (size_t k = 0; k < sizes.size(); ++k) {
      section_[k] = at;
      at += sizes[k];
    }
  }
  // The header of a table of `counts` and `names` (its checksum still 0); total_bytes 0 when
  // the counts are too large for any file.
  static TableHeader HeaderOf(const TableCounts& counts, const std::vector<std::string>& names) {
    TableHeader h{};
    std::memcpy(h.magic, kSampleTableMagic, 8);
    h.version = kSampleTableVersion;
    h.header_bytes = sizeof(TableHeader);
    h.num_sources = names.size();
    h.num_samples = counts.samples;
    h.num_images = counts.images;
    h.num_video_rows = counts.video_rows;
    h.num_videos = counts.videos;
    h.num_audio_rows = counts.audio_rows;
    h.num_audios = counts.audios;
    for (const std::string& name : names) h.names_bytes += 4 + name.size();
    h.names_bytes = Padded(h.names_bytes);
    h.image_bytes = sizeof(ImageSize);
    h.video_bytes = sizeof(VideoItem);
    h.audio_bytes = sizeof(AudioItem);
    std::array<uint64_t, 11> sizes;
    if (!SectionSizes(h, &sizes)) return h;
    h.total_bytes = sizeof(TableHeader) + h.names_bytes;
    for (uint64_t size : sizes) h.total_bytes += size;
    return h;
  }
  // The bytes of the table. Errors: InvalidArgument for counts no file can hold.
  static Result<uint64_t> Bytes(const TableCounts& counts, const std::vector<std::string>& names) {
    const TableHeader h = HeaderOf(counts, names);
    if (h.total_bytes == 0) return Status::InvalidArgument("the corpus is too large");
    return h.total_bytes;
  }

  // The next row, of `source` (≥ the last row's), its positions one per image; within counts.
  void Put(uint32_t source, uint32_t text_tokens, std::span<const ImageSize> images,
           std::span<const uint32_t> positions, AvItems av) {
    const uint64_t r = done_.samples;
    ++source_rows_[source];
    Write(1, 4 * r, text_tokens);
    Write(3, 8 * done_.images, images);
    Write(4, 4 * done_.images, positions);
    done_.images += images.size();
    Write(2, 8 * (r + 1), done_.images);
    if (!av.videos.empty()) {
      Write(5, 8 * done_.video_rows, r);
      Write(7, sizeof(VideoItem) * done_.videos, av.videos);
      done_.videos += av.videos.size();
      Write(6, 8 * ++done_.video_rows, done_.videos);
    }
    if (!av.audios.empty()) {
      Write(8, 8 * done_.audio_rows, r);
      Write(10, sizeof(AudioItem) * done_.audios, av.audios);
      done_.audios += av.audios.size();
      Write(9, 8 * ++done_.audio_rows, done_.audios);
    }
    ++done_.samples;
  }
  const TableCounts& done() const { return done_; }
  // source_begin and the header, its checksum of every byte after it; the checksum.
  uint64_t Close() {
    uint64_t begin = 0;
    Write(0, 0, begin);
    for (size_t s = 0; s < source_rows_.size(); ++s) {
      begin += source_rows_[s];
      Write(0, 8 * (s + 1), begin);
    }
    h_.data_xxh3 = Hash64(std::span<const std::byte>(data_ + sizeof(TableHeader),
                                                     h_.total_bytes - sizeof(TableHeader)));
    std::memcpy(data_, &h_, sizeof(h_));
    return h_.data_xxh3;
  }

 private:
  template <typename T>
  void Write(size_t section, uint64_t offset, const T& value) {
    std::memcpy(data_ + section_[section] + offset, &value, sizeof(T));
  }
  template <typename T>
  void Write(size_t section, uint64_t offset, std::span<const T> items) {
    if (!items.empty())
      std::memcpy(data_ + section_[section] + offset, items.data(), items.size_bytes());
  }

  std::byte* data_;
  TableCounts counts_;
  TableHeader h_;
  std::array<uint64_t, 11> section_{};
  std::vector<uint64_t> source_rows_;
  TableCounts done_;
};

}  // namespace table_layout

using table_layout::Padded;
using table_layout::Section;
using table_layout::SectionSizes;
using table_layout::TableHeader;
using table_layout::TableRows;

namespace {

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
  TableCounts counts;
  for (size_t i = 0; i < n; ++i) {
    counts.Add(image_begin_[i + 1] - image_begin_[i], video_begin_[i + 1] - video_begin_[i],
               audio_begin_[i + 1] - audio_begin_[i]);
  }
  MMPT_ASSIGN_OR_RETURN(const uint64_t bytes, TableRows::Bytes(counts, names_));
  // Rows by source (a counting sort), keeping input order within a source.
  std::vector<uint64_t> next(num_sources + 1, 0);
  for (uint32_t s : source_) ++next[s + 1];
  for (size_t s = 0; s < num_sources; ++s) next[s + 1] += next[s];
  std::vector<uint64_t> order(n);
  for (size_t i = 0; i < n; ++i) order[next[source_[i]]++] = i;
  auto words = std::make_shared<std::vector<uint64_t>>((bytes + 7) / 8, 0);
  std::byte* data = reinterpret_cast<std::byte*>(words->data());
  TableRows rows(data, counts, names_);
  auto range = [](const auto& items, const std::vector<uint64_t>& begin, uint64_t i) {
    return std::span(items).subspan(begin[i], begin[i + 1] - begin[i]);
  };
  for (const uint64_t i : order) {
    rows.Put(source_[i], text_tokens_[i], range(images_, image_begin_, i),
             range(positions_, image_begin_, i),
             {range(videos_, video_begin_, i), range(audios_, audio_begin_, i)});
  }
  rows.Close();
  return SampleTable::FromBytes(std::move(words), std::span<const std::byte>(data, bytes),
                                "(in memory)");
}

void TableCounts::Add(size_t images_of, size_t videos_of, size_t audios_of) {
  ++samples;
  images += images_of;
  video_rows += videos_of > 0;
  videos += videos_of;
  audio_rows += audios_of > 0;
  audios += audios_of;
}

// The file being written, mapped, and its rows.
struct SampleTableWriter::File {
  std::string path, temporary;
  int fd = -1;
  std::byte* data = nullptr;
  uint64_t bytes = 0;
  TableCounts counts;
  std::unique_ptr<TableRows> rows;
  std::vector<uint32_t> positions;  // Add's scratch
  uint32_t last_source = 0;

  ~File() {
    if (data != nullptr) munmap(data, bytes);
    if (fd >= 0) {
      close(fd);
      unlink(temporary.c_str());  // not finished: nothing is left half-written
    }
  }
};

SampleTableWriter::SampleTableWriter() = default;
SampleTableWriter::~SampleTableWriter() = default;
SampleTableWriter::SampleTableWriter(SampleTableWriter&&) noexcept = default;
SampleTableWriter& SampleTableWriter::operator=(SampleTableWriter&&) noexcept = default;

Result<SampleTableWriter> SampleTableWriter::Create(const std::string& path,
                                                    std::vector<std::string> sources,
                                                    const TableCounts& counts) {
  if (counts.samples == 0) return Status::InvalidArgument("the corpus has no samples");
  SampleTableWriter writer;
  writer.names_ = std::move(sources);
  auto file = std::make_unique<File>();
  MMPT_ASSIGN_OR_RETURN(file->bytes, TableRows::Bytes(counts, writer.names_));
  file->path = path;
  file->counts = counts;
  // A name of its own beside `path` (two writers of one path do not share it).
  std::string temporary = path + ".partial-XXXXXX";
  file->fd = mkostemp(temporary.data(), O_CLOEXEC);
  if (file->fd < 0) return Status::IOError("{}: {}", temporary, std::strerror(errno));
  file->temporary = std::move(temporary);
  if (fchmod(file->fd, 0644) != 0) {
    return Status::IOError("{}: {}", file->temporary, std::strerror(errno));
  }
  // Its blocks taken now: a full disk is an error here, not a fault while rows are written.
  if (const int error = posix_fallocate(file->fd, 0, static_cast<off_t>(file->bytes)); error != 0) {
    return Status::IOError("{}: {} bytes: {}", file->temporary, file->bytes, std::strerror(error));
  }
  void* mapped = mmap(nullptr, file->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file->fd, 0);
  if (mapped == MAP_FAILED) {
    return Status::IOError("{}: mapping {} bytes: {}", file->temporary, file->bytes,
                           std::strerror(errno));
  }
  file->data = static_cast<std::byte*>(mapped);
  file->rows = std::make_unique<TableRows>(file->data, counts, writer.names_);
  writer.file_ = std::move(file);
  return writer;
}

Status SampleTableWriter::Add(uint32_t source, uint32_t text_tokens,
                              std::span<const ImageSize> images,
                              std::span<const uint32_t> text_positions, AvItems av) {
  File& f = *file_;
  if (source >= names_.size()) {
    return Status::InvalidArgument("unknown source id {} ({} sources)", source, names_.size());
  }
  if (source < f.last_source) {
    return Status::InvalidArgument("source {} after source {}: rows come source by source", source,
                                   f.last_source);
  }
  MMPT_RETURN_IF_ERROR(CheckSample(text_tokens, images, text_positions, av));
  TableCounts after = f.rows->done();
  after.Add(images.size(), av.videos.size(), av.audios.size());
  if (after.samples > f.counts.samples || after.images > f.counts.images ||
      after.video_rows > f.counts.video_rows || after.videos > f.counts.videos ||
      after.audio_rows > f.counts.audio_rows || after.audios > f.counts.audios) {
    return Status::InvalidArgument("row {}: more rows or items than the {} samples counted",
                                   f.rows->done().samples, f.counts.samples);
  }
  if (text_positions.empty()) {
    f.positions.resize(images.size());
    for (size_t i = 0; i < images.size(); ++i) {
      f.positions[i] = SpreadTextPosition(text_tokens, i, images.size());
    }
    text_positions = f.positions;
  }
  f.rows->Put(source, text_tokens, images, text_positions, av);
  f.last_source = source;
  return Status::OK();
}

Result<SampleTableWriter::Written> SampleTableWriter::Finish() && {
  File& f = *file_;
  if (!(f.rows->done() == f.counts)) {
    return Status::InvalidArgument("{}: {} of the {} samples counted were added", f.path,
                                   f.rows->done().samples, f.counts.samples);
  }
  const uint64_t checksum = f.rows->Close();
  if (msync(f.data, f.bytes, MS_SYNC) != 0 || munmap(f.data, f.bytes) != 0) {
    return Status::IOError("{}: {}", f.temporary, std::strerror(errno));
  }
  f.data = nullptr;
  const bool closed = close(f.fd) == 0;
  f.fd = -1;
  if (!closed || rename(f.temporary.c_str(), f.path.c_str()) != 0) {
    const Status error = Status::IOError("{}: {}", f.path, std::strerror(errno));
    unlink(f.temporary.c_str());
    return error;
  }
  return Written{f.bytes, checksum};
}

}  // namespace mmpt::cost
