"""Replay a training step batch by batch on one device, and compose it as the ranks would wait.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/replay_step.py --config ep8
    PYTHONPATH=build/release/python /usr/bin/python3 bench/replay_step.py --config cp2
    PYTHONPATH=build/release/python /usr/bin/python3 bench/replay_step.py --check

The seed's table (../shared/seed/README.md) comes from 64 GPUs that wait for the slowest at
every sync point; one device can measure it anyway. For a layout (DP, GA, CP, seq_len, sync) and
each stage of mmpt's ablation (vanilla; + global packing: mmpt's packs dealt in packing order;
+ reordering; under CP, + vision DP by count, Megatron Bridge's rule, and by cost, ours), this
loads every (DP rank, micro-step, CP rank) batch the stage's planner assigns, runs its forward
and backward one after another (examples/train_vlm.py's model: the native encoder and the
decoder; under CP each CP rank's share, emulated in one process by ``mmpt.torch.EmulatedCpRank``:
its encoder does exactly the plan's images for it, its LM attends to every rank's keys), and
times it: on CPU pinned to one core (``--jobs`` workers, one per core, each its share of the DP
ranks), the median of ``--repeats``; on a GPU with CUDA synchronization at the stage boundaries.
The step is then composed by the step-time model's own composition (``Planner.synced_seconds``,
``sim::SyncedSeconds``: the CP group's slowest, then the DP ranks' waits under the layout's sync
model) plus the optimizer and the gradient all-reduce, measured (the all-reduce between two
processes and scaled by the ring's 2(n-1)/n to the layout's ranks; on a GPU not measured: 0).

The model side: ``Planner.simulate`` on a peak preset (seconds = FLOPs / peak) gives each batch's
FLOP-seconds; the ratio of measured to predicted, summed over every timed batch of every stage,
calibrates ``mfu`` and ``vision_mfu`` (``--save-preset`` writes the hardware preset, with what was
measured in its ``measured`` field). The replay moves no bytes between ranks, so the model's
communication overheads are set to 0 for the comparison. The report: per stage, the measured
step beside the calibrated prediction, tokens/s and their ratio to vanilla, and the per-batch
model error (median |error| and R² over batches); then ``mmpt simulate`` at the full seed layout
on the calibrated preset, which says what it measured and what it assumed.

``--check`` replays DP 2 on bench/train_step_bench.py's corpus, model and plans, after running
that benchmark (two real processes, gloo), and prints both steps.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import numpy
import torch
import torch.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import mmpt  # noqa: E402
import train_step_bench as tsb  # noqa: E402
import train_vlm  # noqa: E402
from mmpt.torch import EmulatedCpRank, to_tensors  # noqa: E402
from qwen_vision_ref import QwenVisionRef  # noqa: E402

# The seed's two configurations scaled by 8 in DP, GA and seq_len together (EP 8, GA 128, 8K
# at DP 64; CP 2, 24K, GA 32), and train_step_bench.py's DP 2 layout.
CONFIGS = {
    "ep8": dict(dp=8, ep=8, cp=1, ga=16, seq_len=1024, sync="microstep"),
    "cp2": dict(dp=8, ep=8, cp=2, ga=4, seq_len=3072, sync="microstep"),
    "dp2": dict(dp=2, ep=1, cp=1, ga=4, seq_len=512, sync="step"),
}
FULL = {"ep8": dict(dp=64, ga=128, seq_len=8192), "cp2": dict(dp=64, ga=32, seq_len=24576),
        "dp2": dict(dp=64, ga=32, seq_len=4096)}
# (row, planner, vision policy); the vision-DP rows only under CP.
# (row, planner, vision policy, encoder): the simulator's ablation, measured. Rows before
# "+ native encoder" run the Hugging Face-style tower (tests/python/qwen_vision_ref.py: attention
# over the whole pack under a block-diagonal mask, as transformers' eager and SDPA paths), the
# rest mmpt's native encoder; the vision-DP rows only under CP.
STAGES = [("vanilla", "vanilla", "naive", "hf"), ("+ global packing", "packed", "naive", "hf"),
          ("+ reordering", "mmpt", "naive", "hf"), ("+ native encoder", "mmpt", "naive", "native"),
          ("+ vision DP by count", "mmpt", "count", "native"),
          ("+ vision DP by cost", "mmpt", "cost", "native")]


# ---- Loading and timing (in each worker) -------------------------------------------------------

def planner_for(args, planner, policy, hardware):
    return mmpt.Planner(args.dataset, seq_len=args.seq_len, dp=args.dp, cp=args.cp, ga=args.ga,
                        ep=args.ep, sync=args.sync, seed=args.seed, planner=planner,
                        vision_policy=policy, vanilla_buffer=args.vanilla_buffer, llm=tsb.LLM,
                        hardware=hardware, allow_repeat=args.allow_repeat)


def load(args, dataset, planner, ranks):
    """{(step, d, m, r): batch} of the measured steps for DP ranks `ranks`, every CP rank, from
    `dataset` (an open mmpt.Dataset: its tokenizer is loaded once, not per loader); the
    loaders advance together (the vanilla planner keeps only its last few steps)."""
    loaders = {(d, r): iter(mmpt.Loader(dataset, planner, dp_rank=d, cp_rank=r,
                                        steps=args.first_step + args.steps, threads=1))
               for d in ranks for r in range(args.cp)}
    batches = {}
    for step in range(args.first_step + args.steps):
        for m in range(args.ga):
            for (d, r), loader in loaders.items():
                batch = next(loader)
                if step >= args.first_step:
                    batches[(step, d, m, r)] = to_tensors(batch)
    return batches


def on_device(batch, device):
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


def time_batch(model, batch, args, clock, synchronize):
    """(vision, LM) seconds of one forward and backward of `batch`."""
    cp, rank = int(batch["cp"]), int(batch["cp_rank"])
    group = EmulatedCpRank(rank, cp) if cp > 1 else None
    model.zero_grad(set_to_none=True)
    synchronize()
    start = time.perf_counter()
    with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.bf16):
        losses, loss_mask = model(batch, group, args.seq_len // cp)
    ((losses * loss_mask).sum() / loss_mask.sum().clamp(min=1)).backward()
    clock.backward_done()
    synchronize()
    total, vision = time.perf_counter() - start, clock.take()
    return vision, total - vision


def replay_worker(args, job, stages):
    """Worker `job`: its DP ranks' batches of every row, timed on its own core. The rows'
    batches are interleaved and each timed args.repeats times, the median kept, so a change in
    the machine's load falls on every row alike."""
    torch.set_num_threads(1)
    cuda = args.device == "cuda"
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    models = models_of(args, {encoder for *_, encoder in stages})
    clocks = {e: train_vlm.StageClock(m.visual, synchronize) for e, m in models.items()}
    ranks = range(job, args.dp, args.jobs)
    dataset = mmpt.Dataset(args.dataset)
    loads = {}  # rows of one planner and policy share their batches
    for _, planner, policy, _ in stages:
        if (planner, policy) not in loads:
            loads[planner, policy] = load(
                args, dataset, planner_for(args, planner, policy, args.plan_hardware), ranks)
    keys = sorted(next(iter(loads.values())))
    order = [(row,) + key for key in keys for row, *_ in stages]  # interleaved
    source = {row: (loads[planner, policy], encoder) for row, planner, policy, encoder in stages}
    pinned = not cuda and hasattr(os, "sched_setaffinity")
    if pinned:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[job]})
    for encoder, model in models.items():  # warm-up: allocations, first calls
        time_batch(model, on_device(source[stages[0][0]][0][keys[0]], args.device), args,
                   clocks[encoder], synchronize)
    runs = {key: [] for key in order}
    for _ in range(args.repeats):
        for key in order:
            batches, encoder = source[key[0]]
            runs[key].append(time_batch(models[encoder], on_device(batches[key[1:]], args.device),
                                        args, clocks[encoder], synchronize))
    # Per batch the repeat of median time: a typical run, as a real step has.
    median = {key: sorted(times, key=sum)[len(times) // 2] for key, times in runs.items()}
    if pinned:
        os.sched_setaffinity(0, set(range(os.cpu_count())))
    return median


def models_of(args, encoders):
    """{encoder: model}: examples/train_vlm.py's model with mmpt's native encoder ("native")
    and the same model with the Hugging Face-style tower at the same sizes ("hf")."""
    models = {}
    for encoder in sorted(encoders):
        torch.manual_seed(args.seed)  # the same weights in every worker
        model = train_vlm.Vlm.of(args)
        if encoder == "hf":
            model.visual = QwenVisionRef("qwen2-vl", layers=args.vit_layers,
                                         hidden=args.vit_hidden, heads=args.vit_heads,
                                         mlp_hidden=args.vit_mlp_hidden, out_hidden=args.hidden)
        models[encoder] = model.to(args.device)
    return models


def optimizer_seconds(model, repeats=5):
    """AdamW's step over the model's parameters (gradients of ones), the best of `repeats`."""
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        optimizer.step()
        if next(model.parameters()).is_cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def _spawned(job, args, stages, results):
    results.put((job, replay_worker(args, job, stages)))


def replay(args, stages):
    """Every timed batch: {(row, step, d, m, r): (vision, LM) seconds}."""
    if args.jobs == 1:
        return replay_worker(args, 0, stages)
    context = torch.multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [context.Process(target=_spawned, args=(j, args, stages, results))
               for j in range(args.jobs)]
    for w in workers:
        w.start()
    merged = {}
    for _ in workers:
        merged.update(results.get()[1])
    for w in workers:
        w.join()
        if w.exitcode != 0:
            raise RuntimeError(f"replay worker exited with {w.exitcode}")
    return merged


# ---- The all-reduce, measured between two processes ---------------------------------------------

def _allreduce_rank(rank, numel, port, results, repeats=5):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    flat, best = torch.ones(numel), float("inf")
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(flat)
        best = min(best, time.perf_counter() - start)
    if rank == 0:
        results.put(best)
    dist.destroy_process_group()


def allreduce_seconds(numel, ranks):
    """gloo's all-reduce of `numel` fp32 gradients between two processes, scaled by the ring's
    traffic 2(n-1)/n to `ranks` (1 at two ranks)."""
    if ranks < 2:
        return 0.0
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = torch.multiprocessing.get_context("spawn")
    results = context.Queue()
    procs = [context.Process(target=_allreduce_rank, args=(r, numel, port, results))
             for r in range(2)]
    for p in procs:
        p.start()
    best = results.get()
    for p in procs:
        p.join()
    return best * (2 * (ranks - 1) / ranks)


# ---- The model's side, calibration and the composed steps ---------------------------------------

def predictions(args, stages, peak):
    """Per row and measured step, what the cost model says at full utilization: each (d, m, r)'s
    encoder seconds (``Planner.simulate`` on the peak preset, communication overheads at 0: the
    replay moves nothing) and the step's real tokens."""
    hardware = mmpt.hardware_preset(args.plan_hardware)
    to_peak = hardware["vision_mfu"] * hardware["bf16_flops"] / peak
    out = {}
    for row, planner, policy, _ in stages:
        plans = planner_for(args, planner, policy, args.plan_hardware)
        sims = {}
        for s in range(args.first_step, args.first_step + args.steps):
            sim = plans.simulate(s, cp_llm_overhead=0.0, vision_dp_exchange_overhead=0.0)
            sim["vision_seconds"] = [[[v * to_peak for v in ms] for ms in ds]
                                     for ds in sim["vision_seconds"]]
            sims[s] = sim
        out[row] = (plans, sims)
    return out


def features(args, timed, predicted, peak, hf_rows):
    """Per timed batch (sorted keys): measured vision and LM seconds, and the cost model's peak
    seconds of its encoder (the plan's), its LM's linear layers (FLOPs per token x the padded
    rows) and its attention (FLOPs per pair x the causal pairs its queries attend, by the
    plan's split: Planner.simulate's attention_pairs); last, 1 for a row of the Hugging
    Face-style encoder."""
    llm = mmpt.llm_preset(tsb.LLM)
    rows = []
    tokens = args.seq_len // args.cp
    for (row, step, d, m, r), (vision, lm) in sorted(timed.items()):
        sim = predicted[row][1][step]
        rows.append((vision, lm, sim["vision_seconds"][d][m][r],
                     tokens * llm["linear_train_flops_per_token"] / peak,
                     sim["attention_pairs"][d][m][r] * llm["attention_train_flops_per_pair"] / peak,
                     float(row in hf_rows)))
    return numpy.array(rows)


def calibrate(x):
    """The cost model fitted to every timed batch of every row (`x`: features()), by the cost
    library (``mmpt.calibrate``, ``cost::Calibrate``): {'vision' (the native encoder's),
    'vision_hf' (the other tower's, None when not timed), 'linear', 'attention'}: measured over
    peak seconds."""
    return mmpt.calibrate([(*map(float, row[:5]), bool(row[5])) for row in x])


def modelled(fit, vision, linear, attention, hf):
    """The calibrated (vision, LM) seconds of a batch of these peak seconds."""
    return (fit["vision_hf" if hf else "vision"] * vision,
            fit["linear"] * linear + fit["attention"] * attention)


def grids(args, seconds_of):
    """vision and llm [d][m][r] of `seconds_of(d, m, r) -> (vision, llm)`."""
    both = [[[seconds_of(d, m, r) for r in range(args.cp)] for m in range(args.ga)]
            for d in range(args.dp)]
    return ([[[v for v, _ in ms] for ms in ds] for ds in both],
            [[[llm for _, llm in ms] for ms in ds] for ds in both])


def row_figures(args, row, timed, predicted, fit, fixed, x):
    """One row: measured and predicted step (means over the measured steps), tokens per step,
    and the per-batch model error (median |error|, R²). `x`: features() of every batch."""
    plans, sims = predicted[row]
    model = {key: modelled(fit, *x[i, 2:]) for i, key in enumerate(sorted(timed))}
    measured, predicted_steps = [], []
    for step in sims:
        measured.append(plans.synced_seconds(*grids(
            args, lambda d, m, r: timed[(row, step, d, m, r)])) + fixed)
        predicted_steps.append(plans.synced_seconds(*grids(
            args, lambda d, m, r: model[(row, step, d, m, r)])) + fixed)
    real = numpy.array([(sum(timed[key]), sum(model[key])) for key in model
                        if key[0] == row])
    residual = ((real[:, 0] - real[:, 1]) ** 2).sum()
    total = ((real[:, 0] - real[:, 0].mean()) ** 2).sum()
    return {"row": row, "measured_step": statistics.mean(measured),
            "predicted_step": statistics.mean(predicted_steps),
            "tokens_per_step": statistics.mean(sim["tokens"] for sim in sims.values()),
            "median_abs_error": float(numpy.median(abs(real[:, 1] - real[:, 0]) / real[:, 0])),
            "r2": float(1 - residual / total) if total > 0 else 1.0, "batches": len(real),
            "steps_measured": measured, "steps_predicted": predicted_steps}


def analyze(args, stages, timed, peak, optimizer, allreduce):
    predicted = predictions(args, stages, peak)
    hf_rows = {row for row, *_, encoder in stages if encoder == "hf"}
    x = features(args, timed, predicted, peak, hf_rows)
    fit = calibrate(x)
    fixed = optimizer + allreduce
    rows = [row_figures(args, row, timed, predicted, fit, fixed, x) for row, *_ in stages]
    for row in rows:
        for kind in ("measured", "predicted"):
            row[f"{kind}_tokens_per_second"] = row["tokens_per_step"] / row[f"{kind}_step"]
            row[f"{kind}_vs_vanilla"] = (row[f"{kind}_tokens_per_second"]
                                         / rows[0][f"{kind}_tokens_per_second"])
    return {"layout": {k: getattr(args, k) for k in ("dp", "ep", "cp", "ga", "seq_len", "sync")},
            "peak_flops": peak, "fit": fit, "optimizer_seconds": optimizer,
            "allreduce_seconds": allreduce, "rows": rows, "batches_timed": len(timed),
            "batches": [dict(zip(("row", "step", "dp_rank", "micro_step", "cp_rank"), key),
                             **dict(zip(("vision", "llm", "peak_vision", "peak_linear",
                                         "peak_attention", "hf_encoder"), map(float, values))))
                        for key, values in zip(sorted(timed), x)]}


# ---- Presets, the full layout, the report ------------------------------------------------------

def device_peak(args):
    """The device's matrix-multiply peak in use, FLOP/s: one core's fp32 on CPU (as
    train_step_bench.py measures it), bf16 8192³ products on a GPU."""
    if args.device == "cpu":
        return tsb.peak_flops()
    n = 8192
    a = torch.randn(n, n, device=args.device, dtype=torch.bfloat16)
    best = float("inf")
    for _ in range(10):
        torch.cuda.synchronize()
        start = time.perf_counter()
        torch.mm(a, a)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n ** 3 / best


def device_name(args):
    if args.device == "cuda":
        return torch.cuda.get_device_name()
    return f"{tsb.cpu_name()}, one core, fp32"


def write_calibrated_preset(args, report, presets_dir):
    """This device's hardware preset, from every timed batch, written to `presets_dir`
    (``cost::WriteHardwarePreset``); returns it."""
    fit = report["fit"]
    layout = report["layout"]
    when = datetime.date.today().isoformat()
    comment = (f"{device_name(args)} (bf16_flops holds the peak in use). Calibrated by "
               f"bench/replay_step.py --config {args.config} on {when}: "
               f"examples/train_vlm.py's {args.vit_layers}-layer hidden-{args.vit_hidden} "
               f"native encoder and {args.layers}-layer hidden-{args.hidden} decoder.")
    measured = (f"bf16_flops (the device's best matrix multiply), mfu, attention_mfu"
                f"{', native_encoder_factor' if fit['vision_hf'] else ''} and vision_mfu "
                f"(cost-model FLOPs over the measured forward + backward seconds of "
                f"{report['batches_timed']} replayed batches, DP {layout['dp']} CP "
                f"{layout['cp']} GA {layout['ga']} seq {layout['seq_len']}), by "
                f"bench/replay_step.py on {when}")
    return mmpt.write_hardware_preset(presets_dir, fit, report["peak_flops"], args.preset_name,
                                      comment, measured)


def simulate_full(args, env, report):
    """`mmpt simulate` at the seed's full layout (DP 64) on the calibrated preset."""
    full = FULL[args.config]
    command = [tsb.mmpt_binary(), "simulate", args.dataset, "--dp", str(full["dp"]),
               "--ep", str(args.ep), "--cp", str(args.cp), "--ga", str(full["ga"]),
               "--seq-len", str(full["seq_len"]), "--sync", args.sync, "--llm", tsb.LLM,
               "--hardware", args.preset_name, "--steps", "1", "--allow-repeat",
               "--allreduce-seconds", f"{report['allreduce_seconds']:.6f}"]
    return tsb.run(command, env, "mmpt simulate at the full layout")


def print_report(report):
    layout = report["layout"]
    print(f"layout DP {layout['dp']} EP {layout['ep']} CP {layout['cp']} GA {layout['ga']} "
          f"seq {layout['seq_len']} sync {layout['sync']}; {report['batches_timed']} batches "
          f"timed; optimizer {report['optimizer_seconds']:.3f} s, all-reduce "
          f"{report['allreduce_seconds']:.3f} s per step")
    fit = report["fit"]
    print(f"calibrated, of the peak {report['peak_flops'] / 1e9:.1f} GFLOP/s: encoder "
          f"{1 / fit['vision']:.3f}, LM linear layers {1 / fit['linear']:.3f}, attention "
          f"{1 / fit['attention']:.3f}"
          + (f"; the Hugging Face-style tower {fit['vision_hf'] / fit['vision']:.2f}x the native "
             f"encoder's time" if fit["vision_hf"] else ""))
    print(f"{'stage':22} {'measured s':>10} {'predicted s':>11} {'error':>7} | "
          f"{'tokens/s':>9} {'vs vanilla':>10} {'predicted':>9} | {'|err| med.':>10} {'R²':>6}")
    for row in report["rows"]:
        error = (row["predicted_step"] - row["measured_step"]) / row["measured_step"]
        print(f"{row['row']:22} {row['measured_step']:10.3f} {row['predicted_step']:11.3f} "
              f"{100 * error:+6.1f}% | {row['measured_tokens_per_second']:9.0f} "
              f"{row['measured_vs_vanilla']:9.3f}x {row['predicted_vs_vanilla']:8.3f}x | "
              f"{100 * row['median_abs_error']:9.1f}% {row['r2']:6.3f}")
    rows = report["rows"]
    print("each stage over the one before it, measured / predicted: " + ", ".join(
        f"{row['row']} {row['measured_tokens_per_second'] / prev['measured_tokens_per_second']:.3f}"
        f" / {row['predicted_tokens_per_second'] / prev['predicted_tokens_per_second']:.3f}"
        for prev, row in zip(rows, rows[1:])))


# ---- Main -------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="ep8",
                   help="layout: a seed configuration scaled by 8, or train_step_bench.py's")
    for name in ("dp", "ep", "cp", "ga", "seq_len"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                       help="override the configuration's")
    p.add_argument("--sync", choices=["step", "microstep"], default=None)
    p.add_argument("--stages", default="",
                   help="comma-separated planners to replay (vanilla,packed,mmpt) or rows; "
                        "default every row the layout has")
    p.add_argument("--baseline-encoder", choices=["hf", "native"], default="native",
                   help="the encoder of the rows before '+ native encoder' (native: every row's, "
                        "and no such row; hf: the Hugging Face-style tower, whose [N, N] "
                        "attention over a pack is 10-20x the native encoder's time on a CPU)")
    p.add_argument("--plan-hardware", default=None,
                   help="the hardware preset the planners balance with (default: this device's "
                        "calibrated preset, --preset-name, when there is one; else the peak)")
    p.add_argument("--steps", type=int, default=1, help="steps measured")
    p.add_argument("--first-step", type=int, default=0, help="the first measured step")
    p.add_argument("--repeats", type=int, default=2, help="timings per batch; the best is kept")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="CPU workers, one core each (1 on a GPU)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--bf16", action="store_true", help="autocast to bf16 (a GPU's)")
    p.add_argument("--work", default="/tmp/mmpt-replay-step",
                   help="folder for the corpus and the data directory")
    p.add_argument("--captions", type=int, default=1500, help="COCO caption samples")
    p.add_argument("--documents", type=int, default=107, help="mmc4 documents")
    p.add_argument("--max-pixels", type=int, default=100352, help="the vision preset's")
    p.add_argument("--vanilla-buffer", type=int, default=32)
    p.add_argument("--allow-repeat", action="store_true", help="a step may repeat samples")
    p.add_argument("--seed", type=int, default=0)
    train_vlm.add_model_arguments(p, vocab=2048)
    p.add_argument("--recompute", choices=["none", "selective", "full"], default="none")
    p.add_argument("--preset-name", default=None, help="the calibrated hardware preset's name "
                   "(default: the CPU's, e.g. amd-epyc-1core, or the GPU's)")
    p.add_argument("--save-preset", action="store_true",
                   help="also write the calibrated preset to presets/hardware/")
    p.add_argument("--check", action="store_true",
                   help="DP 2 against bench/train_step_bench.py's real 2-process step")
    p.add_argument("--json", default="", help="write the figures to this file")
    args = p.parse_args(argv)
    for name, value in CONFIGS[args.config].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.device == "cuda":
        args.jobs = 1
    if args.preset_name is None:
        args.preset_name = tsb.device_preset_name() if args.device == "cpu" else (
            "-".join(torch.cuda.get_device_name().lower().split()))
    return args


