"""The real client: a small PyTorch vision-language model trained by several processes under
torch.distributed (gloo, CPU) on mmpt batches of a prepared real-data corpus.

Shown: the loss goes down; every rank gets a different share of every step; the ranks' plan
hashes agree (checked by every rank at every micro-step); a fresh process restored from a
saved loader state continues with identical batches. Ranks run as subprocesses with a
deadline, so a hang fails instead of stalling.
"""

import json
import os
import sys

import pytest

from ranks import run_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 2
STEPS, SAVE_AT, GA = 16, 10, 2
SEQ_LEN = 512  # one COCO pair (an image of up to ~400 tokens) per pack


@pytest.fixture(scope="module")
def dataset(coco_dataset):
    return coco_dataset  # the session's prepared corpus (conftest.py)


def run_phase(phase, dataset, out, timeout=900):
    store = f"file://{out}/store_{phase}"
    run_ranks(WORLD, lambda r: [sys.executable, os.path.join(HERE, "load_train_worker.py"),
                                "--phase", phase, "--rank", str(r), "--world", str(WORLD),
                                "--init", store, "--dataset", dataset, "--out", str(out),
                                "--steps", str(STEPS), "--save-at", str(SAVE_AT),
                                "--ga", str(GA), "--seq-len", str(SEQ_LEN)], timeout)


@pytest.mark.dist
@pytest.mark.slow
def test_training_on_mmpt_batches(dataset, tmp_path):
    run_phase("train", dataset, tmp_path)
    records = [json.load(open(tmp_path / f"train_{r}.json")) for r in range(WORLD)]

    # The loss goes down (DDP keeps the ranks' models equal; each rank's loss is on its data).
    for rec in records:
        losses = rec["losses"]
        assert len(losses) == STEPS
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        assert last < 0.8 * first, losses

    # Every rank got a different share of every step, and no sample twice within a step.
    for step in range(STEPS):
        shares = [set(map(tuple, rec["samples"][step])) for rec in records]
        assert all(shares), f"step {step}: a rank got no samples"
        assert not (shares[0] & shares[1]), f"step {step}: ranks share samples"
        assert sum(len(s) for s in shares) == sum(len(r["samples"][step]) for r in records)

    # The plan hashes every rank gathered agree, step by step, and change between steps.
    hashes = [records[0]["hashes"][s][0] for s in range(STEPS)]
    for rec in records:
        for step in range(STEPS):
            assert rec["hashes"][step] == [hashes[step]] * WORLD
    assert len(set(hashes)) == STEPS
    assert not any(rec["dropped"] for rec in records)

    # A restart from the saved state gives the same batches.
    run_phase("resume", dataset, tmp_path)
    for r in range(WORLD):
        resumed = json.load(open(tmp_path / f"resume_{r}.json"))
        assert resumed["start"] == [SAVE_AT, 0]
        assert len(resumed["digests"]) == (STEPS - SAVE_AT) * GA
        assert resumed["digests"] == records[r]["digests"]
