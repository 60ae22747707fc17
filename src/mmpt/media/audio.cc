#include "mmpt/media/audio.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "mmpt/media/av_input_internal.h"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
}

namespace mmpt::media {
namespace {

using internal::AvErrorString;
using internal::AvInput;
using internal::FrameReader;

struct SwrDeleter {
  void operator()(SwrContext* s) const { swr_free(&s); }
};

// A file decoding to less than the header declares by more than both of these is truncated:
// encoder priming and padding (an AAC or MP3 frame, tens of milliseconds) stay far below.
constexpr double kShortfallSeconds = 0.25;
constexpr double kShortfallFraction = 0.05;

// The input side of a resampler: a decoded frame's channel layout, sample format and rate.
struct InputFormat {
  AVChannelLayout layout = {};
  int sample_format = -1;
  int sample_rate = 0;
};

bool SameFormat(const InputFormat& a, const AVFrame* f) {
  return a.sample_format == f->format && a.sample_rate == f->sample_rate &&
         av_channel_layout_compare(&a.layout, &f->ch_layout) == 0;
}

// Mixes decoded frames to their channels' mean and resamples them into float at one rate,
// appending to `out`, and starts a new resampler (after draining the old) whenever a frame's
// parameters change.
class MonoResampler {
 public:
  MonoResampler(uint32_t rate, uint64_t max_samples, std::vector<float>* out)
      : rate_(static_cast<int>(rate)), max_samples_(max_samples), out_(out) {}
  ~MonoResampler() { av_channel_layout_uninit(&in_.layout); }
  MonoResampler(const MonoResampler&) = delete;
  MonoResampler& operator=(const MonoResampler&) = delete;

  Status Add(const AVFrame* frame) {
    if (frame->nb_samples <= 0) return Status::OK();
    if (frame->ch_layout.nb_channels <= 0 || frame->sample_rate <= 0) {
      return Status::Corrupt("audio: a frame of {} channels at {} Hz", frame->ch_layout.nb_channels,
                             frame->sample_rate);
    }
    if (!swr_ || !SameFormat(in_, frame)) MMPT_RETURN_IF_ERROR(Restart(frame));
    return Convert(const_cast<const uint8_t**>(frame->extended_data), frame->nb_samples);
  }

  /// Drain what the resampler still holds (its filter's delay).
  Status Finish() { return swr_ ? Convert(nullptr, 0) : Status::OK(); }

 private:
  Status Restart(const AVFrame* frame) {
    MMPT_RETURN_IF_ERROR(Finish());
    av_channel_layout_uninit(&in_.layout);
    if (av_channel_layout_copy(&in_.layout, &frame->ch_layout) < 0) {
      return Status::Internal("audio: out of memory");
    }
    in_.sample_format = frame->format;
    in_.sample_rate = frame->sample_rate;
    // Decoders that know only a channel count get the default layout for it, as FFmpeg's
    // filters assume (the mix weighs every channel alike whatever the layout).
    AVChannelLayout mix = {};
    int error = frame->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC
                    ? (av_channel_layout_default(&mix, frame->ch_layout.nb_channels), 0)
                    : av_channel_layout_copy(&mix, &frame->ch_layout);
    if (error >= 0) error = Open(&mix);
    av_channel_layout_uninit(&mix);
    if (error < 0) {
      return Status::Corrupt("audio: cannot resample {} channels of {} at {} Hz: {}",
                             frame->ch_layout.nb_channels,
                             av_get_sample_fmt_name(static_cast<AVSampleFormat>(frame->format)),
                             frame->sample_rate, AvErrorString(error));
    }
    return Status::OK();
  }

  int Open(AVChannelLayout* in_layout) {  // not const: FFmpeg 5.1's signature
    swr_.reset();
    SwrContext* raw = nullptr;
    AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
    int error = swr_alloc_set_opts2(&raw, &mono, AV_SAMPLE_FMT_FLT, rate_, in_layout,
                                    static_cast<AVSampleFormat>(in_.sample_format), in_.sample_rate,
                                    0, nullptr);
    swr_.reset(raw);
    if (error < 0) return error;
    // The mean of the channels (librosa.load(mono=True)), LFE included, not libswresample's
    // default down-mix (centre and surround weighted, stereo at 0.707 per channel).
    const int channels = in_layout->nb_channels;
    const std::vector<double> mean(static_cast<size_t>(channels), 1.0 / channels);
    error = swr_set_matrix(swr_.get(), mean.data(), channels);
    if (error >= 0) error = swr_init(swr_.get());
    return error;
  }

