#pragma once

// Video and speech files for `mmpt synth --profile video|audio|omni`, made by Debian's `ffmpeg`
// and `espeak-ng` command-line tools (scripts/install-deps.sh installs both), so every file is
// what real encoders write. Same arguments, same bytes: one thread, bit-exact flags, no metadata.

#include <cstdint>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"

namespace mmpt::corpora {

/// The containers and codecs synth writes video in: h264 in mp4, vp9 in webm, mjpeg in avi.
enum class VideoFormat : uint8_t { kMp4, kWebm, kAvi };
/// The containers and codecs synth writes speech in: PCM wav, flac, mp3, vorbis in ogg.
enum class AudioFormat : uint8_t { kWav, kFlac, kMp3, kOgg };

/// The file extension of a format, without the dot ("mp4", "webm", "avi"; "wav", "flac",
/// "mp3", "ogg").
std::string_view Extension(VideoFormat format);
std::string_view Extension(AudioFormat format);

/// The format `name` names (its extension), or for "mix" the `counter`-th of the cycle
/// mp4, webm, avi (wav, flac, mp3, ogg). Errors: InvalidArgument listing the names.
Result<VideoFormat> PickVideoFormat(std::string_view name, uint64_t counter);
Result<AudioFormat> PickAudioFormat(std::string_view name, uint64_t counter);

/// A video to write: `frames` frames at `fps` (so frames / fps seconds), `width`×`height`.
struct VideoSpec {
  uint32_t width = 0, height = 0;  // pixels; even, as 4:2:0 chroma needs
  uint32_t fps = 25;               // frames per second
  uint32_t frames = 0;
  VideoFormat format = VideoFormat::kMp4;
  uint64_t seed = 0;  // places and colours a box over the pattern: no two videos alike

  double duration_seconds() const { return static_cast<double>(frames) / fps; }
};

/// Write ffmpeg's moving test pattern (testsrc2) under a filled box whose place, size and colour
/// `spec.seed` picks (so videos of one size and length still differ) as `spec` says to `path`,
/// with a keyframe
/// every two seconds (h264 also with B-frames, as cameras and web video have them). ffmpeg
/// writes a hidden file beside `path` (".<name>"), renamed to `path` when it succeeds.
/// Errors: InvalidArgument (a zero or odd side, zero fps or frames), Internal naming the ffmpeg
/// command and the tail of what it wrote to stderr. Thread safety: reentrant (one process per
/// call).
Status WriteVideo(const VideoSpec& spec, const std::string& path);

/// The speech espeak-ng made for a text.
struct SpeechInfo {
  double duration_seconds = 0;
  uint32_t sample_rate = 0;  // Hz
};

/// Speak `text` with espeak-ng's default voice (mono, 22050 Hz) and write it to `path` in
/// `format` (converted by ffmpeg; wav too, so its header is ffmpeg's bit-exact one), through a
/// hidden file renamed at the end as WriteVideo does. Scratch files beside `path` (`path` +
/// ".espeak.wav", + ".espeak.wav.txt") are removed before returning.
/// Errors: Internal naming the espeak-ng or ffmpeg command and the tail of its output; IOError.
/// Thread safety: reentrant for distinct paths.
Result<SpeechInfo> WriteSpeech(std::string_view text, AudioFormat format, const std::string& path);

/// The duration and rate WriteSpeech's file would have, without keeping a file: the speech is
/// made at `scratch_path` + ".espeak.wav" (its text in + ".espeak.wav.txt"), probed and removed.
/// Errors and thread safety: as WriteSpeech.
Result<SpeechInfo> MeasureSpeech(std::string_view text, const std::string& scratch_path);

}  // namespace mmpt::corpora
