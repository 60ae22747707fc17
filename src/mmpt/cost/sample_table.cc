#include "mmpt/cost/sample_table.h"

#include <algorithm>

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

}  // namespace

Status SampleTableBuilder::Add(uint32_t source, uint32_t text_tokens,
                               std::span<const ImageSize> images,
                               std::span<const uint32_t> text_positions, AvItems av) {
  if (source >= names_.size()) {
    return Status::InvalidArgument("unknown source id {} ({} sources)", source, names_.size());
  }
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
  if (!text_positions.empty()) {
    if (text_positions.size() != images.size()) {
      return Status::InvalidArgument("{} text positions for {} images", text_positions.size(),
                                     images.size());
    }
    for (size_t i = 0; i < images.size(); ++i) {
      if (text_positions[i] > text_tokens || (i > 0 && text_positions[i] < text_positions[i - 1])) {
        return Status::InvalidArgument(
            "image {} at text position {}: not in order within the "
            "sample's {} text tokens",
            i, text_positions[i], text_tokens);
      }
    }
  }
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

Result<SampleTable> SampleTableBuilder::Finish() && {
  if (text_tokens_.empty()) return Status::InvalidArgument("the corpus has no samples");
  SampleTable table;
  table.source_names = std::move(names_);
  const size_t num_sources = table.source_names.size();
  const size_t n = text_tokens_.size();
  table.source_begin.assign(num_sources + 1, 0);
  for (uint32_t s : source_) ++table.source_begin[s + 1];
  for (size_t s = 0; s < num_sources; ++s) table.source_begin[s + 1] += table.source_begin[s];
  // A kind no sample has keeps its ranges empty (SampleTable::VideosOf).
  if (videos_.empty()) video_begin_.clear();
  if (audios_.empty()) audio_begin_.clear();
  if (std::is_sorted(source_.begin(), source_.end())) {
    table.text_tokens = std::move(text_tokens_);
    table.image_begin = std::move(image_begin_);
    table.images = std::move(images_);
    table.image_text_positions = std::move(positions_);
    table.video_begin = std::move(video_begin_);
    table.videos = std::move(videos_);
    table.audio_begin = std::move(audio_begin_);
    table.audios = std::move(audios_);
    return table;
  }
  // Counting sort of rows by source, keeping input order within a source.
  std::vector<uint64_t> next(table.source_begin.begin(), table.source_begin.end() - 1);
  std::vector<uint64_t> order(n);
  for (size_t i = 0; i < n; ++i) order[next[source_[i]]++] = i;
  table.text_tokens.resize(n);
  table.image_begin.resize(n + 1);
  table.images.reserve(images_.size());
  table.image_text_positions.reserve(images_.size());
  table.image_begin[0] = 0;
  for (size_t r = 0; r < n; ++r) {
    uint64_t i = order[r];
    table.text_tokens[r] = text_tokens_[i];
    AppendRange(images_, image_begin_, i, &table.images);
    AppendRange(positions_, image_begin_, i, &table.image_text_positions);
    table.image_begin[r + 1] = table.images.size();
  }
  if (!video_begin_.empty()) {
    table.video_begin.assign(1, 0);
    table.videos.reserve(videos_.size());
    for (size_t r = 0; r < n; ++r) {
      AppendRange(videos_, video_begin_, order[r], &table.videos);
      table.video_begin.push_back(table.videos.size());
    }
  }
  if (!audio_begin_.empty()) {
    table.audio_begin.assign(1, 0);
    table.audios.reserve(audios_.size());
    for (size_t r = 0; r < n; ++r) {
      AppendRange(audios_, audio_begin_, order[r], &table.audios);
      table.audio_begin.push_back(table.audios.size());
    }
  }
  return table;
}

}  // namespace mmpt::cost
