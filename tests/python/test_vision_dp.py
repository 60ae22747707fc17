"""Vision DP under CP, multi-process: CP = 2 and 4 give CP = 1's loss and gradients.

Each CP size runs every scenario in one group of worker processes (vdp_worker.py, gloo, CPU)
started as subprocesses with a deadline: a hang fails the test instead of stalling it. The
reference (CP = 1) runs here, in the test process, on the same pack and initial weights.
"""

import json
import os
import sys
import textwrap

import pytest
import torch

import mmpt
import cp_oracle
from ranks import run_ranks
from vdp_model import (build_models, load_coco, make_pack, pack_from_dataset, reference_step,
                       token_weights, write_real_mix)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "vdp_worker.py")
DEADLINE_SECONDS = 240

# Pack seed 3: five COCO samples. Seed 8 with samples 0 and 2 text-only: one image in the
# pack, so CP ranks without images exist under every policy.
SCENARIOS = {
    "cost": {"seed": 3, "samples": 5, "policy": "cost"},
    "count": {"seed": 3, "samples": 5, "policy": "count"},
    "naive": {"seed": 3, "samples": 5, "policy": "naive"},
    "cost_unweighted": {"seed": 3, "samples": 5, "policy": "cost", "weighted": False},
    "cost_float32": {"seed": 3, "samples": 5, "policy": "cost", "dtype": "float32"},
    "frozen": {"seed": 3, "samples": 5, "policy": "cost", "frozen": True},
    "frozen_no_backward": {"seed": 3, "samples": 5, "policy": "count", "frozen": True,
                           "requires_grad": False},
    "one_image": {"seed": 8, "samples": 3, "policy": "cost", "text_only": [0, 2]},
    "one_image_count": {"seed": 8, "samples": 3, "policy": "count", "text_only": [0, 2]},
    # exchange_embeddings called directly; ranks without images pass torch.zeros(0, hidden).
    "direct_one_image": {"seed": 8, "samples": 3, "policy": "count", "text_only": [0, 2],
                         "direct": True},
    # Two CP groups side by side (DP 2 × CP world/2): group ranks, not global ranks, route.
    "dp2": {"seed": 3, "samples": 5, "policy": "cost", "dp": 2},
    # A pack of a prepared corpus (mmpt.prepare on the real-data mix): two COCO caption pairs
    # and an mmc4 document with several images, token ids from the dataset's .tok.
    "prepared_cost": {"dataset": True, "indices": [0, 1, 60], "policy": "cost"},
    "prepared_count": {"dataset": True, "indices": [2, 61, 3], "policy": "count"},
}


def pack_for(spec, coco):
    """The pack of a scenario, as every worker builds it."""
    if spec.get("dataset"):
        return pack_from_dataset(mmpt.DatasetReader(spec["dataset"]), spec["indices"])
    return make_pack(coco, spec["seed"], spec["samples"], text_only=spec.get("text_only", ()))


@pytest.fixture(scope="module")
def coco():
    return load_coco()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, coco):
    """The real-data mix prepared by mmpt.prepare (60 COCO pairs, then 12 mmc4 documents);
    injected into the scenarios that name a dataset."""
    root = tmp_path_factory.mktemp("prepared")
    inputs = write_real_mix(str(root / "inputs"), coco)
    report = mmpt.prepare(inputs, str(root / "dataset"), threads=1, on_error="fail")
    assert report["samples"] == 72 and report["skipped"] == 0, report["summary"]
    for spec in SCENARIOS.values():
        if spec.get("dataset"):
            spec["dataset"] = str(root / "dataset")
    return str(root / "dataset")


@pytest.fixture(scope="module", params=[2, 4], ids=lambda w: f"cp{w}")
def group(request, tmp_path_factory, prepared):
    world = request.param
    out = tmp_path_factory.mktemp(f"cp{world}")
    scenarios = json.dumps(SCENARIOS)
    run_ranks(world, lambda rank: [sys.executable, WORKER, "--rank", str(rank), "--world",
                                   str(world), "--init", f"file://{out}/store", "--out",
                                   str(out), "--scenarios", scenarios], DEADLINE_SECONDS)
    return world, {name: torch.load(out / f"{name}.pt") for name in SCENARIOS}


def _tolerance(spec):
    return (1e-4, 1e-5) if spec.get("dtype") == "float32" else (1e-9, 1e-11)


