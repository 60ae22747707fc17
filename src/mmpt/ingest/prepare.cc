#include "mmpt/ingest/prepare.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/core/progress.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/cost/presets.h"
#include "mmpt/ingest/media_check.h"
#include "mmpt/ingest/sound_track.h"
#include "mmpt/ingest/webdataset.h"
#include "mmpt/store/planning_table.h"
#include "mmpt/store/sample_render.h"
#include "mmpt/store/shard_writer.h"

namespace mmpt::ingest {
namespace fs = std::filesystem;

std::string PrepareReport::Summary() const {
  std::string out = fmt::format(
      "prepared {} samples ({} media, {} text tokens) into {} shards from {} records in {:.2f} s "
      "({:.1f} MB/s in, {:.1f} MB/s out)\n",
      samples, media, text_tokens, shards, records, seconds,
      seconds > 0 ? input_bytes / seconds / 1e6 : 0.0,
      seconds > 0 ? output_bytes / seconds / 1e6 : 0.0);
  if (skipped > 0) {
    out += fmt::format("skipped {} bad records:\n", skipped);
    for (const auto& [reason, count] : skipped_by_reason) {
      out += fmt::format("  {:>8}  {}\n", count, reason);
    }
    out += "first examples:\n";
    for (const std::string& example : examples) out += "  " + example + "\n";
  }
  return out;
}

namespace {

// Work for one task: a run of up to samples_per_shard records of a JSONL input (one shard), or
// a tar group: consecutive tar inputs of one source, read once in order and cut into a shard
// every samples_per_shard records.
struct Chunk {
  size_t input = 0;      // the first input
  size_t end_input = 0;  // one past the last input (a JSONL chunk has one)
  uint64_t begin = 0;    // byte range in a JSONL input
  uint64_t end = 0;
  uint64_t first_line = 0;  // 1-based line number of the byte at `begin`
  uint32_t source = 0;      // index into the source list
  uint64_t number = 0;      // chunk number within its source: its shards' stems
  bool tar = false;
};

// Call fn(line, line_number) for every non-blank line in text[begin, end).
template <typename Fn>
void ForEachLine(std::string_view text, uint64_t begin, uint64_t end, uint64_t first_line,
                 Fn&& fn) {
  uint64_t line_number = first_line;
  while (begin < end) {
    const char* start = text.data() + begin;
    const void* hit = std::memchr(start, '\n', end - begin);
    uint64_t next = hit ? static_cast<const char*>(hit) - text.data() + 1 : end;
    std::string_view line(start, next - begin);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (!line.empty()) fn(line, line_number);
    ++line_number;
    begin = next;
  }
}

// A tar sample's key and where it is ("file:member" of its first member): what the duplicate
// pass needs of a tar group's records, in record order.
struct TarRecord {
  std::string key;
  std::string where;
};
using TarRecords = std::optional<std::vector<TarRecord>>;  // per chunk; nullopt: not yet known

// The keys of one tar, read without the members' data.
Status ScanTar(const MappedFile& file, const std::string& path, std::vector<TarRecord>& out) {
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<WdsReader> reader, WdsReader::Open(file.bytes(), path));
  while (true) {
    MMPT_ASSIGN_OR_RETURN(std::optional<WdsSample> sample, reader->Next(/*with_data=*/false));
    if (!sample) return Status::OK();
    out.push_back(
        {std::move(sample->key), fmt::format("{}:{}", path, sample->members.front().name)});
  }
}

std::vector<Chunk> SplitIntoChunks(const std::vector<MappedFile>& files,
                                   const std::vector<bool>& is_tar,
                                   const std::vector<uint32_t>& input_source,
                                   const PrepareOptions& options, size_t num_sources) {
  std::vector<Chunk> chunks;
  std::vector<uint64_t> next_number(num_sources, 0);
  for (size_t input = 0; input < files.size();) {
    const uint32_t source = input_source[input];
    if (is_tar[input]) {
      Chunk group{input, input + 1, 0, 0, 1, source, next_number[source]++, true};
      uint64_t bytes = files[input].size_bytes();
      while (group.end_input < files.size() && is_tar[group.end_input] &&
             input_source[group.end_input] == source &&
             bytes + files[group.end_input].size_bytes() <= options.tar_group_bytes) {
        bytes += files[group.end_input++].size_bytes();
      }
      chunks.push_back(group);
      input = group.end_input;
      continue;
    }
    std::string_view text = files[input].text();
    Chunk chunk{input, input + 1, 0, 0, 1, source, 0, false};
    uint64_t records = 0;
    uint64_t line_number = 1;
    uint64_t at = 0;
    while (at < text.size()) {
      const void* hit = std::memchr(text.data() + at, '\n', text.size() - at);
      uint64_t next = hit ? static_cast<const char*>(hit) - text.data() + 1 : text.size();
      bool blank = next - at == 1 || (next - at == 2 && text[at] == '\r');
      if (!blank && records == options.samples_per_shard) {
        chunk.end = at;
        chunk.number = next_number[chunk.source]++;
        chunks.push_back(chunk);
        chunk.begin = at;
        chunk.first_line = line_number;
        records = 0;
      }
      if (!blank) ++records;
      ++line_number;
      at = next;
    }
    if (records > 0) {
      chunk.end = text.size();
      chunk.number = next_number[chunk.source]++;
      chunks.push_back(chunk);
    }
    ++input;
  }
  return chunks;
}

// Where record `line` (1-based) of a chunk is, for messages: "file:line" in a JSONL input,
// "file:member" of the sample's first member in a tar group.
std::string RecordWhere(const PrepareOptions& options, const Chunk& chunk,
                        const TarRecords& records, uint64_t line) {
  if (chunk.tar) return (*records)[line - 1].where;
  return fmt::format("{}:{}", options.inputs[chunk.input].path, line);
}

// A record of the duplicate-key pass.
struct KeySeen {
  uint64_t hash;
  uint32_t chunk;
  uint64_t line;
};

// What one chunk produced.
struct ChunkResult {
  Status status;  // the error that stopped the chunk under ErrorPolicy::kFail
  std::vector<store::ShardInfo> shards;  // written, even when the chunk then failed
  uint64_t records = 0;
  uint64_t samples = 0;
  uint64_t media = 0;
  uint64_t text_tokens = 0;
  uint64_t input_bytes = 0;
  std::map<std::string, uint64_t> skipped_by_reason;
  std::vector<std::string> examples;
  TarRecords tar_records;  // a tar group's records, as it read them
};

struct Context {
  const PrepareOptions& options;
  const std::vector<MappedFile>& files;
  const std::vector<std::string>& sources;
  const std::vector<std::string>& media_roots;  // per input
  const cost::VisionConfig& vision;
  const std::optional<SoundTrackRules>& sound;  // under options.audio_in_video
  const text::ChatRenderer& renderer;
  // (chunk, line) of each duplicate → "file:line" where its key was first seen.
  const std::unordered_map<uint64_t, std::string>& duplicates;
  std::atomic<bool>& stop;
  ProgressBar* progress;
};

uint64_t RecordId(uint64_t chunk, uint64_t line) { return (chunk << 40) ^ line; }

// The reason a record that does not parse is counted under.
std::string ParseReason(const Status& status) {
  return status.code() == StatusCode::kCorrupt ? "malformed JSON or not UTF-8" : "invalid record";
}

// One chunk of one input into one shard: its records read (a JSONL line range, or a tar's
// samples), each parsed sample's media loaded, rendered and added; bad records counted.
class ChunkProcessor {
 public:
  ChunkProcessor(const Context& ctx, const std::vector<Chunk>& chunks, size_t index)
      : ctx_(ctx),
        chunk_(chunks[index]),
        index_(index),
        options_(ctx.options),
        file_(&options_.inputs[chunk_.input].path),
        source_(ctx.sources[chunk_.source]) {}

