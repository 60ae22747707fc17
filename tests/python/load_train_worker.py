"""One rank of the real-client training test (test_load_train.py): a small vision-language
model trained with torch.distributed (gloo, CPU) on mmpt batches of a prepared dataset.

Phase ``train``: every rank plans the same steps (mmpt.Planner), loads its own share
(mmpt.Loader), checks with an all-gather that the ranks' plan hashes agree, and trains
examples/train_vlm.py's model with DDP for ``--steps`` steps of ``ga`` micro-steps. At
``--save-at`` it writes the loader's state; for the steps after it, it records a digest of every
batch. Rank r writes OUT/train_<r>.json: losses, the samples it loaded per step, plan hashes,
digests. Phase ``resume``: a fresh process restores the saved state and writes the digests of
the batches it then loads (OUT/resume_<r>.json), which must equal the recorded ones.
"""

import argparse
import datetime
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

import mmpt
from mmpt.torch import to_tensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
from train_vlm import Vlm  # noqa: E402  (the example's model: the one toy VLM of the tests)


def digest(batch):
    parts = [batch[k] for k in ("tokens", "labels", "position_ids", "cu_seqlens",
                                "pixel_values", "image_grid_thw")]
    return [int(mmpt.hash64(np.ascontiguousarray(p))) for p in parts]


def make(args, rank, world):
    dataset = mmpt.Dataset(args.dataset)
    planner = mmpt.Planner(dataset, seq_len=args.seq_len, dp=world, ga=args.ga, seed=args.seed,
                           vision="qwen2-vl")
    loader = mmpt.Loader(dataset, planner, dp_rank=rank, threads=2, steps=args.steps)
    return dataset, planner, loader


def agree(batch, world):
    """All-gather the plan hash and check with mmpt's agreement check (names a differing rank)."""
    h = batch["plan_hash"]
    mine = torch.tensor([h - 2**64 if h >= 2**63 else h], dtype=torch.int64)  # uint64 bits
    hashes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(hashes, mine)
    mmpt.check_plan_agreement([int(h.item()) & (2**64 - 1) for h in hashes], batch["step"])
    return [int(h.item()) & (2**64 - 1) for h in hashes]


def train(args, rank, world):
    torch.manual_seed(0)
    _, _, loader = make(args, rank, world)
    # Token ids fold into a vocabulary of 4096: a small LM head on CPU.
    model = nn.parallel.DistributedDataParallel(Vlm(
        "qwen2-vl", vocab=4096, hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vit_layers=1,
        vit_hidden=32, vit_heads=2, vit_mlp_hidden=64), find_unused_parameters=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    record = {"losses": [], "samples": [], "hashes": [], "digests": [], "dropped": []}
    for step in range(args.steps):
        if step == args.save_at:
            with open(os.path.join(args.out, f"state_{rank}.json"), "w") as f:
                state = loader.state_dict()
                state["planner_state"] = state["planner_state"].hex()
                json.dump(state, f)
        optimizer.zero_grad()
        step_loss, step_samples = 0.0, []
        for micro in range(args.ga):
            batch = next(loader)
            assert (batch["step"], batch["micro_step"]) == (step, micro)
            hashes = agree(batch, world)
            if step >= args.save_at:
                record["digests"].append(digest(batch))
            record["dropped"] += [d["reason"] for d in batch["dropped"]]
            step_samples += [[int(s), int(i)] for s, i in zip(batch["sample_source"],
                                                              batch["sample_index"])]
            losses, loss_mask = model(to_tensors(batch))
            loss = (losses * loss_mask).sum() / loss_mask.sum() / args.ga
            loss.backward()
            step_loss += loss.item()
        optimizer.step()
        record["losses"].append(step_loss)
        record["samples"].append(step_samples)
        record["hashes"].append(hashes)
    with open(os.path.join(args.out, f"train_{rank}.json"), "w") as f:
        json.dump(record, f)


def resume(args, rank, world):
    _, _, loader = make(args, rank, world)
    with open(os.path.join(args.out, f"state_{rank}.json")) as f:
        state = json.load(f)
    state["planner_state"] = bytes.fromhex(state["planner_state"])
    loader.load_state_dict(state)
    digests = []
    for batch in loader:
        agree(batch, world)
        digests.append(digest(batch))
    with open(os.path.join(args.out, f"resume_{rank}.json"), "w") as f:
        json.dump({"digests": digests, "start": [state["step"], state["micro_step"]]}, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase", choices=["train", "resume"], required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--init", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--save-at", type=int, default=20)
    parser.add_argument("--ga", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=120))
    (train if args.phase == "train" else resume)(args, args.rank, args.world)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
