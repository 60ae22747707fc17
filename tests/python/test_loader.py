"""mmpt.Dataset / mmpt.Planner / mmpt.Loader on a prepared real-data corpus: batches as NumPy
views of mmpt's memory, Megatron-style tensors, saving and restoring the position, and bad
input at load time raised as mmpt exceptions with the C++ message."""

import gc
import os
import shutil
import threading
import time

import numpy as np
import pytest

import load_corpus
import mmpt
from mmpt.torch import megatron_batch, to_tensors


@pytest.fixture(scope="module")
def dataset_dir(coco_dataset):
    return coco_dataset  # the session's prepared corpus (conftest.py)


def make_loader(path, steps=2, rank=0, dp=2, ga=2, **kwargs):
    dataset = mmpt.Dataset(path)
    planner = mmpt.Planner(dataset, seq_len=2048, dp=dp, ga=ga, seed=5, vision="qwen2-vl")
    return mmpt.Loader(dataset, planner, dp_rank=rank, steps=steps, **kwargs)


def digest(batch):
    return [mmpt.hash64(np.ascontiguousarray(batch[k]))
            for k in ("tokens", "labels", "position_ids", "pixel_values")]


def test_batches_are_views_of_mmpt_memory_with_the_documented_shapes(dataset_dir):
    loader = make_loader(dataset_dir, steps=1)
    batch = next(loader)
    t = batch["tokens"].shape[0]
    assert batch["tokens"].dtype == np.int32 and batch["labels"].dtype == np.int32
    assert batch["loss_mask"].dtype == np.float32 and batch["loss_mask"].shape == (t,)
    assert batch["position_ids"].shape == (3, t)
    assert batch["cu_seqlens_padded"][-1] == t and batch["cu_seqlens"][-1] <= t
    assert batch["max_seqlen"] == np.diff(batch["cu_seqlens_padded"]).max()
    patches = int(np.prod(batch["image_grid_thw"], axis=1).sum())
    assert batch["pixel_values"].shape == (patches, 1176)
    assert batch["pixel_values"].dtype == np.float32
    assert np.all((batch["labels"] == -100) == (batch["loss_mask"] == 0))
    for key in ("tokens", "labels", "loss_mask", "position_ids", "pixel_values"):
        array = batch[key]
        assert not array.flags.owndata, key  # a view: the memory is the C++ Batch's
        assert array.flags.c_contiguous, key
    # The arrays keep their batch alive after the loader is gone.
    tokens, pixels = batch["tokens"], batch["pixel_values"]
    expected = (int(tokens.sum()), float(pixels[:10].sum()))
    del batch, loader
    gc.collect()
    assert (int(tokens.sum()), float(pixels[:10].sum())) == expected
    # Tensors share the same memory.
    batch = next(make_loader(dataset_dir, steps=1))
    tensors = to_tensors(batch)
    assert tensors["pixel_values"].data_ptr() == batch["pixel_values"].ctypes.data
    meg = megatron_batch(batch)
    assert meg["tokens"].shape == (1, t) and meg["position_ids"].shape == (3, 1, t)
    assert meg["packed_seq_params"]["qkv_format"] == "thd"
    # A last pipeline stage's batch (Loader(rank=...)) has no inputs: None, as Megatron has it.
    last = {k: v for k, v in batch.items()
            if k not in ("tokens", "position_ids", "pixel_values", "image_grid_thw")}
    meg = megatron_batch(last)
    assert meg["tokens"] is None and meg["position_ids"] is None and meg["pixel_values"] is None
    assert meg["labels"].shape == (1, t) and meg["loss_mask"].shape == (1, t)


def test_ranks_get_different_samples_and_plan_hashes_agree(dataset_dir):
    first = [next(make_loader(dataset_dir, steps=1, rank=r)) for r in range(2)]
    assert first[0]["plan_hash"] == first[1]["plan_hash"]
    mmpt.check_plan_agreement([b["plan_hash"] for b in first], 0)
    a = set(zip(first[0]["sample_source"], first[0]["sample_index"]))
    b = set(zip(first[1]["sample_source"], first[1]["sample_index"]))
    assert a and b and not (a & b)
    with pytest.raises(mmpt.InternalError, match="rank 1 has"):
        mmpt.check_plan_agreement([1, 2], 0)