  ChunkResult Run() {
    if (chunk_.tar ? ReadTars() : ReadJsonl()) FinishShard();
    return std::move(result_);
  }

 private:
  // `where` is "file:line" or "file:member"; messages that name their file already keep theirs.
  void BadRecord(std::string_view where, const std::string& reason, const Status& error) {
    ++result_.skipped_by_reason[reason];
    std::string message = error.message();
    if (message.rfind(*file_ + ":", 0) != 0) message = fmt::format("{}: {}", where, message);
    if (result_.examples.size() < options_.max_examples) result_.examples.push_back(message);
    if (options_.on_error == ErrorPolicy::kFail && result_.status.ok()) {
      result_.status = Status(error.code(), message);
      ctx_.stop = true;
    }
  }

  void CountRecord() {
    ++result_.records;
    if (ctx_.progress) ctx_.progress->Add(1);
  }

  // A failure that ends the chunk (not a bad record): every part stops.
  bool Stop(Status status) {
    result_.status = std::move(status);
    ctx_.stop = true;
    return false;
  }

  // Every input's parsed sample goes on alike: the duplicate check, its media (from disk, or
  // `tar_images` for a tar's), rendering, the shard. `record_bytes`: input bytes besides media.
  void AddSample(store::Sample sample, std::vector<std::string>* tar_images, uint64_t line_number,
                 std::string_view where, uint64_t record_bytes) {
    if (auto dup = ctx_.duplicates.find(RecordId(index_, line_number));
        dup != ctx_.duplicates.end()) {
      BadRecord(where, "duplicate key",
                Status::InvalidArgument("duplicate key '{}' in source '{}' (first at {})",
                                        sample.key, source_, dup->second));
      return;
    }
    std::vector<store::MediaBlob> blobs(sample.media.size());
    uint64_t media_bytes = 0;
    for (size_t k = 0; k < sample.media.size(); ++k) {
      std::optional<std::string> bytes;
      if (tar_images != nullptr) bytes = std::move((*tar_images)[k]);
      std::string reason;
      Status status =
          LoadMedia({ctx_.vision, ctx_.options.max_decode_pixels, ctx_.media_roots[input_]},
                    sample.media[k], std::move(bytes), blobs[k], media_bytes, reason);
      if (!status.ok()) {
        BadRecord(
            tar_images ? fmt::format("{}:{}", *file_, sample.media[k].path) : std::string(where),
            reason, status);
        return;
      }
    }
    std::vector<store::SoundTrackLayout> sound_tracks(ctx_.sound ? sample.media.size() : 0);
    std::vector<uint32_t> sound_items(sound_tracks.size());
    for (size_t k = 0; k < sound_tracks.size(); ++k) {
      if (sample.media[k].kind != store::MediaKind::kVideo) continue;
      Result<store::SoundTrackLayout> layout =
          LayOutSoundTrack(*ctx_.sound, sample.media[k], blobs[k].bytes);
      if (!layout.ok()) {
        BadRecord(where, "video without a usable sound track",
                  layout.status().WithContext(fmt::format("sample '{}', video {} ('{}')",
                                                          sample.key, k, sample.media[k].path)));
        return;
      }
      sound_items[k] = layout->records();
      sound_tracks[k] = std::move(*layout);
    }
    const Result<media::VideoSamplingRule> video_rule = cost::VideoRuleOf(ctx_.vision);
    if (Status status =
            store::RenderSample(ctx_.renderer, sample, video_rule.ok() ? &*video_rule : nullptr,
                                &rendered_, sound_items);
        !status.ok()) {
      BadRecord(where,
                status.code() == StatusCode::kInvalidArgument ? "not in the chat template"
                                                              : "tokenizer error",
                status);
      return;
    }
    // The writer takes the layouts in segment order, as it stores the media.
    std::vector<store::SoundTrackLayout> in_segment_order;
    for (const store::Segment& segment : sample.segments) {
      if (segment.is_media && segment.media_index < sound_tracks.size()) {
        in_segment_order.push_back(sound_tracks[segment.media_index]);
      }
    }
    if (Status added = Writer().Add(std::move(sample), std::move(blobs), rendered_.ids,
                                    rendered_.media_positions, VideoGroups(), in_segment_order);
        !added.ok()) {
      BadRecord(where, "invalid record", added);
      return;
    }
    result_.input_bytes += record_bytes + media_bytes;
    result_.text_tokens += rendered_.ids.size();
  }

