"""Train a small vision-language model on mmpt batches: the training loop to copy.

mmpt's Loader hands each rank its share of every step's plan; ``mmpt.torch.VisionEncoder`` (the
native Qwen2-VL / Qwen2.5-VL vision tower) encodes the images; a decoder-only LM takes the token
embeddings with the image pads replaced by the encoder's rows, rotates queries and keys by
M-RoPE from the batch's ``position_ids`` (three sections: temporal, height, width, as Qwen2-VL's
``mrope_section``), attends causally within each packed sample (``cu_seqlens``: a loop over the
samples, never a [T, T] mask over the pack) and is trained on ``labels`` weighted by
``loss_mask``. Ranks are data parallel over ``torch.distributed`` (gloo on CPU, NCCL on GPUs:
gradients all-reduced once per step) and, with ``--cp``, context parallel with vision data
parallelism (``mmpt.torch.vision_dp_embed``; keys and values all-gathered over the CP group).

    python3 examples/train_vlm.py DATASET --world 2 [--cp 2] [--planner vanilla|mmpt]

starts ``--world`` ranks on this machine (torch.multiprocessing). Under a launcher that sets
RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun, srun) it runs as that one rank.
``--planner vanilla`` trains on the baseline's plans (Megatron Bridge + Energon packing) instead
of mmpt's; ``--timing`` records per rank and micro-step where the time went (encoder, LM, the
wait at the gradient all-reduce), which bench/train_step_bench.py compares with mmpt's step-time
model. Sizes default to a model a CPU trains in seconds per step; a real run sets them (or loads
a checkpoint: ``VisionEncoder.from_pretrained``).
"""

import argparse
import datetime
import json
import math
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import mmpt
from mmpt.torch import EmulatedCpRank, VisionEncoder, to_tensors, vision_dp_embed


# ---- The language model ------------------------------------------------------------------------

def mrope_sections(head_dim):
    """Frequencies per position axis (temporal, height, width): Qwen2-VL's [16, 24, 24] of a
    head_dim of 128, scaled to other head sizes."""
    half = head_dim // 2
    temporal = half // 4
    return [temporal, (half - temporal) // 2, half - temporal - (half - temporal) // 2]


def mrope_cos_sin(position_ids, head_dim, theta=1e6):
    """cos and sin [T, head_dim] of M-RoPE: frequency band k turns by the position along its
    axis, position_ids [3, T] (for text tokens the three are equal: 1-D RoPE)."""
    sections = mrope_sections(head_dim)
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    axis = torch.repeat_interleave(torch.arange(3), torch.tensor(sections))      # [head_dim/2]
    positions = position_ids.float()[axis]                                       # [head_dim/2, T]
    freqs = positions.t() * inv_freq                                             # [T, head_dim/2]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate(x, cos, sin):
    """RoPE on x [T, heads, head_dim] (the rotate-half convention of Hugging Face's Qwen)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


class _GatherRows(torch.autograd.Function):
    """All-gather of rows over a process group, rank order, differentiable: a rank's rows get
    the sum of every rank's gradient for them (an all-reduce, which gloo and NCCL both have)."""

    @staticmethod
    def forward(ctx, rows, group):
        ctx.group = group
        parts = [torch.empty_like(rows) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, rows.contiguous(), group=group)
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad, group=ctx.group)
        n = grad.shape[0] // dist.get_world_size(ctx.group)
        rank = dist.get_rank(ctx.group)
        return grad[rank * n:(rank + 1) * n], None


def gather_rows(rows, group):
    """Every CP rank's rows, rank order: over the process group, or from this rank alone when
    the group is emulated in one process (``mmpt.torch.EmulatedCpRank``, bench/replay_step.py)."""
    if isinstance(group, EmulatedCpRank):
        return group.all_gather_rows(rows)
    return _GatherRows.apply(rows, group)


