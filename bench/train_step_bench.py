"""A measured training step, vanilla vs mmpt, beside mmpt's step-time model, which it calibrates.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/train_step_bench.py

Two ranks (one thread each: this machine's two cores) train examples/train_vlm.py's model, the
native encoder (mmpt.torch.VisionEncoder) and a small decoder, on the same corpus prepared from
../shared/data/real (COCO caption pairs and mmc4 documents with real image files, from
`mmpt synth`), once on the vanilla planner's plans (Megatron Bridge + Energon packing, a packing
buffer that turns over several times in the run) and once on mmpt's. Every step's batches are
loaded before training (``--preload``), so the loader's threads take no core from the timed work.
Each rank records, per micro-step, its encoder's forward + backward and the rest (the LM); per
step, its wait for the slower rank at the gradient all-reduce, the all-reduce and the optimizer.

The model side: a data directory (MMPT_HOME) holding mmpt's own presets and three more, written
from this run's sizes so the cost model counts exactly the model trained: a vision preset (the
Qwen2-VL rule, a CPU-sized max_pixels, the encoder's sizes), an LLM preset (the decoder's), and
a hardware preset. The cost model's own FLOPs for the plans the loader executed come from
``mmpt.Planner.simulate`` (sim::SimulateStep) on the peak preset, whose seconds are FLOPs / peak;
the peak is this core's fp32 matrix-multiply rate. Calibration: the encoder's and the LM's
measured seconds over the cost model's FLOPs (ratio of sums over every measured micro-step of
both runs) give ``vision_mfu`` and ``mfu``, written as this run's hardware preset, which its
``mmpt simulate`` rows read (presets/hardware/ holds bench/replay_step.py's calibration, from
every replayed batch). The report: measured vs predicted per stage (encoder, LM, wait, step)
and per planner, the vanilla/mmpt ratios both ways, and `mmpt simulate`'s ablation rows on the
same plans.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mmpt  # noqa: E402
import train_vlm  # noqa: E402

REAL = os.path.join(ROOT, "..", "shared", "data", "real")
VISION, LLM, PEAK = "bench-qwen2-vl", "bench-lm", "cpu-peak"


def mmpt_binary():
    """The build's mmpt command: beside the extension (build/<preset>/python/mmpt/_mmpt*.so)."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(
        mmpt._mmpt.__file__))))
    return os.path.join(build, "mmpt")


def run(command, env, what):
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stdout[-6000:]}")
    return done.stdout


# ---- The data directory: mmpt's presets and this run's ----------------------------------------

def make_home(home, args):
    """A data directory (MMPT_HOME) of the build's layout: its entries linked, its presets
    linked one by one beside this run's vision and LLM presets."""
    data = os.path.dirname(mmpt.preset_dir())
    os.makedirs(home, exist_ok=True)
    for entry in os.listdir(data):
        if entry != "presets" and not os.path.exists(os.path.join(home, entry)):
            os.symlink(os.path.realpath(os.path.join(data, entry)), os.path.join(home, entry))
    for kind in os.listdir(os.path.join(data, "presets")):
        if not os.path.isdir(os.path.join(data, "presets", kind)):
            continue
        os.makedirs(os.path.join(home, "presets", kind), exist_ok=True)
        for name in os.listdir(os.path.join(data, "presets", kind)):
            link = os.path.join(home, "presets", kind, name)
            if not os.path.lexists(link):
                os.symlink(os.path.realpath(os.path.join(data, "presets", kind, name)), link)
    with open(os.path.join(data, "presets", "vision", "qwen2-vl.json")) as f:
        vision = json.load(f)
    vision["name"] = VISION
    vision["comment"] = ("Qwen2-VL's resolution rule with a CPU-sized max_pixels; the encoder at "
                         "bench/train_step_bench.py's sizes")
    vision["resolution"]["max_pixels"] = args.max_pixels
    vision["encoder"].update(hidden=args.vit_hidden, layers=args.vit_layers,
                             heads=args.vit_heads, mlp_hidden=args.vit_mlp_hidden,
                             merger_hidden=4 * args.vit_hidden)
    write_preset(home, "vision", vision)
    write_preset(home, "llm", train_vlm.llm_preset(args, LLM))