  // A tar group's tars, each read once, in order; a shard is cut every samples_per_shard
  // records. False: the chunk failed (a corrupt tar: Prepare removes the shards it wrote).
  bool ReadTars() {
    result_.tar_records.emplace();
    std::vector<std::string> images;
    uint64_t line = 0;  // the record's number within the group, 1-based
    for (input_ = chunk_.input; input_ < chunk_.end_input; ++input_) {
      file_ = &options_.inputs[input_].path;
      auto reader = WdsReader::Open(ctx_.files[input_].bytes(), *file_);
      if (!reader.ok()) return Stop(reader.status());
      while (!ctx_.stop.load(std::memory_order_relaxed)) {
        auto next = (*reader)->Next();
        if (!next.ok()) return Stop(next.status());
        if (!*next) break;
        WdsSample& wds = **next;
        const std::string where = fmt::format("{}:{}", *file_, wds.members.front().name);
        result_.tar_records->push_back({wds.key, where});
        if (line++ % options_.samples_per_shard == 0) FinishShard();
        CountRecord();
        uint64_t member_bytes = 0;
        for (const WdsMember& member : wds.members) member_bytes += member.bytes.size();
        auto parsed = WdsToSample(wds, *file_, &images);
        if (!parsed.ok()) {
          BadRecord(where, ParseReason(parsed.status()), parsed.status());
          continue;
        }
        for (const std::string& image : images) member_bytes -= image.size();
        AddSample(std::move(*parsed), &images, line, where, member_bytes);
      }
    }
    return true;
  }