class PackLayout:
    """Where this rank's tokens sit in their packed samples, for attention.

    At CP 1 a rank holds whole samples; under CP it holds two chunks of every sample (the THD
    split of Transformer Engine that mmpt's plan made, read from the batch's
    ``cu_seqlens_padded`` by ``mmpt.partitioned_indices``), and attends to keys gathered from
    every CP rank. Per sample: this rank's query rows and their positions in the sample, and the
    key rows (into the gathered keys, rank-major) in position order. Rows past the samples
    (padding) are neither queries nor keys.
    """

    def __init__(self, cu_seqlens, cu_seqlens_padded, local_tokens, cp, cp_rank):
        cu, cu_padded = cu_seqlens.long().cpu(), cu_seqlens_padded.long().cpu()
        lengths = (cu[1:] - cu[:-1]).tolist()
        # The batch's own split (its padding multiple: 2·CP, 2·TP·CP under sequence parallelism).
        indices = [torch.as_tensor(mmpt.partitioned_indices(cu_padded.tolist(), cp, r)
                                   .astype("int64")) for r in range(cp)]
        # Every rank's rows padded alike to local_tokens (what the all-gather moves).
        owners = []
        for rank_indices in indices:
            padded = torch.full((local_tokens,), -1, dtype=torch.long)
            padded[:len(rank_indices)] = rank_indices
            owners.append(padded)
        gathered = torch.cat(owners)
        local = owners[cp_rank]
        self.samples = []
        for s, length in enumerate(lengths):
            start = int(cu_padded[s])

            def rows_of(where):
                position = where - start
                mask = (where >= 0) & (position >= 0) & (position < length)
                rows = mask.nonzero().squeeze(1)
                order = position[rows].argsort()
                return rows[order], position[rows][order]

            q_rows, q_pos = rows_of(local)
            k_rows, k_pos = rows_of(gathered)
            if len(q_rows):
                self.samples.append(tuple(t.to(cu_seqlens.device) for t in (
                    q_rows, k_rows, k_pos[None, :] > q_pos[:, None])))


def packed_attention(q, k, v, layout):
    """Causal attention of q [T, heads, d] over k, v [rows, kv_heads, d] within each sample of
    `layout`; rows that are no sample's (padding) get zeros."""
    out = q.new_zeros(q.shape)
    repeat = q.shape[1] // k.shape[1]
    for q_rows, k_rows, future in layout.samples:
        qs = q[q_rows].transpose(0, 1)                                  # [heads, n, d]
        ks = k[k_rows].repeat_interleave(repeat, dim=1).transpose(0, 1)  # [heads, L, d]
        vs = v[k_rows].repeat_interleave(repeat, dim=1).transpose(0, 1)
        scores = qs @ ks.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        out = out.index_copy(0, q_rows, (weights @ vs).transpose(0, 1))
    return out


class DecoderLayer(nn.Module):
    """Qwen2-style block: RMSNorm, GQA attention with biased q/k/v, RMSNorm, SwiGLU MLP."""

    def __init__(self, hidden, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.norm1 = RMSNorm(hidden)
        self.q = nn.Linear(hidden, heads * self.head_dim)
        self.kv = nn.Linear(hidden, 2 * kv_heads * self.head_dim)
        self.o = nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.norm2 = RMSNorm(hidden)
        self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x, cos, sin, layout, cp_group):
        h = self.norm1(x)
        q = rotate(self.q(h).view(-1, self.heads, self.head_dim), cos, sin)
        k, v = self.kv(h).view(-1, 2, self.kv_heads, self.head_dim).unbind(1)
        k = rotate(k, cos, sin)
        if cp_group is not None:  # keys and values of the whole pack, from every CP rank
            k, v = gather_rows(torch.stack([k, v], 1), cp_group).unbind(1)
        x = x + self.o(packed_attention(q, k, v, layout).flatten(1))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class RMSNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class DecoderLM(nn.Module):
    """A decoder-only LM that takes input embeddings (the vision rows already in place)."""

    def __init__(self, vocab, hidden, layers, heads, kv_heads, ffn):
        super().__init__()
        self.vocab = vocab
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, kv_heads, ffn)
                                    for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def token_ids(self, ids):
        """Token ids into this model's vocabulary (folded when it is smaller than the
        tokenizer's, to keep a CPU model small); -100 (no label) stays."""
        ids = ids.long()
        return torch.where(ids < 0, ids, ids % self.vocab)

    def token_losses(self, embeds, position_ids, labels, layout, cp_group=None):
        """Next-token cross-entropy of every row of embeds [T, hidden] (0 where labels < 0)."""
        head_dim = self.layers[0].head_dim
        cos, sin = mrope_cos_sin(position_ids, head_dim)
        x = embeds
        for layer in self.layers:
            x = layer(x, cos, sin, layout, cp_group)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits, self.token_ids(labels), ignore_index=-100,
                               reduction="none")


