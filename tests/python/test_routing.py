"""Routing maps: the C++ cp module (mmpt.assign_vision) agrees with the test oracle, and
mmpt.Routing rejects maps the exchange cannot run."""

import random

import pytest

import mmpt
import cp_oracle
from mmpt.routing import RowSegment, Routing
from vdp_model import load_coco, make_pack


def random_pack(rng):
    """Sub-sequence lengths and non-overlapping images inside them (token spans, costs)."""
    seq_lengths, images, offset = [], [], 0
    for _ in range(rng.randint(1, 6)):
        length = rng.randint(1, 300)
        position = 0
        while rng.random() < 0.7:
            start = position + rng.randint(0, 20)
            count = rng.randint(1, 120)
            if start + count > length:
                break
            # Ties in cost on purpose (the tie rules must agree too).
            images.append((offset + start, count, float(rng.choice([count, 64, 100]))))
            position = start + count
        seq_lengths.append(length)
        offset += length
    return seq_lengths, images


@pytest.mark.parametrize("policy", ["naive", "count", "cost"])
def test_cpp_routing_equals_the_oracle_on_random_packs(policy):
    rng = random.Random(20261129)
    checked = 0
    for trial in range(300):
        seq_lengths, images = random_pack(rng)
        cp = rng.choice([1, 2, 3, 4, 8])
        expected = cp_oracle.route(seq_lengths, images, cp, policy)
        split = mmpt.split_thd(seq_lengths, cp)
        cu, cu_padded, indices = cp_oracle.split_thd(seq_lengths, cp)
        assert split.cu_seqlens.tolist() == cu and split.cu_seqlens_padded.tolist() == cu_padded
        for rank in range(cp):
            assert split.token_indices(rank).tolist() == indices[rank]
        actual = mmpt.assign_vision(split, images, policy)
        assert actual == expected, f"trial {trial}: {seq_lengths} {images} cp {cp}"
        checked += len(images)
    assert checked > 300


@pytest.mark.parametrize("cp", [2, 4])
@pytest.mark.parametrize("policy", ["naive", "count", "cost"])
def test_cpp_routing_equals_the_oracle_on_coco_packs(policy, cp):
    coco = load_coco()
    for seed in range(20):
        pack = make_pack(coco, seed, 6, text_only=[seed % 6])
        split = mmpt.split_thd(pack.seq_lengths, cp)
        assert mmpt.assign_vision(split, pack.images(), policy) == cp_oracle.route(
            pack.seq_lengths, pack.images(), cp, policy)


def test_cpp_errors_name_the_image():
    split = mmpt.split_thd([10, 10], 2)
    with pytest.raises(mmpt.InvalidArgumentError, match="image 1"):
        mmpt.assign_vision(split, [(0, 4, 1.0), (8, 4, 1.0)], "cost")  # crosses sample 0's end
    with pytest.raises(mmpt.InvalidArgumentError, match="unknown vision policy 'fast'"):
        mmpt.assign_vision(split, [(0, 4, 1.0)], "fast")
    with pytest.raises(mmpt.InvalidArgumentError):
        mmpt.split_thd([10], 0)
    with pytest.raises(mmpt.InvalidArgumentError, match="rank 2"):
        split.token_indices(2)


def _simple():
    # Two images of 3 and 2 rows; rank 0 encodes image 0, rank 1 image 1.
    return dict(cp=2, image_rows=[3, 2], encoded=[[0], [1]],
                consumed=[[RowSegment(0, 0, 2, 0, 0), RowSegment(1, 0, 1, 5, 1)],
                          [RowSegment(0, 2, 1, 1, 0), RowSegment(1, 1, 1, 3, 1)]])