  // A JSONL input's lines [chunk.begin, chunk.end). True: the lines were read.
  bool ReadJsonl() {
    RecordParser parser;
    ForEachLine(ctx_.files[chunk_.input].text(), chunk_.begin, chunk_.end, chunk_.first_line,
                [&](std::string_view line, uint64_t line_number) {
                  if (ctx_.stop.load(std::memory_order_relaxed)) return;
                  CountRecord();
                  const std::string where = fmt::format("{}:{}", *file_, line_number);
                  auto parsed = parser.Parse(line, options_.format, {*file_, line_number});
                  if (!parsed.ok()) {
                    BadRecord(where, ParseReason(parsed.status()), parsed.status());
                    return;
                  }
                  AddSample(std::move(*parsed), nullptr, line_number, where, line.size() + 1);
                });
    return true;
  }

  // The shard being filled: "<source>/<number>" for a JSONL chunk, "<source>/<number>-<k>" for
  // the k-th of a tar group.
  // Per media piece of the sample just rendered: its temporal groups when the template writes
  // videos as timestamped groups, else none.
  std::span<const uint32_t> VideoGroups() const {
    const text::MediaMarkers* video = ctx_.renderer.chat().markers(text::PieceKind::kVideo);
    if (video == nullptr || video->timestamp.empty()) return {};
    return rendered_.media_items;
  }

  store::ShardWriter& Writer() {
    if (!writer_) {
      const std::string stem =
          chunk_.tar ? fmt::format("{}/{:05}-{:04}", source_, chunk_.number, result_.shards.size())
                     : fmt::format("{}/{:05}", source_, chunk_.number);
      writer_.emplace(options_.out_dir, stem, source_);
    }
    return *writer_;
  }

  // Write the shard being filled, when it kept samples and nothing failed.
  void FinishShard() {
    if (!result_.status.ok() || !writer_ || writer_->num_samples() == 0) return;
    auto shard = writer_->Finish();
    writer_.reset();
    if (!shard.ok()) {
      Stop(shard.status());
      return;
    }
    result_.samples += shard->samples;
    result_.media += shard->media;
    result_.shards.push_back(std::move(*shard));
  }

