"""The streaming exchange for node-local data: the bytes it moves and the time it adds to a
training step, at 2 and 4 processes, beside shared storage and beside the rendered pixels the
exchange sent before it sent stored bytes, all in one run.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/exchange_bench.py

The corpus: COCO val2017 caption pairs from ../shared/data/real (real image sizes and captions,
JPEG images drawn at those sizes by `mmpt synth`, prepared by `mmpt prepare` with the Qwen2-VL
preset), in 8 shards. For each number of processes P, P gloo ranks train the same small model on
the same plans twice: once reading the whole dataset ("shared": every rank sees every shard),
once each holding only its round-robin share of the shards (mmpt.place_dataset) and loading
through mmpt.Exchange ("exchange": the all-to-all-v of every step, issued ahead in a background
thread, brings each sample's stored bytes, the JPEG as stored, from its holder to its trainer,
which decodes it). The training step: a
linear patch embedding over the batch's pixel_values and a token embedding, a loss, backward,
an all-reduce of the gradients and an SGD update, so a step's time grows with its images as a
vision-language step's does. Per step each rank records its wall time, the part of it spent
waiting for the loader (next()), and the exchange thread's time checking and packing (pack), in
the all-to-all-v and parsing (unpack), and the bytes it sent to other ranks. The first step
(warm up) is left out; the step time is the mean over steps of the slowest rank's.

"pixels": what the exchange sent before (holders rendered each sample and sent its token ids,
loss bytes and float32 pixel rows: 4·(9 + n + ⌈n/4⌉) bytes per sample of n tokens plus
4·(10 + rows·patch_dim) per image). After each step of the exchange run, every rank moves
exactly that payload for the step's samples from their holders with the same gloo
all-to-all-v, timed; the rendering it needed at the holder is the decoding the stored-bytes
exchange leaves to the trainer (the same work, moved), so the pixel exchange's step would add
this all-to-all-v to the stored one's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import load_corpus  # noqa: E402
import mmpt  # noqa: E402

SHARDS = 8


def worker(args):
    """One rank: train `steps` steps, write per-step timings."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                            world_size=args.world)
    # Opened once: the planner, the exchange and the loader share it (and its tokenizer).
    data = mmpt.Dataset(args.dataset if args.mode == "shared" else args.local)
    planner = mmpt.Planner(data, dp=args.world, ga=args.ga, seq_len=args.seq_len, seed=1,
                           sync="step")
    exchange = mmpt.Exchange(data, planner) if args.mode == "exchange" else None
    loader = mmpt.Loader(data, planner, dp_rank=args.rank, steps=args.steps, exchange=exchange)
    patch = torch.nn.Linear(1176, args.hidden)
    embed = torch.nn.Embedding(4096, args.hidden)  # token ids modulo 4096
    params = list(patch.parameters()) + list(embed.parameters())
    optimizer = torch.optim.SGD(params, lr=1e-3)
    steps, payloads, batches = [], [], iter(loader)
    reader = mmpt.DatasetReader(args.dataset)

    def holder(sample):  # the peer holding a (source, index)
        return exchange.placement.sample_holder(reader, *map(int, sample))
    for step in range(args.steps):
        start, wait, step_batches = time.perf_counter(), 0.0, []
        for _ in range(args.ga):
            t = time.perf_counter()
            batch = next(batches)
            wait += time.perf_counter() - t
            step_batches.append(batch)
            pixels = torch.from_numpy(batch["pixel_values"])
            tokens = torch.from_numpy(batch["tokens"]).long() % 4096
            loss = patch(pixels).square().mean() + embed(tokens).square().mean()
            loss.backward()
        for p in params:
            dist.all_reduce(p.grad)
        optimizer.step()
        optimizer.zero_grad()
        steps.append({"seconds": time.perf_counter() - start, "wait": wait})
        if exchange is not None:
            payloads.append(move_pixel_payload(step_batches, holder, args.world, args.rank))
    record = {"steps": steps}
    if exchange is not None:
        stats = exchange.stats()
        record["exchange"] = {
            "bytes_to_others": sum(b for q, b in enumerate(stats["bytes_sent"])
                                   if q != args.rank),
            "bytes_total": sum(stats["bytes_sent"]), "seconds": stats["seconds"],
            "steps": stats["steps"], "pixels": payloads}
        exchange.close()
    with open(os.path.join(args.out, f"{args.mode}_{args.world}_{args.rank}.json"), "w") as f:
        json.dump(record, f)