def llm_preset(args, name):
    """The LM as an mmpt LLM preset (presets/llm), so mmpt's cost model counts its FLOPs."""
    return {"name": name, "comment": "examples/train_vlm.py's decoder at these sizes",
            "hidden": args.hidden, "layers": args.layers, "heads": args.heads,
            "kv_heads": args.kv_heads, "head_dim": args.hidden // args.heads,
            "vocab": args.vocab, "ffn": args.ffn}


# ---- Timing (--timing) -------------------------------------------------------------------------

class StageClock:
    """Where a rank's time goes, per micro-step: the encoder's forward and backward (hooks on
    the encoder and on its output's gradient) and the rest (the LM, the vision-DP exchange);
    per step, the wait for the slowest rank and the gradient all-reduce. On a GPU pass
    ``synchronize=torch.cuda.synchronize``: each boundary then waits for the kernels before it."""

    def __init__(self, encoder, synchronize=lambda: None):
        self.vision = 0.0
        self._sync = synchronize
        encoder.register_forward_pre_hook(self._forward_starts)
        encoder.register_forward_hook(self._forward_ends)

    def _forward_starts(self, module, inputs):
        self._sync()
        self._start = time.perf_counter()

    def _forward_ends(self, module, inputs, output):
        self._sync()
        self.vision += time.perf_counter() - self._start
        if output.requires_grad:
            output.register_hook(self._backward_starts)

    def _backward_starts(self, grad):
        self._sync()
        self._backward_start = time.perf_counter()

    def backward_done(self):
        """Call when backward() returns: the encoder's backward ran last."""
        if getattr(self, "_backward_start", None) is not None:
            self._sync()
            self.vision += time.perf_counter() - self._backward_start
            self._backward_start = None

    def take(self):
        seconds, self.vision = self.vision, 0.0
        return seconds


# ---- Training ----------------------------------------------------------------------------------

def dataset_vision_preset(path):
    """The vision preset the dataset was prepared with (its mmpt.json): the encoder's."""
    with open(os.path.join(path, "mmpt.json")) as f:
        return json.load(f)["vision"]["preset"]


