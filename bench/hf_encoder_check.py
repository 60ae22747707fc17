"""mmpt's native vision encoder against Hugging Face transformers' own Qwen2.5-VL or Qwen3-VL
vision tower.

    python3 bench/hf_encoder_check.py --device cuda --json encoder.json     (bench/gpu_suite.sh)
    python3 bench/hf_encoder_check.py --arch qwen3-vl --device cuda --json encoder-qwen3.json

Both towers get the same random weights (transformers' initialization, copied by name into
``mmpt.torch.VisionEncoder``) and the same pixels, in bf16. Checked: the outputs (Qwen3-VL's
DeepStack features included) and every parameter's gradient agree within bf16 tolerance
(relative error of the norm). Measured, per
recompute mode (mmpt: none, selective, full; transformers: none, and its gradient checkpointing):
forward + backward time (the fastest of --repeats after a warm-up) and, on a GPU, peak memory
over the inputs (``torch.cuda.max_memory_allocated``), on packs of 16 COCO val2017 images at
their real sizes as the tower resizes them and on one image at Qwen2.5-VL's 12.8 MP cap (both
towers: Qwen3-VL's own cap, 16.8 MP, is one 65536-patch image too). The
``native_encoder_factor`` of a hardware preset is transformers' time over mmpt's, both without
recomputation, on the COCO packs (Qwen2.5-VL's, which gpu_suite.sh records). Without
transformers (Debian's python3) the comparison is skipped and only mmpt's encoder is timed.
"""

import argparse
import json
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import encoder_bench  # noqa: E402  (the COCO and 12.8 MP grids)
from mmpt.torch import VisionEncoder  # noqa: E402

DEPTHS = {"qwen2.5-vl": 32, "qwen3-vl": 27}  # the 7B's and the 8B's blocks
WIDTHS, PATCH, deepstack_layers = (encoder_bench.WIDTHS, encoder_bench.PATCH,
                                   encoder_bench.deepstack_layers)


def hf_tower(args):
    """transformers' vision tower of --arch at the native encoder's sizes, or None."""
    try:
        if args.arch == "qwen3-vl":
            from transformers.models.qwen3_vl import modeling_qwen3_vl as modeling
            from transformers.models.qwen3_vl.configuration_qwen3_vl import (
                Qwen3VLVisionConfig as Config)
        else:
            from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as modeling
            from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import (
                Qwen2_5_VLVisionConfig as Config)
    except ImportError as e:
        print(f"hf_encoder_check: transformers is not installed ({e}): comparison skipped")
        return None
    w = args.width
    shape = dict(depth=args.depth, hidden_size=w["hidden"], num_heads=w["heads"],
                 intermediate_size=w["mlp_hidden"], out_hidden_size=w["out_hidden"],
                 patch_size=PATCH[args.arch], spatial_merge_size=2, temporal_patch_size=2)
    if args.arch == "qwen3-vl":
        config = Config(hidden_act="gelu_pytorch_tanh", num_position_embeddings=2304,
                        deepstack_visual_indexes=deepstack_layers(args.depth), **shape)
        tower_class = modeling.Qwen3VLVisionModel
    else:
        config = Config(fullatt_block_indexes=[args.depth - 1], window_size=112,
                        hidden_act="silu", **shape)
        tower_class = modeling.Qwen2_5_VisionTransformerPretrainedModel
    config._attn_implementation = "sdpa"
    torch.manual_seed(args.seed)
    return tower_class._from_config(config).to(args.device, torch.bfloat16)


def native_tower(args, recompute, like=None):
    if args.arch == "qwen3-vl":
        layers = dict(deepstack_layers=deepstack_layers(args.depth))
    else:
        layers = dict(full_attention_layers=[args.depth - 1])
    encoder = VisionEncoder(args.arch, recompute=recompute, layers=args.depth, **layers,
                            **args.width)
    encoder = encoder.to(args.device, torch.bfloat16)
    if like is not None:
        state = like.state_dict()
        with torch.no_grad():
            for name in encoder.parameter_names():
                encoder.get_parameter(name).copy_(state[name])
    return encoder


def merged_rows(out):
    """The tower's outputs as one tensor: the merged embeddings, then any DeepStack features,
    stacked by rows. A tower returns a tensor (mmpt, Qwen2.5-VL before transformers 5), a tuple
    (mmpt's Qwen3-VL: embeddings and a list; transformers 4's Qwen3-VL), or an output with
    pooler_output and deepstack_features (transformers 5)."""
    if torch.is_tensor(out):
        return out
    if getattr(out, "pooler_output", None) is not None:
        return torch.cat([out.pooler_output, *(getattr(out, "deepstack_features", None) or [])])
    first, rest = out[0], out[1] if len(out) > 1 and isinstance(out[1], (list, tuple)) else []
    return torch.cat([first, *rest])


def step(tower, pixels, grid, grad_out):
    out = merged_rows(tower(pixels, grid))
    out.backward(grad_out)
    return out


def relative(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm().clamp(min=1e-12))