  const Context& ctx_;
  const Chunk& chunk_;
  const size_t index_;
  const PrepareOptions& options_;
  size_t input_ = chunk_.input;  // the input being read
  const std::string* file_;      // its path
  const std::string& source_;
  ChunkResult result_;
  std::optional<store::ShardWriter> writer_;
  text::RenderedText rendered_;
};

ChunkResult ProcessChunk(const Context& ctx, const std::vector<Chunk>& chunks, size_t index) {
  return ChunkProcessor(ctx, chunks, index).Run();
}

uint64_t KeyHash(std::string_view source, std::string_view key) {
  Hasher hasher;
  hasher.Update(source);
  hasher.Update(std::string_view("\0", 1));
  hasher.Update(key);
  return hasher.Digest();
}

// A tar group's keys, as the duplicate pass sees them.
std::vector<KeySeen> SeeTarKeys(std::string_view source, uint32_t chunk,
                                const std::vector<TarRecord>& records) {
  std::vector<KeySeen> seen;
  for (uint64_t i = 0; i < records.size(); ++i) {
    seen.push_back({KeyHash(source, records[i].key), chunk, i + 1});
  }
  return seen;
}

// The keys of every chunk's records: a JSONL chunk's parsed here, a tar group's from
// `tar_records` when known (none yet when not).
std::vector<std::vector<KeySeen>> SeeKeys(const PrepareOptions& options,
                                          const std::vector<MappedFile>& files,
                                          const std::vector<std::string>& sources,
                                          const std::vector<Chunk>& chunks,
                                          const std::vector<TarRecords>& tar_records,
                                          ThreadPool& pool) {
  std::vector<std::vector<KeySeen>> seen(chunks.size());
  pool.ParallelFor(0, chunks.size(), [&](size_t c) {
    const Chunk& chunk = chunks[c];
    const uint32_t index = static_cast<uint32_t>(c);
    if (chunk.tar) {
      if (tar_records[c]) seen[c] = SeeTarKeys(sources[chunk.source], index, *tar_records[c]);
      return;
    }
    RecordParser parser;
    ForEachLine(
        files[chunk.input].text(), chunk.begin, chunk.end, chunk.first_line,
        [&](std::string_view line, uint64_t line_number) {
          auto sample =
              parser.Parse(line, options.format, {options.inputs[chunk.input].path, line_number});
          if (sample.ok()) {  // else reported by the main pass
            seen[c].push_back({KeyHash(sources[chunk.source], sample->key), index, line_number});
          }
        });
  });
  return seen;
}

// The records whose (source, key) appeared earlier in input order, by RecordId, each with where
// its key was first seen: every part computes the same answer from the same keys, so parts of a
// scaled-out run agree on which records are duplicates.
std::unordered_map<uint64_t, std::string> Duplicates(
    const PrepareOptions& options, const std::vector<Chunk>& chunks,
    const std::vector<TarRecords>& tar_records, const std::vector<std::vector<KeySeen>>& seen) {
  std::vector<KeySeen> all;
  for (const auto& part : seen) all.insert(all.end(), part.begin(), part.end());
  std::sort(all.begin(), all.end(), [](const KeySeen& a, const KeySeen& b) {
    return std::tie(a.hash, a.chunk, a.line) < std::tie(b.hash, b.chunk, b.line);
  });
  std::unordered_map<uint64_t, std::string> duplicates;
  for (size_t i = 1; i < all.size(); ++i) {
    size_t first = i - 1;
    while (i < all.size() && all[i].hash == all[first].hash) {
      const KeySeen& original = all[first];
      duplicates[RecordId(all[i].chunk, all[i].line)] =
          RecordWhere(options, chunks[original.chunk], tar_records[original.chunk], original.line);
      ++i;
    }
  }
  return duplicates;
}

// OK when `options` can be run; else InvalidArgument naming what is missing or wrong.
Status CheckOptions(const PrepareOptions& options) {
  if (options.inputs.empty()) return Status::InvalidArgument("prepare: no inputs");
  if (options.out_dir.empty()) return Status::InvalidArgument("prepare: no --out directory");
  if (options.tokenizer == nullptr) return Status::InvalidArgument("prepare: no tokenizer");
  if (options.samples_per_shard == 0) {
    return Status::InvalidArgument("--samples-per-shard must be positive");
  }
  if (options.num_parts == 0 || options.part >= options.num_parts) {
    return Status::InvalidArgument("part {} of {} does not exist", options.part, options.num_parts);
  }
  return Status::OK();
}

// The inputs, mapped: each one's source (an index into `sources`, in first appearance) and
// the folder its media paths are relative to.
struct Inputs {
  std::vector<MappedFile> files;
  std::vector<std::string> sources;
  std::vector<uint32_t> input_source;
  std::vector<std::string> media_roots;
  std::vector<bool> is_tar;  // a WebDataset tar shard, by name or --format wds
};

Result<Inputs> OpenInputs(const PrepareOptions& options) {
  Inputs in;
  for (const InputSpec& input : options.inputs) {
    MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(input.path));
    in.files.push_back(std::move(file));
    auto it = std::find(in.sources.begin(), in.sources.end(), input.source);
    in.input_source.push_back(static_cast<uint32_t>(it - in.sources.begin()));
    if (it == in.sources.end()) in.sources.push_back(input.source);
    in.is_tar.push_back(options.format == InputFormat::kWebDataset || IsWebDatasetPath(input.path));
    in.media_roots.push_back(!options.media_root.empty()
                                 ? options.media_root
                                 : fs::path(input.path).parent_path().string());
  }
  return in;
}

