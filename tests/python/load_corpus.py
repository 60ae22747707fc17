"""The prepared real-data corpus the loader's Python tests read: COCO caption pairs with their
real image sizes and captions from ../shared/data/real, written by ``mmpt synth --profile coco``
(LLaVA conversations, JPEG images drawn at the real sizes) and prepared by ``mmpt prepare``
with the Qwen3 tokenizer and the qwen2-vl preset.
"""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_COCO = os.path.join(ROOT, "..", "shared", "data", "real", "coco_val2017_captions.json")
MMPT = os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "mmpt")


def _run(*args):
    done = subprocess.run([MMPT, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"mmpt {args[0]} failed ({done.returncode}):\n{done.stdout}")


def build(out_dir, samples, shards=4):
    """Synthesize and prepare `samples` COCO pairs as `shards` shards under `out_dir`; return
    the dataset path.
    Raises (never skips) when the real data or the commands are missing."""
    if not os.path.exists(REAL_COCO):
        raise FileNotFoundError(f"{REAL_COCO}: the real data is missing")
    raw = os.path.join(out_dir, "raw")
    dataset = os.path.join(out_dir, "dataset")
    _run("synth", "--profile", "coco", "--source", REAL_COCO, "--format", "llava",
         "--samples", str(samples), "--out", raw)
    _run("prepare", os.path.join(raw, "coco.jsonl"), "--out", dataset, "--vision", "qwen2-vl",
         "--samples-per-shard", str(max(1, -(-samples // shards))), "--on-error", "fail")
    return dataset
