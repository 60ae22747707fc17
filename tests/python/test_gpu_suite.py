"""bench/gpu_suite.sh --dry: the GPU run's one command on this machine's build, on the CPU at
tiny sizes, so that it cannot rot before a session is lent a GPU."""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_the_gpu_suite_runs_dry_and_writes_every_figure(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path))
    done = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu_suite.sh"), "--dry"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-6000:]
    figures = json.loads((tmp_path / "figures.json").read_text())
    # Both native encoders timed in every recompute mode (transformers is absent here).
    for encoder, arch in (("encoder", "qwen2.5-vl"), ("encoder_qwen3", "qwen3-vl")):
        assert figures[encoder]["arch"] == arch
        coco = figures[encoder]["packs"]["coco2"]
        assert all(coco[f"mmpt_{mode}"]["seconds"] > 0 for mode in ("none", "selective", "full"))
    # The replay at CP 2: every row of the ablation, each batch of each CP rank timed.
    replay = figures["replay_cp2"]
    assert [r["row"] for r in replay["rows"]] == [
        "vanilla", "+ global packing", "+ reordering", "+ vision DP by count",
        "+ vision DP by cost"]
    assert replay["batches_timed"] == 5 * 2 * 2
    for row in replay["rows"]:
        assert row["measured_step"] > 0 and row["predicted_step"] > 0, row
    assert {b["cp_rank"] for b in replay["batches"]} == {0, 1}
    # The calibrated preset says what it measured, and mmpt simulate reads it at DP 64.
    preset = json.loads((tmp_path / (replay["preset"]["name"] + ".json")).read_text())
    assert 0 < preset["mfu"] <= 1 and 0 < preset["vision_mfu"] <= 1
    assert "bench/replay_step.py" in preset["measured"]
    assert "measured: hardware " + preset["name"] in replay["simulate_full"]
    assert "DP 64" in replay["simulate_full"]