def test_indices_for_each_rank():
    routing = Routing.create(**_simple())
    assert routing.local_rows(0) == 3 and routing.local_rows(1) == 2
    zero, one = routing.indices(0), routing.indices(1)
    # Rank 0 sends its image 0 row 2 to rank 1 and receives image 1 row 0.
    assert zero.send_index == [2] and zero.send_splits == [0, 1] and zero.recv_splits == [0, 1]
    assert zero.gather_index == [0, 1, 3] and zero.positions == [0, 1, 5]
    assert one.send_index == [0] and one.send_splits == [1, 0] and one.recv_splits == [1, 0]
    # Rank 1's local layout: image 0 row 2 (received, after its 2 local rows) then image 1 row 1.
    assert one.gather_index == [2, 1] and one.positions == [1, 3]
    assert sum(zero.send_splits) == 1 and sum(one.recv_splits) == 1
    assert routing.cross_rank_rows() == 2


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(encoded=[[0], []]), "source rank 1 does not encode it"),
    (lambda d: d.update(encoded=[[0, 0], [1]]), "not ascending"),
    (lambda d: d.update(image_rows=[4, 2]), "item 0 has 4 rows but 3 are consumed"),
    (lambda d: d["consumed"][0].append(RowSegment(1, 1, 1, 9, 1)), "2 rows but 3"),
    (lambda d: d["consumed"][1].insert(0, RowSegment(1, 1, 5, 0, 1)), "exceed its 2 rows"),
    (lambda d: d["consumed"][0].__setitem__(1, RowSegment(1, 0, 1, 1, 1)),
     "offset 1 precedes the end 2"),
    (lambda d: d["consumed"][0].__setitem__(1, RowSegment(1, 0, 1, 5, 7)),
     "source rank 7 does not encode it"),
    (lambda d: d.update(cp=3), "for cp 3"),
])
def test_invalid_routings_are_rejected_with_the_fault_named(change, message):
    spec = _simple()
    change(spec)
    with pytest.raises(ValueError, match=message):
        Routing.create(**spec)


@pytest.mark.parametrize("policy", ["count", "cost", "naive"])
def test_the_flat_batch_form_round_trips(policy):
    rng = random.Random(7)
    for _ in range(50):
        seq_lengths, images = random_pack(rng)
        routing = mmpt.assign_vision(mmpt.split_thd(seq_lengths, 4), images, policy)
        rows, encoder, routes = routing.to_arrays()
        rng.shuffle(routes)  # any order: segments are sorted per consumer
        assert Routing.from_arrays(4, rows, encoder, routes, policy) == routing


def test_the_flat_form_rejects_bad_ranks():
    with pytest.raises(ValueError, match="encoder 5"):
        Routing.from_arrays(2, [1], [5], [(0, 0, 0, 1, 0, 5)])
    with pytest.raises(ValueError, match="consumer 3"):
        Routing.from_arrays(2, [1], [0], [(3, 0, 0, 1, 0, 0)])
    with pytest.raises(ValueError, match="source 4"):
        Routing.from_arrays(2, [1], [0], [(0, 0, 0, 1, 0, 4)])


def test_from_batch_reads_the_loader_batch_keys():
    import numpy as np

    routing = mmpt.assign_vision(mmpt.split_thd([300, 200], 2), [(10, 150, 3.0), (320, 90, 1.0)],
                                 "cost")
    rows, encoder, routes = routing.to_arrays()
    batch = {"cp": 2, "image_rows": np.array(rows, dtype=np.int32),
             "image_encoder": np.array(encoder, dtype=np.int32),
             "routes": np.array(routes, dtype=np.int32).reshape(-1, 6), "cp_rank": 1}
    mine = routing.indices(1)
    batch.update({"exchange_send_index": np.array(mine.send_index, dtype=np.int32),
                  "exchange_splits": np.array(mine.send_splits + mine.recv_splits, np.int32),
                  "exchange_gather_index": np.array(mine.gather_index, dtype=np.int32),
                  "exchange_positions": np.array(mine.positions, dtype=np.int32)})
    read = Routing.from_batch(batch)
    assert read.consumed == routing.consumed and read.encoded == routing.encoded
    # The batch's own rank's indices are the shipped ones, the other's asked of C++.
    assert read.shipped == (1, mine) and read.indices(1) == mine
    assert read.indices(0) == routing.indices(0)
    # CP 1: one rank encodes and consumes every image.
    single = Routing.from_arrays(1, [6], [0], [(0, 0, 0, 6, 3, 0)])
    assert single.encoded == ((0,),) and single.indices(0).positions == list(range(3, 9))


def test_the_old_class_name_is_refused_naming_the_new_one():
    with pytest.raises(AttributeError, match=r"mmpt.VisionRouting is now mmpt.Routing"):
        mmpt.VisionRouting
