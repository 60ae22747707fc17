#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/av_probe.h"

namespace mmpt::media {

/// The rate audio encoders of the Whisper family take (Whisper, Qwen2-Audio, Qwen2.5-Omni).
inline constexpr uint32_t kAudioEncoderSampleRate = 16000;  // Hz

/// The samples at kAudioEncoderSampleRate of a clip known only by its duration (metadata-only
/// input, tables prepared before decoded lengths were recorded): the duration rounded up to a
/// whole sample. A clip with bytes is counted by decoding it (DecodeAudio) instead.
uint32_t SamplesOfDuration(uint32_t duration_ms);

/// A file's first audio stream, decoded to mono float PCM.
struct DecodedAudio {
  std::vector<float> samples;  // mono, nominally in [-1, 1]
  uint32_t sample_rate = 0;    // Hz, as asked
  AudioStreamInfo source;      // the stream as the container header declares it
};

/// Decode the first audio stream of a file in memory (WAV, FLAC, MP3, Ogg Vorbis/Opus, AAC in
/// mp4, the audio track of a video, ...) to mono float32 PCM at `sample_rate`: the mean of all
/// channels (librosa.load(mono=True), what the Qwen audio processors are fed; not `ffmpeg -ac
/// 1`'s weighted down-mix), resampled by libswresample's default filter, so equal up to float
/// rounding to `ffmpeg -i X -ar RATE -f f32le` averaged over its channels. The decoded length,
/// encoder priming and padding removed, is the clip's length: what prepare records and the
/// loader checks (not the container's declared duration). The probe's budgets in `limits` are
/// checked before a packet is decoded, and the decoded length is held to
/// `limits.max_duration_seconds` whatever the header declares.
/// Errors: those of ProbeAv (not a container, no audio stream, unknown codec, 0 channels,
/// zero length, a budget exceeded); InvalidArgument (no audio stream; `sample_rate` 0 or above
/// `limits.max_sample_rate`; more decoded audio than `limits` allow); Corrupt (a packet that
/// does not decode, no samples at all, a sample that is not finite, or much less audio than the
/// header declares: a truncated file). Thread safety: reentrant.
Result<DecodedAudio> DecodeAudio(std::span<const std::byte> bytes,
                                 uint32_t sample_rate = kAudioEncoderSampleRate,
                                 const AvLimits& limits = {});

}  // namespace mmpt::media
