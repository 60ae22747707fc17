"""The streaming exchange for node-local data, as a trainer uses it: four processes (gloo)
load through mmpt.Exchange: at CP 2 on an omni corpus (images, videos, speech), each exchange
peer holding a quarter of the shards, and on photos under TP 2 with one load per replica, each
of the two loading ranks holding half (src/mmpt/dist/exchange_test.cc runs four CP 1 peers in
process). Every array of every batch equals the shared-storage batch (a plain single-process
mmpt.Loader on the full dataset), byte for byte, and the bytes sent are exactly the plan's send
lists of stored bytes in the wire format (exchange.h). A peer that does not come to a step's
exchange is named in the error the others get.
"""

import hashlib
import json
import os
import sys

import numpy as np
import pytest

import load_corpus
import mmpt
from ranks import run_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, GA, SEQ_LEN = 2, 2, 2048


@pytest.fixture(scope="module")
def dataset(coco_dataset):
    return coco_dataset  # the session's prepared corpus (conftest.py)


@pytest.fixture(scope="module")
def omni(tmp_path_factory):
    """Caption pairs, videos, speech and documents with videos, in six shards."""
    work = tmp_path_factory.mktemp("omni_exchange")
    run = load_corpus.runner(work)
    run("synth", "--profile", "omni", "--source", load_corpus.REAL_COCO, "--samples", "24",
        "--min-duration", "1", "--max-duration", "2", "--out", "raw")
    run("prepare", "raw/omni.jsonl", "--out", "ds", "--samples-per-shard", "4",
        "--chat-template", "qwen_omni", "--tokenizer", "raw/omni.tokenizer.json")
    return str(work / "ds")


def node_local(dataset, peers, root):
    placement = mmpt.Placement.round_robin(dataset, peers)
    return placement, [mmpt.place_dataset(dataset, placement, peer, os.path.join(root, f"n{peer}"))
                       for peer in range(peers)]