// Every tar group's keys, read without the members' data (in parallel): what a part of a
// scaled-out run needs to agree with the others on duplicates. A truncated or corrupt archive
// fails the run here, naming the file, before anything is written.
Result<std::vector<TarRecords>> ScanTars(const PrepareOptions& options,
                                         const std::vector<MappedFile>& files,
                                         const std::vector<Chunk>& chunks, ThreadPool& pool) {
  std::vector<TarRecords> records(chunks.size());
  std::vector<Status> scanned(chunks.size());
  pool.ParallelFor(0, chunks.size(), [&](size_t c) {
    if (!chunks[c].tar) return;
    records[c].emplace();
    for (size_t i = chunks[c].input; i < chunks[c].end_input && scanned[c].ok(); ++i) {
      scanned[c] = ScanTar(files[i], options.inputs[i].path, *records[c]);
    }
  });
  for (const Status& status : scanned) MMPT_RETURN_IF_ERROR(status);
  return records;
}

// Records in chunks `mine` (for the progress bar); 0 (unknown) while a tar group's are.
uint64_t CountRecords(const std::vector<size_t>& mine, const std::vector<Chunk>& chunks,
                      const std::vector<MappedFile>& files,
                      const std::vector<TarRecords>& tar_records) {
  uint64_t total = 0;
  for (size_t c : mine) {
    if (chunks[c].tar) {
      if (!tar_records[c]) return 0;
      total += tar_records[c]->size();
      continue;
    }
    ForEachLine(files[chunks[c].input].text(), chunks[c].begin, chunks[c].end, 1,
                [&](std::string_view, uint64_t) { ++total; });
  }
  return total;
}

// Remove the files of the shards `result` wrote; with `folders`, also the source folders they
// leave empty. Only once no chunk is writing: a folder removed while another chunk of its source
// writes there would fail that chunk.
void RemoveShards(const std::string& out_dir, const ChunkResult& result, bool folders) {
  std::error_code error;
  for (const store::ShardInfo& shard : result.shards) {
    const fs::path base = fs::path(out_dir) / shard.stem;
    for (const auto& [suffix, file] : shard.files) fs::remove(base.string() + suffix, error);
    if (folders) fs::remove(base.parent_path(), error);  // only when empty
  }
}

