#pragma once

// The SampleSource of a prepared dataset: samples rendered through the dataset's chat template
// (checked against the ids prepare stored), media bytes read zero-copy from the shard zips,
// images decoded and preprocessed by media.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/cost/audio_model.h"
#include "mmpt/load/sample_source.h"
#include "mmpt/media/image_preprocess.h"
#include "mmpt/media/video.h"
#include "mmpt/store/dataset.h"
#include "mmpt/text/chat_template.h"

namespace mmpt::load {

/// Which tokens carry loss.
enum class LossMode : uint8_t {
  /// The chat template's targets (text::RenderedText::target): in a conversation the content
  /// and end marker of the assistant's turns (roles with "loss"), in a document its text.
  kAssistantOnly,
  /// Every text token, template tokens included; only image pads carry no loss.
  kAllText,
};
/// "all" / "assistant".
std::string_view LossModeName(LossMode mode);
/// Parse "all" or "assistant". Errors: InvalidArgument naming the value.
Result<LossMode> ParseLossMode(std::string_view name);

struct DatasetSourceOptions {
  LossMode loss = LossMode::kAssistantOnly;
  /// The tokenizer to render with: "" = the one the manifest records (text::FindTokenizer).
  /// Its ids must be those prepare stored, or Render fails naming it.
  std::string tokenizer;
  /// Decode, resize, normalize, patchify: the resize rule and patch geometry of the manifest's
  /// vision preset and its decode budget (the ones prepare checked images against) replace
  /// these; the rest (normalization, JPEG DCT scaling) is used as given.
  media::ImagePreprocessConfig preprocess;
  /// Check every planned image's CRC-32 against the .meta record when rendering (catches an
  /// image changed after prepare on every rank alike, before any pixel is decoded).
  bool verify_crc = true;
};

/// What a DatasetSource has read so far: samples rendered, media items decoded (images,
/// videos and audio clips), and the bytes of
/// the shards they came from (sample lines, stored token ids, and media bytes, once for the
/// CRC check and once to decode).
struct SourceReads {
  uint64_t samples = 0;
  uint64_t media = 0;
  uint64_t bytes = 0;
};

/// Where a DatasetSource reads a sample's stored bytes (its line, its token ids, its media as
/// stored in the zip), by the dataset's global index: the dataset's own shards (the default), or
/// what the exchange received from the peer holding them (exchange.h). A view into the
/// dataset's own shards stays valid while the caller holds the sample's store::StoredSample
/// (its shard open). Thread safety: const methods may be called concurrently.
class StoredBytes {
 public:
  virtual ~StoredBytes() = default;
  /// The sample's canonical JSON line. Errors: those of reading it (the holder's, when sent).
  virtual Result<std::string_view> Line(uint64_t global) const = 0;
  /// The ids prepare stored for it (`.tok`).
  virtual Result<std::span<const int32_t>> Tokens(uint64_t global) const = 0;
  /// Media item `k`'s stored bytes, or nullopt when they are not here because this rank does
  /// not decode the item and the peer that holds them checked it (CRC, header) as Render does.
  virtual Result<std::optional<std::span<const std::byte>>> Media(uint64_t global,
                                                                  uint32_t k) const = 0;
};

/// Renders planned samples through the chat template the manifest records
/// (store::RenderSample), with each image's and video's pad tokens between its start and end
/// markers, so the ids are those of Hugging Face's processor for the same conversation or
/// document, and the rendered length is exactly what the planner counted from `.meta`: text
/// tokens (cut from the end when the plan truncated the sample) plus the media's LLM tokens.
/// A video takes the frames and frame size the plan gave it (PlannedVideo) and is preprocessed
/// by media::PreprocessVideo, which must decode it to that grid. An audio clip is decoded
/// (media::DecodeAudio), cut or padded to the plan's duration and turned into the log-mel
/// features of the dataset's audio preset (the manifest's). Errors name the sample's shard
/// line ("DIR/coco/00000.jsonl:12"), its key and the media path.
///
/// Samples are named as the planner names them (store::BuildPlanningTable): source s is
/// Dataset::sources()[s], and a sample's index counts through that source's shards in manifest
/// order (Dataset::GlobalIndex).
/// Thread safety: immutable after Create; Render, FillPixels and FillAudio may run concurrently.
class DatasetSource final : public SampleSource {
 public:
  /// Errors: those of store::Dataset::Open.
  static Result<std::shared_ptr<DatasetSource>> Open(const std::string& dir,
                                                     DatasetSourceOptions options = {});
  /// `bytes`: where samples' stored bytes come from (null: `dataset`'s shards).
  static Result<std::shared_ptr<DatasetSource>> Create(
      std::shared_ptr<const store::Dataset> dataset, DatasetSourceOptions options = {},
      std::shared_ptr<const StoredBytes> bytes = nullptr);

