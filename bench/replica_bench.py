"""One load per replica vs every TP rank loading: CPU seconds and bytes read per step, per node.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/replica_bench.py [--tp 4]

One node, one replica of TP ranks (4 by default: the seed's TP4), one process each, on a COCO
corpus prepared from ../shared/data/real (`mmpt synth` writes JPEGs at the real sizes, `mmpt
prepare` shards them). Two runs of the same steps: the baseline, where every TP rank runs its own
``mmpt.Loader(dp_rank=0)`` over the same samples (what a loader without the layout does), and
mmpt's ``mmpt.Loader(rank=r)``, where TP rank 0 loads and the others view its batches in
shared memory. Each rank iterates its batches and touches every array it gets (the trainer's
first read); per rank, the CPU seconds of the process (every thread: getrusage) over the loop
and the bytes it read from the dataset (``Dataset.reads``). Printed per step for the node: the
sum over its ranks, both runs side by side, and their ratio; and, apart, the CPU seconds of
making the loaders (the shared run allocates and maps its ring then).
"""

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL_COCO = os.path.join(ROOT, "..", "shared", "data", "real", "coco_val2017_captions.json")


def mmpt_binary():
    import mmpt
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(
        mmpt._mmpt.__file__))))
    return os.path.join(build, "mmpt")


def prepare(work, samples):
    dataset = os.path.join(work, f"dataset-{samples}")
    if os.path.exists(os.path.join(dataset, "mmpt.json")):
        return dataset
    raw = os.path.join(work, f"raw-{samples}")
    for args in (["synth", "--profile", "coco", "--source", REAL_COCO, "--format", "llava",
                  "--samples", str(samples), "--out", raw],
                 ["prepare", os.path.join(raw, "coco.jsonl"), "--out", dataset, "--vision",
                  "qwen2-vl", "--samples-per-shard", str(max(1, samples // 8))]):
        subprocess.run([mmpt_binary(), *args], check=True, stdout=subprocess.DEVNULL)
    return dataset


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sys_seconds():
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def worker(args):
    """One rank: iterate the run's batches; write its CPU seconds and bytes read."""
    import torch.distributed as dist
    import mmpt
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                            world_size=args.tp, timeout=datetime.timedelta(seconds=300))
    dataset = mmpt.Dataset(args.dataset)
    planner = mmpt.Planner(dataset, seq_len=args.seq_len, dp=1, tp=args.tp, ga=args.ga,
                           vision="qwen2-vl", allow_repeat=True)
    dist.barrier()
    setup = cpu_seconds()
    if args.mode == "each":
        loader = mmpt.Loader(dataset, planner, dp_rank=0, steps=args.steps,
                             threads=args.threads)
    else:
        loader = mmpt.Loader(dataset, planner, rank=args.rank, steps=args.steps,
                             threads=args.threads)
    cpu, system, wall = cpu_seconds(), sys_seconds(), time.monotonic()
    setup = cpu - setup
    checksum = 0.0
    for batch in loader:
        for value in batch.values():
            if isinstance(value, np.ndarray) and value.size:
                checksum += float(value.reshape(-1)[:: max(1, value.size // 4096)].sum())
        del batch
    record = dict(setup=setup, cpu=cpu_seconds() - cpu, sys=sys_seconds() - system,
                  wall=time.monotonic() - wall,
                  bytes=dataset.reads()["bytes"], samples=dataset.reads()["samples"],
                  checksum=checksum)
    json.dump(record, open(os.path.join(args.out, f"{args.mode}_{args.rank}.json"), "w"))
    dist.barrier()
    dist.destroy_process_group()


def run_mode(mode, dataset, work, args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    init = f"file://{work}/store_{mode}_{time.time_ns()}"
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", "--mode",
                               mode, "--rank", str(r), "--init", init, "--dataset", dataset,
                               "--out", work, "--tp", str(args.tp), "--steps", str(args.steps),
                               "--ga", str(args.ga), "--seq-len", str(args.seq_len),
                               "--threads", str(args.threads)], env=env)
             for r in range(args.tp)]
    for r, proc in enumerate(procs):
        if proc.wait(timeout=1800) != 0:
            raise RuntimeError(f"{mode} run: rank {r} exited {proc.returncode}")
    return [json.load(open(os.path.join(work, f"{mode}_{r}.json"))) for r in range(args.tp)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "mmpt-replica-bench"))
    p.add_argument("--samples", type=int, default=400, help="COCO caption samples")
    p.add_argument("--tp", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--ga", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2, help="loader threads per loading rank")
    p.add_argument("--json", default="", help="write the figures to this file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("mode", "init", "dataset", "out"):
        p.add_argument("--" + name, help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)
    os.makedirs(args.work, exist_ok=True)
    dataset = prepare(args.work, args.samples)
    runs = {mode: run_mode(mode, dataset, args.work, args) for mode in ("each", "shared")}
    checks = {mode: {round(r["checksum"], 3) for r in records} for mode, records in runs.items()}
    if len(checks["each"]) != 1 or checks["each"] != checks["shared"]:
        raise RuntimeError(f"the runs' batches differ: {checks}")
    per_step = lambda records, key: sum(r[key] for r in records) / args.steps  # noqa: E731
    rows = [("CPU seconds per step, node", "cpu"), ("bytes read per step, node", "bytes"),
            ("samples read per step, node", "samples")]
    report = dict(tp=args.tp, steps=args.steps, ga=args.ga, seq_len=args.seq_len,
                  samples=args.samples, rows={})
    print(f"TP {args.tp} on one node, {args.steps} steps × {args.ga} micro-steps of "
          f"{args.seq_len} tokens, {args.samples} COCO samples from ../shared/data/real")
    print(f"{'':32} {'each TP rank loads':>20} {'one load per replica':>22} {'ratio':>8}")
    for label, key in rows:
        each, shared = per_step(runs["each"], key), per_step(runs["shared"], key)
        report["rows"][key] = dict(each=each, shared=shared, ratio=each / shared)
        print(f"{label:32} {each:20.3f} {shared:22.3f} {each / shared:7.2f}×")
    setup = {mode: sum(r["setup"] for r in records) for mode, records in runs.items()}
    report["rows"]["setup"] = dict(each=setup["each"], shared=setup["shared"])
    print(f"{'CPU seconds to start, node':32} {setup['each']:20.3f} {setup['shared']:22.3f}")
    wall = {mode: max(r["wall"] for r in records) / args.steps for mode, records in runs.items()}
    report["rows"]["wall"] = dict(each=wall["each"], shared=wall["shared"],
                                  ratio=wall["each"] / wall["shared"])
    print(f"{'wall seconds per step (slowest)':32} {wall['each']:20.3f} {wall['shared']:22.3f} "
          f"{wall['each'] / wall['shared']:7.2f}×")
    if args.json:
        json.dump(report, open(args.json, "w"), indent=1)
    return report


if __name__ == "__main__":
    main()
