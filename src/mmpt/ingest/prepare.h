#pragma once

// `mmpt prepare`: input JSONL + media → a dataset on disk (docs/design.md, "The dataset").

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/comm/communicator.h"
#include "mmpt/core/status.h"
#include "mmpt/cost/presets.h"
#include "mmpt/ingest/adapter.h"
#include "mmpt/ingest/inputs.h"
#include "mmpt/media/image_decode.h"
#include "mmpt/store/manifest.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::ingest {

/// The default PrepareOptions::tar_group_bytes.
inline constexpr uint64_t kTarGroupBytes = uint64_t{64} << 20;

struct PrepareOptions {
  std::vector<InputSpec> inputs;
  std::string out_dir;
  std::string media_root;  // media paths are relative to it; "" = each input file's directory
  InputFormat format = InputFormat::kAuto;
  /// Counts text tokens and gives the ids stored in `.tok`; must outlive the call.
  const text::Tokenizer* tokenizer = nullptr;
  std::string tokenizer_path;                   // recorded in the manifest
  uint64_t tokenizer_xxh3 = 0;                  // recorded in the manifest
  std::string vision{cost::Defaults::kVision};  // images the preset rejects are bad records
  /// The audio encoder preset audio clips are planned and loaded with (recorded in the
  /// manifest: audio tokens and the log-mel window derive from it).
  std::string audio{cost::Defaults::kAudio};
  /// Every sample is rendered through this chat template (a presets/chat name or a .json path;
  /// text::ChatTemplate::Load): `.tok` holds the rendered ids and `.meta` counts them, so the
  /// plan counts exactly what the loader emits. Recorded whole in the manifest.
  std::string chat_template{cost::Defaults::kChatTemplate};
  /// Write each video with its sound track (the Omni models' use_audio_in_video): the track
  /// decoded at prepare, its parts and the video's temporal groups interleaved in the order
  /// of the audio preset's model (cost::AudioInVideoRuleOf: Qwen2.5-Omni's 2 s chunks,
  /// Qwen3-Omni's merge by time; ingest::LayOutSoundTrack) between
  /// the video's and the audio's markers, so the plan costs both encoders. Recorded in the
  /// manifest (store::Manifest::audio_in_video). A video without a sound track is a bad record
  /// (the reference's processor takes an audio item for every video). Off by default.
  bool audio_in_video = false;
  /// An image whose stored width × height exceeds this is a bad record (a possible
  /// decompression bomb): the loader decodes with the same budget, recorded in the manifest.
  uint64_t max_decode_pixels = media::kDefaultMaxDecodePixels;
  uint64_t samples_per_shard = 1000;  // input records per shard (fewer when some skip, or at
                                      // the end of an input or tar group)
  /// Tar inputs are read in groups: consecutive tars of one source up to this many bytes
  /// together (a larger tar alone), each group by one worker in one pass, cut into shards.
  uint64_t tar_group_bytes = kTarGroupBytes;
  size_t threads = 0;  // worker threads; 0 = one per hardware thread
  ErrorPolicy on_error = ErrorPolicy::kSkip;
  size_t max_examples = 5;  // bad records quoted in the summary
  bool progress = true;     // progress bar on a terminal
  /// Scale-out: this process writes only the shards whose number % num_parts == part, and its
  /// manifest lists only those; `mmpt merge` joins the parts. Shard numbering is global, so
  /// parts never collide and a merged dataset equals a single-process one.
  uint32_t part = 0;
  uint32_t num_parts = 1;
};

/// What prepare did, for the summary it prints and for tests.
struct PrepareReport {
  uint64_t records = 0;  // non-blank JSONL lines and tar samples seen (by this part)
  uint64_t samples = 0;  // written
  uint64_t skipped = 0;  // bad records skipped
  uint64_t shards = 0;
  uint64_t media = 0;
  uint64_t text_tokens = 0;
  uint64_t input_bytes = 0;   // JSONL plus media bytes read (a tar's: its samples' members)
  uint64_t output_bytes = 0;  // bytes of the shard files written
  double seconds = 0;
  std::map<std::string, uint64_t> skipped_by_reason;  // reason → count
  std::vector<std::string> examples;  // the first max_examples errors, "file:line: message"

  /// Render a human-readable summary (counts, throughput, skipped records by reason).
  std::string Summary() const;
};

/// Load the tokenizer at `path` ("" = text::FindTokenizer()'s default) and set options'
/// tokenizer, tokenizer_path (made absolute) and tokenizer_xxh3 (checksum of the file) from it; the
/// returned tokenizer must outlive the options' use. Errors: those of text::FindTokenizer and
/// text::LoadTokenizer.
Result<std::unique_ptr<text::Tokenizer>> UseTokenizer(const std::string& path,
                                                      PrepareOptions& options);

/// Prepare the dataset `options.out_dir`. Writes shards in parallel, then the manifest last
/// (atomically), after first removing any existing manifest there — so an interrupted run
/// leaves a directory that does not open as a dataset. Bad records (malformed JSON, bad fields,
/// missing or corrupt media, sizes the vision preset rejects, duplicate keys within a source,
/// tokenizer errors) are skipped and counted, or fail the run, per `on_error`; a tar's errors
/// name "file:member". Each tar is read once (a gzip tar decompressed once): a tar group
/// (tar_group_bytes) becomes the shards "<source>/<group>-<k>", one every samples_per_shard
/// records, so a set of small tars makes few shards. A failed run removes the shards it wrote:
/// a truncated or corrupt tar (Corrupt, naming the file) leaves nothing behind. A key repeated from
/// an earlier group is found once both are read; the group holding the repeat is then read again.
/// With `num_parts` > 1 every part first reads every tar's keys (its headers only) so that the
/// parts agree on duplicates, and a corrupt tar fails before anything is written.
/// Errors: InvalidArgument (options), NotFound/IOError (inputs, output), or the first bad
/// record's error under ErrorPolicy::kFail.
Result<PrepareReport> Prepare(const PrepareOptions& options);

/// Name of the manifest `Prepare` writes for part `part` of `num_parts` (> 1):
/// "mmpt.part-<part>-of-<num_parts>.json", beside the part's shards; `MergeDatasets` joins them.
std::string PartManifestName(uint32_t part, uint32_t num_parts);

/// Prepare across the ranks of `comm` (e.g. under mpirun): rank r writes part r of size() into
/// the same `out_dir`; once every rank has finished, rank 0 merges this run's part manifests
/// into `out_dir`/mmpt.json (MergeDatasets) and removes them, and every rank waits for it, so a
/// finished run leaves exactly one manifest. If any rank failed, every rank returns the first
/// failed rank's error as "rank R of N: <its message>" (so any rank's output names the bad
/// file and line), and no manifest is left — neither mmpt.json (removed
/// before any rank writes) nor a part manifest that `mmpt merge` could mistake for the whole.
/// `options.part`/`num_parts` are set here. Collective: every rank of `comm` must call it.
Result<PrepareReport> PrepareOnRanks(PrepareOptions options, comm::Communicator& comm);

}  // namespace mmpt::ingest
