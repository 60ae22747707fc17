"""Speech-like test audio at 16 kHz for the log-mel tests and benchmark."""

import numpy as np

RATE = 16000


def vowels(seconds, rng):
    """A harmonic source with a gliding pitch (100–220 Hz), shaped by three formant resonances
    that change every 150 ms, amplitude-modulated at a syllable rate (4 Hz), over faint noise."""
    t = np.arange(int(seconds * RATE)) / RATE
    f0 = 160 + 60 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    segment = (t / 0.15).astype(int)
    formants = rng.uniform([300, 900, 2200], [900, 2200, 3500], size=(segment.max() + 1, 3))
    signal = np.zeros_like(t)
    for harmonic in range(1, 30):
        freq = harmonic * f0
        gain = sum(np.exp(-(((freq - formants[segment, i]) / 150) ** 2)) for i in range(3))
        signal += gain * np.sin(harmonic * phase) / harmonic
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    return 0.1 * signal * envelope + 0.002 * rng.standard_normal(t.size)