  Status Convert(const uint8_t** in, int in_samples) {
    int room = swr_get_out_samples(swr_.get(), in_samples);
    if (room < 0) return Status::Corrupt("audio: resampler: {}", AvErrorString(room));
    size_t at = out_->size();
    out_->resize(at + static_cast<size_t>(room));
    auto* dst = reinterpret_cast<uint8_t*>(out_->data() + at);
    int written = swr_convert(swr_.get(), &dst, room, in, in_samples);
    if (written < 0) return Status::Corrupt("audio: resampler: {}", AvErrorString(written));
    out_->resize(at + static_cast<size_t>(written));
    if (out_->size() > max_samples_) {
      // A header can understate the length: the decoded audio is held to the budget too.
      return Status::InvalidArgument("audio: decodes to more than the limit of {} samples",
                                     max_samples_);
    }
    return Status::OK();
  }

  const int rate_;
  const uint64_t max_samples_;
  std::vector<float>* out_;
  InputFormat in_;
  std::unique_ptr<SwrContext, SwrDeleter> swr_;
};

}  // namespace

uint32_t SamplesOfDuration(uint32_t duration_ms) {
  const uint64_t samples = (uint64_t{duration_ms} * kAudioEncoderSampleRate + 999) / 1000;
  return static_cast<uint32_t>(std::min<uint64_t>(samples, UINT32_MAX));
}

Result<DecodedAudio> DecodeAudio(std::span<const std::byte> bytes, uint32_t sample_rate,
                                 const AvLimits& limits) {
  if (sample_rate == 0 || sample_rate > limits.max_sample_rate) {
    return Status::InvalidArgument("audio: output rate {} Hz is outside 1..{}", sample_rate,
                                   limits.max_sample_rate);
  }
  MMPT_ASSIGN_OR_RETURN(AvInfo info, ProbeAv(bytes, limits));
  if (!info.audio) return Status::InvalidArgument("audio: {} has no audio stream", info.container);
  DecodedAudio decoded;
  decoded.sample_rate = sample_rate;
  decoded.source = *info.audio;
  const auto max_samples =
      static_cast<uint64_t>(std::ceil(limits.max_duration_seconds * sample_rate));

  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<AvInput> input, AvInput::Open(bytes));
  FrameReader reader(input->format(), info.audio->stream_index);
  MMPT_RETURN_IF_ERROR(reader.Init());
  MonoResampler resampler(sample_rate, max_samples, &decoded.samples);
  while (true) {
    MMPT_ASSIGN_OR_RETURN(const AVFrame* frame, reader.Next());
    if (frame == nullptr) break;
    MMPT_RETURN_IF_ERROR(resampler.Add(frame));
  }
  MMPT_RETURN_IF_ERROR(resampler.Finish());
  if (decoded.samples.empty()) return Status::Corrupt("audio: the stream decodes to no samples");
  // Float PCM is stored as is, so a file can hold NaN or infinity, which would poison every
  // feature computed from it.
  auto bad = std::find_if(decoded.samples.begin(), decoded.samples.end(),
                          [](float x) { return !std::isfinite(x); });
  if (bad != decoded.samples.end()) {
    return Status::Corrupt("audio: sample {} of the decoded audio is not finite",
                           bad - decoded.samples.begin());
  }
  const double seconds = static_cast<double>(decoded.samples.size()) / sample_rate;
  const double declared = info.audio->duration_seconds;
  if (declared - seconds > std::max(kShortfallSeconds, kShortfallFraction * declared)) {
    return Status::Corrupt(
        "audio: decodes to {:.2f} s of the {:.2f} s its header declares "
        "(truncated)",
        seconds, declared);
  }
  return decoded;
}

}  // namespace mmpt::media
