// libFuzzer target: ProbeAv on arbitrary bytes must never crash, read out of bounds, touch
// a file, or report a stream with an empty size, rate or channel count as OK; nor must
// decoding its audio to 16 kHz mono, which must yield finite samples when it succeeds.
#include <cmath>
#include <cstdlib>

#include "mmpt/media/audio.h"
#include "mmpt/media/av_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto info = mmpt::media::ProbeAv({reinterpret_cast<const std::byte*>(data), size});
  if (info.ok()) {
    if (!info->video && !info->audio) std::abort();
    if (info->video && (info->video->width == 0 || info->video->height == 0 ||
                        info->video->frames == 0 || !(info->video->fps > 0))) {
      std::abort();
    }
    if (info->audio && (info->audio->channels == 0 || info->audio->sample_rate == 0 ||
                        !(info->audio->duration_seconds > 0))) {
      std::abort();
    }
  } else if (info.status().message().empty()) {
    std::abort();
  }
  if (info.ok() && info->audio) {
    // Budgets small enough that a fuzzer's input decodes in milliseconds.
    auto pcm = mmpt::media::DecodeAudio({reinterpret_cast<const std::byte*>(data), size},
                                        mmpt::media::kAudioEncoderSampleRate,
                                        {.max_duration_seconds = 60});
    if (pcm.ok()) {
      if (pcm->samples.empty() || pcm->samples.size() > 61 * 16000) std::abort();
      for (float x : pcm->samples) {
        if (!std::isfinite(x)) std::abort();
      }
    } else if (pcm.status().message().empty()) {
      std::abort();
    }
  }
  return 0;
}