class Vlm(nn.Module):
    """The model a step trains: a vision tower (mmpt's native encoder of a vision preset, at the
    sizes given) and the decoder LM. With fewer layers than a windowed preset (Qwen2.5-VL) has,
    the encoder's last layer keeps full attention (mmpt.torch.VisionEncoder's rule), as the last
    of every group of Qwen2.5-VL's does."""

    def __init__(self, vision_preset, vocab, hidden, layers, heads, kv_heads, ffn, vit_layers,
                 vit_hidden, vit_heads, vit_mlp_hidden, recompute="none"):
        super().__init__()
        self.visual = VisionEncoder(vision_preset, layers=vit_layers, hidden=vit_hidden,
                                    heads=vit_heads, mlp_hidden=vit_mlp_hidden, out_hidden=hidden,
                                    recompute=recompute)
        self.lm = DecoderLM(vocab, hidden, layers, heads, kv_heads, ffn)

    @classmethod
    def of(cls, args):
        """The model of this script's options, for the dataset's vision preset."""
        sizes = {name: getattr(args, name) for name in MODEL_OPTIONS}
        return cls(dataset_vision_preset(args.dataset), recompute=args.recompute, **sizes)

    def forward(self, batch, cp_group=None, pad_to=0, stats=None):
        """One micro-step (a batch of tensors, `mmpt.torch.to_tensors`): the token embeddings
        with the image pads replaced by the encoder's rows (`vision_dp_embed`: this rank's
        images encoded, their rows sent where the plan's routing says), then the LM. Returns
        the next-token loss of every row and the loss mask that weights it, both padded with
        zeros to `pad_to` rows (the fixed shapes of Megatron and of mmpt's cost model: padding
        passes the linear layers and attends nowhere). `stats` (an `mmpt.torch.ExchangeStats`)
        counts what the exchange sends."""
        tokens = batch["tokens"]
        layout = PackLayout(batch["cu_seqlens"], batch["cu_seqlens_padded"],
                            max(pad_to, len(tokens)), int(batch["cp"]), int(batch["cp_rank"]))
        embeds = self.lm.embed_tokens(self.lm.token_ids(tokens))
        embeds = vision_dp_embed(self.visual, batch["pixel_values"], batch["image_grid_thw"],
                                 embeds, batch["routing"], cp_group, stats=stats)
        labels, loss_mask, positions = batch["labels"], batch["loss_mask"], batch["position_ids"]
        extra = max(0, pad_to - len(tokens))
        if extra:
            embeds = F.pad(embeds, (0, 0, 0, extra))
            labels = F.pad(labels, (0, extra), value=-100)
            loss_mask = F.pad(loss_mask, (0, extra))
            positions = F.pad(positions, (0, extra))
        return self.lm.token_losses(embeds, positions, labels, layout, cp_group), loss_mask


def train(args, rank, world):
    cp = args.cp
    dp_rank, cp_rank = divmod(rank, cp)  # a CP group is cp consecutive ranks
    cp_group = None
    if cp > 1:  # every rank creates every group, then keeps its own
        cp_group = [dist.new_group(list(range(g, g + cp))) for g in range(0, world, cp)][dp_rank]

    dataset = mmpt.Dataset(args.dataset)
    planner = mmpt.Planner(dataset, seq_len=args.seq_len, dp=world // cp, cp=cp, ga=args.ga,
                           sync="step", seed=args.seed, planner=args.planner,
                           vanilla_buffer=args.vanilla_buffer, llm=args.llm_preset,
                           hardware=args.hardware)
    loader = mmpt.Loader(dataset, planner, dp_rank=dp_rank, cp_rank=cp_rank, steps=args.steps,
                         threads=args.loader_threads)
    if args.preload:  # every step's batches before the first: no loading beside the timed work
        batches = [to_tensors(batch) for batch in loader]
        loader = iter(batches)

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = Vlm.of(args)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr)
    clock = StageClock(model.visual) if args.timing else None
    pad_to = args.seq_len // cp if args.pad else 0
    record = {"rank": rank, "dp_rank": dp_rank, "cp_rank": cp_rank, "planner": args.planner,
              "losses": [], "steps": []}

    for step in range(args.steps):
        micro_steps = [to_tensors(next(loader)) if not args.preload else next(loader)
                       for _ in range(args.ga)]
        hashes = [None] * world  # every rank must have planned the same step
        dist.all_gather_object(hashes, micro_steps[0]["plan_hash"])
        mmpt.check_plan_agreement(hashes, step)
        start = time.perf_counter()
        # The plan reorders samples across micro-steps and ranks: normalize by the step's loss
        # tokens over every rank, not per micro-step.
        loss_tokens = sum(b["loss_mask"].sum() for b in micro_steps)
        dist.all_reduce(loss_tokens)
        total, timing = torch.zeros(()), []
        for batch in micro_steps:
            t0 = time.perf_counter()
            losses, loss_mask = model(batch, cp_group, pad_to)
            loss = (losses * loss_mask).sum()
            (loss / loss_tokens).backward()
            total += loss.detach()
            if clock is not None:
                clock.backward_done()
                seconds = time.perf_counter() - t0
                vision = clock.take()
                timing.append({"vision": vision, "llm": seconds - vision,
                               "tokens": int(batch["num_tokens"]),
                               "images": int(batch["image_grid_thw"].shape[0])})
        t_wait = time.perf_counter()
        if clock is not None:
            dist.barrier()  # the wait for the slowest rank, apart from the all-reduce itself
        t_sync = time.perf_counter()
        # The DP and CP gradient all-reduce: one flat buffer, summed (the loss is already
        # normalized by the step's loss tokens).
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        offset = 0
        for p in params:
            p.grad = flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        t_opt = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end = time.perf_counter()
        dist.all_reduce(total)
        record["losses"].append(total.item() / loss_tokens.item())
        if clock is not None:
            record["steps"].append({"step": step, "seconds": end - start,
                                    "micro_steps": timing, "wait": t_sync - t_wait,
                                    "allreduce": t_opt - t_sync, "optimizer": end - t_opt})
        if rank == 0:
            print(f"step {step}: loss {record['losses'][-1]:.3f}"
                  + (f"  {end - start:.2f} s" if clock is not None else ""), flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            json.dump(record, f)


def worker(rank, args):
    """One rank: set up torch.distributed, train, leave."""
    torch.set_num_threads(args.threads)
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(minutes=10))
    try:
        train(args, rank, world)
        dist.barrier()
    finally:
        dist.destroy_process_group()


