// Bindings of mmpt::media: audio decoding and the Whisper-style log-mel features of audio
// encoders.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_common.h"
#include "mmpt/cost/presets.h"
#include "mmpt/media/audio.h"
#include "mmpt/media/audio_in_video.h"
#include "mmpt/media/log_mel.h"
#include "mmpt/media/video.h"

namespace mmpt::python {
namespace {

// `values` as a NumPy array that owns them (moved to the heap, freed with the array).
template <typename T, typename Alloc>
py::array Own(std::vector<T, Alloc> values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T, Alloc>(std::move(values));
  py::capsule free(owned, [](void* p) { delete static_cast<std::vector<T, Alloc>*>(p); });
  return py::array(py::dtype::of<T>(), std::move(shape), {}, owned->data(), free);
}

// The log-mel settings of audio preset `preset` (presets/audio; None: the default audio
// encoder's, cost::Defaults::kAudio, as `mmpt prepare` and the loader use it), with overrides.
media::LogMelConfig Config(const std::optional<std::string>& preset, std::optional<uint32_t> n_mels,
                           std::optional<uint32_t> chunk_seconds) {
  media::LogMelConfig config =
      ValueOrThrow(cost::LoadAudioPreset(preset.value_or(std::string(cost::Defaults::kAudio))))
          .log_mel;
  if (n_mels) config.n_mels = *n_mels;
  if (chunk_seconds) config.chunk_seconds = *chunk_seconds;
  return config;
}

}  // namespace

void BindMedia(py::module_& m) {
  m.def(
      "decode_audio",
      [](py::bytes data, uint32_t sample_rate) {
        std::string_view bytes = data;
        Result<media::DecodedAudio> decoded = [&] {
          py::gil_scoped_release release;
          return media::DecodeAudio(
              {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, sample_rate);
        }();
        media::DecodedAudio audio = ValueOrThrow(std::move(decoded));
        const auto n = static_cast<py::ssize_t>(audio.samples.size());
        return Own(std::move(audio.samples), {n});
      },
      py::arg("data"), py::arg("sample_rate") = media::kAudioEncoderSampleRate,
      "Decode the first audio stream of a file's bytes (WAV, FLAC, MP3, Ogg, AAC in mp4, ...) "
      "to mono float32 PCM at sample_rate (16 kHz by default, what log_mel takes): the "
      "samples `ffmpeg -i FILE -ac 1 -ar RATE -f f32le` writes. Raises InvalidArgumentError "
      "(not a container, no audio stream, unknown codec, above the probe's limits) or "
      "CorruptError (truncated, zero-length, 0 channels, undecodable).");
  m.def(
      "preprocess_video",
      [](py::bytes data, const std::string& resize) {
        std::string_view bytes = data;
        media::VideoPreprocessConfig config;
        if (resize == "pillow") {
          config.sampling.resize = media::BicubicRule::kPillow;
        } else if (resize != "torchvision") {
          ThrowStatus(Status::InvalidArgument(
              "preprocess_video: resize '{}' (expected torchvision or pillow)", resize));
        }
        Result<media::PreprocessedVideo> done = [&] {
          py::gil_scoped_release release;
          return media::PreprocessVideo(
              {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, config);
        }();
        media::PreprocessedVideo video = ValueOrThrow(std::move(done));
        const auto rows = static_cast<py::ssize_t>(video.grid.patches());
        const auto size = static_cast<py::ssize_t>(video.pixel_values.size());
        py::dict d;
        d["pixel_values_videos"] =
            Own(std::move(video.pixel_values), {rows, rows == 0 ? 0 : size / rows});
        d["video_grid_thw"] = std::vector<uint32_t>{video.grid.t, video.grid.h, video.grid.w};
        d["second_per_grid_ts"] = video.second_per_grid_t;
        d["frame_indices"] = video.sampling.frame_indices;
        d["total_frames"] = video.sampling.total_frames;
        return d;
      },
      py::arg("data"), py::arg("resize") = "torchvision",
      "A video file's bytes as Qwen2.5-VL takes them (qwen-vl-utils' frame sampling at 2 fps, "
      "only the sampled frames decoded, turned as the display matrix says, resized by "
      "torchvision's bicubic + antialias as qwen-vl-utils does or by Pillow's bicubic "
      "(resize='pillow'), normalize, patchify in temporal pairs): a dict of "
      "pixel_values_videos (float32, patches × 1176), "
      "video_grid_thw [t, h, w], second_per_grid_ts, frame_indices and total_frames. Raises "
      "InvalidArgumentError (not a container, no video stream, above the probe's limits) or "
      "CorruptError (undecodable).");
  m.def(
      "log_mel",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> pcm,
         const std::optional<std::string>& audio, std::optional<uint32_t> n_mels,
         std::optional<uint32_t> chunk_seconds, uint32_t frames, const py::kwargs& renamed) {
        RefuseRenamed(renamed, {{"preset", "audio"}});
        if (pcm.ndim() != 1) ThrowStatus(Status::InvalidArgument("log_mel: pcm must be 1-D"));
        const media::LogMelConfig config = Config(audio, n_mels, chunk_seconds);
        Result<media::LogMelFeatures> features = [&] {
          py::gil_scoped_release release;
          return media::LogMel({pcm.data(), static_cast<size_t>(pcm.size())}, config, frames);
        }();
        media::LogMelFeatures f = ValueOrThrow(std::move(features));
        py::dict d;
        d["input_features"] = Own(std::move(f.input_features), {f.n_mels, f.frames});
        d["attention_mask"] = Own(std::move(f.attention_mask), {f.frames});
        d["tokens"] = f.tokens;
        return d;
      },
      py::arg("pcm"), py::arg("audio") = py::none(), py::arg("n_mels") = py::none(),
      py::arg("chunk_seconds") = py::none(), py::arg("frames") = 0,
      "Whisper-style features of mono float PCM at the audio preset's rate (16 kHz): a dict of "
      "input_features (float32, n_mels × frames), attention_mask (int32, frames) and tokens "
      "(the encoder's output length). `audio`: an audio preset (presets/audio: "
      "whisper-large-v2, whisper-large-v3, qwen2-audio, qwen2.5-omni, qwen3-omni; None: the "
      "default audio encoder's, as mmpt prepare uses it); n_mels and chunk_seconds override it. "
      "frames > 0 keeps the "
      "window's first `frames` frames only, as a batch does, equal to the whole window's. "
      "Raises InvalidArgumentError (empty or non-finite audio, frames above the window's) or "
      "NotFoundError (audio preset).");
  m.def(
      "mel_filters",
      [](const std::optional<std::string>& audio, std::optional<uint32_t> n_mels,
         const py::kwargs& renamed) {
        RefuseRenamed(renamed, {{"preset", "audio"}});
        auto extractor =
            ValueOrThrow(media::LogMelExtractor::ForConfig(Config(audio, n_mels, std::nullopt)));
        std::span<const double> filters = extractor->MelFilters();
        const auto mels = static_cast<py::ssize_t>(extractor->config().n_mels);
        return Own(std::vector<double>(filters.begin(), filters.end()),
                   {mels, static_cast<py::ssize_t>(filters.size()) / mels});
      },
      py::arg("audio") = py::none(), py::arg("n_mels") = py::none(),
      "The audio preset's Slaney mel filter bank (float64, n_mels × (n_fft / 2 + 1)).");
  m.def(
      "audio_in_video",
      [](const std::string& audio, const std::vector<uint32_t>& grid_thw, float second_per_grid_t,
         uint32_t audio_tokens, float position_id_per_seconds, uint32_t merge_size, int32_t start,
         const py::kwargs& renamed) {
        RefuseRenamed(renamed, {{"model", "audio"}});
        if (grid_thw.size() != 3 || merge_size == 0 || grid_thw[1] % merge_size != 0 ||
            grid_thw[2] % merge_size != 0) {
          ThrowStatus(Status::InvalidArgument(
              "audio_in_video: grid_thw must be [t, h, w] with h and w multiples of merge_size"));
        }
        const media::AudioInVideoRule rule =
            ValueOrThrow(media::AudioInVideoRuleOf(audio, position_id_per_seconds));
        const media::AudioInVideo item{grid_thw[0], grid_thw[1] / merge_size,
                                       grid_thw[2] / merge_size, second_per_grid_t, audio_tokens};
        const std::vector<media::AudioInVideoRun> runs = media::AudioInVideoRuns(rule, item);
        const auto n = static_cast<py::ssize_t>(item.block_tokens());
        std::vector<int32_t> positions(3 * static_cast<size_t>(n));
        std::span<int32_t> all(positions);
        const int32_t next = media::AudioInVideoPositions(
            rule, item, runs, start, all.subspan(0, n), all.subspan(n, n), all.subspan(2 * n, n));
        py::list out_runs;
        for (const media::AudioInVideoRun& run : runs) {
          out_runs.append(py::make_tuple(run.video ? "video" : "audio", run.first, run.count));
        }
        py::dict d;
        d["runs"] = out_runs;
        d["positions"] = Own(std::move(positions), {3, n});
        d["next"] = next;
        return d;
      },
      py::arg("audio"), py::arg("grid_thw"), py::arg("second_per_grid_t"), py::arg("audio_tokens"),
      py::kw_only(), py::arg("position_id_per_seconds"), py::arg("merge_size") = 2,
      py::arg("start") = 0,
      "A video with its sound track as audio preset `audio`'s model ('qwen2.5-omni', "
      "'qwen3-omni') writes it "
      "between the video's and the audio's markers (use_audio_in_video): `runs`, its "
      "placeholders in token order as (kind, first, count) runs of the video's tokens (merged "
      "grid order) or the audio's; `positions`, the M-RoPE positions (int32, 3 × (4 + tokens)) "
      "of the whole block, markers included, from `start`; `next`, the position of the text "
      "after it. grid_thw in patches (video_grid_thw). Raises InvalidArgumentError or "
      "NotFoundError (audio).");
  m.def(
      "audio_tokens",
      [](uint32_t valid_frames, const std::optional<std::string>& audio,
         const py::kwargs& renamed) {
        RefuseRenamed(renamed, {{"preset", "audio"}});
        return media::AudioTokens(Config(audio, std::nullopt, std::nullopt).tokens, valid_frames);
      },
      py::arg("valid_frames"), py::arg("audio") = py::none(),
      "Audio tokens the encoder of audio preset `audio` gives for `valid_frames` mel frames "
      "(None: the default audio encoder's): Qwen2-Audio's / Qwen2.5-Omni's stride-2 "
      "convolution then pooling by 2, or Qwen3-Omni's 13 per 100-frame chunk.");
}

}  // namespace mmpt::python
