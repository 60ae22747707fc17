"""Prepare of a WebDataset shard set of many small tars: seconds, and against a baseline binary.

    /usr/bin/python3 bench/wds_shards_bench.py --mmpt build/release/mmpt [--baseline OLD_MMPT]

`mmpt synth --profile tiny --format wds` writes one tar of tiny caption pairs, which is split into
--shards tars of --per-shard samples each (shard-0000.tar …). Each binary then runs the same
command, `mmpt prepare shard=<every tar> --out DIR --threads 2` (one source, named), on the same
tars, best of --repeats, with the page cache warm. Printed: the samples, sources and shards each
run wrote, its seconds, and with --baseline the ratio. The baseline is a build of an earlier
commit (the two-pass read: every tar scanned for its keys, then read again per shard); the
current code keeps no second path to compare against (docs/benchmarks.md, "WebDataset shard
sets").
"""

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time


def make_shards(mmpt, work, shards, per_shard):
    """Split synth's tar into `shards` tars of `per_shard` samples; return their paths."""
    synth = os.path.join(work, "synth")
    subprocess.run([mmpt, "synth", "--profile", "tiny", "--samples", str(shards * per_shard),
                    "--format", "wds", "--out", synth], check=True, stdout=subprocess.DEVNULL)
    with tarfile.open(os.path.join(synth, "tiny.tar")) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    samples = {}
    for member, data in members:  # keep each key's members together, in order
        samples.setdefault(member.name.split(".", 1)[0], []).append((member, data))
    keys = list(samples)
    assert len(keys) == shards * per_shard, len(keys)
    paths = []
    os.makedirs(os.path.join(work, "set"))
    for s in range(shards):
        path = os.path.join(work, "set", f"shard-{s:04}.tar")
        with tarfile.open(path, "w") as out:
            for key in keys[s * per_shard:(s + 1) * per_shard]:
                for member, data in samples[key]:
                    out.addfile(member, io.BytesIO(data))
        paths.append(path)
    return paths


def prepare(mmpt, paths, out, repeats, tokenizer):
    """Best seconds of `repeats` runs, and the last run's report and manifest."""
    best = None
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        run = subprocess.run([mmpt, "prepare", *[f"shard={p}" for p in paths], "--out", out,
                              "--threads", "2", "--tokenizer", tokenizer, "--json"],
                             capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if run.returncode != 0:
            sys.exit(f"{mmpt} prepare failed: {run.stderr[-2000:]}")
        best = seconds if best is None else min(best, seconds)
    report = json.loads(run.stdout)
    with open(os.path.join(out, "mmpt.json")) as f:
        manifest = json.load(f)
    return best, report, manifest


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mmpt", default="build/release/mmpt")
    parser.add_argument("--baseline", help="an earlier build's mmpt binary to compare against")
    parser.add_argument("--shards", type=int, default=1000)
    parser.add_argument("--per-shard", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    # Both binaries count tokens with the current build's tokenizer.
    tokenizer = os.path.join(os.path.dirname(args.mmpt), "share", "mmpt", "tokenizer.json")
    with tempfile.TemporaryDirectory(prefix="wds-shards-") as work:
        paths = make_shards(args.mmpt, work, args.shards, args.per_shard)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"{len(paths)} tars of {args.per_shard} samples ({size / 1e6:.1f} MB), 2 threads, "
              f"best of {args.repeats}")
        runs = [("mmpt", args.mmpt)] + ([("baseline", args.baseline)] if args.baseline else [])
        seconds = {}
        for name, binary in runs:
            seconds[name], report, manifest = prepare(binary, paths, os.path.join(work, name),
                                                      args.repeats, tokenizer)
            sources = sorted(s["name"] for s in manifest["sources"])
            shards = sum(s["shards"] for s in manifest["sources"])
            print(f"{name:>9}: {seconds[name]:7.3f} s  {report['samples']} samples, "
                  f"sources {sources}, {shards} shards  ({binary})")
            assert report["samples"] == args.shards * args.per_shard, report
        if args.baseline:
            print(f"ratio, baseline / mmpt seconds: {seconds['baseline'] / seconds['mmpt']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
