"""bench/encoder_bench.py at a tiny size, so that it cannot rot: every case runs in its child
process and the table has the figures it promises, for Qwen2.5-VL and Qwen3-VL. Its 13 cases
(2 towers × 2 packs × HF-style and mmpt, and the recompute study's 5) cost their processes'
start, about 1.5 s each here, not their sizes: they run two at a time (--jobs 2)."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_encoder_bench_runs_at_a_tiny_size():
    env = dict(os.environ)
    build = os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (build, env.get("PYTHONPATH")) if p)
    bench = os.path.join(ROOT, "bench", "encoder_bench.py")
    done = subprocess.run([sys.executable, bench, "--tiny", "--device", "cpu", "--threads", "1",
                           "--jobs", "2"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout
    rows = re.findall(r"^(qwen2\.5-vl|qwen3-vl)\s+(COCO x2|large x1)\s+(\d+)\s+1 \|\s+([\d.]+)"
                      r"\s+([\d.]+)\s+([\d.]+)x \|\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x$",
                      done.stdout, re.M)
    # Both towers, each against its Hugging Face-style reference, from one run.
    assert [r[:2] for r in rows] == [("qwen2.5-vl", "COCO x2"), ("qwen2.5-vl", "large x1"),
                                     ("qwen3-vl", "COCO x2"), ("qwen3-vl", "large x1")], done.stdout
    for row in rows:
        assert int(row[2]) > 0 and float(row[3]) > 0 and float(row[4]) > 0, row
    modes = re.findall(r"^(none|selective|full)\s+([\d.]+)\s+([\d.]+) \|\s+[\d.]+\s+(\d+)",
                       done.stdout, re.M)
    assert [m[0] for m in modes] == ["none", "selective", "full"], done.stdout
    assert all(int(m[3]) > 0 for m in modes)