def test_state_dict_restores_the_same_batches(dataset_dir):
    loader = make_loader(dataset_dir, steps=4)
    for _ in range(3):
        next(loader)
    state = loader.state_dict()
    assert (state["step"], state["micro_step"]) == (1, 1)
    expected = [digest(b) for b in loader]
    assert len(expected) == 5
    fresh = make_loader(dataset_dir, steps=4)
    fresh.load_state_dict(state)
    assert [digest(b) for b in fresh] == expected


def test_planner_takes_the_datasets_vision_preset_and_the_shared_defaults(dataset_dir):
    planner = mmpt.Planner(dataset_dir)  # load_corpus prepared it with --vision qwen2-vl
    # The layout defaults are the mmpt command's (plan::Layout): sizes 1, 8192, microstep.
    assert planner.layout == dict(seq_len=8192, dp=1, ga=1, mbs=1, cp=1, tp=1, pp=1, ep=1,
                                  sync="microstep")
    assert mmpt.Planner(dataset_dir, vision="qwen2-vl", dp=2).layout["dp"] == 2
    with pytest.raises(mmpt.InvalidArgumentError, match="'qwen3-vl'.*'qwen2-vl'"):
        mmpt.Planner(dataset_dir, vision="qwen3-vl")


def test_state_restores_under_another_layout_but_not_another_stream(dataset_dir):
    planner = mmpt.Planner(dataset_dir, dp=2, ga=2)
    assert planner.position == (0, 0)
    for _ in mmpt.Loader(dataset_dir, planner, dp_rank=1, steps=1):
        pass
    assert planner.position == (1, 0)  # its Loader moved it past step 0
    state = planner.state_dict()
    with pytest.raises(mmpt.InvalidArgumentError, match=r"takes no \(step, micro_step\)"):
        planner.state_dict(1)
    resume = mmpt.Planner(dataset_dir, ga=2).load_state_dict(state)
    assert resume == dict(step=1, micro_step=0, changed=["dp 2 → 1"])
    with pytest.raises(mmpt.InvalidArgumentError, match="saved at seed 0, now seed 1"):
        mmpt.Planner(dataset_dir, dp=2, ga=2, seed=1).load_state_dict(state)


def test_a_step_holds_each_sample_once_across_epochs(dataset_dir):
    # 96 caption pairs, about 20 a step: the stream wraps into the next epoch every few steps,
    # and a sample drawn again while its step holds it waits for the next step.
    dataset = mmpt.Dataset(dataset_dir)
    planner = mmpt.Planner(dataset, seq_len=2048, dp=2, cp=2, ga=2, seed=5, vision="qwen2-vl")
    placed, first_wrap = 0, None
    for step in range(30):
        samples = [s for rank in planner.plan(step)["rank_samples"] for s in rank]
        assert len(samples) == len(set(samples)), f"step {step} holds a sample twice"
        placed += len(samples)
        if first_wrap is None and placed > dataset.num_samples:
            first_wrap = step
    assert placed > 3 * dataset.num_samples
    # The loaders of both DP ranks deliver the step that crosses the first wrap as planned.
    expected = planner.plan(first_wrap)["rank_samples"]
    loaded = []
    for rank in range(2):
        own = mmpt.Planner(dataset, seq_len=2048, dp=2, cp=2, ga=2, seed=5, vision="qwen2-vl")
        samples = []
        for batch in mmpt.Loader(dataset, own, dp_rank=rank, steps=1, start_step=first_wrap):
            samples += zip(batch["sample_source"].tolist(), batch["sample_index"].tolist())
        assert samples == expected[rank]
        loaded += samples
    assert len(loaded) == len(set(loaded))


def test_plans_and_batches_count_the_samples_the_plan_dropped(dataset_dir):
    # At seq_len 384 a 640x480 image (391 tokens under qwen2-vl) is longer than a pack, and
    # overlong="drop" drops a caption pair that overflows with its text too: the plan lists
    # each, and every batch of the step carries the step's count.
    dataset = mmpt.Dataset(dataset_dir)
    planner = mmpt.Planner(dataset, seq_len=384, dp=1, ga=2, seed=5, vision="qwen2-vl",
                           overlong="drop")
    plans = [planner.plan(step) for step in range(3)]
    assert sum(len(p["dropped"]) for p in plans) > 0
    for p in plans:
        placed = {tuple(s) for rank in p["rank_samples"] for s in rank}
        assert placed and not placed & {tuple(d) for d in p["dropped"]}
    batches = list(mmpt.Loader(dataset, planner, steps=3))
    assert len(batches) == 6
    for batch in batches:
        assert batch["plan_dropped"] == len(plans[batch["step"]]["dropped"])


