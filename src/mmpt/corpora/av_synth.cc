#include "mmpt/corpora/av_synth.h"

#include <fmt/format.h>

#include <cstddef>
#include <filesystem>
#include <span>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/core/subprocess.h"
#include "mmpt/media/av_probe.h"

namespace mmpt::corpora {
namespace {

constexpr VideoFormat kVideoCycle[] = {VideoFormat::kMp4, VideoFormat::kWebm, VideoFormat::kAvi};
constexpr AudioFormat kAudioCycle[] = {AudioFormat::kWav, AudioFormat::kFlac, AudioFormat::kMp3,
                                       AudioFormat::kOgg};

// A POSIX shell word that stands for `s` exactly, whatever it holds.
std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Run a tool with its stderr captured. RunCommand's error holds the command, its exit status
// and everything it printed; an error keeps the first line and the last kTailBytes of the rest,
// so a chatty failure still names its cause without flooding the message.
Status RunTool(const std::string& command) {
  constexpr size_t kTailBytes = 2000;
  Result<std::string> out = RunCommand(command + " 2>&1");
  if (out.ok()) return Status::OK();
  const Status status = out.status();
  const std::string& message = status.message();
  const size_t newline = message.find('\n');
  if (newline == std::string::npos || message.size() - newline - 1 <= kTailBytes) return status;
  return Status(status.code(),
                message.substr(0, newline) + "\n..." + message.substr(message.size() - kTailBytes));
}

// The bit-exact output options every ffmpeg command here ends with: same input, same bytes.
constexpr const char* kBitExact = "-fflags +bitexact -flags +bitexact -map_metadata -1";

std::string VideoCodecArgs(const VideoSpec& spec) {
  const uint32_t gop = 2 * spec.fps;
  switch (spec.format) {
    case VideoFormat::kMp4:
      return fmt::format("-c:v libx264 -preset superfast -pix_fmt yuv420p -g {}", gop);
    case VideoFormat::kWebm:
      return fmt::format(
          "-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -row-mt 0 -b:v 0 -crf 40 "
          "-pix_fmt yuv420p -g {}",
          gop);
    case VideoFormat::kAvi: return "-c:v mjpeg -q:v 5 -pix_fmt yuvj420p";
  }
  return "";
}

const char* AudioCodecArgs(AudioFormat format) {
  switch (format) {
    case AudioFormat::kWav: return "-c:a pcm_s16le";
    case AudioFormat::kFlac: return "-c:a flac";
    case AudioFormat::kMp3: return "-c:a libmp3lame -q:a 4";
    case AudioFormat::kOgg: return "-c:a libvorbis -q:a 3";
  }
  return "";
}

void RemoveScratch(const std::string& path) {
  std::error_code ignored;  // a scratch file left behind is untidy, not an error
  std::filesystem::remove(path, ignored);
}

// Run the ffmpeg command `make(output)` into a hidden file beside `path` (same extension, which
// picks the muxer), then rename it to `path`: a failed or killed run leaves no partial file.
template <typename MakeCommand>
Status RunFfmpegInto(const std::string& path, MakeCommand make) {
  const std::filesystem::path target(path);
  const std::string partial = (target.parent_path() / ("." + target.filename().string())).string();
  Status status = RunTool(make(ShellQuote(partial)));
  if (!status.ok()) {
    RemoveScratch(partial);
    return status.WithContext("synth: ffmpeg");
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) {
    return Status::IOError("{}: cannot rename from {}: {}", path, partial, error.message());
  }
  return Status::OK();
}

// Speak `text` into the wav `wav_path` (the text goes through a file, so no caption is ever
// read as an option or shell syntax) and probe it.
Result<SpeechInfo> Speak(std::string_view text, const std::string& wav_path) {
  const std::string text_path = wav_path + ".txt";
  MMPT_RETURN_IF_ERROR(WriteFileAtomic(text_path, text));
  Status spoken =
      RunTool(fmt::format("espeak-ng -w {} -f {}", ShellQuote(wav_path), ShellQuote(text_path)));
  RemoveScratch(text_path);
  if (!spoken.ok()) {
    RemoveScratch(wav_path);
    return spoken.WithContext("synth: espeak-ng");
  }
  Result<std::string> bytes = ReadFileToString(wav_path);
  if (!bytes.ok()) return bytes.status();
  Result<media::AvInfo> info = media::ProbeAv(std::as_bytes(std::span(*bytes)));
  if (!info.ok()) return info.status().WithContext(wav_path);
  if (!info->audio) return Status::Internal("{}: espeak-ng wrote no audio stream", wav_path);
  return SpeechInfo{info->audio->duration_seconds, info->audio->sample_rate};
}

}  // namespace

std::string_view Extension(VideoFormat format) {
  switch (format) {
    case VideoFormat::kMp4: return "mp4";
    case VideoFormat::kWebm: return "webm";
    case VideoFormat::kAvi: return "avi";
  }
  return "";
}

std::string_view Extension(AudioFormat format) {
  switch (format) {
    case AudioFormat::kWav: return "wav";
    case AudioFormat::kFlac: return "flac";
    case AudioFormat::kMp3: return "mp3";
    case AudioFormat::kOgg: return "ogg";
  }
  return "";
}

Result<VideoFormat> PickVideoFormat(std::string_view name, uint64_t counter) {
  if (name == "mix") return kVideoCycle[counter % std::size(kVideoCycle)];
  for (VideoFormat format : kVideoCycle) {
    if (name == Extension(format)) return format;
  }
  return Status::InvalidArgument("--video-format must be mp4, webm, avi or mix, not '{}'", name);
}

Result<AudioFormat> PickAudioFormat(std::string_view name, uint64_t counter) {
  if (name == "mix") return kAudioCycle[counter % std::size(kAudioCycle)];
  for (AudioFormat format : kAudioCycle) {
    if (name == Extension(format)) return format;
  }
  return Status::InvalidArgument("--audio-format must be wav, flac, mp3, ogg or mix, not '{}'",
                                 name);
}

Status WriteVideo(const VideoSpec& spec, const std::string& path) {
  if (spec.width == 0 || spec.height == 0 || spec.width % 2 != 0 || spec.height % 2 != 0 ||
      spec.fps == 0 || spec.frames == 0) {
    return Status::InvalidArgument(
        "{}: a video needs even, non-zero sides and non-zero fps and frames, not {}x{} at {} fps, "
        "{} frames",
        path, spec.width, spec.height, spec.fps, spec.frames);
  }
  // The box: a quarter to a half of each side, anywhere inside the frame, any opaque colour.
  const uint64_t a = Mix64(spec.seed), b = Mix64(a);
  const uint32_t box_w = spec.width / 4 + static_cast<uint32_t>(a % (spec.width / 4 + 1));
  const uint32_t box_h = spec.height / 4 + static_cast<uint32_t>((a >> 32) % (spec.height / 4 + 1));
  const uint32_t x = static_cast<uint32_t>(b % (spec.width - box_w + 1));
  const uint32_t y = static_cast<uint32_t>((b >> 32) % (spec.height - box_h + 1));
  return RunFfmpegInto(path, [&](const std::string& output) {
    return fmt::format(
        "ffmpeg -nostdin -hide_banner -loglevel error -y -filter_threads 1 "
        "-f lavfi -i testsrc2=size={}x{}:rate={} "
        "-vf drawbox=x={}:y={}:w={}:h={}:color=0x{:06x}:t=fill -frames:v {} -threads 1 {} {} {}",
        spec.width, spec.height, spec.fps, x, y, box_w, box_h, Mix64(b) & 0xffffff, spec.frames,
        VideoCodecArgs(spec), kBitExact, output);
  });
}

Result<SpeechInfo> WriteSpeech(std::string_view text, AudioFormat format, const std::string& path) {
  const std::string wav_path = path + ".espeak.wav";
  MMPT_ASSIGN_OR_RETURN(SpeechInfo info, Speak(text, wav_path));
  Status converted = RunFfmpegInto(path, [&](const std::string& output) {
    return fmt::format("ffmpeg -nostdin -hide_banner -loglevel error -y -i {} -threads 1 {} {} {}",
                       ShellQuote(wav_path), AudioCodecArgs(format), kBitExact, output);
  });
  RemoveScratch(wav_path);
  MMPT_RETURN_IF_ERROR(converted);
  return info;
}

Result<SpeechInfo> MeasureSpeech(std::string_view text, const std::string& scratch_path) {
  const std::string wav_path = scratch_path + ".espeak.wav";
  Result<SpeechInfo> info = Speak(text, wav_path);
  RemoveScratch(wav_path);
  return info;
}

}  // namespace mmpt::corpora
