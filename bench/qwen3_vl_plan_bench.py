"""Packing and step estimates of one corpus under Qwen3-VL beside Qwen2.5-VL.

    /usr/bin/python3 bench/qwen3_vl_plan_bench.py [--mmpt build/release/mmpt] [--images 4000]
        [--videos 1000] [--max-duration 10] [--seq-len 8192 --dp 8 --ga 4 --steps 8]

`mmpt synth --metadata-only` writes one corpus from the real COCO val2017 captions and sizes
(../shared/data/real): --images caption pairs (`--profile coco`) and --videos captioned videos
(`--profile video`: COCO sizes, frame rates and lengths drawn). `mmpt prepare` prepares it twice:
as Qwen2.5-VL (`--vision qwen2.5-vl --chat-template qwen_vl`: a video is one vision item) and as
Qwen3-VL (`--vision qwen3-vl --chat-template qwen3_vl`: each temporal group of two sampled frames
is `<t seconds>` as text and its own vision item). `mmpt inspect --json` counts each one's tokens,
`mmpt prepare --json` its vision items, and `mmpt plan --json` plans each at one layout (vanilla
beside mmpt; the figures shown are mmpt's unless named vanilla). Printed: one table, a row per
figure, a column per model and their ratio (Qwen3-VL / Qwen2.5-VL).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

MODELS = (("Qwen2.5-VL", "qwen2.5-vl", "qwen_vl"), ("Qwen3-VL", "qwen3-vl", "qwen3_vl"))


def mmpt_json(mmpt, *args):
    """`mmpt ARGS --json`, parsed; exits with its error when it fails."""
    run = subprocess.run([mmpt, *map(str, args), "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"mmpt {args[0]} failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout)


def synthesize(mmpt, out, images, videos, seed, max_duration):
    """Write coco.jsonl and video.jsonl (metadata only) into `out`; return their paths."""
    for profile, samples in (("coco", images), ("video", videos)):
        mmpt_json(mmpt, "synth", "--profile", profile, "--samples", samples, "--metadata-only",
                  "--seed", seed, "--max-duration", max_duration, "--out", out)
    return os.path.join(out, "coco.jsonl"), os.path.join(out, "video.jsonl")


def measure(mmpt, inputs, dataset, vision, template, layout):
    """One model's figures: prepare, inspect and plan `inputs` into `dataset`."""
    coco, video = inputs
    prepared = mmpt_json(mmpt, "prepare", f"coco={coco}", f"video={video}", "--out", dataset,
                         "--vision", vision, "--chat-template", template, "--threads", 2)
    inspected = {s["name"]: s for s in mmpt_json(mmpt, "inspect", dataset)["sources"]}
    plan = mmpt_json(mmpt, "plan", dataset, *layout)

    def total(source, field):
        return inspected[source][field]["total"] if field in inspected[source] else 0

    images = total("coco", "images") + total("video", "images")
    m, v = plan["mmpt"], plan["vanilla"]
    return {
        "samples": prepared["samples"],
        "text tokens": prepared["text_tokens"],
        "  of caption pairs": total("coco", "text_tokens"),
        "  of video samples": total("video", "text_tokens"),
        "image tokens": total("coco", "image_tokens") + total("video", "image_tokens"),
        "video tokens": total("coco", "video_tokens") + total("video", "video_tokens"),
        "vision items": prepared["media"],
        "  video items (groups)": prepared["media"] - images,
        "samples placed": m["samples_placed"],
        "  over-long: dropped": m["samples_dropped"],
        "  over-long: truncated": m["samples_truncated"],
        "packs": m["packs"],
        "fill %": 100 * m["packing_efficiency"],
        "est. step s": m["step_seconds"],
        "vision imbalance max": m["max_vision_imbalance"],
        "vision imbalance mean": m["mean_vision_imbalance"],
        "LLM imbalance max": m["max_llm_imbalance"],
        "LLM imbalance mean": m["mean_llm_imbalance"],
        "tokens/s per replica": m["tokens_per_second_per_replica"],
        "vanilla fill %": 100 * v["packing_efficiency"],
        "vanilla est. step s": v["step_seconds"],
        "mmpt vs vanilla throughput": plan["throughput_speedup"],
    }


def cell(value):
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 10 else f"{value:.3f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mmpt", default="build/release/mmpt")
    parser.add_argument("--images", type=int, default=4000, help="COCO caption pairs")
    parser.add_argument("--videos", type=int, default=1000, help="captioned videos")
    parser.add_argument("--seed", type=int, default=1, help="synth's seed (video lengths, fps)")
    parser.add_argument("--max-duration", type=float, default=10,
                        help="longest video, seconds (lengths drawn from 1 s to it)")
    parser.add_argument("--seq-len", type=int, default=8192)
    parser.add_argument("--dp", type=int, default=8)
    parser.add_argument("--ga", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--work", help="folder to keep the corpus and datasets in (default: a "
                        "temporary one, removed)")
    args = parser.parse_args()
    layout = ["--seq-len", args.seq_len, "--dp", args.dp, "--ep", args.dp, "--ga", args.ga,
              "--steps", args.steps]
    with tempfile.TemporaryDirectory(prefix="qwen3-vl-plan-") as scratch:
        work = args.work or scratch
        inputs = synthesize(args.mmpt, os.path.join(work, "corpus"), args.images, args.videos,
                            args.seed, args.max_duration)
        figures = [measure(args.mmpt, inputs, os.path.join(work, vision), vision, template, layout)
                   for _, vision, template in MODELS]
    print(f"{args.images} COCO caption pairs + {args.videos} videos of 1-{args.max_duration:g} s "
          f"(metadata only), planned at {' '.join(map(str, layout))} (EP = DP: one sync group)")
    names = [name for name, _, _ in MODELS]
    rows = [[key, cell(figures[0][key]), cell(figures[1][key]),
             f"{figures[1][key] / figures[0][key]:.3f}x" if figures[0][key] else "-"]
            for key in figures[0]]
    header = ["", *names, "ratio Qwen3 / Qwen2.5"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
    for row in [header] + rows:
        cells = "  ".join(f"{c:>{w}}" for c, w in zip(row[1:], widths[1:]))
        print(f"{row[0]:<{widths[0]}}  " + cells)


if __name__ == "__main__":
    sys.exit(main())