def test_a_dataset_smaller_than_a_step_needs_allow_repeat(tmp_path):
    path = load_corpus.build(str(tmp_path), samples=3)
    # Eight packs cannot each get a sample of their own.
    with pytest.raises(mmpt.InvalidArgumentError,
                       match=r"step needs 8 packs .* 3 samples .*allow_repeat=True"):
        mmpt.Planner(path, seq_len=2048, dp=2, ga=2, mbs=2)
    # Three caption pairs (about 1,200 tokens) cannot fill a pack of 2,048 once each.
    with pytest.raises(mmpt.InvalidArgumentError, match=r"but the corpus has 3,"):
        mmpt.Planner(path, seq_len=2048)
    plan = mmpt.Planner(path, seq_len=2048, dp=2, ga=2, mbs=2, allow_repeat=True).plan(0)
    samples = [s for rank in plan["rank_samples"] for s in rank]
    assert len(samples) >= 8 and len(set(samples)) == 3


def test_blocking_next_releases_the_gil(dataset_dir):
    loader = make_loader(dataset_dir, steps=4, threads=1, prefetch_micro_steps=1)
    done = threading.Event()
    ticks = 0

    def consume():
        for _ in loader:
            pass
        done.set()

    thread = threading.Thread(target=consume)
    thread.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    assert ticks > 5


def test_bad_arguments_and_paths_raise_with_the_cpp_message(tmp_path, dataset_dir):
    with pytest.raises(mmpt.NotFoundError, match="mmpt.json"):
        mmpt.Dataset(str(tmp_path / "nothing"))
    with pytest.raises(mmpt.InvalidArgumentError, match="on_error must be fail or skip"):
        make_loader(dataset_dir, on_error="drop")
    for old, new in [("on_bad_sample", "on_error"), ("prefetch", "prefetch_micro_steps"),
                     ("timeout", "timeout_seconds")]:
        with pytest.raises(mmpt.InvalidArgumentError, match=f"{old}= is now {new}="):
            make_loader(dataset_dir, **{old: 1})
    with pytest.raises(mmpt.InvalidArgumentError, match="dp rank 5"):
        make_loader(dataset_dir, rank=5)


def damaged_copy(dataset_dir, tmp_path, damage):
    copy = str(tmp_path / "damaged")
    shutil.copytree(dataset_dir, copy)
    damage(copy)
    return copy


def corrupt_first_shard(path):
    zips = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs
                  if f.endswith(".zip"))
    with open(zips[0], "r+b") as f:
        size = f.seek(0, 2)
        for offset in range(1000, size - 8, 2000):  # inside every image of the shard
            f.seek(offset)
            f.write(b"\xde\xad\xbe\xef")


def test_corrupted_images_fail_or_are_dropped_by_policy(dataset_dir, tmp_path):
    path = damaged_copy(dataset_dir, tmp_path, corrupt_first_shard)
    with pytest.raises(mmpt.CorruptError, match="CRC-32"):
        for _ in make_loader(path, steps=3):
            pass
    dropped, kept = [], 0
    for batch in make_loader(path, steps=3, on_error="skip"):
        dropped += batch["dropped"]
        kept += len(batch["sample_index"])
        assert len(batch["image_grid_thw"]) == len(batch["sample_index"])
    assert dropped and kept
    assert all("CRC-32" in d["reason"] for d in dropped)


def test_missing_shard_is_named(dataset_dir, tmp_path):
    def remove_a_zip(path):
        zips = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs
                      if f.endswith(".zip"))
        os.remove(zips[-1])

    path = damaged_copy(dataset_dir, tmp_path, remove_a_zip)
    with pytest.raises(mmpt.Error, match=r"\.zip"):
        for _ in make_loader(path, steps=3):
            pass
    reasons = [d["reason"] for b in make_loader(path, steps=3, on_error="skip")
               for d in b["dropped"]]
    assert reasons and all(".zip" in r for r in reasons)


