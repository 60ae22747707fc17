"""The streaming exchange for node-local data, as a trainer uses it: four processes (gloo),
each holding a quarter of the shards, load through mmpt.Exchange. Every array of every batch
equals the shared-storage batch (a plain single-process mmpt.Loader on the full dataset),
byte for byte, and the bytes sent are exactly the plan's send lists in the wire format. A peer
that does not come to a step's exchange is named in the error the others get.
"""

import hashlib
import json
import os
import sys

import numpy as np
import pytest

import mmpt
from ranks import run_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, GA, SEQ_LEN = 2, 2, 2048
IMAGE_PAD = 151655


@pytest.fixture(scope="module")
def dataset(coco_dataset):
    return coco_dataset  # the session's prepared corpus (conftest.py)


def node_local(dataset, world, root):
    placement = mmpt.Placement.round_robin(dataset, world)
    return placement, [mmpt.place_dataset(dataset, placement, peer, os.path.join(root, f"n{peer}"))
                       for peer in range(world)]


def run(dataset, tmp_path, world, mode="exchange", timeout=60):
    placement, local = node_local(dataset, world, str(tmp_path))
    store = f"file://{tmp_path}/store"
    run_ranks(world, lambda r: [sys.executable, os.path.join(HERE, "exchange_worker.py"),
                                "--rank", str(r), "--world", str(world), "--init", store,
                                "--local", local[r], "--out", str(tmp_path),
                                "--steps", str(STEPS), "--ga", str(GA),
                                "--seq-len", str(SEQ_LEN), "--mode", mode,
                                "--timeout", str(timeout)], timeout=120)
    return placement, [json.load(open(tmp_path / f"exchange_{r}.json")) for r in range(world)]


def holder_of(dataset, placement):
    """(source, index) -> holder peer, counting a source's samples through its shards in
    manifest order (the planner's numbering)."""
    manifest = json.load(open(os.path.join(dataset, "mmpt.json")))
    sources, counts, holder = [], {}, {}
    for shard, info in enumerate(manifest["shards"]):
        if info["source"] not in sources:
            sources.append(info["source"])
        s = sources.index(info["source"])
        for _ in range(info["samples"]):
            holder[(s, counts.get(s, 0))] = placement.holder(shard)
            counts[s] = counts.get(s, 0) + 1
    return holder


def record_bytes(batch, k, image):
    """Bytes of sample k's record in the wire format (exchange.h) and the next image index:
    header (7 words), token count, ids, loss bytes padded to words, image count; per image 10
    words and its pixel rows."""
    n = int(batch["cu_seqlens"][k + 1] - batch["cu_seqlens"][k])
    begin = int(batch["cu_seqlens_padded"][k])
    words = 7 + 1 + n + (n + 3) // 4 + 1
    tokens, at = batch["tokens"], begin
    while image < len(batch["image_rows"]):
        pads = np.flatnonzero(tokens[at:begin + n] == IMAGE_PAD)
        if len(pads) == 0:
            break
        words += 10 + int(np.prod(batch["image_grid_thw"][image])) * batch["pixel_values"].shape[1]
        at += int(pads[0]) + int(batch["image_rows"][image])
        image += 1
    return 4 * words, image


@pytest.mark.dist
def test_four_peers_with_a_quarter_of_the_shards_load_the_shared_storage_batches(
        dataset, tmp_path):
    world = 4
    placement, records = run(dataset, tmp_path, world)
    for rec in records:
        assert rec["error"] is None, rec["error"]
    holder = holder_of(dataset, placement)
    planner = mmpt.Planner(dataset, dp=world, ga=GA, seq_len=SEQ_LEN, seed=5, sync="step")

    sent = np.zeros((world, world), dtype=np.int64)  # [holder][trainer], from the plan
    for rank in range(world):
        shared = list(mmpt.Loader(dataset, planner, dp_rank=rank, steps=STEPS))
        got = records[rank]["digests"]
        assert len(got) == len(shared) == STEPS * GA
        for i, batch in enumerate(shared):
            arrays = {k: v for k, v in batch.items() if isinstance(v, np.ndarray)}
            assert set(got[i]) == set(arrays)
            for key, value in arrays.items():
                want = [hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest(),
                        str(value.dtype), list(value.shape)]
                assert got[i][key] == want, f"rank {rank} batch {i}: {key} differs"
            image = 0
            for k, sample in enumerate(zip(batch["sample_source"], batch["sample_index"])):
                size, image = record_bytes(batch, k, image)
                sent[holder[tuple(map(int, sample))], rank] += size
            assert image == len(batch["image_rows"])

    for p in range(world):
        stats = records[p]["stats"]
        assert stats["steps"] == STEPS
        assert stats["bytes_sent"] == sent[p].tolist(), f"peer {p}"
        for q in range(world):
            assert records[q]["stats"]["bytes_received"][p] == stats["bytes_sent"][q]
        # Its send lists are the plan's samples of each trainer that it holds, in plan order.
        for step in range(STEPS):
            plan = planner.plan(step)
            for q in range(world):
                want = [list(s) for s in plan["rank_samples"][q] if holder[tuple(s)] == p]
                assert records[p]["send"][step][q] == want
    assert sent.sum() - np.trace(sent) > 0  # samples crossed nodes


@pytest.mark.dist
def test_a_peer_that_does_not_come_is_named_in_the_error(dataset, tmp_path):
    _, records = run(dataset, tmp_path, 2, mode="late", timeout=3)
    error = records[0]["error"]
    assert error is not None
    assert error.startswith("TimeoutError: ")  # the class crosses the exchange thread
    assert "exchange step 1 (peer 0)" in error
    assert "peer rank(s) [1] did not reach it" in error
    assert len(records[0]["digests"]) == GA  # step 0 arrived, step 1 did not
    assert records[1]["error"] is None and len(records[1]["digests"]) == GA


def test_placement_file_round_trips_and_a_peer_reads_only_its_shards(dataset, tmp_path):
    placement = mmpt.Placement.round_robin(dataset, 3)
    path = str(tmp_path / "placement.json")
    placement.write(path, dataset)
    read = mmpt.Placement.read(path, dataset)
    assert [read.holder(s) for s in range(read.num_shards)] == [s % 3 for s in range(8)]
    assert read.shards_of(2) == [2, 5]
    local = mmpt.place_dataset(dataset, placement, 1, str(tmp_path / "n1"))
    files = sorted(os.listdir(os.path.join(local, "coco")))
    assert [f for f in files if not f.endswith(".meta")] and all(
        f.startswith(("00001.", "00004.", "00007.")) for f in files if not f.endswith(".meta"))
    assert len([f for f in files if f.endswith(".meta")]) == 8
    with open(path, "w") as f:
        json.dump({"peers": 2, "shards": {"coco/00000": 0}}, f)
    with pytest.raises(mmpt.InvalidArgumentError, match="coco/00001"):
        mmpt.Placement.read(path, dataset)
