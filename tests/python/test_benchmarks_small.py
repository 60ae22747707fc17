"""Each benchmark of docs/benchmarks.md at a small size, so that its code path is tested by
`make test` while the reproduction itself runs in `make bench` (docs/testing.md names, for each
`bench` block, the test that stands in for it). A bench prints a baseline and mmpt side by side
with their ratio: each run here must exit 0, print its rows, and print ratios that are the
quotients of the figures beside them (to the figures' printed precision), with what each bench
computes checked where it prints it (equal packs, identical ids). Speed is not asserted.

The Python benches with tests of their own: encoder_bench (test_encoder_bench.py), exchange_bench
(test_exchange_bench.py), replica_bench (test_replica_bench.py), train_step_bench
(test_train_vlm.py), log_mel_bench (test_log_mel.py), video_bench (test_video_fidelity.py).
"""

import json
import os
import re
import subprocess
import sys

import pytest

from test_docs import BUILD, ROOT

pytestmark = pytest.mark.slow
RATIO = re.compile(r"(\d+(?:\.\d+)?)x\b")


def run(*command, cwd=None, env=None, timeout=240):
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-6000:]
    return done.stdout


def _bounds(text):
    """The interval a printed number stands for (half a unit of its last digit either way)."""
    value = float(text)
    half = 0.5 * 10 ** -(len(text.split(".")[1]) if "." in text else 0)
    return value - half, value + half


def quotient(ratio, numerator, denominator):
    """Assert the printed `ratio` is numerator / denominator, all three as printed."""
    (n_low, n_high), (d_low, d_high), (r_low, r_high) = (
        _bounds(numerator), _bounds(denominator), _bounds(ratio))
    assert n_low / d_high <= r_high and n_high / max(d_low, 1e-12) >= r_low, (
        f"{ratio}x is not {numerator} / {denominator}")


def ratios(out, at_least):
    """The ratios `out` prints (`1.23x`), at least `at_least` of them, all positive."""
    found = [float(x) for x in RATIO.findall(out)]
    assert len(found) >= at_least and all(x > 0 for x in found), out[-6000:]
    return found


def test_store_io(tmp_path):
    out = run(f"{BUILD}/bench/store_io", "--index-mb", "1", "--reads", "2000", "--coco", "20",
              "--threads", "1", "--dir", tmp_path)
    ratios(out, 8)
    rows = re.findall(r"\s(\d+(?:\.\d+)?) ?(MB/s|/s)\s+(\d+(?:\.\d+)?) ?\2\s+(\d+\.\d+)x$", out,
                      re.M)
    assert len(rows) == 8, out
    for baseline, _, mmpt, ratio in rows:  # rates: mmpt over the baseline
        quotient(ratio, mmpt, baseline)


def test_prepare_wds(tmp_path):
    out = run(f"{BUILD}/bench/prepare_wds", "--coco", "20", "--threads", "1", "--dir", tmp_path)
    ratios(out, 1)
    jsonl = re.search(r"^JSONL .*, (\d+) samples/s$", out, re.M).group(1)
    tar = re.search(r"^WebDataset tar .*, (\d+) samples/s$", out, re.M).group(1)
    quotient(re.search(r"throughput\): ([\d.]+)x$", out, re.M).group(1), tar, jsonl)


def test_wds_shards_bench():
    # The current binary as its own baseline: the code path, not the figure.
    out = run(sys.executable, "bench/wds_shards_bench.py", "--mmpt", f"{BUILD}/mmpt", "--baseline",
              f"{BUILD}/mmpt", "--shards", "20", "--per-shard", "2", "--repeats", "1", cwd=ROOT)
    assert "sources ['shard'], 1 shards" in out, out
    ratios(out, 1)


def test_pack_vs_python():
    out = run(f"{BUILD}/bench/pack_vs_python", "500")
    ratios(out, 1)
    rows = {f"{who} {fit}": (packs, seconds, ratio) for who, fit, packs, seconds, ratio in
            re.findall(r"^(python|mmpt) (first|best)-fit decreasing.*?\s(\d+)\s+([\d.]+)"
                       r"\s+(\d+(?:\.\d+)?)x$", out, re.M)}
    assert sorted(rows) == ["mmpt best", "mmpt first", "python first"], out
    # The same algorithm packs alike in both languages; the ratio is the times' quotient.
    assert rows["python first"][0] == rows["mmpt first"][0], out
    quotient(rows["mmpt first"][2], rows["python first"][1], rows["mmpt first"][1])


def test_tokenize_bench():
    out = run(f"{BUILD}/bench/tokenize_bench", "1")
    assert out.count("ids identical in all three") == 2, out
    ratios(out, 4)


