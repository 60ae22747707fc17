"""One rank of the one-load-per-replica test (test_replica.py): DP × TP × PP ranks of one job
iterate ``mmpt.Loader(rank=...)``; each compares every batch with what a single-process loader
of its (DP rank, CP rank) gives, restricted to its pipeline stage, and writes what it saw and
what it read to OUT/rank_<r>.json.

``--nodes stage`` labels each pipeline stage a node of its own, so batches reach the other
stage by torch.distributed broadcast (then that node's ring); ``--nodes one`` puts every rank
on one node (shared memory only). ``--die-after K``: the loading rank kills itself after
handing out K batches; the others record the error they get and how long it took.
"""

import argparse
import datetime
import json
import os
import signal
import time

import numpy as np
import torch.distributed as dist

import mmpt

STAGE_KEYS = {
    "first": {"tokens", "position_ids", "pixel_values", "image_grid_thw", "encoded_images",
              "pixel_values_videos", "video_grid_thw", "second_per_grid_ts", "encoded_videos",
              "image_rows", "image_encoder", "routes", "routing", "input_features",
              "feature_attention_mask", "encoded_audios", "audio_rows", "audio_encoder",
              "audio_routes", "audio_routing"} | {
                  f"{kind}exchange_{array}" for kind in ("", "audio_")
                  for array in ("send_index", "splits", "gather_index", "positions")},
    "last": {"labels", "loss_mask"},
    "middle": set(),
}
STAGE_KEYS["only"] = STAGE_KEYS["first"] | STAGE_KEYS["last"]
ARRAY_KEYS = STAGE_KEYS["only"] - {"routing", "audio_routing"}
SHAPE_KEYS = {"cu_seqlens", "cu_seqlens_padded", "max_seqlen", "num_tokens", "sample_source",
              "sample_index", "step", "micro_step", "dp_rank", "cp_rank", "cp",
              "plan_hash", "plan_dropped", "dropped"}


def planner_of(dataset, args):
    return mmpt.Planner(dataset, seq_len=args.seq_len, dp=args.dp, tp=args.tp, pp=args.pp,
                        ga=args.ga, seed=3, vision="qwen2-vl")


def main():
    p = argparse.ArgumentParser()
    for name in ("rank", "world", "dp", "tp", "pp", "ga", "steps", "seq_len", "die_after"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=0)
    p.add_argument("--dataset", required=True)
    p.add_argument("--init", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--nodes", choices=("one", "stage"), default="one")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=60))
    dataset = mmpt.Dataset(args.dataset)
    planner = planner_of(dataset, args)
    place = mmpt.RankGrid(args.dp, 1, args.tp, args.pp).place(args.rank)
    node = f"stage{place['pp']}" if args.nodes == "stage" else "node"
    loader = mmpt.Loader(dataset, planner, rank=args.rank, steps=args.steps, node=node,
                         timeout_seconds=args.timeout)
    record = dict(rank=args.rank, role=loader.role, batches=0, keys=None)
    batches = []
    start = time.monotonic()
    try:
        for batch in loader:
            batches.append(batch)
            record["batches"] += 1
            if args.die_after and args.rank == loader.role["loading_rank"] \
                    and record["batches"] == args.die_after:
                os.kill(os.getpid(), signal.SIGKILL)
            start = time.monotonic()
    except mmpt.Error as error:
        record["error"] = f"{type(error).__name__}: {error}"
        record["error_seconds"] = time.monotonic() - start
        json.dump(record, open(os.path.join(args.out, f"rank_{args.rank}.json"), "w"))
        os._exit(0)  # without the collectives of a normal shutdown: a peer is gone
    record["reads"] = dataset.reads()
    record["stats"] = loader.stats()
    record["keys"] = sorted(batches[0].keys()) if batches else []

    # The single-process loader of this rank's (DP rank, CP rank), on a separate Dataset so its
    # reads are not counted above.
    ref_dataset = mmpt.Dataset(args.dataset)
    ref = list(mmpt.Loader(ref_dataset, planner_of(ref_dataset, args), dp_rank=place["dp"],
                           cp_rank=place["cp"], steps=args.steps))
    record["reference_batches"] = len(ref)
    record["reference_samples"] = sum(len(b["sample_index"]) for b in ref)
    record["reference_images"] = sum(len(b["image_rows"]) for b in ref)
    mismatches = []
    for i, (got, want) in enumerate(zip(batches, ref)):
        for key in (ARRAY_KEYS & set(got)) | (SHAPE_KEYS - {"dropped"}):
            a, b = np.asarray(got[key]), np.asarray(want[key])
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
                mismatches.append(f"batch {i} {key}")
        if got["dropped"] != want["dropped"]:
            mismatches.append(f"batch {i} dropped")
    record["mismatches"] = mismatches
    with open(os.path.join(args.out, f"rank_{args.rank}.json"), "w") as f:
        json.dump(record, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