// Run chunks `mine` into `results`. Without a scan (one process) a tar group's keys are known
// only once it is read: a chunk holding a record that repeats a key read later from an earlier
// group is run again with the duplicates then known (its shards rewritten; a tar read twice only
// then). A failed run removes every shard it wrote: a corrupt tar leaves nothing behind.
void RunChunks(const Context& ctx, const std::vector<Chunk>& chunks,
               const std::vector<size_t>& mine, std::vector<TarRecords>& tar_records,
               std::vector<std::vector<KeySeen>>& seen, ThreadPool& pool,
               std::vector<ChunkResult>& results) {
  results.resize(mine.size());
  pool.ParallelFor(0, mine.size(),
                   [&](size_t m) { results[m] = ProcessChunk(ctx, chunks, mine[m]); });
  auto failed = [&] {
    return std::any_of(results.begin(), results.end(),
                       [](const ChunkResult& r) { return !r.status.ok(); });
  };
  std::unordered_map<uint64_t, std::string> duplicates;
  std::unordered_set<size_t> rerun;  // chunks
  if (!failed() && ctx.options.num_parts == 1) {
    for (size_t m = 0; m < mine.size(); ++m) {
      const size_t c = mine[m];
      if (!chunks[c].tar || tar_records[c]) continue;
      tar_records[c] = std::move(results[m].tar_records);
      seen[c] =
          SeeTarKeys(ctx.sources[chunks[c].source], static_cast<uint32_t>(c), *tar_records[c]);
    }
    duplicates = Duplicates(ctx.options, chunks, tar_records, seen);
    for (const auto& [id, where] : duplicates) {
      if (!ctx.duplicates.contains(id)) rerun.insert(id >> 40);
    }
  }
  const Context again{ctx.options, ctx.files,    ctx.sources, ctx.media_roots, ctx.vision,
                      ctx.sound,   ctx.renderer, duplicates,  ctx.stop,        ctx.progress};
  for (size_t m = 0; m < mine.size(); ++m) {
    if (rerun.contains(mine[m])) RemoveShards(ctx.options.out_dir, results[m], false);
  }
  pool.ParallelFor(0, mine.size(), [&](size_t m) {
    if (rerun.contains(mine[m])) results[m] = ProcessChunk(again, chunks, mine[m]);
  });
  if (failed()) {
    for (const ChunkResult& result : results) RemoveShards(ctx.options.out_dir, result, true);
  }
}

// The chunks' results into `report` and the manifest's shards, in source order (first
// appearance among the inputs), then by number. Errors: the first chunk's failure.
Status Collect(std::vector<ChunkResult>& results, const PrepareOptions& options,
               const std::vector<std::string>& sources, PrepareReport& report,
               store::Manifest& manifest) {
  for (ChunkResult& result : results) {
    if (!result.status.ok()) return result.status;  // the first failure in input order
    report.records += result.records;
    report.samples += result.samples;
    report.media += result.media;
    report.text_tokens += result.text_tokens;
    report.input_bytes += result.input_bytes;
    for (const auto& [reason, count] : result.skipped_by_reason) {
      report.skipped_by_reason[reason] += count;
      report.skipped += count;
    }
    for (std::string& example : result.examples) {
      if (report.examples.size() < options.max_examples) report.examples.push_back(example);
    }
    for (store::ShardInfo& shard : result.shards) {
      for (const auto& [suffix, file] : shard.files) report.output_bytes += file.bytes;
      manifest.shards.push_back(std::move(shard));
    }
  }
  std::stable_sort(manifest.shards.begin(), manifest.shards.end(),
                   [&](const store::ShardInfo& a, const store::ShardInfo& b) {
                     auto rank = [&](const std::string& s) {
                       return std::find(sources.begin(), sources.end(), s) - sources.begin();
                     };
                     return rank(a.source) < rank(b.source);
                   });
  report.shards = manifest.shards.size();
  return Status::OK();
}

}  // namespace

std::string PartManifestName(uint32_t part, uint32_t num_parts) {
  return fmt::format("mmpt.part-{}-of-{}.json", part, num_parts);
}

Result<std::unique_ptr<text::Tokenizer>> UseTokenizer(const std::string& path,
                                                      PrepareOptions& options) {
  MMPT_ASSIGN_OR_RETURN(std::string resolved, text::FindTokenizer(path));
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer, text::LoadTokenizer(resolved));
  MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(resolved));
  options.tokenizer = tokenizer.get();
  // Recorded absolute: the loader finds it from the manifest, run from any directory.
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(resolved, error);
  options.tokenizer_path = error ? resolved : absolute.lexically_normal().string();
  options.tokenizer_xxh3 = Hash64(file.bytes());
  return tokenizer;
}