def test_image_pipeline():
    out = run(f"{BUILD}/bench/image_pipeline", "--images", "3", "--rounds", "1")
    ratios(out, 1)
    baseline = re.search(r"Pillow \+ NumPy .*?([\d.]+) images/s$", out, re.M).group(1)
    ours, ratio = re.search(r"mmpt PreprocessImage: +([\d.]+) images/s +([\d.]+)x$", out,
                            re.M).groups()
    quotient(ratio, ours, baseline)
    ratios(run(f"{BUILD}/bench/image_pipeline", "--large", "--images", "1", "--rounds", "1"), 1)


def test_plan_bench():
    """Both packers of the million-item benchmark fill their packs: no pack is over 8,192 tokens
    (fill <= 1), and each fills them to at least 99% on these COCO-sized items."""
    out = run(f"{BUILD}/src/mmpt/plan/mmpt_plan_bench", "--benchmark_filter=BestFit",
              "--benchmark_min_time=0.01", "--benchmark_format=json")
    runs = {r["name"]: r for r in json.loads(out[out.index("{"):])["benchmarks"]}
    assert len(runs) == 2, sorted(runs)
    for name, result in runs.items():
        assert 0.99 <= result["fill"] <= 1.0, (name, result["fill"])


def test_plan_and_simulate_at_a_small_seed_like_layout():
    """The seed-scale `mmpt plan` / `mmpt simulate` commands, at DP 8 and fewer micro-steps."""
    mmpt = f"{BUILD}/mmpt"
    out = run(mmpt, "plan", "--builtin", "mix", "--dp", "8", "--ep", "8", "--ga", "16", "--steps",
              "1", "--allow-repeat")
    assert "vanilla" in out and "mmpt" in out, out
    out = run(mmpt, "simulate", "--builtin", "photos", "--dp", "8", "--ep", "4", "--ga", "8",
              "--cp", "2", "--allow-repeat")
    assert "vanilla" in out, out


def test_bench_load(coco_dataset):
    out = run(f"{BUILD}/mmpt", "bench", "load", coco_dataset, "--threads", "1", "--seq-len",
              "2048", "--compare", "2", "--seconds", "1")
    ratios(out, 1)


def test_vision_dp_bench():
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    out = run(sys.executable, os.path.join(ROOT, "bench", "vision_dp_bench.py"), "--packs", "1",
              "--seq-len", "1024", "--max-tokens", "64", "--repeats", "1", env=env)
    assert re.search(r"^count / cost vision time: measured [\d.]+x, predicted [\d.]+x$", out,
                     re.M), out
    ratios(out, 2)


def test_qwen3_vl_plan_bench(tmp_path):
    """Both models prepared and planned: Qwen3-VL writes each video as groups (more vision
    items than Qwen2.5-VL, one per video there) and their timestamps as text."""
    out = run(sys.executable, "bench/qwen3_vl_plan_bench.py", "--mmpt", f"{BUILD}/mmpt",
              "--images", "40", "--videos", "10", "--seq-len", "2048", "--dp", "2", "--ga", "2",
              "--steps", "1", "--work", tmp_path, cwd=ROOT)
    rows = {}
    for line in out.splitlines()[2:]:
        name, *cells = re.split(r"\s{2,}", line.strip())
        rows[name] = cells
    assert rows["samples"] == ["50", "50", "1.000x"], out
    qwen25, qwen3, _ = rows["video items (groups)"]
    assert qwen25 == "10" and int(qwen3) > 10, out
    assert float(rows["of video samples"][2][:-1]) > 1, out  # the timestamps
    assert rows["packs"][:2] == ["4", "4"], out
    ratios(out, 15)


def test_scale_bench(tmp_path):
    """Two tiny corpora and a step of 32 packs: the fast path writes what prepare writes, the
    baseline's open over mmpt's is the printed ratio, and ranks opened at once report."""
    out = run(f"{BUILD}/bench/scale_bench", "--samples", "20000,40000", "--dp", "8", "--ga", "4",
              "--ranks", "2", "--steps", "2", "--baseline-max", "40000", "--dir", tmp_path,
              "--check", "--mmpt", f"{BUILD}/mmpt")
    assert "(fast path) are equal, byte for byte" in out, out
    rows = re.findall(r"^(\d+)\s+([\d.]+)\s+(\d+)\s+\| ([\d.]+) / ([\d.]+) \(([\d.]+)x\)", out,
                      re.M)
    assert [r[0] for r in rows] == ["20000", "40000"], out
    for _, bytes_per_sample, shards, base, mmpt, ratio in rows:
        assert 20 < float(bytes_per_sample) < 40, out  # ~24 B a caption pair, more a document
        assert int(shards) >= 200, out
        quotient(ratio, base, mmpt)
    # The loader opens each corpus without a shard's file (a planning-only corpus has none).
    opens = re.findall(r"loader open \(store::Dataset\): ([\d.]+) s for (\d+) shards", out)
    assert [int(n) for _, n in opens] == [int(r[2]) for r in rows], out
    assert re.search(r"^2 ranks opening 40000 samples at once: .* sum of PSS", out, re.M), out
