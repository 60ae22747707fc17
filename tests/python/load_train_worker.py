"""One rank of the real-client training test (test_load_train.py): a small vision-language
model trained with torch.distributed (gloo, CPU) on mmpt batches of a prepared dataset.

Phase ``train``: every rank plans the same steps (mmpt.Planner), loads its own share
(mmpt.Loader), checks with an all-gather that the ranks' plan hashes agree, and trains a
patch-embedding + transformer model with DDP for ``--steps`` steps of ``ga`` micro-steps. At
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
import torch.nn.functional as F

import mmpt
from mmpt.torch import to_tensors

IMAGE_PAD = 151655
VOCAB = 4096  # token ids are folded into a small vocabulary: a toy LM head on CPU


class TinyVlm(nn.Module):
    """Patch embedding (Qwen 2×2 merge of patch rows) + token embedding + causal transformer."""

    def __init__(self, patch_dim=1176, dim=64, layers=2, heads=4):
        super().__init__()
        self.patch = nn.Linear(patch_dim * 4, dim)
        self.embed = nn.Embedding(VOCAB, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, batch):
        tokens = batch["tokens"].long()
        x = self.embed(torch.remainder(tokens, VOCAB))
        pixels = batch["pixel_values"]
        if pixels.shape[0] > 0:
            # Qwen's layout puts each 2×2 merge window's 4 patches in consecutive rows.
            merged = self.patch(pixels.reshape(-1, pixels.shape[1] * 4))
            slots = (tokens == IMAGE_PAD).nonzero().squeeze(1)
            x = x.index_copy(0, slots, merged)
        # Block-diagonal causal mask over the packed sub-sequences (THD without a varlen kernel).
        cu = batch["cu_seqlens_padded"].long()
        n = tokens.shape[0]
        seq = torch.bucketize(torch.arange(n), cu[1:], right=True)
        allowed = (seq[:, None] == seq[None, :]) & torch.ones(n, n, dtype=torch.bool).tril()
        mask = torch.zeros(n, n).masked_fill(~allowed, float("-inf"))
        h = self.blocks(x.unsqueeze(0), mask=mask).squeeze(0)
        return self.head(h)


def digest(batch):
    parts = [batch[k] for k in ("tokens", "labels", "position_ids", "cu_seqlens",
                                "pixel_values", "image_grid_thw")]
    return [int(mmpt.hash64(np.ascontiguousarray(p))) for p in parts]


def make(args, rank, world):
    dataset = mmpt.Dataset(args.dataset)
    planner = mmpt.Planner(dataset, seq_len=args.seq_len, dp=world, ga=args.ga, seed=args.seed,
                           vision="qwen2-vl")
    loader = mmpt.Loader(dataset, planner, dp_rank=rank, num_threads=2, steps=args.steps)
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
    model = nn.parallel.DistributedDataParallel(TinyVlm())
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
            t = to_tensors(batch)
            logits = model(t)
            labels = t["labels"].long()
            target = torch.where(labels == -100, labels, torch.remainder(labels, VOCAB))
            loss = F.cross_entropy(logits, target, ignore_index=-100) / args.ga
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
