"""Vision DP at CP 2 on the real-data mix: per-rank encoder time, cost policy vs count policy,
measured on the CPU with a small encoder, beside the simulator's prediction for the same plan.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/vision_dp_bench.py

The mix: COCO val2017 caption samples (real image sizes, real captions) and mmc4 interleaved
documents (real sentences and image counts; mmc4 records carry no image sizes, so each of their
images takes the size of a COCO image chosen by the seeded rule of mmpt's built-in corpora,
corpora::Mmc4CocoImage), two caption samples per document.
Text is counted with mmpt's Qwen3 tokenizer; images follow the Qwen2-VL resize rule (patch 14,
2x2 merge) with a lower max_pixels so the CPU can encode them. Samples are packed greedily to
--seq-len tokens, each pack is split for CP 2, its images placed among their text as the
planner's CP stage does (cp::PlaceImages) and assigned to the two ranks under each policy.

Measured: for every pack and rank, the encoder's forward + backward on that rank's images
(min over --repeats, both policies interleaved so they see the same machine load). Predicted:
sim::SimulateStep on the same packs, whose per-rank vision seconds come from the cost module's
FLOPs for a vision preset describing this encoder; its seconds-per-FLOP is fitted to the
measurements (one scalar), so the comparison is of how the work divides between ranks.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import mmpt  # noqa: E402
from vdp_model import SmallEncoder, load_coco  # noqa: E402

MMC4_PATH = os.path.join(ROOT, "..", "shared", "data", "real", "mmc4_core_ff_docs.jsonl")
HIDDEN, HEADS, LAYERS, OUT = 64, 4, 1, 64
PATCH, MERGE, TEMPORAL = 14, 2, 2


def vision_preset(max_tokens: int) -> str:
    """The encoder below as a cost-module vision preset (data, not code); images are resized
    to at most `max_tokens` LLM tokens (28×28 pixels each)."""
    return json.dumps({
        "name": "cpu-small-encoder",
        "resolution": {"rule": "smart_resize", "patch_size": PATCH, "spatial_merge": MERGE,
                       "temporal_patch": TEMPORAL, "min_pixels": 3136,
                       "max_pixels": 28 * 28 * max_tokens},
        "encoder": {"hidden": HIDDEN, "layers": LAYERS, "heads": HEADS, "mlp_hidden": 4 * HIDDEN,
                    "gated_mlp": False, "full_attention_layers": "all",
                    "merger_hidden": MERGE * MERGE * HIDDEN},
    })


TEMPLATE_TOKENS = 12  # chat-template tokens around a sample (system/user/assistant markers)


def mix64(x: int) -> int:
    """mmpt::Mix64 (core/hash.h, splitmix64's finalizer) on 64-bit unsigned integers."""
    mask = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & mask
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


def mmc4_coco_image(seed: int, doc: int, image: int, num_coco_images: int) -> int:
    """corpora::Mmc4CocoImage (src/mmpt/text/real_data.h): the COCO image (index in the file's
    `images`) whose size image `image` of mmc4 document `doc` (0-based, file order) takes."""
    mask = (1 << 64) - 1
    return mix64((seed & mask) ^ mix64((doc * 1000003 + image) & mask)) % num_coco_images


def load_mix(seed: int, tokenizer):
    """Samples of the mix as (text_tokens, [(width, height), ...])."""
    rng = random.Random(seed)
    coco = load_coco()
    if not os.path.exists(MMC4_PATH):
        raise FileNotFoundError(f"real data missing: {MMC4_PATH}")
    documents = [json.loads(line) for line in open(MMC4_PATH)]
    captions = [(tokenizer.count(caption) + TEMPLATE_TOKENS, [(w, h)]) for w, h, caption in coco]
    docs = []
    for d, doc in enumerate(documents):
        text = " ".join(doc["text_list"])
        sizes = [coco[mmc4_coco_image(seed, d, j, len(coco))][:2]
                 for j in range(len(doc["image_info"]))]
        docs.append((tokenizer.count(text) + TEMPLATE_TOKENS, sizes))
    rng.shuffle(captions)
    rng.shuffle(docs)
    mix = []
    while docs and len(captions) >= 2:
        mix.extend([captions.pop(), captions.pop(), docs.pop()])
    return mix


def pack_samples(samples, seq_len: int, num_packs: int, preset: str):
    """Greedy packing in sample order: [(tokens, [image cost dict, ...]) per sample] per pack."""
    packs, current, used = [], [], 0
    for text_tokens, sizes in samples:
        images = [mmpt.image_cost(h, w, preset, OUT) for w, h in sizes]
        tokens = text_tokens + sum(i["llm_tokens"] for i in images)
        if tokens > seq_len:
            continue  # an overlong document; the planner would truncate or split it
        if used + tokens > seq_len:
            packs.append(current)
            if len(packs) == num_packs:
                return packs
            current, used = [], 0
        current.append((tokens, images))
        used += tokens
    raise ValueError(f"the mix fills only {len(packs)} packs of {seq_len} tokens")


def routing_for(pack, policy: str):
    lengths = [tokens for tokens, _ in pack]
    images = [(seq, image["llm_tokens"], image["train_flops"])
              for seq, (_, imgs) in enumerate(pack) for image in imgs]
    placed = mmpt.place_images(lengths, images)
    return mmpt.assign_vision(mmpt.split_thd(lengths, 2), placed, policy)


def time_encode(encoder, pixels, grids, repeats: int):
    """Min seconds of forward + backward over `repeats` runs (0 when there is nothing)."""
    if not pixels:
        return 0.0
    x = torch.cat(pixels)
    grid = torch.tensor(grids)
    best = float("inf")
    for _ in range(repeats):
        encoder.zero_grad(set_to_none=True)
        start = time.perf_counter()
        encoder(x, grid).square().sum().backward()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packs", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128,
                        help="LLM tokens an image is resized to at most (Qwen2-VL: 16384)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    tokenizer = mmpt.Tokenizer()
    packs = pack_samples(load_mix(args.seed, tokenizer), args.seq_len, args.packs,
                         vision_preset(args.max_tokens))
    encoder = SmallEncoder(HIDDEN, OUT, HEADS, LAYERS, patch_dim=3 * TEMPORAL * PATCH * PATCH)
    gen = torch.Generator().manual_seed(args.seed)
    pixels, grids = [], []  # per pack, per image
    for pack in packs:
        pixels.append([])
        grids.append([])
        for _, images in pack:
            for image in images:
                grid = (1, image["resized_height"] // PATCH, image["resized_width"] // PATCH)
                pixels[-1].append(torch.randn(grid[1] * grid[2], 3 * TEMPORAL * PATCH * PATCH,
                                              generator=gen))
                grids[-1].append(grid)

    policies = ("count", "cost")
    routings = {p: [routing_for(pack, p) for pack in packs] for p in policies}
    measured = {p: [[0.0, 0.0] for _ in packs] for p in policies}
    time_encode(encoder, pixels[0][:1], grids[0][:1], 1)  # warm-up
    for k in range(len(packs)):
        for policy in policies:  # interleaved: both policies see the same load
            for rank in range(2):
                mine = routings[policy][k].encoded[rank]
                measured[policy][k][rank] = time_encode(
                    encoder, [pixels[k][i] for i in mine], [grids[k][i] for i in mine],
                    args.repeats)
        print(f"pack {k + 1}/{len(packs)} timed", file=sys.stderr, flush=True)

    plan = [[(tokens, [(i["llm_tokens"], i["train_flops"]) for i in images])
             for tokens, images in pack] for pack in packs]
    predicted_flops = {p: mmpt.simulate_cp_vision(plan, 2, p, seconds_per_flop=1.0)
                       ["vision_seconds"] for p in policies}
    # One scalar: seconds per FLOP on this CPU, least squares over every (policy, pack, rank).
    pairs = [(predicted_flops[p][k][r], measured[p][k][r])
             for p in policies for k in range(len(packs)) for r in range(2)]
    seconds_per_flop = sum(f * s for f, s in pairs) / sum(f * f for f, _ in pairs)

    print(f"vision DP at CP 2: {len(packs)} packs of <= {args.seq_len} tokens, "
          f"{sum(len(p) for p in pixels)} images of <= {args.max_tokens} tokens; encoder hidden "
          f"{HIDDEN}, {LAYERS} layer(s), "
          f"CPU 1 thread; fitted {seconds_per_flop * 1e9:.3f} s per GFLOP")
    print(f"{'pack':>4} {'imgs':>4}  {'policy':<5} {'rank0 s':>8} {'rank1 s':>8} "
          f"{'max/mean':>8} | {'sim r0 s':>8} {'sim r1 s':>8} {'max/mean':>8}")
    summary = {}
    for policy in policies:
        step_measured = step_predicted = 0.0
        imbalance_m, imbalance_p = [], []
        for k in range(len(packs)):
            m = measured[policy][k]
            s = [f * seconds_per_flop for f in predicted_flops[policy][k]]
            im = max(m) / statistics.mean(m) if sum(m) else 1.0
            ip = max(s) / statistics.mean(s) if sum(s) else 1.0
            imbalance_m.append(im)
            imbalance_p.append(ip)
            step_measured += max(m)
            step_predicted += max(s)
            print(f"{k:>4} {len(pixels[k]):>4}  {policy:<5} {m[0]:>8.3f} {m[1]:>8.3f} "
                  f"{im:>8.3f} | {s[0]:>8.3f} {s[1]:>8.3f} {ip:>8.3f}")
        summary[policy] = {"step_seconds_measured": step_measured,
                           "step_seconds_predicted": step_predicted,
                           "mean_imbalance_measured": statistics.mean(imbalance_m),
                           "mean_imbalance_predicted": statistics.mean(imbalance_p)}
    for policy in policies:
        row = summary[policy]
        print(f"{policy:<5}: vision time of the CP group (sum over packs of the slower rank) "
              f"measured {row['step_seconds_measured']:.3f} s, predicted "
              f"{row['step_seconds_predicted']:.3f} s; mean max/mean "
              f"{row['mean_imbalance_measured']:.3f} measured, "
              f"{row['mean_imbalance_predicted']:.3f} predicted")
    ratio_m = summary["count"]["step_seconds_measured"] / summary["cost"]["step_seconds_measured"]
    ratio_p = (summary["count"]["step_seconds_predicted"]
               / summary["cost"]["step_seconds_predicted"])
    print(f"count / cost vision time: measured {ratio_m:.3f}x, predicted {ratio_p:.3f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "measured": measured, "predicted_flops":
                       predicted_flops, "seconds_per_flop": seconds_per_flop}, f, indent=1)


if __name__ == "__main__":
    main()
