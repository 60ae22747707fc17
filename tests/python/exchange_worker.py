"""One rank of the streaming exchange (test_exchange.py): loads its (DP rank, CP rank)'s batches
from its node-local part of the dataset through mmpt.Exchange and writes a digest of every
array of every batch, the exchange's counters and its send lists. With --tp 2 it is one rank of
a TP × DP job (Loader(rank=...)): the first rank of each replica exchanges and loads, the other
receives its batches.

--mode late: rank 1 stops after step 0 (and stays alive until rank 0 has written its record,
at most --timeout + 30 s), so rank 0's next step must fail with an error naming peer 1; rank 0
records that error.
"""

import argparse
import hashlib
import json
import os
import time

import numpy as np
import torch.distributed as dist

import mmpt


def digest(batch):
    """sha256, dtype and shape of every array of the batch (the routing object aside)."""
    out = {}
    for key, value in batch.items():
        if isinstance(value, np.ndarray):
            out[key] = [hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest(),
                        str(value.dtype), list(value.shape)]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--init", required=True)
    p.add_argument("--local", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--ga", type=int, required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--cp", type=int, default=1)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--allow-repeat", action="store_true")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--mode", choices=["exchange", "late"], default="exchange")
    args = p.parse_args()
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                            world_size=args.world)

    dp = args.world // (args.cp * args.tp)
    planner = mmpt.Planner(args.local, dp=dp, cp=args.cp, tp=args.tp, ga=args.ga,
                           seq_len=args.seq_len, seed=5, sync="step",
                           allow_repeat=args.allow_repeat)
    exchange = mmpt.Exchange(args.local, planner, timeout_seconds=args.timeout, prefetch_steps=1)
    steps = 1 if args.mode == "late" and args.rank == 1 else args.steps
    if args.tp > 1:
        loader = mmpt.Loader(args.local, planner, rank=args.rank, steps=steps, exchange=exchange)
    else:
        loader = mmpt.Loader(args.local, planner, dp_rank=args.rank // args.cp,
                             cp_rank=args.rank % args.cp, steps=steps, exchange=exchange)
    record = {"digests": [], "error": None}
    try:
        for batch in loader:
            record["digests"].append(digest(batch))
    except mmpt.Error as error:
        record["error"] = f"{type(error).__name__}: {error}"
    if args.mode == "late" and args.rank == 1:
        # Alive while rank 0 waits for it (its collective times out, not a closed connection),
        # gone once rank 0 has recorded the error: no fixed sleep.
        deadline = time.monotonic() + args.timeout + 30
        while (not os.path.exists(f"{args.out}/exchange_0.json")
               and time.monotonic() < deadline):
            time.sleep(0.05)
    record["peer"] = exchange.peer
    if exchange.peer is not None:
        record["stats"] = exchange.stats()
        record["send"] = [exchange.lists(step)["send"] for step in range(steps)]
    exchange.close()
    with open(f"{args.out}/exchange_{args.rank}.json", "w") as f:
        json.dump(record, f)


if __name__ == "__main__":
    main()
