"""The prepared real-data corpus the loader's Python tests read: COCO caption pairs with their
real image sizes and captions from ../shared/data/real, written by ``mmpt synth --profile coco``
(LLaVA conversations, JPEG images drawn at the real sizes) and prepared by ``mmpt prepare``
with the Qwen3 tokenizer and the qwen2-vl preset (or another vision preset).
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


def runner(work):
    """A function that runs ``mmpt ARGS...`` in directory `work`, asserts it succeeded and
    returns its output (stdout and stderr)."""
    def run(*args):
        done = subprocess.run([MMPT, *args], cwd=work, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        assert done.returncode == 0, done.stdout
        return done.stdout
    return run


def load_batches(path, cp=1, cp_rank=0, steps=2, seq_len=8192):
    """The first `steps` batches of DP rank 0, CP rank `cp_rank` of a dataset planned at DP 1,
    GA 1 (repeats allowed)."""
    import mmpt
    dataset = mmpt.Dataset(path)
    planner = mmpt.Planner(dataset, dp=1, cp=cp, seq_len=seq_len, ga=1, allow_repeat=True)
    loader = mmpt.Loader(dataset, planner, dp_rank=0, cp_rank=cp_rank)
    out = []
    for batch in loader:
        out.append(batch)
        if len(out) == steps:
            break
    return out


def build(out_dir, samples, shards=4, vision="qwen2-vl"):
    """Synthesize and prepare `samples` COCO pairs as `shards` shards under `out_dir` for the
    vision preset `vision`; return the dataset path.
    Raises (never skips) when the real data or the commands are missing."""
    if not os.path.exists(REAL_COCO):
        raise FileNotFoundError(f"{REAL_COCO}: the real data is missing")
    raw = os.path.join(out_dir, "raw")
    dataset = os.path.join(out_dir, "dataset")
    _run("synth", "--profile", "coco", "--source", REAL_COCO, "--format", "llava",
         "--samples", str(samples), "--out", raw)
    _run("prepare", os.path.join(raw, "coco.jsonl"), "--out", dataset, "--vision", vision,
         "--samples-per-shard", str(max(1, -(-samples // shards))), "--on-error", "fail")
    return dataset
