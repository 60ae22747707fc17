"""An independent NumPy implementation of Hugging Face's WhisperFeatureExtractor.

Written from the algorithm (transformers' feature_extraction_whisper.py and audio_utils.py, and
the Qwen2-Audio / Qwen2.5-Omni processors), not from mmpt, in float64 throughout; the oracle of
tests/python/test_log_mel.py and the baseline of bench/log_mel_bench.py. The steps, as the
reference calls the feature extractor (padding="max_length", truncation, attention mask):

1. zero-pad or cut the 16 kHz mono waveform to chunk_seconds (480,000 samples);
2. centred STFT: reflect-pad n_fft // 2 on both sides (no edge repeat), frames every hop
   samples, periodic Hann window, one-sided FFT, power |X|²; drop the last frame (3,000 left);
3. Slaney mel filter bank from 0 to 8 kHz with Slaney area normalization;
4. log10 of at least 1e-10, floor at the clip's maximum − 8, then (x + 4) / 4;
5. attention mask: the per-sample mask (1 on the audio) sampled every hop samples;
6. tokens after the encoder: (n − 1) // 2 + 1 (stride-2 conv), then (n − 2) // 2 + 1 (pool).
"""

import numpy as np

MIN_HZ, MAX_HZ = 0.0, 8000.0


def hz_to_mel(hz):
    """Slaney's mel scale: 3 mel per 200 Hz up to 1 kHz (15 mel), log-spaced above."""
    hz = np.asarray(hz, dtype=np.float64)
    log_region = 15.0 + np.log(np.maximum(hz, 1e-300) / 1000.0) * 27.0 / np.log(6.4)
    return np.where(hz >= 1000.0, log_region, hz * 3.0 / 200.0)


def mel_to_hz(mel):
    mel = np.asarray(mel, dtype=np.float64)
    log_region = 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0)
    return np.where(mel >= 15.0, log_region, mel * 200.0 / 3.0)


def mel_filter_bank(n_mels, n_fft=400, sample_rate=16000):
    """Triangular filters, [n_mels, n_fft // 2 + 1], on power-spectrum bins."""
    edges = mel_to_hz(np.linspace(hz_to_mel(MIN_HZ), hz_to_mel(MAX_HZ), n_mels + 2))
    bins = np.linspace(0.0, sample_rate // 2, n_fft // 2 + 1)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (bins[None, :] - lower) / (centre - lower)
    falling = (upper - bins[None, :]) / (upper - centre)
    triangles = np.clip(np.minimum(rising, falling), 0.0, None)
    return triangles * (2.0 / (upper - lower))


def audio_tokens(valid_frames):
    after_conv = (valid_frames - 1) // 2 + 1
    return max((after_conv - 2) // 2 + 1, 0)


def log_mel(pcm, n_mels=128, n_fft=400, hop=160, sample_rate=16000, chunk_seconds=30,
            filters=None, to_clip=False):
    """Return (input_features [n_mels, frames] float64, attention_mask [frames] int32, tokens).

    `filters` may pass a precomputed mel_filter_bank(n_mels, n_fft, sample_rate). `to_clip`:
    padding=True with one clip a call (Qwen3-Omni): step 1 pads the clip to its own length, so
    the STFT reflects at the clip's end and ⌊samples / hop⌋ frames remain. Its tokens are
    another rule's: the third value is then None.
    """
    window_samples = chunk_seconds * sample_rate
    pcm = np.asarray(pcm, dtype=np.float64)[:window_samples]
    if to_clip:
        window_samples = pcm.size
    signal = np.zeros(window_samples)
    signal[: pcm.size] = pcm
    sample_mask = np.zeros(window_samples, dtype=np.int32)
    sample_mask[: pcm.size] = 1

    padded = np.pad(signal, n_fft // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
    hann = np.hanning(n_fft + 1)[:-1]  # periodic
    power = np.abs(np.fft.rfft(frames * hann, axis=1)) ** 2
    power = power[:-1]  # the STFT's last frame is dropped

    if filters is None:
        filters = mel_filter_bank(n_mels, n_fft, sample_rate)
    mel = filters @ power.T
    log = np.log10(np.maximum(mel, 1e-10))
    log = np.maximum(log, log.max() - 8.0)
    features = (log + 4.0) / 4.0

    mask = sample_mask[::hop][: features.shape[1]]
    return features, mask, None if to_clip else audio_tokens(int(mask.sum()))
