"""mmpt.torch.vision_dp in one process: CP = 1 (no collective), the naive policy's local-only
routing, and the errors a bad call gets."""

import pytest
import torch

import mmpt
from mmpt.torch import EmulatedCpRank, ExchangeStats, exchange_embeddings, vision_dp_embed
from vdp_model import IMAGE_PAD, build_models, load_coco, make_pack, shard_tokens


def _single_rank(pack):
    """CP = 1 routing, and the pack's tokens in its (padded) THD layout."""
    split = mmpt.split_thd(pack.seq_lengths, 1)
    return mmpt.assign_vision(split, pack.images(), "cost"), shard_tokens(pack, split, 0)[0]


def test_cp1_embed_places_every_image_row_at_its_pad_token():
    pack = make_pack(load_coco(), 3, 4)
    encoder, lm = build_models(0)
    routing, tokens = _single_rank(pack)
    stats = ExchangeStats()
    embeds = vision_dp_embed(encoder, torch.cat(pack.pixels), torch.tensor(pack.grids),
                             lm.embed_tokens(tokens), routing, None, 0, input_ids=tokens,
                             image_token_id=IMAGE_PAD, stats=stats)
    rows = encoder(torch.cat(pack.pixels), torch.tensor(pack.grids))
    pads = (tokens == IMAGE_PAD).nonzero().reshape(-1)
    torch.testing.assert_close(embeds[pads], rows, rtol=0, atol=0)
    text = (tokens != IMAGE_PAD).nonzero().reshape(-1)
    torch.testing.assert_close(embeds[text], lm.embed_tokens(tokens)[text], rtol=0, atol=0)
    assert stats.collectives == 0 and stats.forward_bytes_sent == 0
    # [1, tokens, hidden] works the same way, and at CP 1 no rank nor process group is needed.
    batched = vision_dp_embed(encoder, torch.cat(pack.pixels), torch.tensor(pack.grids),
                              lm.embed_tokens(tokens).unsqueeze(0), routing)
    torch.testing.assert_close(batched[0], embeds, rtol=0, atol=0)


def test_bad_calls_raise_with_the_reason():
    pack = make_pack(load_coco(), 3, 4)
    encoder, lm = build_models(0)
    routing, tokens = _single_rank(pack)
    embeds = lm.embed_tokens(tokens)
    with pytest.raises(ValueError, match="encoder returned"):
        exchange_embeddings(torch.zeros(3, 32, dtype=torch.float64), routing, None, 0)
    shifted = torch.roll(tokens, 1)
    with pytest.raises(ValueError, match="image-pad tokens"):
        vision_dp_embed(encoder, torch.cat(pack.pixels), torch.tensor(pack.grids), embeds,
                        routing, None, 0, input_ids=shifted, image_token_id=IMAGE_PAD)
    with pytest.raises(ValueError, match="shard has"):
        vision_dp_embed(encoder, torch.cat(pack.pixels), torch.tensor(pack.grids), embeds[:10],
                        routing, None, 0)
    with pytest.raises(ValueError, match=r"\[tokens, hidden\]"):
        vision_dp_embed(encoder, torch.cat(pack.pixels), torch.tensor(pack.grids),
                        embeds.reshape(2, -1, 32), routing, None, 0)
    cp2 = mmpt.assign_vision(mmpt.split_thd(pack.seq_lengths, 2), pack.images(), "cost")
    with pytest.raises(RuntimeError, match="not initialized"):
        exchange_embeddings(torch.zeros(0, 32), cp2)
    # The CP vocabulary: a CP rank is cp_rank everywhere; the old keyword names the new one.
    with pytest.raises(mmpt.InvalidArgumentError, match="rank= is now cp_rank="):
        exchange_embeddings(torch.zeros(0, 32), cp2, None, rank=0)
    with pytest.raises(mmpt.InvalidArgumentError, match="rank= is now cp_rank="):
        vision_dp_embed(encoder, torch.cat(pack.pixels), torch.tensor(pack.grids), embeds,
                        routing, None, rank=0)