def stages_of(args):
    """The rows to replay: those of the layout (vision DP under CP), of --stages, and with
    --baseline-encoder native, every row on the native encoder and no "+ native encoder"."""
    rows = [s for s in STAGES if args.cp > 1 or s[2] == "naive"]
    if args.baseline_encoder == "native":
        rows = [s[:3] + ("native",) for s in rows if s[0] != "+ native encoder"]
    if args.stages:
        wanted = args.stages.split(",")
        rows = [s for s in rows if s[0] in wanted or s[1] in wanted]
    if not rows:
        raise SystemExit(f"replay_step: no row of {args.stages!r} at CP {args.cp}")
    return rows


def measure(args):
    """Prepare, replay, calibrate; returns the report."""
    work = os.path.abspath(args.work)
    home = os.path.join(work, "home")
    tsb.make_home(home, args)
    env = dict(os.environ, MMPT_HOME=home, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(sys.path))
    os.environ["MMPT_HOME"] = home  # this process's and the workers' presets
    peak = device_peak(args)
    mmpt.write_hardware_preset(os.path.join(home, "presets"), tsb.PEAK_FIT, peak, tsb.PEAK,
                               "the peak in use, utilizations 1: seconds = FLOPs / peak")
    args.dataset = tsb.prepare(work, env, args)
    if args.plan_hardware is None:
        calibrated = args.preset_name in mmpt.list_presets("hardware")
        args.plan_hardware = args.preset_name if calibrated else tsb.PEAK
    stages = stages_of(args)
    timed = replay(args, stages)
    model = train_vlm.Vlm.of(args).to(args.device)
    numel = sum(p.numel() for p in model.parameters())
    allreduce = 0.0 if args.device == "cuda" else allreduce_seconds(numel, args.dp * args.cp)
    report = analyze(args, stages, timed, peak, optimizer_seconds(model), allreduce)
    report["preset"] = write_calibrated_preset(args, report, os.path.join(home, "presets"))
    if args.save_preset:
        write_calibrated_preset(args, report, os.path.join(ROOT, "presets"))
    print_report(report)
    report["simulate_full"] = simulate_full(args, env, report)
    print(f"\nmmpt simulate at the full layout ({FULL[args.config]}) on '{args.preset_name}':")
    print(report["simulate_full"])
    return report