#: The calibration of the peak itself: every utilization 1 (seconds = FLOPs / peak).
PEAK_FIT = {"vision": 1.0, "vision_hf": None, "linear": 1.0, "attention": 1.0}


def write_preset(home, kind, preset):
    path = os.path.join(home, "presets", kind, preset["name"] + ".json")
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "w") as f:
        json.dump(preset, f, indent=2)
        f.write("\n")
    return path


def peak_flops(seconds=2.0, n=1024):
    """This core's fp32 matrix-multiply rate, FLOP/s: the best of repeated n×n×n products."""
    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2.0 * n ** 3 / best


def device_preset_name():
    """This CPU's hardware preset name, one core: e.g. amd-epyc-1core."""
    slug = "".join(c if c.isalnum() else "-" for c in cpu_name().lower()).strip("-")
    return "-".join(filter(None, slug.split("-"))) + "-1core"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


# ---- Runs -------------------------------------------------------------------------------------

def prepare(work, env, args):
    mmpt_cmd = mmpt_binary()
    raw = os.path.join(work, "raw")
    dataset = os.path.join(work, "dataset")
    if os.path.exists(os.path.join(dataset, "mmpt.json")):
        return dataset
    run([mmpt_cmd, "synth", "--profile", "coco", "--samples", str(args.captions), "--out", raw,
         "--source", os.path.join(REAL, "coco_val2017_captions.json")], env, "mmpt synth coco")
    run([mmpt_cmd, "synth", "--profile", "mmc4", "--samples", str(args.documents), "--out", raw,
         "--source", os.path.join(REAL, "mmc4_core_ff_docs.jsonl"),
         "--coco", os.path.join(REAL, "coco_val2017_captions.json")], env, "mmpt synth mmc4")
    run([mmpt_cmd, "prepare", os.path.join(raw, "coco.jsonl"), os.path.join(raw, "mmc4.jsonl"),
         "--out", dataset, "--vision", VISION, "--on-error", "fail"], env, "mmpt prepare")
    return dataset


def model_args(args):
    """examples/train_vlm.py's options for this run's model and layout."""
    return (["--world", "2", "--ga", str(args.ga), "--seq-len", str(args.seq_len),
             "--steps", str(args.steps), "--vanilla-buffer", str(args.vanilla_buffer),
             "--seed", str(args.seed)] + train_vlm.model_argv(args))


def train(planner, dataset, out, env, args):
    os.makedirs(out, exist_ok=True)
    run([sys.executable, os.path.join(ROOT, "examples", "train_vlm.py"), dataset,
         "--planner", planner, "--timing", "--preload", "--out", out, "--llm-preset", LLM,
         "--hardware", PEAK, *model_args(args)], env, f"training on {planner}'s plans")
    return [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(2)]


def predict(planner, dataset, args, steps, **params):
    """mmpt's step-time model on the plans the run executed, per step."""
    plans = mmpt.Planner(mmpt.Dataset(dataset), seq_len=args.seq_len, dp=2, ga=args.ga,
                         sync="step", seed=args.seed, planner=planner,
                         vanilla_buffer=args.vanilla_buffer, llm=LLM, hardware=PEAK)
    return [plans.simulate(step, **params) for step in steps]


def fastest(repeats):
    """Per step, the ranks' records of the repeat whose step was fastest (the machine is shared:
    a slow repeat is another process's load, not the plan's)."""
    best = [dict(rec, steps=list(rec["steps"])) for rec in repeats[0]]
    for records in repeats[1:]:
        for k in range(len(best[0]["steps"])):
            if (max(rec["steps"][k]["seconds"] for rec in records)
                    < max(rec["steps"][k]["seconds"] for rec in best)):
                for rank, rec in enumerate(records):
                    best[rank]["steps"][k] = rec["steps"][k]
    return best