def image_pad_positions(tokens):
    pad = mmpt.Tokenizer().token_to_id("<|image_pad|>")
    return np.flatnonzero(np.asarray(tokens) == pad).tolist()


def test_every_batch_carries_its_routing_at_cp_1(dataset_dir):
    # Planner and Loader both take the dataset's path as well as a Dataset.
    batch = next(mmpt.Loader(dataset_dir, mmpt.Planner(dataset_dir, seq_len=2048), steps=1))
    routing = batch["routing"]
    assert isinstance(routing, mmpt.Routing) and routing.cp == 1
    images = len(batch["image_grid_thw"])
    assert images > 0 and routing.encoded == (tuple(range(images)),)
    # One row per image token (2×2 merge), at exactly the image placeholders, in token order.
    rows = (np.prod(batch["image_grid_thw"], axis=1) // 4).tolist()
    assert list(routing.image_rows) == rows
    assert routing.indices(0).positions == image_pad_positions(batch["tokens"])
    assert routing.cross_rank_rows() == 0


@pytest.mark.parametrize("policy", ["cost", "count", "naive"])
def test_cp_ranks_get_the_same_routing_and_pixels_of_their_images_only(dataset_dir, policy):
    dataset = mmpt.Dataset(dataset_dir)
    planner = mmpt.Planner(dataset, seq_len=2048, ga=2, cp=2, seed=5, vision_policy=policy)
    ranks = [list(mmpt.Loader(dataset, planner, cp_rank=r, steps=1)) for r in range(2)]
    crossed = 0
    for pair in zip(*ranks):
        routing = pair[0]["routing"]
        assert pair[1]["routing"] == routing  # the plan's, the same on every rank
        crossed += routing.cross_rank_rows()
        for r, batch in enumerate(pair):
            mine = list(routing.encoded[r])
            assert batch["encoded_images"].tolist() == mine
            assert batch["pixel_values"].shape[0] == 4 * sum(routing.image_rows[i] for i in mine)
            assert routing.indices(r).positions == image_pad_positions(batch["tokens"])
            # What the loader shipped for rank r is what cp::RankExchange gives the other rank
            # for r: one derivation, on the wire or asked for.
            assert batch["routing"].shipped[0] == r
            assert batch["routing"].indices(r) == pair[1 - r]["routing"].indices(r)
    assert (crossed == 0) == (policy == "naive")  # vision DP moves rows; naive never does


def test_a_training_step_runs_on_one_process_with_the_batch_routing(dataset_dir):
    """README "Python": tensors in one call, batch["routing"], no process group at CP 1."""
    import torch
    from mmpt.torch import vision_dp_embed

    batch = to_tensors(next(make_loader(dataset_dir, steps=1)))
    assert isinstance(batch["tokens"], torch.Tensor) and batch["routing"].cp == 1

    class Visual(torch.nn.Module):  # one row per image token: Qwen's 2×2 merge
        def __init__(self, patch_dim, hidden):
            super().__init__()
            self.merge = torch.nn.Linear(4 * patch_dim, hidden)

        def forward(self, pixel_values, image_grid_thw):
            return self.merge(pixel_values.reshape(-1, 4 * pixel_values.shape[1]))

    embed = torch.nn.Embedding(mmpt.Tokenizer().vocab_size, 8)
    visual = Visual(batch["pixel_values"].shape[1], 8)
    tokens = embed(batch["tokens"])
    embeds = vision_dp_embed(visual, batch["pixel_values"], batch["image_grid_thw"], tokens,
                             batch["routing"])
    positions = image_pad_positions(batch["tokens"])
    torch.testing.assert_close(embeds[positions], visual(batch["pixel_values"], None))
    others = sorted(set(range(len(tokens))) - set(positions))
    torch.testing.assert_close(embeds[others], tokens[others])
    embeds.sum().backward()
    assert visual.merge.weight.grad.abs().sum() > 0 and embed.weight.grad is not None


def test_none_takes_the_default_tokenizer(dataset_dir):
    """One vocabulary: None, not "", says "the default"."""
    assert mmpt.Tokenizer(None).encode("a picture") == mmpt.Tokenizer().encode("a picture")
    assert len(mmpt.Dataset(dataset_dir, tokenizer=None)) == len(mmpt.Dataset(dataset_dir)) > 0