def run(dataset, tmp_path, world, mode="exchange", timeout=60, cp=1, tp=1, extra=()):
    """Run `world` ranks; exchange peers (one per DP × CP rank) hold a share of the shards."""
    placement, local = node_local(dataset, world // tp, str(tmp_path))
    store = f"file://{tmp_path}/store"
    # Under TP the first rank of each replica (rank r = tp · place, order tp-cp-dp-pp) holds
    # its replica's part; the others hold nothing of it and only receive batches.
    holding = [local[r // tp] for r in range(world)]
    run_ranks(world, lambda r: [sys.executable, os.path.join(HERE, "exchange_worker.py"),
                                "--rank", str(r), "--world", str(world), "--init", store,
                                "--local", holding[r], "--out", str(tmp_path),
                                "--steps", str(STEPS), "--ga", str(GA),
                                "--seq-len", str(SEQ_LEN), "--mode", mode,
                                "--timeout", str(timeout), "--cp", str(cp), "--tp", str(tp),
                                *extra], timeout=180)
    return placement, [json.load(open(tmp_path / f"exchange_{r}.json")) for r in range(world)]


def record_words(reader, i):
    """A sample's record in the wire format (exchange.h) from its stored bytes: the words
    without its media, and each media item's words when sent. Header 7 words; the line (a
    size word, its bytes padded to words); n and n ids; the item count; per item a flag word,
    and when sent a size word and its bytes padded."""
    line = len(reader.line(i))
    items = [len(reader.media(i, k)) for k in range(len(reader.sample_meta(i)["media"]))]
    base = 7 + 1 + (line + 3) // 4 + 1 + len(reader.tokens(i)) + 1 + len(items)
    return base, [1 + (size + 3) // 4 for size in items]


def expect_shared_batches(dataset, records, planner_args, ranks):
    """Every array of every batch of each (DP, CP) rank equals the shared-storage loader's;
    returns the planner and the bytes of the batches' pixel arrays."""
    planner = mmpt.Planner(dataset, **planner_args)
    pixel_bytes = 0
    for rank, (dp, cp) in ranks.items():
        shared = list(mmpt.Loader(dataset, planner, dp_rank=dp, cp_rank=cp, steps=STEPS))
        got = records[rank]["digests"]
        assert len(got) == len(shared) == STEPS * GA
        for i, batch in enumerate(shared):
            arrays = {k: v for k, v in batch.items() if isinstance(v, np.ndarray)}
            pixel_bytes += batch["pixel_values"].nbytes
            assert set(got[i]) == set(arrays)
            for key, value in arrays.items():
                want = [hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest(),
                        str(value.dtype), list(value.shape)]
                assert got[i][key] == want, f"rank {rank} batch {i}: {key} differs"
    return planner, pixel_bytes


def check_lists_and_bytes(dataset, placement, planner, records, cp):
    """Each peer's send lists are the plan's samples of each trainer that it holds, in plan
    order, to every CP rank of the DP rank; the bytes sent are those samples' stored bytes,
    every media item once per DP rank (to the CP rank that encodes it)."""
    reader = mmpt.DatasetReader(dataset)

    def holder(sample):
        return placement.sample_holder(reader, *sample)

    global_index = mmpt.Dataset(dataset)._source.global_index
    peers, dp = len(records), len(records) // cp
    sent = np.zeros((peers, dp), dtype=np.int64)  # [holder][DP rank], from the plan
    for step in range(STEPS):
        plan = planner.plan(step)
        for d in range(dp):
            for sample in plan["rank_samples"][d]:
                base, media = record_words(reader, global_index(*sample))
                sent[holder(sample), d] += 4 * (cp * base + sum(media))
            for p in range(peers):
                want = [list(s) for s in plan["rank_samples"][d] if holder(s) == p]
                for c in range(cp):
                    assert records[p]["send"][step][d * cp + c] == want
    for p in range(peers):
        stats = records[p]["stats"]
        assert stats["steps"] == STEPS
        got = np.array(stats["bytes_sent"]).reshape(dp, cp).sum(axis=1)
        assert got.tolist() == sent[p].tolist(), f"peer {p}"
        for q in range(peers):
            assert records[q]["stats"]["bytes_received"][p] == stats["bytes_sent"][q]
    assert sent.sum() > 0


@pytest.mark.dist
def test_cp2_with_speech_and_video_each_cp_rank_gets_what_it_encodes(omni, tmp_path):
    world, cp = 4, 2
    placement, records = run(omni, tmp_path, world, cp=cp, extra=["--allow-repeat"])
    for rec in records:
        assert rec["error"] is None, rec["error"]
    args = dict(dp=world // cp, cp=cp, ga=GA, seq_len=SEQ_LEN, seed=5, sync="step",
                allow_repeat=True)
    ranks = {r: (r // cp, r % cp) for r in range(world)}
    planner, _ = expect_shared_batches(omni, records, args, ranks)
    check_lists_and_bytes(omni, placement, planner, records, cp=cp)
    # The corpus's kinds all travelled: some rank encoded videos and speech.
    shared = [list(mmpt.Loader(omni, planner, dp_rank=d, cp_rank=c, steps=STEPS))
              for d, c in ranks.values()]
    assert any(len(b["encoded_videos"]) for batches in shared for b in batches)
    assert any(len(b["encoded_audios"]) for batches in shared for b in batches)


@pytest.mark.dist
def test_one_load_per_tp_replica_is_fed_by_the_exchange(dataset, tmp_path):
    world, tp = 4, 2
    placement, records = run(dataset, tmp_path, world, tp=tp)
    for rec in records:
        assert rec["error"] is None, rec["error"]
    # Ranks 0 and 2 load (exchange peers 0 and 1); 1 and 3 receive their replica's batches.
    assert [rec["peer"] for rec in records] == [0, None, 1, None]
    args = dict(dp=2, tp=tp, ga=GA, seq_len=SEQ_LEN, seed=5, sync="step")
    planner, pixel_bytes = expect_shared_batches(dataset, records, args,
                                                 {0: (0, 0), 1: (0, 0), 2: (1, 0), 3: (1, 0)})
    loaders = [records[0], records[2]]
    check_lists_and_bytes(dataset, placement, planner, loaders, cp=1)
    # Compressed media, not pixels: tens of times fewer bytes than the pixel arrays of the
    # batches (counted once per replica: ranks 1 and 3 receive theirs from 0 and 2).
    sent = sum(sum(r["stats"]["bytes_sent"]) for r in loaders)
    assert 0 < 10 * sent < pixel_bytes / 2


@pytest.mark.dist
def test_a_peer_that_does_not_come_is_named_in_the_error(dataset, tmp_path):
    # Rank 1 stays alive until rank 0 has recorded the error (exchange_worker.py), so the test
    # takes the ranks' start, step 0 and one 2 s timeout, no fixed sleep.
    _, records = run(dataset, tmp_path, 2, mode="late", timeout=2)
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
