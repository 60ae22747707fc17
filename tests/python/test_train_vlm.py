"""examples/train_vlm.py and bench/train_step_bench.py: the training loop a user copies, the
vanilla planner's plans through the loader, the step-time model on the plans a run executes,
and the calibration of that model into a hardware preset the simulator reads back.

Shown: two ranks train for a few steps on either planner's plans; at CP 2 with vision DP the
first step's loss equals the loss of the same packs at CP 1 (M-RoPE and attention across the
CP shards are right); a calibration written as a hardware preset changes the simulator's
encoder and LM seconds by exactly the measured ratios, in Python and in `mmpt simulate`.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import pytest

import mmpt
from ranks import rank_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import train_step_bench  # noqa: E402
import train_vlm  # noqa: E402

TINY = ["--seq-len", "1024", "--vocab", "512", "--hidden", "32", "--layers", "1", "--heads",
        "2", "--kv-heads", "1", "--ffn", "64", "--vit-layers", "1", "--vit-hidden", "32",
        "--vit-heads", "2", "--vit-mlp-hidden", "64"]


@pytest.fixture(scope="module")
def dataset(coco_dataset):
    return coco_dataset  # the session's prepared corpus (conftest.py)


def train(dataset, out, *args, timeout=600):
    """Run the example (it starts its own ranks); return each rank's record."""
    os.makedirs(out, exist_ok=True)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_vlm.py"),
                           dataset, "--out", str(out), *TINY, *args], env=rank_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-6000:]
    world = int(args[args.index("--world") + 1])
    return [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(world)]


@pytest.mark.dist
@pytest.mark.parametrize("planner", ["vanilla", "mmpt"])
def test_two_ranks_train_on_either_planners_plans(dataset, tmp_path, planner):
    records = train(dataset, tmp_path, "--world", "2", "--steps", "2", "--ga", "2",
                    "--planner", planner, "--timing", "--vanilla-buffer", "8")
    for rec in records:
        assert rec["planner"] == planner
        assert len(rec["losses"]) == 2 and all(math.isfinite(x) and x > 0 for x in rec["losses"])
        assert rec["losses"] == records[0]["losses"]  # all-reduced: the step's loss
        for step in rec["steps"]:
            assert len(step["micro_steps"]) == 2
            assert step["seconds"] > 0 and step["wait"] >= 0
            assert all(m["tokens"] > 0 and m["llm"] > 0 for m in step["micro_steps"])
            assert all(m["vision"] > 0 for m in step["micro_steps"] if m["images"])


@pytest.mark.dist
def test_context_parallel_loss_equals_whole_packs(dataset, tmp_path):
    """The same packs at CP 2 (vision DP, keys gathered over the group) and at CP 1."""
    whole = train(dataset, tmp_path / "cp1", "--world", "1", "--steps", "1", "--ga", "2")
    split = train(dataset, tmp_path / "cp2", "--world", "2", "--cp", "2", "--steps", "1",
                  "--ga", "2")
    assert split[0]["losses"][0] == pytest.approx(whole[0]["losses"][0], rel=1e-4)


def test_the_examples_attention_layout_is_the_batchs_split_under_tp_and_cp(dataset):
    """TP 2 + CP 2 pads each sample to 2·TP·CP = 8 (sequence parallelism): the example takes
    the split from the batch, so the two ranks' query rows are every token of every sample
    exactly once, at its position (re-splitting at 2·CP would put rows at wrong positions)."""
    from mmpt.torch import to_tensors
    planner = mmpt.Planner(mmpt.Dataset(dataset), seq_len=2048, tp=2, cp=2, ga=1)
    positions = {}
    for rank in range(2):
        batch = to_tensors(next(mmpt.Loader(mmpt.Dataset(dataset), planner, cp_rank=rank,
                                            steps=1)))
        cu_padded = batch["cu_seqlens_padded"].tolist()
        assert all(b % 8 == 0 for b in cu_padded) and len(batch["tokens"]) == cu_padded[-1] // 2
        layout = train_vlm.PackLayout(batch["cu_seqlens"], batch["cu_seqlens_padded"],
                                      len(batch["tokens"]), 2, rank)
        lengths = (batch["cu_seqlens"][1:] - batch["cu_seqlens"][:-1]).tolist()
        assert len(layout.samples) == len(lengths)
        for s, (q_rows, k_rows, future) in enumerate(layout.samples):
            assert len(k_rows) == lengths[s]  # every key of the sample, once
            positions.setdefault(s, []).extend((~future).sum(dim=1).sub(1).tolist())
    assert all(sorted(p) == list(range(lengths[s])) for s, p in positions.items())