def move_pixel_payload(batches, holder, world, rank):
    """Move the pixel exchange's payload of this rank's samples of one step from their holders
    (one image per COCO pair), timed; returns the bytes this rank sent to others and the
    seconds."""
    import torch
    import torch.distributed as dist

    receive = [0] * world  # bytes from each holder
    for batch in batches:
        assert len(batch["image_grid_thw"]) == len(batch["sample_index"])
        cu, patch_dim = batch["cu_seqlens"], batch["pixel_values"].shape[1]
        for k, sample in enumerate(zip(batch["sample_source"], batch["sample_index"])):
            n = int(cu[k + 1] - cu[k])
            rows = int(batch["image_grid_thw"][k].prod())
            receive[holder(sample)] += 4 * (9 + n + (n + 3) // 4 + 10 + rows * patch_dim)
    sizes = torch.tensor(receive, dtype=torch.int64)
    send = torch.empty(world, dtype=torch.int64)
    dist.all_to_all_single(send, sizes)
    out = torch.zeros(int(send.sum()), dtype=torch.uint8)
    into = torch.empty(int(sizes.sum()), dtype=torch.uint8)
    dist.barrier()
    start = time.perf_counter()
    dist.all_to_all_single(into, out, output_split_sizes=receive,
                           input_split_sizes=send.tolist())
    seconds = time.perf_counter() - start
    return {"bytes_to_others": int(send.sum() - send[rank]), "seconds": seconds}


def run_world(args, world, mode, dataset, work):
    local = []
    if mode == "exchange":
        placement = mmpt.Placement.round_robin(dataset, world)
        local = [mmpt.place_dataset(dataset, placement, p, os.path.join(work, f"w{world}_n{p}"))
                 for p in range(world)]
    init = f"file://{work}/store_{mode}_{world}"
    procs = []
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
    for rank in range(world):
        command = [sys.executable, os.path.abspath(__file__), "--worker", "--mode", mode,
                   "--rank", str(rank), "--world", str(world), "--init", init,
                   "--dataset", dataset, "--local", local[rank] if local else "",
                   "--out", work, "--steps", str(args.steps), "--ga", str(args.ga),
                   "--seq-len", str(args.seq_len), "--hidden", str(args.hidden)]
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    for rank, proc in enumerate(procs):
        out = proc.communicate(timeout=1800)[0]
        if proc.returncode != 0:
            raise RuntimeError(f"{mode} rank {rank} of {world} failed:\n{out[-4000:]}")
    if mode == "exchange":
        for path in local:
            subprocess.run(["rm", "-rf", path], check=True)
    return [json.load(open(os.path.join(work, f"{mode}_{world}_{r}.json")))
            for r in range(world)]


def summarize(records, skip):
    """Mean over the measured steps of the slowest rank's step and wait, and the exchange's
    per-step means (per rank)."""
    steps = len(records[0]["steps"])
    measured = range(skip, steps)
    row = {
        "step_s": statistics.mean(max(r["steps"][s]["seconds"] for r in records)
                                  for s in measured),
        "wait_s": statistics.mean(max(r["steps"][s]["wait"] for r in records)
                                  for s in measured),
    }
    if "exchange" in records[0]:
        n = records[0]["exchange"]["steps"]
        row["mb_to_others"] = statistics.mean(r["exchange"]["bytes_to_others"]
                                              for r in records) / n / 1e6
        row["mb_total"] = statistics.mean(r["exchange"]["bytes_total"] for r in records) / n / 1e6
        for part in ("pack", "all_to_all", "unpack"):
            row[part + "_s"] = statistics.mean(r["exchange"]["seconds"][part]
                                               for r in records) / n
        row["pixel_mb_to_others"] = statistics.mean(
            p["bytes_to_others"] for r in records for p in r["exchange"]["pixels"]) / 1e6
        row["pixel_a2a_s"] = statistics.mean(max(r["exchange"]["pixels"][s]["seconds"]
                                                 for r in records) for s in measured)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", default="2,4", help="process counts")
    parser.add_argument("--samples", type=int, default=400, help="COCO pairs in the corpus")
    parser.add_argument("--steps", type=int, default=6, help="steps per run (the first is warm-up)")
    parser.add_argument("--ga", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=64, help="the model's embedding width")
    parser.add_argument("--tiny", action="store_true", help="a seconds-long run (tests)")
    parser.add_argument("--work", help="working directory (default: a temporary one)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("--mode", "--init", "--dataset", "--local", "--out"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.tiny:
        args.samples, args.steps, args.seq_len, args.hidden = 48, 2, 1024, 8
    worlds = [int(w) for w in args.worlds.split(",")]
    work = args.work or tempfile.mkdtemp(prefix="mmpt-exchange-bench-")
    os.makedirs(work, exist_ok=True)
    dataset = os.path.join(work, "dataset")
    if not os.path.exists(os.path.join(dataset, "mmpt.json")):
        dataset = load_corpus.build(work, samples=args.samples, shards=SHARDS)

    results = {}
    for world in worlds:
        for mode in ("shared", "exchange"):
            print(f"{world} processes, {mode}...", file=sys.stderr, flush=True)
            results[f"{mode}_{world}"] = summarize(run_world(args, world, mode, dataset, work),
                                                   skip=1 if args.steps > 1 else 0)

    print(f"streaming exchange: {args.samples} COCO pairs in {SHARDS} shards, seq_len "
          f"{args.seq_len}, ga {args.ga}, {args.steps} steps (first left out), "
          f"{os.cpu_count()} CPU cores shared by the processes")
    print(f"{'procs':>5} | {'shared step s':>13} {'wait s':>7} | {'exchange step s':>15} "
          f"{'wait s':>7} | {'added s':>8} {'added %':>8} | {'MB/step out':>11} {'of total':>8} "
          f"{'pack s':>7} {'a2a s':>7} {'unpack s':>8} | {'pixels MB out':>13} {'a2a s':>7} "
          f"{'bytes ×':>7}")
    for world in worlds:
        base, xchg = results[f"shared_{world}"], results[f"exchange_{world}"]
        added = xchg["step_s"] - base["step_s"]
        print(f"{world:>5} | {base['step_s']:>13.3f} {base['wait_s']:>7.3f} | "
              f"{xchg['step_s']:>15.3f} {xchg['wait_s']:>7.3f} | {added:>+8.3f} "
              f"{100 * added / base['step_s']:>+7.1f}% | {xchg['mb_to_others']:>11.3f} "
              f"{xchg['mb_total']:>8.3f} {xchg['pack_s']:>7.3f} {xchg['all_to_all_s']:>7.3f} "
              f"{xchg['unpack_s']:>8.3f} | {xchg['pixel_mb_to_others']:>13.1f} "
              f"{xchg['pixel_a2a_s']:>7.3f} "
              f"{xchg['pixel_mb_to_others'] / xchg['mb_to_others']:>7.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
