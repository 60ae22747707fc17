#include "mmpt/store/planning_table.h"

#include <string>
#include <vector>

namespace mmpt::store {

Result<cost::SampleTable> PlanningTable(const Dataset& dataset) {
  cost::SampleTableBuilder builder;
  for (const std::string& name : dataset.sources()) builder.AddSource(name);
  std::vector<cost::ImageSize> images;
  std::vector<uint32_t> positions;
  std::vector<cost::VideoItem> videos;
  std::vector<cost::AudioItem> audios;
  for (size_t shard = 0; shard < dataset.num_shards(); ++shard) {
    const MetaTable& meta = dataset.meta_table(shard);
    const uint32_t source = dataset.shard_source(shard);
    for (uint64_t i = 0; i < meta.num_samples(); ++i) {
      images.clear();
      positions.clear();
      videos.clear();
      audios.clear();
      const std::span<const MediaMeta> records = meta.media_of(i);
      for (uint16_t k = 0; k < records.size(); ++k) {
        const MediaMeta& m = records[k];
        switch (m.kind) {
          case MediaKind::kImage:
            images.push_back({m.width, m.height});
            positions.push_back(m.text_position);
            break;
          case MediaKind::kVideo:
            videos.push_back(
                {m.width, m.height, m.frames, m.fps_milli, m.text_position, m.group, m.groups, k});
            break;
          case MediaKind::kAudio: {
            // A sound track's later part starts where the part before it ends.
            const bool later = m.sound_track() && m.group > 0 && !audios.empty();
            const uint32_t offset = later ? audios.back().track_offset + audios.back().samples : 0;
            audios.push_back(
                {m.frames, m.sample_rate_hz, m.text_position, k, offset, m.joins_previous_part()});
            break;
          }
        }
      }
      Status status =
          builder.Add(source, meta.sample(i).text_tokens, images, positions, {videos, audios});
      if (!status.ok()) return status.WithContext(fmt::format("{} record {}", meta.path(), i));
    }
  }
  auto table = std::move(builder).Finish();
  if (!table.ok()) return Status::InvalidArgument("{}: the dataset has no samples", dataset.dir());
  return table;
}

}  // namespace mmpt::store
