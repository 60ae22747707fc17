"""The native vision encoder (mmpt.torch.VisionEncoder) against the Hugging Face-style PyTorch
tower (tests/python/qwen_vision_ref.py: attention over the whole pack with a block-diagonal
[N, N] mask, as Hugging Face's eager and SDPA paths do), Qwen2.5-VL and Qwen3-VL, in one run, as
ratios.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/encoder_bench.py

1. Forward + backward time and peak memory, one thread and all threads (CPU), per model on packs
   of COCO val2017 images at their real sizes as the model resizes them (mmpt.smart_resize), and
   on large images (the same rule with max_pixels capped by --large-max-pixels; Qwen2.5-VL's own
   cap is 12845056 pixels, 65536 patches per image).
2. Recomputation (mmpt, Qwen2.5-VL): peak memory with none / selective / full at packs of 1..k COCO
   images, a straight-line fit peak = a + b * patches per mode, and from it the most patches per
   pack under a fixed budget (--budget-gib). The fit is linear because a pack of COCO-size
   images costs memory per image, never per pack squared; --verify runs each mode once at its
   predicted size to check it.

Every measurement runs in a fresh child process (this file with --worker), which builds the
model and its inputs, then reads its resident set (VmRSS) as the baseline, resets the kernel's
high-water mark (``echo 5 > /proc/self/clear_refs``), runs one forward + backward and reads the
high-water mark (VmHWM): peak = VmHWM - baseline, the memory the step itself needed (activations,
gradients, workspace, the [N, N] mask), counted by the kernel whatever allocated it (libtorch,
oneDNN, glibc). A fresh process per case keeps one case's freed-but-kept heap from hiding the
next one's. The step is then timed --repeats more times (fastest kept). --jobs N runs N cases
at once, each still in its own process, for smoke runs (the test's): the peaks stay each
process's own, the times are then contended. On a GPU
(``torch.cuda.is_available()``, or --device cuda) the same cases run there, peak from
torch.cuda.max_memory_allocated over the allocated baseline, with sizes meant to finish in a few
minutes (--gpu-scale).

Models, weights random, at depth --depth (default 4): Qwen2.5-VL-7B's vision width (hidden
1280, 16 heads, SwiGLU 3420, merger to 3584; the last block full attention, the others 112-px
windows, as 7 in 8 of the 7B's blocks are) and Qwen3-VL-8B's (hidden 1152, 16 heads, tanh-GELU
MLP 4304, 16-pixel patches, a learned 48 x 48 position table, every block full attention within
each image, merger to 4096 and DeepStack mergers after the blocks that the 8B's [8, 16, 24] of
27 scale to). dtype --dtype (default bf16 on the CPU: its GEMMs go
through oneDNN, ~170 GFLOP/s on this machine's cores, against ~55 for fp32 through OpenBLAS,
which scripts/install-deps.sh installs because Debian's PyTorch otherwise calls the generic
libblas at ~5; both towers use the same libtorch, so the ratio is fair either way).
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
COCO = os.path.join(ROOT, "..", "shared", "data", "real", "coco_val2017_captions.json")
QWEN25_MAX_PIXELS = 12845056
MODELS = ("qwen2.5-vl", "qwen3-vl")
PATCH = {"qwen2.5-vl": 14, "qwen3-vl": 16}
# Qwen2.5-VL-7B's vision width; Qwen3-VL-8B's (its LLM is 4096 wide).
WIDTHS = {"qwen2.5-vl": dict(hidden=1280, heads=16, mlp_hidden=3420, out_hidden=3584),
          "qwen3-vl": dict(hidden=1152, heads=16, mlp_hidden=4304, out_hidden=4096)}
GIB = float(1 << 30)


def deepstack_layers(depth):
    """Qwen3-VL-8B's DeepStack layers, [8, 16, 24] of 27 blocks, scaled to `depth` blocks."""
    return sorted({min(depth - 1, layer * depth // 27) for layer in (8, 16, 24)})


def layer_roles(model, depth):
    """The depth-dependent encoder fields of `model` at `depth` blocks."""
    if model == "qwen3-vl":
        return dict(deepstack_layers=deepstack_layers(depth))
    return dict(full_attention_layers=[depth - 1])


# ---------------------------------------------------------------------------------------------
# The child: one model, one pack, one measurement.

def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak_rss():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def worker(spec):
    import torch

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    device = torch.device(spec["device"])
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[spec["dtype"]]
    arch = spec["model"]
    dims = dict(layers=spec["depth"], **layer_roles(arch, spec["depth"]), **spec["width"])
    if spec["impl"] == "hf":
        from qwen_vision_ref import Qwen3VisionRef, QwenVisionRef
        model = Qwen3VisionRef(**dims) if arch == "qwen3-vl" else QwenVisionRef(arch, **dims)
        model = model.to(device=device, dtype=dtype)
    else:
        import mmpt.torch
        model = mmpt.torch.VisionEncoder(arch, recompute=spec["recompute"], dtype=dtype,
                                         **dims).to(device)
    grid = torch.tensor(spec["grids"], dtype=torch.int64)
    patches = int(grid.prod(1).sum())
    pixels = torch.randn(patches, 3 * 2 * PATCH[arch] ** 2, device=device, dtype=dtype)

    def step():
        model.zero_grad(set_to_none=True)
        px = pixels.detach().requires_grad_(True)
        out = model(px, grid)
        outs = [out] if torch.is_tensor(out) else [out[0], *out[1]]  # Qwen3-VL: + DeepStack
        sum(o.float().square().mean() for o in outs).backward()
        if device.type == "cuda":
            torch.cuda.synchronize()

    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _status_kib("VmRSS") * 1024
        _reset_peak_rss()
    start = time.perf_counter()
    step()
    seconds = [time.perf_counter() - start]
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = _status_kib("VmHWM") * 1024 - base
    for _ in range(spec["repeats"]):
        start = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - start)
    timed = seconds[1:] or seconds  # the first step pays one-time costs unless it is the only one
    print(json.dumps({"seconds": min(timed), "peak_bytes": peak, "patches": patches}))


def run_case(spec, timeout):
    """Run one spec in a fresh process: its result dict, or {"error": why}."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(spec["threads"])
    try:
        worker = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
        done = subprocess.run(worker,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        if done.returncode == -9 or "out of memory" in done.stderr.lower():
            return {"error": "out of memory", "oom": True}
        return {"error": f"exit {done.returncode}: {last[:120]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Inputs: real COCO sizes, resized by mmpt's rule.

def coco_grids(count, skip=0, max_pixels=QWEN25_MAX_PIXELS, vision="qwen2.5-vl"):
    import mmpt
    with open(COCO) as f:
        images = json.load(f)["images"]
    grids = []
    for image in images[skip:skip + count]:
        h, w = mmpt.smart_resize(image["height"], image["width"], vision=vision,
                                 max_pixels=max_pixels)
        grids.append([1, h // PATCH[vision], w // PATCH[vision]])
    return grids


def large_grids(count, max_pixels, vision="qwen2.5-vl"):
    """`count` 4:3 photos from a 12-megapixel camera (4032 x 3024), resized by `vision`'s rule
    with max_pixels capped at `max_pixels` (Qwen2.5-VL's own cap: 12845056)."""
    import mmpt
    h, w = mmpt.smart_resize(3024, 4032, vision=vision, max_pixels=max_pixels)
    return [[1, h // PATCH[vision], w // PATCH[vision]]] * count


def patches_of(grids):
    return sum(t * h * w for t, h, w in grids)


def patches_of_one(grid):
    return grid[0] * grid[1] * grid[2]


def attention_gib(grids, impl, heads, bytes_per):
    """Rough size of one [heads, n, n] score tensor of the largest attention in a block: the
    whole pack for the Hugging Face-style mask, the largest image for mmpt."""
    n = patches_of(grids) if impl == "hf" else max(t * h * w for t, h, w in grids)
    return heads * n * n * bytes_per / GIB


# ---------------------------------------------------------------------------------------------
# The parent: cases, table.

def fmt_gib(b):
    return f"{b / GIB:7.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--dtype", default=None, choices=["bf16", "fp32"],
                    help="default bf16 (see the module docstring for why on this CPU)")
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma list of towers to compare (the recompute study is Qwen2.5-VL's)")
    ap.add_argument("--threads", default=None,
                    help="comma list of thread counts (default: 1 and all cores; GPU: 1)")
    ap.add_argument("--coco-images", type=int, default=2, help="COCO images per pack")
    ap.add_argument("--large-images", type=int, default=1, help="large images per pack")
    ap.add_argument("--large-max-pixels", type=int, default=None,
                    help="max_pixels of the large images (CPU default 451584 = 2304 patches; "
                         f"GPU default Qwen2.5-VL's {QWEN25_MAX_PIXELS})")
    ap.add_argument("--budget-gib", type=float, default=None,
                    help="memory budget of the recompute study (default: CPU 2, GPU 40)")
    ap.add_argument("--recompute-packs", default=None,
                    help="comma list: the recompute study measures packs of the first k images "
                         "of the COCO pack, smallest first (default: every k)")
    ap.add_argument("--verify", action="store_true",
                    help="also run each recompute mode at its predicted largest pack")
    ap.add_argument("--repeats", type=int, default=0,
                    help="timed steps after the first (0: time the first, memory step itself)")
    ap.add_argument("--tiny", action="store_true",
                    help="a seconds-long smoke run (hidden 64, depth 2, small images): the test")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per case")
    ap.add_argument("--jobs", type=int, default=1,
                    help="cases run at once, each in its own process (default 1: uncontended "
                         "times; more for a smoke run such as the test's)")
    args = ap.parse_args()
    if args.worker:
        return worker(json.loads(args.worker))

    device = args.device
    if device is None:  # only then: the cases import torch in their own processes anyway
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = device == "cuda"
    dtype = args.dtype or "bf16"
    threads = ([int(t) for t in args.threads.split(",")] if args.threads
               else [1] if gpu else sorted({1, os.cpu_count() or 1}))
    models = args.models.split(",")
    unknown = set(models) - set(MODELS)
    if unknown:
        ap.error(f"--models: unknown {sorted(unknown)}; expected some of {', '.join(MODELS)}")
    widths = {m: dict(WIDTHS[m]) for m in models}
    depth = args.depth
    large_max = args.large_max_pixels or (QWEN25_MAX_PIXELS if gpu else 451584)
    budget = (args.budget_gib or (40.0 if gpu else 2.0)) * GIB
    coco_count = args.coco_images * (8 if gpu else 1)
    large_count = args.large_images
    if args.tiny:
        widths = {m: dict(hidden=64, heads=4, mlp_hidden=96, out_hidden=80) for m in models}
        depth, large_max, coco_count, large_count = 2, 65536, 2, 1
    packs = {}  # model -> [(name, grids)]
    for m in models:
        coco = coco_grids(coco_count, vision=m)
        if args.tiny:
            coco = [[g[0], min(g[1], 16), min(g[2], 20)] for g in coco]
        packs[m] = [(f"COCO x{len(coco)}", coco),
                    (f"large x{large_count}", large_grids(large_count, large_max, vision=m))]
    bytes_per = 2 if dtype == "bf16" else 4
    for m in models:
        w = widths[m]
        roles = ("block {} full attention, the others 112-px windows".format(depth - 1)
                 if m == "qwen2.5-vl" else
                 "full attention, DeepStack after blocks {}".format(deepstack_layers(depth)))
        print(f"{m} vision tower, depth {depth} ({roles}), hidden {w['hidden']}, {w['heads']} "
              f"heads, MLP {w['mlp_hidden']}, out {w['out_hidden']}; {dtype} on {device}")
    print("HF = Hugging Face-style tower, [N, N] block-diagonal mask over the pack; "
          "mmpt = mmpt.torch.VisionEncoder (recompute none)")
    measured = ("torch.cuda.max_memory_allocated" if gpu
                else "VmHWM - VmRSS, fresh process per case")
    print(f"peak = memory the forward + backward step needed over the built model and inputs "
          f"({measured})")
    print()
    header = (f"{'model':<10} {'pack':<12} {'patches':>7} {'threads':>7} | {'HF s':>8} "
              f"{'mmpt s':>8} {'speedup':>7} | {'HF GiB':>7} {'mmpt GiB':>8} {'mem ratio':>9}")
    print(header)
    print("-" * len(header))
    # Every case is submitted at once, in the order a run of one job takes them (the table's,
    # then the recompute study's), and printed in that order as its result comes.
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))

    def submit(spec):
        return pool.submit(run_case, spec, args.timeout)

    def result(case):
        return case.result() if isinstance(case, Future) else case

    table = []  # (model, pack name, grids, threads, {impl: case})
    cache = {}  # (threads, grids) -> mmpt case at recompute none, reused by the recompute study
    for m in models:
        base = dict(device=device, dtype=dtype, depth=depth, width=widths[m], model=m,
                    repeats=args.repeats, recompute="none")
        for name, grids in packs[m]:
            # The large pack runs at all threads only on the CPU: its Hugging Face-style step
            # alone takes minutes here.
            for t in (threads if name.startswith("COCO") or gpu else threads[-1:]):
                row = {}
                for impl in ("hf", "mmpt"):
                    # Refuse cases that cannot fit rather than let the kernel kill the machine.
                    est = attention_gib(grids, impl, widths[m]["heads"], bytes_per) * 3
                    if not gpu and est > 16:
                        row[impl] = {"error": f"needs ~{est:.0f} GiB", "oom": True}
                        continue
                    row[impl] = submit(dict(base, impl=impl, threads=t, grids=grids))
                    if impl == "mmpt":
                        cache[(m, t, json.dumps(grids))] = row[impl]
                table.append((m, name, grids, t, row))

    study = MODELS[0] in models
    if study:
        m = MODELS[0]
        base = dict(device=device, dtype=dtype, depth=depth, width=widths[m], model=m,
                    repeats=args.repeats, recompute="none")
        coco = packs[m][0][1]
        # Recomputation: peak memory per mode at growing packs (the table's COCO pack, smallest
        # images first: its first k images for each k), the largest pack under the budget.
        ordered = sorted(coco, key=patches_of_one)
        sizes = ([int(s) for s in args.recompute_packs.split(",")] if args.recompute_packs
                 else None)
        n = len(ordered)
        sizes = sizes or (sorted({max(1, n // 4), max(1, n // 2), n}) if gpu
                          else list(range(1, n + 1)))
        cases = {}  # mode -> [case per size]
        for mode in ("none", "selective", "full"):
            cases[mode] = []
            for k in sizes:
                grids = ordered[:k]
                key = (m, threads[-1], json.dumps(grids))
                if mode == "none" and key in cache and args.repeats == 0:
                    cases[mode].append(cache[key])
                else:
                    cases[mode].append(submit(dict(base, impl="mmpt", threads=threads[-1],
                                                   grids=grids, recompute=mode, repeats=0)))

    results = []
    for model, name, grids, t, row in table:
        row = {impl: result(case) for impl, case in row.items()}
        print_row(model, name, patches_of(grids), t, row)
        results.append({"model": model, "pack": name, "patches": patches_of(grids),
                        "threads": t, **row})
        sys.stdout.flush()

    if not study:
        return report_failures(results)
    print()
    print(f"Recomputation (mmpt, {m}, {threads[-1]} threads): peak GiB per pack, and the most "
          f"patches per pack under a {budget / GIB:.1f} GiB budget (straight-line fit of the "
          f"peaks)")
    head = f"{'recompute':<10} " + " ".join(f"{patches_of(ordered[:k]):>9}p" for k in sizes)
    print(head + f" | {'GiB/1k p':>8} {'fits':>8} {'vs none':>7}")
    fits = {}
    for mode in ("none", "selective", "full"):
        points = []
        for k, case in zip(sizes, cases[mode]):
            r = result(case)
            points.append((patches_of(ordered[:k]), r.get("peak_bytes"), r.get("error")))
        ok = [(n, p) for n, p, e in points if p is not None]
        if len(ok) >= 2:
            n0, p0 = ok[0]
            n1, p1 = ok[-1]
            slope = (p1 - p0) / max(n1 - n0, 1)
            fit = int((budget - (p0 - slope * n0)) / slope) if slope > 0 else None
        else:
            slope, fit = None, None
        fits[mode] = fit
        cells = " ".join(f"{p / GIB:>10.2f}" if p is not None else f"{'--':>10}"
                         for _, p, _ in points)
        per_k = f"{slope * 1000 / GIB:8.3f}" if slope else f"{'--':>8}"
        ratio = (f"{fit / fits['none']:6.2f}x" if fit and fits.get("none") else f"{'':>7}")
        print(f"{mode:<10} {cells} | {per_k} {fit if fit else '--':>8} {ratio}")
        for n, p, e in points:
            if e:
                print(f"    {mode} at {n} patches: {e}")
        if args.verify and fit:
            # Build a pack of COCO images whose patch count is just under the prediction.
            pack, total, i = [], 0, 0
            more = coco_grids(400, vision=m)
            while i < len(more) and total + patches_of([more[i]]) <= fit:
                pack.append(more[i])
                total += patches_of([more[i]])
                i += 1
            r = run_case(dict(base, impl="mmpt", threads=threads[-1], grids=pack, recompute=mode),
                         args.timeout)
            print(f"    verify: {total} patches -> peak "
                  f"{r['peak_bytes'] / GIB:.2f} GiB" if "peak_bytes" in r else f"    verify: {r}")
        sys.stdout.flush()
    return report_failures(results)


def print_row(model, name, n, threads, row):
    hf, mm = row["hf"], row["mmpt"]

    def cell(r, key, f):
        return f(r[key]) if key in r else "  --"
    speed = (f"{hf['seconds'] / mm['seconds']:6.2f}x" if "seconds" in hf and "seconds" in mm
             else "    --")
    mem = (f"{hf['peak_bytes'] / max(mm['peak_bytes'], 1):8.2f}x"
           if "peak_bytes" in hf and "peak_bytes" in mm else "      --")
    print(f"{model:<10} {name:<12} {n:>7} {threads:>7} | "
          f"{cell(hf, 'seconds', lambda s: f'{s:8.2f}'):>8} "
          f"{cell(mm, 'seconds', lambda s: f'{s:8.2f}'):>8} {speed:>7} | "
          f"{cell(hf, 'peak_bytes', fmt_gib):>7} "
          f"{cell(mm, 'peak_bytes', fmt_gib):>8} {mem:>9}")
    for impl in ("hf", "mmpt"):
        if "error" in row[impl]:
            print(f"    {impl}: {row[impl]['error']}")


def report_failures(results):
    """Not fitting is a result; any other failure of a case fails the run."""
    failed = [r for r in results for i in ("hf", "mmpt") if "error" in r[i] and not r[i].get("oom")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
