#pragma once

// A video with its sound track as one item of the LLM sequence (Qwen2.5-Omni's and
// Qwen3-Omni's `use_audio_in_video`): the order of the video's and the sound track's
// placeholder tokens between the markers, and their M-RoPE positions, as the reference
// processors and `get_rope_index` give them. The block is
//   video start, audio start, runs of video or audio placeholders, audio end, video end
// (Qwen2.5-Omni: <|vision_bos|><|audio_bos|> ... <|audio_eos|><|vision_eos|>).

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::media {

/// How a model orders a video's tokens and its sound track's inside the block.
enum class AudioInVideoOrder : uint8_t {
  /// Qwen2.5-Omni: chunks of `seconds_per_chunk` seconds of time keys; per chunk its video
  /// tokens, then its audio tokens (the processor's and get_rope_index's get_chunked_index,
  /// which moves on one chunk per token, as they do).
  kChunks,
  /// Qwen3-Omni: the two merged by time key, a video token first on a tie; no chunks.
  kTimeMerged,
};

/// A model's rule for the block. A video token's time key is its temporal grid step f as
/// M-RoPE has it, f · second_per_grid_t · position_id_per_seconds (float32, as torch computes
/// it); audio token k's key is k (position_id_per_seconds audio tokens a second).
struct AudioInVideoRule {
  AudioInVideoOrder order = AudioInVideoOrder::kChunks;
  float position_id_per_seconds = 25;  // the thinker's (vision preset's tokens_per_second)
  float seconds_per_chunk = 2;         // kChunks only
  /// Position step between the two start markers and between the two end markers: 0 when
  /// each pair shares a position (Qwen2.5-Omni), 1 when they follow one another (Qwen3-Omni).
  int32_t marker_step = 0;
};

/// The rule of a model by name: "qwen2.5-omni" (kChunks of 2 s, marker_step 0) or
/// "qwen3-omni" (kTimeMerged, marker_step 1), with its time scale `position_id_per_seconds`
/// (25 and 13 in the models' configs). Errors: NotFound naming another model;
/// InvalidArgument for a scale that is not positive.
Result<AudioInVideoRule> AudioInVideoRuleOf(std::string_view model, float position_id_per_seconds);

/// A run of consecutive placeholder tokens of one kind inside the block: video tokens
/// [first, first + count) in the video's own order (grid step, row, column of the merged
/// grid), or the sound track's audio tokens [first, first + count).
struct AudioInVideoRun {
  bool video = false;
  uint32_t first = 0;
  uint32_t count = 0;
  bool operator==(const AudioInVideoRun&) const = default;
};

/// A video with its sound track, as the block needs it: the merged grid (grid_t steps of
/// grid_h × grid_w LLM tokens, after the spatial merge), seconds per grid step, and the
/// sound track's audio tokens (media::AudioTokens of its frames).
struct AudioInVideo {
  uint32_t grid_t = 0;
  uint32_t grid_h = 0;  // merged rows
  uint32_t grid_w = 0;  // merged columns
  float second_per_grid_t = 0;
  uint32_t audio_tokens = 0;

  uint32_t video_tokens() const { return grid_t * grid_h * grid_w; }
  /// The block's tokens: the 4 markers, the video's and the audio's placeholders.
  uint32_t block_tokens() const { return 4 + video_tokens() + audio_tokens; }
};

/// The runs of `item`'s placeholders under `rule`, in token order, none empty, each kind's
/// tokens in order and all of them (Σ counts = video_tokens() + audio_tokens). Under kChunks
/// a grid step's tokens may fall in two runs where one step spans more than a chunk
/// (second_per_grid_t > seconds_per_chunk), as the reference splits them.
std::vector<AudioInVideoRun> AudioInVideoRuns(const AudioInVideoRule& rule,
                                              const AudioInVideo& item);

/// Write the M-RoPE positions of the whole block (item.block_tokens() of them) into `t`, `h`,
/// `w`, its first start marker at position `start`, and return the position of the text after
/// it. The start markers sit at start and start + marker_step; with base one past the second,
/// audio token k is at base + k on all three rows and video token (f, y, x) at base + (key(f),
/// y, x), key(f) truncated to an integer as Qwen2.5-Omni's get_rope_index does (Qwen3-Omni's
/// keeps it as a float: equal where the key is whole, as its 1 s grid steps make it); the end
/// markers at e and e + marker_step where e is one past the largest position of the last run
/// (the reference takes the last piece it appended, not the largest so far); the text after
/// at one past the second end marker. Precondition: `runs` are AudioInVideoRuns(rule, item);
/// the spans hold block_tokens() each.
int32_t AudioInVideoPositions(const AudioInVideoRule& rule, const AudioInVideo& item,
                              std::span<const AudioInVideoRun> runs, int32_t start,
                              std::span<int32_t> t, std::span<int32_t> h, std::span<int32_t> w);

}  // namespace mmpt::media