def real_step(work, planner, repeats, steps):
    """The median over train_step_bench.py's repeats and measured steps of the real step: its
    slowest rank's (the replay's per-batch median is a typical run too)."""
    records = [[json.load(open(os.path.join(work, f"{planner}{repeat}", f"rank{r}.json")))
                for r in range(2)] for repeat in range(repeats)]
    return statistics.median(max(rec["steps"][k]["seconds"] for rec in ranks)
                             for ranks in records for k in steps)


def check(args):
    """DP 2: train_step_bench.py's real two-process step, then the replay of the same plans."""
    bench = tsb.main(["--work", args.work, "--repeats", str(args.repeats),
                      "--json", os.path.join(args.work, "train_step.json")])
    args.config, args.first_step, args.steps = "dp2", 1, bench["args"]["steps"] - 1
    for name, value in CONFIGS["dp2"].items():
        setattr(args, name, value)
    for name in ("captions", "documents", "max_pixels", "vanilla_buffer", "seed",
                 *train_vlm.MODEL_OPTIONS):
        setattr(args, name, bench["args"][name])
    args.stages, args.plan_hardware = "vanilla,mmpt", tsb.PEAK  # the benchmark's plans
    report = measure(args)
    report["check"] = {}
    for row in report["rows"]:
        planner = "vanilla" if row["row"] == "vanilla" else "mmpt"
        steps = range(args.first_step, args.first_step + args.steps)
        real = real_step(args.work, planner, args.repeats, steps)
        report["check"][planner] = {"real": real, "replayed": row["measured_step"]}
        print(f"DP 2 check, {planner}: real 2-process step {real:.3f} s, replayed "
              f"{row['measured_step']:.3f} s ({100 * (row['measured_step'] - real) / real:+.1f}%)")
    return report


def main(argv=None):
    args = parse_args(argv)
    report = check(args) if args.check else measure(args)
    report["args"] = {k: v for k, v in vars(args).items()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


if __name__ == "__main__":
    main()