@pytest.mark.dist
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_cp_matches_cp1_loss_and_gradients(group, coco, name):
    world, results = group
    spec = SCENARIOS[name]
    result = results[name]
    cp = world // spec.get("dp", 1)
    dtype = getattr(torch, spec.get("dtype", "float64"))
    pack = pack_for(spec, coco)
    encoder, lm = build_models(0, dtype)
    weights = token_weights(pack, cp, spec.get("weighted", True))
    loss, grads, pixel_grads = reference_step(pack, encoder, lm, weights,
                                              frozen=spec.get("frozen", False))
    rtol, atol = _tolerance(spec)

    torch.testing.assert_close(result["loss"].to(dtype), loss, rtol=rtol, atol=atol)
    assert sorted(result["grads"]) == sorted(grads)
    for pname, grad in grads.items():
        torch.testing.assert_close(result["grads"][pname].reshape(grad.shape), grad, rtol=rtol,
                                   atol=atol, msg=lambda m: f"{name} cp{world} {pname}: {m}")
    if not spec.get("frozen"):
        assert any(g.abs().sum() > 0 for g in pixel_grads)
        for image, grad in enumerate(pixel_grads):
            torch.testing.assert_close(result["pixel_grads"][image], grad, rtol=rtol, atol=atol,
                                       msg=lambda m: f"{name} cp{world} image {image}: {m}")
    # Every trainable parameter got a gradient on every rank, images or not (a gradient
    # all-reduce over them cannot disagree between ranks). The bare exchange leaves that to
    # the caller: there, ranks without images have no encoder gradients.
    for report in result["reports"]:
        if spec.get("direct") and not report["encoded"]:
            assert all(n.startswith("encoder.") for n in report["missing_grads"])
            assert report["missing_grads"]
        else:
            assert report["missing_grads"] == [], report


@pytest.mark.dist
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_bytes_sent_match_the_routing_maps(group, coco, name):
    world, results = group
    spec = SCENARIOS[name]
    result = results[name]
    world = world // spec.get("dp", 1)  # the CP group's size
    pack = pack_for(spec, coco)
    routing = cp_oracle.route(pack.seq_lengths, pack.images(), world, spec["policy"])
    row_bytes = result["hidden"] * result["itemsize"]
    backward = spec.get("requires_grad", True) is not False
    cross = routing.cross_rank_rows()
    for rank, report in enumerate(result["reports"]):
        stats = report["stats"]
        assert report["encoded"] == list(routing.encoded[rank])
        # Rows rank sends: those of its images that other ranks' shards consume.
        sent = sum(seg.row_count for r in range(world) if r != rank
                   for seg in routing.consumed[r] if seg.source_rank == rank)
        received = sum(seg.row_count for seg in routing.consumed[rank] if seg.source_rank != rank)
        assert stats["forward_rows_sent"] == sent
        assert stats["forward_bytes_sent"] == sent * row_bytes
        assert stats["forward_bytes_received"] == received * row_bytes
        assert stats["backward_bytes_sent"] == (received * row_bytes if backward else 0)
        assert stats["backward_bytes_received"] == (sent * row_bytes if backward else 0)
        # Every rank joins every collective, with images or without.
        assert stats["collectives"] == (0 if cross == 0 else 1 + int(backward))
        print(f"cp{world} {name} rank {rank}: sent {stats['forward_bytes_sent']} B forward, "
              f"{stats['backward_bytes_sent']} B backward")
    if spec["policy"] == "naive" or world == 1:
        assert cross == 0  # every consumer encodes for itself: nothing to move
    else:
        assert cross > 0


@pytest.mark.parametrize("world", [2, 4])
def test_scenarios_cover_straddling_images_and_ranks_without_images(coco, world):
    """The packs above exercise what the issue names, at both CP sizes."""
    pack = make_pack(coco, SCENARIOS["cost"]["seed"], SCENARIOS["cost"]["samples"])
    routing = mmpt.assign_vision(mmpt.split_thd(pack.seq_lengths, world), pack.images(), "cost")
    consumers = [{r for r in range(world) for s in routing.consumed[r] if s.image == i}
                 for i in range(routing.num_images)]
    assert any(len(c) >= 2 for c in consumers), "an image straddles a chunk boundary"
    assert any(r not in routing.encoders(i) for i, c in enumerate(consumers) for r in c)
    spec = SCENARIOS["one_image"]
    pack = make_pack(coco, spec["seed"], spec["samples"], text_only=spec["text_only"])
    for policy in ("cost", "count"):
        routing = mmpt.assign_vision(mmpt.split_thd(pack.seq_lengths, world), pack.images(),
                                     policy)
        assert routing.num_images == 1
        assert sum(1 for images in routing.encoded if not images) == world - 1
        assert routing.cross_rank_rows() > 0, "the one image is consumed by a rank without it"


HANG_SCRIPT = textwrap.dedent("""
    import sys, datetime, time, torch, torch.distributed as dist
    rank = int(sys.argv[1])
    dist.init_process_group("gloo", init_method=sys.argv[2], rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=300))
    if rank == 0:
        out = torch.empty(2, 3)
        dist.all_to_all_single(out, torch.ones(2, 3), [1, 1], [1, 1])
    else:  # rank 1 "has no images", skips the collective and goes on with its step
        time.sleep(300)
""")


@pytest.mark.dist
def test_a_rank_that_skips_the_collective_is_caught_as_a_hang(tmp_path):
    """The harness's deadline turns a hang into a failure (a control for the tests above)."""
    script = tmp_path / "hang.py"
    script.write_text(HANG_SCRIPT)
    with pytest.raises(TimeoutError, match="hang"):
        run_ranks(2, lambda rank: [sys.executable, str(script), str(rank),
                                   f"file://{tmp_path}/store"], timeout=4)