Result<PrepareReport> Prepare(const PrepareOptions& options) {
  auto start = std::chrono::steady_clock::now();
  MMPT_RETURN_IF_ERROR(CheckOptions(options));
  MMPT_ASSIGN_OR_RETURN(cost::VisionConfig vision, cost::LoadVisionPreset(options.vision));
  MMPT_ASSIGN_OR_RETURN(const cost::AudioConfig audio, cost::LoadAudioPreset(options.audio));
  std::optional<SoundTrackRules> sound;
  if (options.audio_in_video) {
    MMPT_ASSIGN_OR_RETURN(media::AudioInVideoRule rule,
                          cost::AudioInVideoRuleOf(audio, vision.tokens_per_second));
    sound.emplace(SoundTrackRules{vision, audio, rule});
  }
  MMPT_ASSIGN_OR_RETURN(text::ChatTemplate chat, text::ChatTemplate::Load(options.chat_template));
  const std::string chat_json = chat.json;
  MMPT_ASSIGN_OR_RETURN(text::ChatRenderer renderer,
                        text::ChatRenderer::Create(std::move(chat), *options.tokenizer));

  MMPT_ASSIGN_OR_RETURN(Inputs in, OpenInputs(options));
  const std::vector<MappedFile>& files = in.files;
  const std::vector<std::string>& sources = in.sources;
  ThreadPool pool(options.threads);
  std::vector<Chunk> chunks =
      SplitIntoChunks(files, in.is_tar, in.input_source, options, sources.size());
  std::vector<TarRecords> tar_records(chunks.size());
  if (options.num_parts > 1) {
    MMPT_ASSIGN_OR_RETURN(tar_records, ScanTars(options, files, chunks, pool));
  }

  std::error_code error;
  fs::create_directories(options.out_dir, error);
  if (error) {
    return Status::IOError("{}: cannot create directory: {}", options.out_dir, error.message());
  }
  // A stale manifest would describe shards this run is about to overwrite.
  const std::string manifest_name = options.num_parts == 1
                                        ? std::string(store::kManifestName)
                                        : PartManifestName(options.part, options.num_parts);
  fs::remove(fs::path(options.out_dir) / manifest_name, error);

  auto seen = SeeKeys(options, files, sources, chunks, tar_records, pool);
  const auto duplicates = Duplicates(options, chunks, tar_records, seen);
  std::vector<size_t> mine;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (c % options.num_parts == options.part) mine.push_back(c);
  }
  std::atomic<bool> stop{false};
  std::optional<ProgressBar> progress;
  if (options.progress) {
    progress.emplace("prepare", CountRecords(mine, chunks, files, tar_records), "records");
  }
  const Context ctx{options, files,    sources,    in.media_roots, vision,
                    sound,   renderer, duplicates, stop,           progress ? &*progress : nullptr};
  std::vector<ChunkResult> results;
  RunChunks(ctx, chunks, mine, tar_records, seen, pool, results);
  progress.reset();

  PrepareReport report;
  store::Manifest manifest;
  static_cast<store::DatasetSettings&>(manifest) = {
      .tokenizer = options.tokenizer_path,
      .tokenizer_xxh3 = options.tokenizer_xxh3,
      .vision = options.vision,
      .max_decode_pixels = options.max_decode_pixels,
      .audio = options.audio,
      .audio_in_video = options.audio_in_video,
      .chat_template = chat_json,
  };
  MMPT_RETURN_IF_ERROR(Collect(results, options, sources, report, manifest));
  // One part of several writes its part manifest; merge finishes the dataset.
  if (options.num_parts == 1) {
    MMPT_RETURN_IF_ERROR(store::FinishDataset(options.out_dir, std::move(manifest)));
  } else {
    MMPT_RETURN_IF_ERROR(
        WriteFileAtomic(options.out_dir + "/" + manifest_name, store::ManifestToJson(manifest)));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mmpt::ingest