# ---- Calibration ------------------------------------------------------------------------------

def fit(runs, predictions, measured_steps):
    """The cost model fitted to every measured (rank, micro-step) of every run by the cost library
    (``mmpt.calibrate``, ``cost::Calibrate``): each stage's measured seconds over the seconds the
    peak preset predicts (FLOPs / peak), a ratio of sums (the LM's as one factor: its attention
    is not told apart here, ``bench/replay_step.py`` does that)."""
    batches = []
    for planner, records in runs.items():
        for k, step in enumerate(measured_steps):
            sim = predictions[planner][k]
            for rec in records:
                for m, micro in enumerate(rec["steps"][step]["micro_steps"]):
                    batches.append((micro["vision"], micro["llm"],
                                    sim["vision_seconds"][rec["dp_rank"]][m][0],
                                    sim["llm_seconds"][rec["dp_rank"]][m][0], 0.0, False))
    return mmpt.calibrate(batches)


def write_calibrated_preset(home, name, peak, calibration, args):
    """This device's hardware preset, its peak and the utilizations measured, written to `home`'s
    presets (``cost::WriteHardwarePreset``); returns it."""
    comment = (f"{cpu_name()}, one core, fp32 (the cost model's bf16_flops field holds the "
               f"peak in use). Measured {datetime.date.today().isoformat()} by "
               f"bench/train_step_bench.py: bf16_flops is the core's best "
               f"{1024}x{1024}x{1024} matrix-multiply rate; mfu and vision_mfu are the "
               f"LM's and the native encoder's (mmpt.torch.VisionEncoder) cost-model FLOPs "
               f"over their measured forward + backward seconds, on {args.vit_layers}-layer "
               f"hidden-{args.vit_hidden} encoder and {args.layers}-layer hidden-"
               f"{args.hidden} decoder steps of {args.seq_len} tokens")
    return mmpt.write_hardware_preset(os.path.join(home, "presets"), calibration, peak, name,
                                      comment)


# ---- Report -----------------------------------------------------------------------------------

def summarize(records, predictions, measured_steps, ratios, fixed_seconds):
    """Per rank, means over the measured steps: measured and calibrated-predicted seconds of
    each stage, and tokens."""
    rows = []
    for rec in records:
        d = rec["dp_rank"]
        m = {"vision": [], "llm": [], "wait": [], "step": [], "tokens": []}
        p = {"vision": [], "llm": [], "wait": [], "step": []}
        for k, step in enumerate(measured_steps):
            s = rec["steps"][step]
            sim = predictions[k]
            m["vision"].append(sum(x["vision"] for x in s["micro_steps"]))
            m["llm"].append(sum(x["llm"] for x in s["micro_steps"]))
            m["wait"].append(s["wait"])
            m["step"].append(s["seconds"])
            m["tokens"].append(sum(x["tokens"] for x in s["micro_steps"]))
            vision = sum(v[0] for v in sim["vision_seconds"][d]) * ratios["vision"]
            llm = sum(v[0] for v in sim["llm_seconds"][d]) * ratios["llm"]
            busy = [sum(v[0] for v in sim["vision_seconds"][r]) * ratios["vision"]
                    + sum(v[0] for v in sim["llm_seconds"][r]) * ratios["llm"]
                    for r in range(len(sim["vision_seconds"]))]
            p["vision"].append(vision)
            p["llm"].append(llm)
            p["wait"].append(max(busy) - vision - llm)
            p["step"].append(max(busy) + fixed_seconds)
        rows.append({"rank": d, "measured": {k: statistics.mean(v) for k, v in m.items()},
                     "predicted": {k: statistics.mean(v) for k, v in p.items()}})
    return rows


