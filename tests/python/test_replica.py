"""One load per replica (mmpt.Loader(rank=...)): 4 processes as TP 2 × PP 2, and DP 2 × TP 2,
on a prepared real-data corpus. Every rank's batches equal a single-process loader's for its
pipeline stage and hold only that stage's fields; only the loading rank reads and decodes, each
planned sample once; killing the loading rank makes the others fail within the timeout, naming
it, over shared memory and over broadcast.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from ranks import rank_env, run_ranks
from replica_worker import SHAPE_KEYS, STAGE_KEYS

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, GA = 3, 2


@pytest.fixture(scope="module")
def dataset(coco_dataset):
    return coco_dataset  # the session's prepared corpus (conftest.py)


def worker(dataset, out, rank, world, dp, tp, pp, nodes, extra=()):
    return [sys.executable, os.path.join(HERE, "replica_worker.py"), "--rank", str(rank),
            "--world", str(world), "--dp", str(dp), "--tp", str(tp), "--pp", str(pp),
            "--ga", str(GA), "--steps", str(STEPS), "--seq-len", "2048", "--dataset", dataset,
            "--init", f"file://{out}/store", "--out", str(out), "--nodes", nodes, *extra]


def run_job(dataset, out, dp, tp, pp, nodes):
    world = dp * tp * pp
    run_ranks(world, lambda r: worker(dataset, out, r, world, dp, tp, pp, nodes), timeout=300)
    return [json.load(open(out / f"rank_{r}.json")) for r in range(world)]


def check_job(records, dp):
    loaders = {rec["role"]["loading_rank"] for rec in records}
    assert len(loaders) == dp  # one loading rank per replica
    for rec in records:
        role = rec["role"]
        assert rec["mismatches"] == [], rec["mismatches"]
        assert rec["batches"] == rec["reference_batches"] == STEPS * GA
        # Exactly the stage's fields, and the shapes every stage gets.
        assert set(rec["keys"]) == STAGE_KEYS[role["role"]] | SHAPE_KEYS, (role, rec["keys"])
        if rec["rank"] == role["loading_rank"]:
            # Each planned sample read and rendered once, each of its media items decoded once.
            assert rec["reads"]["samples"] == rec["reference_samples"] > 0
            assert rec["reads"]["media"] == rec["reference_images"] > 0
            assert rec["stats"]["samples"] == rec["reference_samples"]
        else:
            assert rec["reads"] == {"samples": 0, "media": 0, "bytes": 0}
            assert rec["stats"]["samples"] == 0 and rec["stats"]["batches"] == STEPS * GA


@pytest.mark.dist
@pytest.mark.parametrize("nodes", ["one", "stage"])
def test_tp2_pp2_share_one_load(dataset, tmp_path, nodes):
    records = run_job(dataset, tmp_path, dp=1, tp=2, pp=2, nodes=nodes)
    check_job(records, dp=1)
    roles = [rec["role"]["role"] for rec in records]
    assert roles == ["first", "first", "last", "last"]  # Megatron's order: TP fastest
    if nodes == "stage":
        # The last stage's node received the targets once, by broadcast, to its first rank.
        assert records[2]["stats"]["bytes_received"] > 0
        assert records[3]["stats"]["bytes_received"] == 0


@pytest.mark.dist
def test_two_replicas_each_load_their_own_share(dataset, tmp_path):
    records = run_job(dataset, tmp_path, dp=2, tp=2, pp=1, nodes="one")
    check_job(records, dp=2)
    assert [rec["role"]["loading_rank"] for rec in records] == [0, 0, 2, 2]


@pytest.mark.dist
@pytest.mark.parametrize("nodes", ["one", "stage"])
def test_killing_the_loading_rank_fails_the_others_within_the_timeout(dataset, tmp_path, nodes):
    timeout = 10
    procs = [subprocess.Popen(worker(dataset, tmp_path, r, 4, 1, 2, 2, nodes,
                                     ("--die-after", "1", "--timeout", str(timeout))),
                              env=rank_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for r in range(4)]
    start = time.monotonic()
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=120)[0])
    finally:
        for proc in procs:
            proc.kill()
    assert procs[0].returncode == -9  # the loading rank was killed
    for r in (1, 2, 3):
        assert procs[r].returncode == 0, outputs[r]
        rec = json.load(open(tmp_path / f"rank_{r}.json"))
        # The ring may hold batches the loading rank published ahead of its own iteration.
        assert 1 <= rec["batches"] < STEPS * GA, rec
        assert "rank 0" in rec["error"], rec["error"]
        assert rec["error"].split(":")[0] in ("TimeoutError", "IOError"), rec["error"]
        assert rec["error_seconds"] < timeout + 5, rec
    assert time.monotonic() - start < 120


def test_rank_and_dp_rank_together_are_refused(dataset):
    import mmpt
    planner = mmpt.Planner(dataset, seq_len=2048, tp=2, vision="qwen2-vl")
    with pytest.raises(mmpt.InvalidArgumentError, match="not both"):
        mmpt.Loader(dataset, planner, rank=1, dp_rank=1)
