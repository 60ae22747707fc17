#include "mmpt/store/planning_table.h"

#include <string>
#include <vector>

#include "mmpt/core/log.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::store {

namespace {

// A sample's planning items as its `.meta` records give them, in record order: each image, video
// (group) and audio clip (sound track part) one item.
struct MetaRow {
  std::vector<cost::ImageSize> images;
  std::vector<uint32_t> positions;
  std::vector<cost::VideoItem> videos;
  std::vector<cost::AudioItem> audios;

  void Read(std::span<const MediaMeta> records) {
    images.clear();
    positions.clear();
    videos.clear();
    audios.clear();
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
          audios.push_back({.samples = m.frames,
                            .sample_rate_hz = m.sample_rate_hz,
                            .text_position = m.text_position,
                            .record = k,
                            .track_offset = offset,
                            .joins_previous = m.joins_previous_part()});
          break;
        }
      }
    }
  }
};

// Each row of `dataset` with its items (MetaRow), in the planning table's order: sources in
// order, a source's samples through its shards in manifest order. `add(source, text_tokens,
// row)`; its error is named with the shard's `.meta` and record.
template <typename Add>
Status ForEachRow(const Dataset& dataset, Add add) {
  MetaRow row;
  for (uint32_t source = 0; source < dataset.sources().size(); ++source) {
    for (const size_t shard : dataset.source_shards(source)) {
      MMPT_ASSIGN_OR_RETURN(const std::shared_ptr<const MetaTable> meta, dataset.MetaOf(shard));
      for (uint64_t i = 0; i < meta->num_samples(); ++i) {
        row.Read(meta->media_of(i));
        Status status = add(source, meta->sample(i).text_tokens, row);
        if (!status.ok()) return status.WithContext(fmt::format("{} record {}", meta->path(), i));
      }
    }
  }
  return Status::OK();
}

}  // namespace

Result<cost::SampleTable> BuildPlanningTable(const Dataset& dataset) {
  cost::SampleTableBuilder builder;
  for (const std::string& name : dataset.sources()) builder.AddSource(name);
  MMPT_RETURN_IF_ERROR(ForEachRow(dataset, [&](uint32_t source, uint32_t text, const MetaRow& row) {
    return builder.Add(source, text, row.images, row.positions, {row.videos, row.audios});
  }));
  auto table = std::move(builder).Finish();
  if (!table.ok()) return Status::InvalidArgument("{}: the dataset has no samples", dataset.dir());
  return table;
}

Result<FileChecksum> WritePlanningTableOf(const Dataset& dataset) {
  // Its size first: the rows and items the shards' `.meta` tables hold.
  cost::TableCounts counts;
  MMPT_RETURN_IF_ERROR(ForEachRow(dataset, [&](uint32_t, uint32_t, const MetaRow& row) {
    counts.Add(row.images.size(), row.videos.size(), row.audios.size());
    return Status::OK();
  }));
  const std::string path = dataset.dir() + "/" + kPlanningTableName;
  MMPT_ASSIGN_OR_RETURN(cost::SampleTableWriter writer,
                        cost::SampleTableWriter::Create(path, dataset.sources(), counts));
  MMPT_RETURN_IF_ERROR(ForEachRow(dataset, [&](uint32_t source, uint32_t text, const MetaRow& row) {
    return writer.Add(source, text, row.images, row.positions, {row.videos, row.audios});
  }));
  MMPT_ASSIGN_OR_RETURN(const cost::SampleTableWriter::Written written, std::move(writer).Finish());
  return FileChecksum{written.bytes, written.checksum};
}

Status FinishDataset(const std::string& dir, Manifest manifest) {
  manifest.planning.reset();
  // A dataset of no samples (every record skipped) has no table to plan from.
  if (manifest.num_samples() == 0) return WriteManifest(dir, manifest);
  MMPT_ASSIGN_OR_RETURN(Dataset dataset, Dataset::Open(dir, manifest));
  MMPT_ASSIGN_OR_RETURN(manifest.planning, WritePlanningTableOf(dataset));
  return WriteManifest(dir, manifest);
}

Status WritePlanningTable(const std::string& dir, const cost::SampleTable& table,
                          Manifest manifest) {
  const std::span<const std::byte> bytes = table.bytes();
  MMPT_RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/" + kPlanningTableName,
                      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  manifest.planning = FileChecksum{bytes.size(), table.data_checksum()};
  return WriteManifest(dir, manifest);
}

Result<cost::SampleTable> OpenPlanningTable(const std::string& dir, const Manifest& manifest) {
  if (!manifest.planning) {
    MMPT_LOG_WARN(
        "{}: the dataset has no {} (prepared before it): its planning table is built in this "
        "process's memory; `mmpt index {}` writes it once",
        dir, kPlanningTableName, dir);
    MMPT_ASSIGN_OR_RETURN(Dataset dataset, Dataset::Open(dir, manifest));
    return BuildPlanningTable(dataset);
  }
  const std::string path = dir + "/" + kPlanningTableName;
  MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  auto mapping = std::make_shared<MappedFile>(std::move(file));
  const std::span<const std::byte> bytes = mapping->bytes();
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table,
                        cost::SampleTable::FromBytes(mapping, bytes, path));
  if (bytes.size() != manifest.planning->bytes ||
      table.data_checksum() != manifest.planning->xxh3) {
    return Status::Corrupt("{}: {} bytes, checksum {}; the manifest records {} bytes, {}", path,
                           bytes.size(), ChecksumHex(table.data_checksum()),
                           manifest.planning->bytes, ChecksumHex(manifest.planning->xxh3));
  }
  // Sources in order of first appearance, each with the manifest's samples.
  const std::vector<SourceCounts> counts = manifest.Counts();
  std::vector<std::string> names;
  for (const SourceCounts& c : counts) names.push_back(c.name);
  if (names != table.source_names) {
    return Status::Corrupt("{}: its sources differ from the manifest's", path);
  }
  for (uint32_t s = 0; s < counts.size(); ++s) {
    if (table.source_size(s) != counts[s].samples) {
      return Status::Corrupt("{}: source '{}' has {} samples; the manifest's shards hold {}", path,
                             names[s], table.source_size(s), counts[s].samples);
    }
  }
  return table;
}

Result<cost::SampleTable> OpenPlanningTable(const std::string& dir) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir, ShardList::kSkip));
  return OpenPlanningTable(dir, manifest);
}

}  // namespace mmpt::store