  Result<RenderedSample> Render(const plan::StepPlan& plan,
                                const plan::PlannedSequence& sequence) const override;
  Status FillPixels(const RenderedSample& sample, const RenderedVisual& image,
                    std::span<float> out) const override;
  uint32_t patch_dim() const override {
    return static_cast<uint32_t>(media::PatchDim(options_.preprocess.patch));
  }
  uint32_t merge_size() const override { return options_.preprocess.patch.merge_size; }
  float tokens_per_second() const override { return tokens_per_second_; }
  Status FillAudio(const RenderedSample& sample, const RenderedAudio& audio, uint32_t frames,
                   std::span<float> features, std::span<int32_t> mask) const override;
  AudioFeatureShape audio_features() const override;

  const store::Dataset& dataset() const { return *dataset_; }
  const std::shared_ptr<const store::Dataset>& shared_dataset() const { return dataset_; }
  SourceReads reads() const {
    return {samples_read_.load(), media_read_.load(), bytes_read_.load()};
  }
  const DatasetSourceOptions& options() const { return options_; }
  const text::ChatRenderer& renderer() const { return *renderer_; }

 private:
  DatasetSource() = default;
  // The bytes of media item k of `sample` (counted as read); `held` gets the stored sample,
  // which holds the bytes' shard open while it lives.
  Result<std::span<const std::byte>> ReadMedia(const RenderedSample& sample, uint32_t k,
                                               store::StoredSample& held) const;
  // `status` named with `sample`'s shard line, key and media item k (OK stays OK).
  Status NameError(const RenderedSample& sample, uint32_t k, Status status) const;
  // Video `item` of `sample` (a grouped video's one group) preprocessed into `out`; `held`
  // gets the stored sample. A grouped video is read and decoded once, for the first of its
  // groups that comes, and each group copies its rows.
  Result<media::GridThw> PreprocessVideoInto(const RenderedSample& sample,
                                             const RenderedVisual& item, std::span<float> out,
                                             store::StoredSample& held) const;
  // Media item k of sample `global`, its CRC-32 checked against `meta` when verify_crc is set.
  // Errors: the dataset's; InvalidArgument for a metadata-only item; Corrupt for a changed one.
  // nullopt: the item is elsewhere, checked by its holder (StoredBytes::Media).
  Result<std::optional<std::span<const std::byte>>> CheckedMedia(
      uint64_t global, uint32_t k, const store::MediaMeta& meta) const;
  // An image (its header probed and resized by the preset's rule) or a video (as the plan
  // sampled it) as the encoder will take it: its grid, tokens and seconds per grid step,
  // checked against the plan's tokens. Exactly one of `image`, `video` is set.
  Result<RenderedVisual> RenderVisual(std::optional<std::span<const std::byte>> bytes,
                                      const plan::PlannedImage* image,
                                      const plan::PlannedVideo* video) const;
  // `count` placeholders of `kind` appended to `out` where the plan put them. Errors: Internal
  // when the sample renders them elsewhere.
  Status AppendPads(text::PieceKind kind, uint32_t count, uint32_t planned_start,
                    RenderedSample& out) const;
  // The audio item `planned` (record `k`, `record`) appended to `out`: a clip of its own, or a
  // sound track's part joining the clip before it. Errors: as AppendPads; Internal for a part
  // that joins nothing.
  Status AppendAudio(const plan::PlannedAudio& planned, const store::MediaMeta& record, uint32_t k,
                     RenderedSample& out) const;
  // Record `record` of a video with its sound track, just rendered into `out` (its last
  // visual, or a part of `tokens` tokens in its last audio clip, whose part number this sets):
  // its block begun (the video's first group) or grown.
  void JoinSoundTrack(const store::MediaMeta& record, uint32_t tokens, RenderedSample& out) const;
  // FillAudio of a sound track's part: the track's whole-clip features from the part's first
  // frame on, the track decoded and its features computed once for its parts in a row.
  Status FillSoundTrackPart(const RenderedSample& sample, const RenderedAudio& audio,
                            uint32_t frames, std::span<float> features,
                            std::span<int32_t> mask) const;

  std::shared_ptr<const store::Dataset> dataset_;
  std::shared_ptr<const StoredBytes> bytes_;
  DatasetSourceOptions options_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<text::ChatRenderer> renderer_;  // borrows *tokenizer_
  std::string tokenizer_path_;
  Result<media::VideoPreprocessConfig> video_ = Status::Internal("not created");
  float tokens_per_second_ = 0;
  cost::AudioConfig audio_;                            // the manifest's audio preset
  std::optional<media::AudioInVideoRule> sound_rule_;  // a dataset with videos' sound tracks
  std::shared_ptr<const media::LogMelExtractor> log_mel_;
  mutable std::atomic<uint64_t> samples_read_{0};
  mutable std::atomic<uint64_t> media_read_{0};
  mutable std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace mmpt::load
