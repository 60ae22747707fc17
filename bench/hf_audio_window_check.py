"""Does encoding a sound track one attention window a clip give the whole track's embeddings?

mmpt hands the audio encoder a video's sound track (audio in video) as one clip per attention
window of the encoder (Qwen2.5-Omni: 200 mel frames; Qwen3-Omni: 800 frames of 100-frame
convolution chunks), because the windows of a Qwen3-Omni track sit in several runs of tokens
between video steps. This checks the premise against transformers' own audio encoders: for
each, a random small encoder (the real window settings, small widths) encodes random features
whole and as its windows in one call, and the rows must agree; cutting anywhere else must not
(the check can fail). Needs transformers (the device, bench/gpu_suite.sh); without it, says so
and exits 0.

  python3 bench/hf_audio_window_check.py [--out FILE]
"""

import argparse
import inspect
import json
import sys

import torch

MEL = 128


def encoders():
    """(name, encoder class, config, window frames) of each Omni audio tower."""
    from transformers.models.qwen2_5_omni import configuration_qwen2_5_omni as c25
    from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as m25
    from transformers.models.qwen3_omni_moe import configuration_qwen3_omni_moe as c3
    from transformers.models.qwen3_omni_moe import modeling_qwen3_omni_moe as m3
    small = dict(num_mel_bins=MEL, d_model=64, encoder_layers=2, encoder_attention_heads=4,
                 encoder_ffn_dim=128, output_dim=32)
    return [
        ("qwen2.5-omni", m25.Qwen2_5OmniAudioEncoder,
         c25.Qwen2_5OmniAudioEncoderConfig(**small, n_window=100), 200),
        ("qwen3-omni", m3.Qwen3OmniMoeAudioEncoder,
         c3.Qwen3OmniMoeAudioEncoderConfig(**small, n_window=50, n_window_infer=800,
                                           downsample_hidden_size=16), 800),
    ]


def encode(model, features, lengths):
    """The encoder's rows for clips of `lengths` frames, concatenated along time in
    `features` [mel, frames], as the thinker calls it."""
    lens = torch.tensor(lengths, dtype=torch.long, device=features.device)
    kwargs = {"feature_lens": lens}
    if "aftercnn_lens" in inspect.signature(model.forward).parameters:
        _, after = model._get_feat_extract_output_lengths(lens)
        kwargs["aftercnn_lens"] = after
    out = model(features, **kwargs)
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    try:
        import transformers
    except ImportError:
        print("hf_audio_window_check: transformers absent, skipped")
        return 0
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    figures, ok = {"transformers": transformers.__version__, "device": device}, True
    for name, cls, config, window in encoders():
        config._attn_implementation = "eager"
        model = cls(config).to(device, torch.float64).eval()
        for frames in (970, 1000, 2 * window + 37):
            features = torch.randn(MEL, frames, dtype=torch.float64, device=device)
            windows = [min(window, frames - s) for s in range(0, frames, window)]
            other = [frames // 2 + 7, frames - frames // 2 - 7]  # not at a window
            with torch.no_grad():
                whole = encode(model, features, [frames])
                split = encode(model, features, windows)
                wrong = encode(model, features, other)
            same = (whole - split).abs().max().item() if whole.shape == split.shape else None
            differs = (whole.shape != wrong.shape or
                       (whole - wrong).abs().max().item() > 1e-6)
            figures[f"{name} {frames} frames"] = {
                "windows": windows, "rows": whole.shape[0], "max_abs_diff": same,
                "other_cut_differs": differs}
            ok &= same is not None and same < 1e-9 and differs
            print(f"{name}: {frames} frames as {windows}: {whole.shape[0]} rows, "
                  f"max |whole - windows| {same}; cut at {other}: differs {differs}")
    figures["ok"] = ok
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=1)
    print("hf_audio_window_check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