def test_videos_take_their_place_among_the_vision_items():
    """A pack's vision items are its images, then its videos; with mbs 2 the micro-step's items
    interleave (image 0, video 1, image 2): each encoder call's rows go to their items."""
    from mmpt.routing import RowSegment, Routing

    def encoder(pixels, grid):  # one row per 4 patches (merge 2), its mean, as width 3
        return pixels.reshape(-1, 4, pixels.shape[1]).mean(dim=(1, 2)).unsqueeze(1).repeat(1, 3)

    image_rows = [1, 2, 1]  # image 0: 4 patches; video 1: 2 grid steps x 4 patches; image 2
    routing = Routing.create(1, image_rows, [[0, 1, 2]], [[
        RowSegment(0, 0, 1, 1, 0), RowSegment(1, 0, 2, 3, 0), RowSegment(2, 0, 1, 6, 0)]])
    images = torch.cat([torch.full((4, 6), 1.0), torch.full((4, 6), 3.0)])
    video = torch.full((8, 6), 2.0)
    video[4:] = 2.5
    embeds = torch.zeros(8, 3)
    ids = torch.tensor([0, 7, 0, 8, 8, 0, 7, 0])
    out = vision_dp_embed(encoder, images, torch.tensor([[1, 2, 2], [1, 2, 2]]), embeds, routing,
                          None, 0, input_ids=ids, image_token_id=7, video_token_id=8,
                          videos=(video, torch.tensor([[2, 2, 2]]), [0, 2], [1]))
    assert out[:, 0].tolist() == [0, 1.0, 0, 2.0, 2.5, 0, 3.0, 0]
    with pytest.raises(ValueError, match="items"):
        vision_dp_embed(encoder, images, torch.tensor([[1, 2, 2], [1, 2, 2]]), embeds, routing,
                        None, 0, videos=(video, torch.tensor([[2, 2, 2]]), [0, 1], [2]))


@pytest.mark.parametrize("policy", ["cost", "count", "naive"])
def test_an_emulated_cp_rank_does_its_own_work_alone(policy):
    """mmpt.torch.EmulatedCpRank (bench/replay_step.py's CP in one process): a rank encodes only
    its images, its own rows land at their pads, other ranks' rows are zeros, and the backward
    reaches its encoder."""
    pack = make_pack(load_coco(), 3, 6)
    encoder, lm = build_models(0)
    split = mmpt.split_thd(pack.seq_lengths, 2)
    routing = mmpt.assign_vision(split, pack.images(), policy)
    for rank in range(2):
        tokens = shard_tokens(pack, split, rank)[0]
        mine = list(routing.encoded[rank])
        pixels = torch.cat([pack.pixels[i] for i in mine])
        grids = torch.tensor([pack.grids[i] for i in mine])
        encoder.zero_grad()
        embeds = vision_dp_embed(encoder, pixels, grids, lm.embed_tokens(tokens), routing,
                                 EmulatedCpRank(rank, 2), input_ids=tokens,
                                 image_token_id=IMAGE_PAD)
        rows = {i: r for i, r in zip(mine, torch.split(encoder(pixels, grids), [
            routing.image_rows[i] for i in mine]))}
        pads = (tokens == IMAGE_PAD).nonzero().reshape(-1).tolist()
        placed = 0
        for seg in sorted(routing.consumed[rank], key=lambda s: s.local_offset):
            got = embeds[pads[placed:placed + seg.row_count]]
            if seg.source_rank == rank:
                want = rows[seg.image][seg.row_begin:seg.row_begin + seg.row_count]
                torch.testing.assert_close(got, want, rtol=0, atol=0)
            else:
                assert not got.any(), (rank, seg)
            placed += seg.row_count
        assert placed == len(pads)
        embeds.sum().backward()
        assert all(p.grad is not None for p in encoder.parameters())
    with pytest.raises(ValueError, match="CP rank 2 of a CP group of 2"):
        EmulatedCpRank(2, 2)