def test_vanilla_plans_reach_the_loader(dataset):
    planner = mmpt.Planner(mmpt.Dataset(dataset), seq_len=1024, dp=2, ga=2, planner="vanilla",
                           vanilla_buffer=8)
    assert planner._stream.planner == "vanilla"
    loader = mmpt.Loader(mmpt.Dataset(dataset), planner, dp_rank=1, steps=2)
    batches = list(loader)
    assert [(b["step"], b["micro_step"]) for b in batches] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    plan = planner.plan(0)
    loaded = [(int(s), int(i)) for b in batches[:2]
              for s, i in zip(b["sample_source"], b["sample_index"])]
    assert loaded == [tuple(x) for x in plan["rank_samples"][1]]
    with pytest.raises(mmpt.InvalidArgumentError, match="vanilla"):
        planner.state_dict()
    with pytest.raises(mmpt.InvalidArgumentError, match="unknown planner"):
        mmpt.Planner(mmpt.Dataset(dataset), planner="greedy")


def test_simulate_is_the_plans_cost(dataset):
    """Planner.simulate: per (rank, micro-step) the plan's own costs, summed as the sync model
    says (step: the slower rank's sum)."""
    planner = mmpt.Planner(mmpt.Dataset(dataset), seq_len=1024, dp=2, ga=2, sync="step",
                           llm="qwen2.5-7b", hardware="h100")
    sim = planner.simulate(0, cp_llm_overhead=0.0)
    assert len(sim["vision_seconds"]) == 2 and len(sim["vision_seconds"][0]) == 2
    busy = [sum(v[0] for v in sim["vision_seconds"][d]) + sum(v[0] for v in sim["llm_seconds"][d])
            for d in range(2)]
    assert sim["step_seconds"] == pytest.approx(max(busy))
    # Step sync, CP 1: no barrier between packs, and each pack's one rank encodes it all.
    assert sim["atomic_lower_bound_seconds"] == pytest.approx(sim["lower_bound_seconds"])
    assert sim["lower_bound_seconds"] <= sim["step_seconds"]
    assert sim["hardware"] == "h100" and "vision_speed_factor" in sim["parameters"]
    slower = planner.simulate(0, grad_allreduce_seconds=0.5)
    assert slower["step_seconds"] == pytest.approx(sim["step_seconds"] + 0.5)


def bench_args(**changes):
    args = argparse.Namespace(vit_hidden=32, vit_layers=1, vit_heads=2, vit_mlp_hidden=64,
                              hidden=32, layers=1, heads=2, kv_heads=1, ffn=64, vocab=512,
                              max_pixels=200704, seq_len=1024, ga=2, steps=2, seed=0,
                              vanilla_buffer=8)
    vars(args).update(changes)
    return args


