"""One CP rank of the vision-DP multi-process tests (run by test_vision_dp.py, one process per
rank, gloo on CPU).

For each scenario it builds the same pack and models as every other rank, takes its THD shard,
encodes only its images, runs mmpt.torch.vision_dp_embed and a backward pass, then sums the
loss and gradients over the group; rank 0 writes them with each rank's exchange statistics to
OUT/<scenario>.pt for the parent to compare with CP = 1.
"""

import argparse
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mmpt  # noqa: E402
from mmpt.torch import ExchangeStats, exchange_embeddings, vision_dp_embed  # noqa: E402
from vdp_model import (IMAGE_PAD, PATCH_DIM, build_models, load_coco, make_pack,  # noqa: E402
                       pack_from_dataset, shard_tokens)  # noqa: E402


def run_scenario(name, spec, coco, global_rank, world, out_dir):
    # "dp": that many CP groups of world/dp consecutive ranks, each running the same pack.
    dp = spec.get("dp", 1)
    cp = world // dp
    groups = [dist.new_group(list(range(g * cp, (g + 1) * cp))) for g in range(dp)]
    group = groups[global_rank // cp]
    rank = dist.get_rank(group)
    dtype = getattr(torch, spec.get("dtype", "float64"))
    frozen = spec.get("frozen", False)
    if spec.get("dataset"):
        pack = pack_from_dataset(mmpt.DatasetReader(spec["dataset"]), spec["indices"])
    else:
        pack = make_pack(coco, spec["seed"], spec["samples"],
                         text_only=spec.get("text_only", ()))
    encoder, lm = build_models(0, dtype)
    encoder.requires_grad_(not frozen)

    split = mmpt.split_thd(pack.seq_lengths, cp)
    routing = mmpt.assign_vision(split, pack.images(), spec["policy"])
    local_tokens, local_labels, real = shard_tokens(pack, split, rank)
    weight = float(rank + 1) if spec.get("weighted", True) else 1.0
    local_weights = real.to(dtype) * weight

    mine = routing.encoded[rank]
    pixels = [pack.pixels[i].to(dtype) for i in mine]
    local_pixels = (torch.cat(pixels) if pixels else torch.zeros(0, PATCH_DIM, dtype=dtype))
    local_pixels.requires_grad_(not frozen)
    grid = torch.tensor([pack.grids[i] for i in mine], dtype=torch.long).reshape(-1, 3)

    stats = ExchangeStats()
    embeds = lm.embed_tokens(local_tokens)
    if spec.get("direct"):
        # The bare exchange, fed a plain empty tensor (no grad) on a rank without images.
        local_embeds = (encoder(local_pixels, grid) if mine
                        else torch.zeros(0, embeds.shape[-1], dtype=dtype))
        rows = exchange_embeddings(local_embeds, routing, group, stats=stats)
        positions = torch.tensor(routing.indices(rank).positions, dtype=torch.long)
        embeds = embeds.index_copy(0, positions, rows)
    else:
        embeds = vision_dp_embed(encoder, local_pixels, grid, embeds, routing, group,
                                 input_ids=local_tokens, image_token_id=IMAGE_PAD, stats=stats,
                                 requires_grad=spec.get("requires_grad"))
    loss = lm.loss(embeds, local_labels, local_weights)
    loss.backward()

    # Sum everything over the CP group in one all-reduce.
    names, parts, missing = [], [loss.detach().reshape(1)], []
    for prefix, module in (("encoder", encoder), ("lm", lm)):
        for pname, param in module.named_parameters():
            if not param.requires_grad:
                continue
            if param.grad is None:
                missing.append(f"{prefix}.{pname}")
            names.append(f"{prefix}.{pname}")
            parts.append((param.grad if param.grad is not None else torch.zeros_like(param))
                         .reshape(-1))
    pixel_grads = [torch.zeros_like(p, dtype=dtype) for p in pack.pixels]
    if not frozen and local_pixels.grad is not None:
        for i, g in zip(mine, torch.split(local_pixels.grad, [p.shape[0] for p in pixels])):
            pixel_grads[i] += g
    parts.extend(g.reshape(-1) for g in pixel_grads)
    flat = torch.cat(parts)
    dist.all_reduce(flat, group=group)

    report = {"rank": rank, "missing_grads": missing, "stats": vars(stats).copy(),
              "encoded": list(mine)}
    reports = [None] * cp
    dist.all_gather_object(reports, report, group=group)
    if global_rank == 0:
        offset = 1
        grads = {}
        for pname, part in zip(names, parts[1:1 + len(names)]):
            grads[pname] = flat[offset:offset + part.numel()]
            offset += part.numel()
        pixel_out = []
        for p in pack.pixels:
            pixel_out.append(flat[offset:offset + p.numel()].reshape(p.shape))
            offset += p.numel()
        torch.save({"loss": flat[0], "grads": grads, "pixel_grads": pixel_out,
                    "reports": reports, "hidden": embeds.shape[-1],
                    "itemsize": embeds.element_size()},
                   os.path.join(out_dir, f"{name}.pt"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--init", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenarios", required=True, help="JSON {name: spec}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=120))
    coco = load_coco()
    for name, spec in json.loads(args.scenarios).items():
        run_scenario(name, spec, coco, args.rank, args.world, args.out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