MODEL_OPTIONS = ("vocab", "hidden", "layers", "heads", "kv_heads", "ffn",
                 "vit_layers", "vit_hidden", "vit_heads", "vit_mlp_hidden")


def add_model_arguments(p, vocab=8192):
    """The model's sizes (bench/train_step_bench.py takes the same options)."""
    # The LM; its vocabulary folds the tokenizer's ids when smaller.
    p.add_argument("--vocab", type=int, default=vocab)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ffn", type=int, default=384)
    # The encoder: the dataset's vision preset, with these sizes.
    p.add_argument("--vit-layers", type=int, default=2)
    p.add_argument("--vit-hidden", type=int, default=128)
    p.add_argument("--vit-heads", type=int, default=4)
    p.add_argument("--vit-mlp-hidden", type=int, default=512)


def model_argv(args):
    """`args`' model sizes as this script's command-line options."""
    argv = []
    for name in MODEL_OPTIONS:
        argv += ["--" + name.replace("_", "-"), str(getattr(args, name))]
    return argv


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("dataset", help="prepared dataset (mmpt prepare)")
    p.add_argument("--world", type=int, default=2, help="ranks to start (without a launcher)")
    p.add_argument("--cp", type=int, default=1, help="context-parallel size (dp = world / cp)")
    p.add_argument("--planner", choices=["mmpt", "vanilla"], default="mmpt")
    p.add_argument("--vanilla-buffer", type=int, default=None,
                   help="vanilla: samples in each rank's packing buffer (mmpt's default if unset)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--ga", type=int, default=2, help="micro-steps per step")
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--no-pad", dest="pad", action="store_false",
                   help="do not pad packs to --seq-len (the cost model assumes padded packs)")
    add_model_arguments(p)
    p.add_argument("--recompute", choices=["none", "selective", "full"], default="none")
    # Presets mmpt's planner costs the steps with (see Planner.simulate).
    p.add_argument("--llm-preset", default=None, help="LLM preset (presets/llm) of this LM")
    p.add_argument("--hardware", default=None, help="hardware preset (presets/hardware)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--loader-threads", type=int, default=1)
    p.add_argument("--preload", action="store_true", help="load every step before training")
    p.add_argument("--timing", action="store_true", help="record where each rank's time goes")
    p.add_argument("--out", default="", help="folder for each rank's record (rank<r>.json)")
    args = p.parse_args(argv)
    if args.world % args.cp:
        p.error(f"--world {args.world} is not a multiple of --cp {args.cp}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if "RANK" in os.environ:  # started by a launcher: this process is one rank
        worker(int(os.environ["RANK"]), args)
        return
    with socket.socket() as s:  # a free port for the ranks to meet on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      WORLD_SIZE=str(args.world), OMP_NUM_THREADS=str(args.threads))
    torch.multiprocessing.spawn(worker, args=(args,), nprocs=args.world)


if __name__ == "__main__":
    sys.exit(main())