def compare(hf, native, pixels, grid):
    """Relative errors (norm of the difference over the norm) of the output and of the worst
    parameter gradient, for one backward of the same random output gradient."""
    torch.manual_seed(1)
    for tower in (hf, native):
        tower.zero_grad(set_to_none=True)
    ref = merged_rows(hf(pixels, grid))
    grad_out = torch.randn_like(ref)
    ref.backward(grad_out)
    out = step(native, pixels, grid, grad_out)
    hf_grads = dict(hf.named_parameters())
    worst, name = max((relative(native.get_parameter(n).grad, hf_grads[n].grad), n)
                      for n in native.parameter_names())
    return {"output": relative(out, ref), "worst_gradient": worst,
            "worst_gradient_parameter": name}


def measure(tower, pixels, grid, args):
    """(seconds, peak bytes or None): fastest forward + backward of --repeats, after a warm-up."""
    cuda = args.device == "cuda"
    rows = merged_rows(tower(pixels, grid))
    grad_out = torch.randn_like(rows)
    del rows
    best, peak = float("inf"), None
    for repeat in range(args.repeats + 1):
        tower.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        start = time.perf_counter()
        step(tower, pixels, grid, grad_out)
        if cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
        if repeat:
            best = min(best, time.perf_counter() - start)
    return best, peak


def inputs(grids, args):
    patches = encoder_bench.patches_of(grids)
    torch.manual_seed(2)
    pixels = torch.randn(patches, 3 * 2 * PATCH[args.arch] ** 2, device=args.device,
                         dtype=torch.bfloat16)
    return pixels, torch.tensor(grids, dtype=torch.int64, device=args.device)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--arch", default="qwen2.5-vl", choices=sorted(WIDTHS))
    p.add_argument("--depth", type=int, default=None,
                   help="blocks (default: Qwen2.5-VL-7B's 32, Qwen3-VL-8B's 27)")
    p.add_argument("--tiny", action="store_true",
                   help="a CPU-sized check: 2 blocks of width 64, two small images")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=0.05,
                   help="largest relative error of the output and of any gradient (bf16)")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    args.width = dict(WIDTHS[args.arch])
    args.depth = args.depth or DEPTHS[args.arch]
    vision = args.arch
    packs = {"coco16": encoder_bench.coco_grids(16, vision=vision),
             "12.8MP": encoder_bench.large_grids(1, encoder_bench.QWEN25_MAX_PIXELS,
                                                 vision=vision)}
    if args.tiny:
        args.depth, args.repeats = 2, 1
        args.width = dict(hidden=64, heads=4, mlp_hidden=128, out_hidden=64)
        tiny_pixels = 65536 if args.arch == "qwen3-vl" else 50176  # at or near the minimum
        packs = {"coco2": encoder_bench.coco_grids(2, max_pixels=tiny_pixels, vision=vision)}
    hf = hf_tower(args)
    report = {"arch": args.arch, "device": args.device, "depth": args.depth,
              "width": args.width, "packs": {}}
    for pack, grids in packs.items():
        pixels, grid = inputs(grids, args)
        figures = {"images": len(grids), "patches": int(pixels.shape[0])}
        if hf is not None:
            native = native_tower(args, "none", like=hf)
            figures["error"] = compare(hf, native, pixels, grid)
            seconds, peak = measure(hf, pixels, grid, args)
            figures["hf"] = {"seconds": seconds, "peak_bytes": peak}
            hf.gradient_checkpointing_enable()
            seconds, peak = measure(hf.train(), pixels, grid, args)
            figures["hf_checkpointing"] = {"seconds": seconds, "peak_bytes": peak}
            hf.gradient_checkpointing_disable()
        for mode in ("none", "selective", "full"):
            tower = native_tower(args, mode)
            seconds, peak = measure(tower, pixels, grid, args)
            figures[f"mmpt_{mode}"] = {"seconds": seconds, "peak_bytes": peak}
        report["packs"][pack] = figures
        print_pack(pack, figures)
    first = next(iter(report["packs"].values()))
    if "hf" in first:
        report["native_encoder_factor"] = first["hf"]["seconds"] / first["mmpt_none"]["seconds"]
        bad = [(pack, f["error"]) for pack, f in report["packs"].items()
               if max(f["error"]["output"], f["error"]["worst_gradient"]) > args.tolerance]
        report["agree"] = not bad
        if bad:
            print(f"hf_encoder_check: outputs or gradients differ beyond {args.tolerance}: {bad}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if report.get("agree", True) else 1


def print_pack(pack, figures):
    print(f"{pack}: {figures['images']} images, {figures['patches']} patches")
    if "error" in figures:
        e = figures["error"]
        print(f"  vs transformers: output {e['output']:.2e}, worst gradient "
              f"{e['worst_gradient']:.2e} ({e['worst_gradient_parameter']})")
    for name, m in figures.items():
        if isinstance(m, dict) and "seconds" in m:
            memory = "" if m["peak_bytes"] is None else f", peak {m['peak_bytes'] / 2**30:.2f} GiB"
            print(f"  {name:18} {1e3 * m['seconds']:9.1f} ms{memory}")


if __name__ == "__main__":
    sys.exit(main())