def test_calibration_round_trips_through_the_simulator(tmp_path, monkeypatch):
    """A fit of measured seconds (3× the peak's encoder seconds, 5× its LM seconds) becomes a
    hardware preset; the simulator reading it predicts exactly 3× and 5×."""
    args = bench_args()
    home = str(tmp_path / "home")
    train_step_bench.make_home(home, args)
    monkeypatch.setenv("MMPT_HOME", home)
    env = dict(os.environ)
    dataset = train_step_bench.prepare(str(tmp_path), env, argparse.Namespace(
        captions=60, documents=8))
    mmpt.write_hardware_preset(os.path.join(home, "presets"), train_step_bench.PEAK_FIT, 1e10,
                               train_step_bench.PEAK, "test")
    steps = [0, 1]
    predictions = {"mmpt": train_step_bench.predict("mmpt", dataset, args, steps)}
    # Records as the example writes them, measured at 3x and 5x the peak's seconds.
    records = [{"dp_rank": d, "steps": [
        {"micro_steps": [{"vision": 3 * sim["vision_seconds"][d][m][0],
                          "llm": 5 * sim["llm_seconds"][d][m][0]} for m in range(2)]}
        for sim in predictions["mmpt"]]} for d in range(2)]
    calibration = train_step_bench.fit({"mmpt": records}, predictions, steps)
    assert calibration == pytest.approx(
        {"vision": 3.0, "vision_hf": None, "linear": 5.0, "attention": 5.0})
    preset = train_step_bench.write_calibrated_preset(home, "cpu-test", 1e10, calibration, args)
    path = os.path.join(home, "presets", "hardware", "cpu-test.json")
    assert json.load(open(path)) == preset
    assert preset["vision_mfu"] == pytest.approx(1 / 3, rel=1e-3)
    assert mmpt.hardware_preset("cpu-test")["mfu"] == pytest.approx(0.2)
    # The training bench does not measure the Hugging Face-style encoder: no factor is claimed.
    assert mmpt.hardware_preset("cpu-test")["native_encoder_factor"] == 0

    def planner(hardware):
        return mmpt.Planner(mmpt.Dataset(dataset), seq_len=args.seq_len, dp=2, ga=2,
                            sync="step", llm=train_step_bench.LLM, hardware=hardware)

    peak, calibrated = planner(train_step_bench.PEAK).simulate(0), planner("cpu-test").simulate(0)
    for d in range(2):
        for m in range(2):
            assert calibrated["vision_seconds"][d][m][0] == pytest.approx(
                3 * peak["vision_seconds"][d][m][0], rel=1e-3)
            assert calibrated["llm_seconds"][d][m][0] == pytest.approx(
                5 * peak["llm_seconds"][d][m][0], rel=1e-3)

    # `mmpt simulate` reads the same file: its step time moves by between 3x and 5x.
    def cli(hardware):
        out = subprocess.run([train_step_bench.mmpt_binary(), "simulate", dataset, "--dp", "2",
                              "--ga", "2", "--seq-len", str(args.seq_len), "--sync", "step",
                              "--llm", train_step_bench.LLM, "--hardware", hardware,
                              "--steps", "2", "--json"], env=dict(os.environ),
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        return {row["stage"]: row["step_seconds"] for row in json.loads(out)["rows"]}

    before, after = cli(train_step_bench.PEAK), cli("cpu-test")
    assert 3 * 0.999 < after["vanilla"] / before["vanilla"] < 5 * 1.001


@pytest.mark.slow
@pytest.mark.dist
def test_bench_measures_and_calibrates(tmp_path):
    """The bench end to end at tiny sizes: both runs, a calibrated preset, a report."""
    report = train_step_bench.main([
        "--work", str(tmp_path), "--captions", "60", "--documents", "8", "--steps", "2",
        "--ga", "2", "--seq-len", "1024", "--vocab", "512", "--hidden", "32", "--layers", "1",
        "--heads", "2", "--kv-heads", "1", "--ffn", "64", "--vit-layers", "1",
        "--vit-hidden", "32", "--vit-heads", "2", "--vit-mlp-hidden", "64",
        "--vanilla-buffer", "8", "--repeats", "1", "--preset-name", "cpu-test"])
    preset = report["preset"]
    assert 0 < preset["mfu"] <= 1 and 0 < preset["vision_mfu"] <= 1
    assert set(report["planners"]) == {"vanilla", "mmpt"}
    for rows in report["planners"].values():
        for row in rows:
            assert row["measured"]["step"] > 0 and row["predicted"]["step"] > 0
    assert {"vanilla", "+ reordering"} <= set(report["simulate"])
    assert report["mmpt_over_vanilla"]["measured"] > 0