def micro_step_error(runs, predictions, measured_steps, ratios):
    """Mean |measured − predicted| / measured over every (rank, micro-step), per stage."""
    errors = {"vision": [], "llm": []}
    for planner, records in runs.items():
        for k, step in enumerate(measured_steps):
            sim = predictions[planner][k]
            for rec in records:
                for m, micro in enumerate(rec["steps"][step]["micro_steps"]):
                    for stage in errors:
                        predicted = sim[f"{stage}_seconds"][rec["dp_rank"]][m][0] * ratios[stage]
                        if micro[stage] > 1e-3:
                            errors[stage].append(abs(micro[stage] - predicted) / micro[stage])
    return {stage: statistics.mean(e) if e else 0.0 for stage, e in errors.items()}


def simulate_cli(dataset, env, args, hardware, fixed_seconds):
    out = run([mmpt_binary(), "simulate", dataset, "--dp", "2", "--ga", str(args.ga),
               "--seq-len", str(args.seq_len), "--sync", "step", "--llm", LLM,
               "--hardware", hardware, "--steps", str(args.steps), "--seed", str(args.seed),
               "--vanilla-buffer", str(args.vanilla_buffer),
               "--allreduce-seconds", f"{fixed_seconds:.6f}", "--json"], env, "mmpt simulate")
    return {row["stage"]: row for row in json.loads(out)["rows"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default="/tmp/mmpt-train-step-bench",
                   help="folder for the corpus, the data directory and the runs' records")
    p.add_argument("--captions", type=int, default=300, help="COCO caption samples")
    p.add_argument("--documents", type=int, default=40, help="mmc4 documents")
    p.add_argument("--max-pixels", type=int, default=25088, help="the vision preset's (32 tokens)")
    p.add_argument("--steps", type=int, default=6, help="steps per run; the first is a warm-up")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs per planner, interleaved; each step's fastest is kept")
    p.add_argument("--ga", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--vanilla-buffer", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    train_vlm.add_model_arguments(p, vocab=2048)
    p.add_argument("--preset-name", default=None,
                   help="name of the calibrated hardware preset (default: the CPU's, e.g. "
                        "amd-epyc-1core)")
    p.add_argument("--json", default="", help="write the figures to this file")
    args = p.parse_args(argv)

    if args.preset_name is None:
        args.preset_name = device_preset_name()
    work = os.path.abspath(args.work)
    home = os.path.join(work, "home")
    make_home(home, args)
    env = dict(os.environ, MMPT_HOME=home, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(sys.path))
    os.environ["MMPT_HOME"] = home  # this process's presets too (Planner.simulate)
    peak = peak_flops()
    mmpt.write_hardware_preset(os.path.join(home, "presets"), PEAK_FIT, peak, PEAK,
                               "this core's fp32 matmul peak, utilizations 1: seconds = FLOPs / "
                               "peak")
    dataset = prepare(work, env, args)

    measured_steps = list(range(1, args.steps))  # step 0 warms up (allocations, first calls)
    repeats = {"vanilla": [], "mmpt": []}
    for repeat in range(args.repeats):  # interleaved, so both planners see the same machine
        for planner in repeats:
            out = os.path.join(work, f"{planner}{repeat}")
            shutil.rmtree(out, ignore_errors=True)
            repeats[planner].append(train(planner, dataset, out, env, args))
    runs = {planner: fastest(records) for planner, records in repeats.items()}
    predictions = {planner: predict(planner, dataset, args, measured_steps) for planner in runs}

    calibration = fit(runs, predictions, measured_steps)
    ratios = {"vision": calibration["vision"], "llm": calibration["linear"]}
    preset = write_calibrated_preset(home, args.preset_name, peak, calibration, args)
    # Per step, what neither stage holds: the all-reduce and the optimizer (measured).
    fixed = statistics.mean(s["allreduce"] + s["optimizer"]
                            for records in runs.values() for rec in records
                            for s in (rec["steps"][k] for k in measured_steps))
    report = {"peak_flops": peak, "preset": preset, "ratios": ratios, "fixed_seconds": fixed,
              "planners": {}, "micro_step_error": micro_step_error(runs, predictions,
                                                                   measured_steps, ratios)}
    for planner in runs:
        report["planners"][planner] = summarize(runs[planner], predictions[planner],
                                                measured_steps, ratios, fixed)
    report["simulate"] = simulate_cli(dataset, env, args, args.preset_name, fixed)
    report["args"] = vars(args)
    print_report(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


def print_report(report):
    preset = report["preset"]
    print(f"peak {report['peak_flops'] / 1e9:.1f} GFLOP/s; calibrated '{preset['name']}': "
          f"mfu {preset['mfu']:.3f}, vision_mfu {preset['vision_mfu']:.3f}; "
          f"all-reduce + optimizer {report['fixed_seconds']:.3f} s/step")
    print(f"{'planner':8} {'rank':>4} | {'encoder s':>17} | {'LM s':>17} | {'wait s':>17} | "
          f"{'step s':>17} | tokens/s")
    print(f"{'':8} {'':>4} | {'meas.':>8} {'pred.':>8} | {'meas.':>8} {'pred.':>8} | "
          f"{'meas.':>8} {'pred.':>8} | {'meas.':>8} {'pred.':>8} |")
    tps = {}
    for planner, rows in report["planners"].items():
        for row in rows:
            m, p = row["measured"], row["predicted"]
            print(f"{planner:8} {row['rank']:>4} | {m['vision']:8.3f} {p['vision']:8.3f} | "
                  f"{m['llm']:8.3f} {p['llm']:8.3f} | {m['wait']:8.3f} {p['wait']:8.3f} | "
                  f"{m['step']:8.3f} {p['step']:8.3f} | {m['tokens'] / m['step']:8.1f}")
        tokens = statistics.mean(r["measured"]["tokens"] for r in rows)  # per rank and step
        tps[planner] = (tokens / statistics.mean(r["measured"]["step"] for r in rows),
                        tokens / statistics.mean(r["predicted"]["step"] for r in rows))
    ratio = {k: tps["mmpt"][k] / tps["vanilla"][k] for k in (0, 1)}
    report["tokens_per_second"] = {planner: {"measured": m, "predicted": p}
                                   for planner, (m, p) in tps.items()}
    report["mmpt_over_vanilla"] = {"measured": ratio[0], "predicted": ratio[1]}
    print(f"tokens/s per rank, vanilla: measured {tps['vanilla'][0]:.1f}, predicted "
          f"{tps['vanilla'][1]:.1f}; mmpt: measured {tps['mmpt'][0]:.1f}, predicted "
          f"{tps['mmpt'][1]:.1f}; mmpt / vanilla: measured {ratio[0]:.3f}, predicted "
          f"{ratio[1]:.3f}")
    for planner, rows in report["planners"].items():
        errors = {}
        for stage in ("vision", "llm", "step"):
            measured = statistics.mean(r["measured"][stage] for r in rows)
            predicted = statistics.mean(r["predicted"][stage] for r in rows)
            errors[stage] = (predicted - measured) / measured
        errors["wait_seconds"] = statistics.mean(r["predicted"]["wait"] - r["measured"]["wait"]
                                                 for r in rows)
        report.setdefault("stage_error", {})[planner] = errors
        print(f"{planner}: model error (predicted − measured) / measured: encoder "
              f"{100 * errors['vision']:+.1f}%, LM {100 * errors['llm']:+.1f}%, step "
              f"{100 * errors['step']:+.1f}%; wait {errors['wait_seconds']:+.3f} s")
    err = report["micro_step_error"]
    print(f"per micro-step |error|: encoder {100 * err['vision']:.1f}%, LM {100 * err['llm']:.1f}%")
    sim = report["simulate"]
    print("mmpt simulate on the calibrated preset (all steps): "
          + ", ".join(f"{stage} {row['step_seconds']:.3f} s ({row['tokens_per_second']:.0f} "
                      f"tokens/s)" for stage, row in sim.items()
                      if stage in ("vanilla", "+ reordering")))


if __name__ == "__main__":
    main()
