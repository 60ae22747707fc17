"""Vision data parallelism under context parallelism: the embedding exchange, with gradients.

Each CP rank encodes only the images the plan gives it (:class:`mmpt.Routing`), then one
all-to-all-v over the CP group moves every embedding row to the rank whose token shard consumes
it. Backward is the reverse all-to-all-v: each encoded row receives the gradient of the token
that consumed it, wherever that token lives, and an image consumed by several ranks gets the SUM
of their gradients (``index_select``'s backward accumulates). Three failure modes a production
team hit (Megatron-Bridge PR #4784) cannot happen here:

* a gradient produced on a rank other than the encoder's is never dropped: it travels back
  through the reverse collective and is added to the encoder's rows;
* a rank with no images still joins every collective, forward and backward: whether the
  collectives run is decided from the routing (the same on every rank) and from grad mode,
  never from the local tensor, and an empty send keeps the autograd graph connected;
* the process group goes to ``autograd.Function.apply`` positionally (``apply`` takes no
  keyword arguments).

The collective is ``torch.distributed.all_to_all_single`` with split sizes, which both gloo
(CPU, torch >= 1.13) and NCCL implement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from ..data import _refuse_old_names
from ..routing import Routing


@dataclass
class ExchangeStats:
    """Bytes and rows this rank moved through the exchange; accumulates over calls."""

    forward_bytes_sent: int = 0
    forward_bytes_received: int = 0
    backward_bytes_sent: int = 0
    backward_bytes_received: int = 0
    forward_rows_sent: int = 0
    forward_rows_received: int = 0
    collectives: int = 0

    def reset(self) -> None:
        self.__init__()


class EmulatedCpRank:
    """One rank of a CP group, emulated in one process: pass it as the group to
    :func:`vision_dp_embed` (and to a model's key/value all-gather) to run exactly the work that
    rank does, on one device, as ``bench/replay_step.py`` times it. What other ranks would send
    is zeros of the right shape: the compute is that rank's (every row it encodes, every key it
    attends to), the values other ranks hold are not, and nothing crosses a wire."""

    def __init__(self, cp_rank: int, cp: int):
        if not 0 <= cp_rank < cp:
            raise ValueError(f"EmulatedCpRank: CP rank {cp_rank} of a CP group of {cp}")
        self.cp_rank, self.cp = int(cp_rank), int(cp)

    def all_to_all_v(self, rows: torch.Tensor, send_splits, recv_splits) -> torch.Tensor:
        """What an all-to-all-v delivers here: this rank's rows to itself, zeros from others."""
        parts = []
        own = torch.split(rows, list(send_splits))[self.cp_rank]
        for source, count in enumerate(recv_splits):
            zeros = rows.new_zeros((count,) + rows.shape[1:])
            parts.append(own if source == self.cp_rank else zeros)
        return torch.cat(parts) if parts else rows.new_zeros((0,) + rows.shape[1:])

    def all_gather_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Every rank's rows in rank order, this rank's in its place (differentiable), zeros for
        the others'."""
        blank = rows.new_zeros(rows.shape)
        return torch.cat([rows if r == self.cp_rank else blank for r in range(self.cp)])


def _all_to_all_v(rows: torch.Tensor, group, send_splits, recv_splits) -> torch.Tensor:
    """One all_to_all_single of `rows` ([sum(send_splits), D]); returns [sum(recv_splits), D]."""
    if isinstance(group, EmulatedCpRank):
        return group.all_to_all_v(rows.detach(), send_splits, recv_splits)
    rows = rows.contiguous()
    out = rows.new_empty((sum(recv_splits),) + tuple(rows.shape[1:]))
    dist.all_to_all_single(out, rows, list(recv_splits), list(send_splits), group=group)
    return out


class _AllToAllV(torch.autograd.Function):
    """Differentiable all-to-all-v. Call apply() positionally:
    apply(send, anchor, group, send_splits, recv_splits, stats).

    `anchor` is an empty tensor that requires grad whenever the exchange must run backward, so
    the output requires grad (and the reverse collective runs) even on a rank whose `send` does
    not, e.g. a rank with no images or a frozen encoder.
    """

    @staticmethod
    def forward(ctx, send, anchor, group, send_splits, recv_splits, stats):
        ctx.group = group
        ctx.send_splits = list(send_splits)
        ctx.recv_splits = list(recv_splits)
        ctx.stats = stats
        recv = _all_to_all_v(send, group, send_splits, recv_splits)
        if stats is not None:
            stats.forward_bytes_sent += send.numel() * send.element_size()
            stats.forward_bytes_received += recv.numel() * recv.element_size()
            stats.forward_rows_sent += sum(send_splits)
            stats.forward_rows_received += sum(recv_splits)
            stats.collectives += 1
        return recv

    @staticmethod
    def backward(ctx, grad_recv):
        # The reverse exchange: rank s gets back, for each row it sent, the gradient of the
        # token that consumed it. Runs on every rank (anchor), so nobody waits alone.
        grad_send = _all_to_all_v(grad_recv, ctx.group, ctx.recv_splits, ctx.send_splits)
        stats = ctx.stats
        if stats is not None:
            stats.backward_bytes_sent += grad_recv.numel() * grad_recv.element_size()
            stats.backward_bytes_received += grad_send.numel() * grad_send.element_size()
            stats.collectives += 1
        return grad_send, None, None, None, None, None


def _group_rank(group, rank: Optional[int], routing: Routing, kind: str = "vision") -> int:
    if rank is not None:
        return int(rank)
    if isinstance(group, EmulatedCpRank):
        return group.cp_rank
    if routing.cp == 1:
        return 0  # CP 1 needs no process group: nothing crosses ranks
    if not dist.is_initialized():
        raise RuntimeError(f"{kind}_dp: torch.distributed is not initialized and no rank was given")
    return dist.get_rank(group)


def _exchange(local_embeds, routing: Routing, group, rank: int, stats, requires_grad,
              kind: str = "vision"):
    """The exchange; returns (rows in local token order, their local token positions). `kind`
    ("vision" or "audio") names the encoder in errors."""
    if local_embeds.dim() != 2:
        raise ValueError(
            f"{kind}_dp: local embeddings must be [rows, hidden], got {tuple(local_embeds.shape)}"
        )
    expected = routing.local_rows(rank)
    if local_embeds.shape[0] != expected:
        raise ValueError(
            f"{kind}_dp: rank {rank} encodes items {list(routing.encoded[rank])} with "
            f"{expected} embedding rows, but the encoder returned {local_embeds.shape[0]}"
        )
    idx = routing.indices(rank)
    device = local_embeds.device
    gather = torch.tensor(idx.gather_index, dtype=torch.long, device=device)
    positions = torch.tensor(idx.positions, dtype=torch.long, device=device)
    # The routing is the same on every rank, so this test is too: either every rank joins the
    # collective or none does (the naive policy, or a pack whose rows all stay local).
    if routing.cross_rank_rows() == 0:
        return local_embeds.index_select(0, gather), positions

    need_backward = torch.is_grad_enabled() if requires_grad is None else bool(requires_grad)
    send = local_embeds.index_select(
        0, torch.tensor(idx.send_index, dtype=torch.long, device=device)
    )
    if not need_backward:
        send = send.detach()
    anchor = torch.empty(0, device=device, requires_grad=need_backward)
    # Positional arguments only: autograd.Function.apply takes no keywords.
    received = _AllToAllV.apply(send, anchor, group, idx.send_splits, idx.recv_splits, stats)
    rows = torch.cat([local_embeds, received.to(local_embeds.dtype)]).index_select(0, gather)
    return rows, positions


def exchange_embeddings(
    local_embeds: torch.Tensor,
    routing: Routing,
    group=None,
    cp_rank: Optional[int] = None,
    *,
    stats: Optional[ExchangeStats] = None,
    requires_grad: Optional[bool] = None,
    **renamed,
) -> torch.Tensor:
    """Return the embedding rows this rank's token shard consumes, in its local token order.

    `local_embeds` is this rank's encoder output: the embeddings of ``routing.encoded[rank]``
    concatenated in that order, ``[routing.local_rows(rank), hidden]`` (``[0, hidden]`` on a
    rank with no images). The result is ``[routing.consumed_rows(rank), hidden]``; row k goes to
    local token position ``routing.indices(rank).positions[k]``.

    ``cp_rank``: this rank's rank in `group` (None: the group's). Every rank of `group` (the CP
    group; None: the default group, whose ranks are then the CP ranks) must call this with the
    same `routing`, collectively. The backward collective runs on every rank when grad mode is
    on (`requires_grad=None`), so a rank whose encoder is frozen or that has no images cannot
    leave the others waiting; pass ``requires_grad=False`` on every rank to skip it when no rank
    needs vision gradients.
    Raises ValueError when `local_embeds` does not match the routing.
    """
    _refuse_old_names(renamed, {"rank": "cp_rank"})
    rank = _group_rank(group, cp_rank, routing)
    rows, _ = _exchange(local_embeds, routing, group, rank, stats, requires_grad)
    return rows


def _connected_empty(encoder: torch.nn.Module, hidden: int, like: torch.Tensor) -> torch.Tensor:
    """A [0, hidden] tensor that depends on every trainable parameter of `encoder`.

    A rank with no images does not run its encoder; without this its parameters would get no
    gradient (None) while other ranks' do, and a gradient all-reduce over them (DDP, or the
    CP/DP all-reduce of Megatron) would disagree between ranks. With it they get zeros.
    """
    empty = like.new_zeros((0, hidden))
    if not torch.is_grad_enabled():
        return empty
    trainable = [p for p in encoder.parameters() if p.requires_grad]
    if not trainable:
        return empty
    zero = sum(p.reshape(-1)[:0].sum() for p in trainable)
    return empty + zero.to(empty.dtype)


def _images_and_videos(encoder, pixel_values, image_grid_thw, videos, routing,
                       rank) -> torch.Tensor:
    """This rank's rows in vision-item order (routing.encoded[rank]): the encoder's rows of its
    images and of its videos, each item's block put at its item index."""
    pixel_values_videos, video_grid_thw, encoded_images, encoded_videos = videos
    blocks = {}
    for pixels, grids, items in ((pixel_values, image_grid_thw, encoded_images),
                                 (pixel_values_videos, video_grid_thw, encoded_videos)):
        items = [int(i) for i in items]
        if not items:
            continue
        rows = encoder(pixels, grids)
        sizes = [routing.image_rows[i] for i in items]
        if rows.shape[0] != sum(sizes):
            raise ValueError(f"vision_dp: the encoder returned {rows.shape[0]} rows for items "
                             f"{items}, which take {sum(sizes)}")
        blocks.update(zip(items, torch.split(rows, sizes)))
    order = sorted(blocks)
    if order != list(routing.encoded[rank]):
        raise ValueError(f"vision_dp: rank {rank} encodes items {list(routing.encoded[rank])}, "
                         f"the batch's images and videos are items {order}")
    return torch.cat([blocks[i] for i in order])


def vision_dp_embed(
    encoder: torch.nn.Module,
    pixel_values: torch.Tensor,
    image_grid_thw: torch.Tensor,
    inputs_embeds: torch.Tensor,
    routing: Routing,
    group=None,
    cp_rank: Optional[int] = None,
    *,
    input_ids: Optional[torch.Tensor] = None,
    image_token_id: Optional[int] = None,
    stats: Optional[ExchangeStats] = None,
    requires_grad: Optional[bool] = None,
    videos: Optional[Tuple[torch.Tensor, torch.Tensor, Sequence[int], Sequence[int]]] = None,
    video_token_id: Optional[int] = None,
    **renamed,
) -> torch.Tensor:
    """Encode this rank's images (and videos), exchange, and write the rows into the token
    embeddings.

    The whole vision-DP step for a Qwen-style model, under any policy (cost, count, naive) and
    at any CP size (`group` None at CP 1), on a batch of ``mmpt.torch.to_tensors``:

        embeds = model.embed_tokens(batch["tokens"])
        embeds = vision_dp_embed(model.visual, batch["pixel_values"], batch["image_grid_thw"],
                                 embeds, batch["routing"], cp_group)
        loss = model(inputs_embeds=embeds, ...)

    `encoder(pixel_values, image_grid_thw)` must return ``[rows, hidden]``: the embeddings of
    this rank's images (``routing.encoded[rank]``, in that order), one row per LLM token, as
    Qwen2-VL's vision tower does. It is not called on a rank with no images. A batch with
    videos passes ``videos=(batch["pixel_values_videos"], batch["video_grid_thw"],
    batch["encoded_images"], batch["encoded_videos"])``: the encoder also runs on the videos
    (as Qwen2.5-VL's tower does), and each item's rows take its place among the vision items
    before the exchange. `inputs_embeds`
    is this rank's shard, ``[tokens, hidden]`` or ``[1, tokens, hidden]``; a new tensor is
    returned with the image rows written at the image-pad positions given by the routing.
    When `input_ids` and `image_token_id` are given, those positions are checked against the
    image-pad tokens of the shard, and the video-pad tokens too with `video_token_id`
    (ValueError if they differ).
    """
    _refuse_old_names(renamed, {"rank": "cp_rank"})
    rank = _group_rank(group, cp_rank, routing)
    embeds = _flat_embeds(inputs_embeds)
    if not routing.encoded[rank]:
        local = _connected_empty(encoder, embeds.shape[-1], embeds)
    elif videos is None:
        local = encoder(pixel_values, image_grid_thw)
    else:
        local = _images_and_videos(encoder, pixel_values, image_grid_thw, videos, routing, rank)
    pad_ids = [i for i in (image_token_id, video_token_id) if i is not None]
    return _place_rows(local, inputs_embeds, routing, group, rank, stats, requires_grad,
                       input_ids if image_token_id is not None else None, pad_ids, "image")


def audio_dp_embed(
    encoder: torch.nn.Module,
    input_features: torch.Tensor,
    feature_attention_mask: torch.Tensor,
    inputs_embeds: torch.Tensor,
    routing: Routing,
    group=None,
    cp_rank: Optional[int] = None,
    *,
    input_ids: Optional[torch.Tensor] = None,
    audio_token_id: Optional[int] = None,
    stats: Optional[ExchangeStats] = None,
    requires_grad: Optional[bool] = None,
    **renamed,
) -> torch.Tensor:
    """Encode this rank's audio clips, exchange, and write the rows into the token embeddings:
    :func:`vision_dp_embed` for the audio encoder (Qwen2-Audio, Qwen2.5-Omni), with the batch's
    ``input_features``, ``feature_attention_mask`` and ``audio_routing``.

    `encoder(input_features, feature_attention_mask)` must return ``[rows, hidden]``: the
    embeddings of this rank's clips (``routing.encoded[rank]``, in that order), one row per
    audio token, as the models' audio towers do after pooling and projection. It is not called
    on a rank with no clips. With `input_ids` and `audio_token_id` the positions are checked
    against the shard's audio-pad tokens.
    """
    _refuse_old_names(renamed, {"rank": "cp_rank"})
    rank = _group_rank(group, cp_rank, routing, "audio")
    embeds = _flat_embeds(inputs_embeds, "audio")
    if not routing.encoded[rank]:
        local = _connected_empty(encoder, embeds.shape[-1], embeds)
    else:
        local = encoder(input_features, feature_attention_mask)
        want = sum(routing.image_rows[i] for i in routing.encoded[rank])
        if local.shape[0] != want:
            raise ValueError(f"audio_dp: the encoder returned {local.shape[0]} rows for clips "
                             f"{list(routing.encoded[rank])}, which take {want}")
    pad_ids = [] if audio_token_id is None else [audio_token_id]
    return _place_rows(local, inputs_embeds, routing, group, rank, stats, requires_grad,
                       input_ids, pad_ids, "audio")


def _flat_embeds(inputs_embeds: torch.Tensor, kind: str = "vision") -> torch.Tensor:
    """[tokens, hidden] of a [tokens, hidden] or [1, tokens, hidden] (THD) shard."""
    if inputs_embeds.dim() == 3 and inputs_embeds.shape[0] != 1:
        raise ValueError(
            f"{kind}_dp: inputs_embeds must be [tokens, hidden] or [1, tokens, hidden] (THD), "
            f"got {tuple(inputs_embeds.shape)}"
        )
    return inputs_embeds[0] if inputs_embeds.dim() == 3 else inputs_embeds


def _place_rows(local, inputs_embeds, routing, group, rank, stats, requires_grad, input_ids,
                pad_ids, what) -> torch.Tensor:
    """Exchange `local` (this rank's encoded rows) and write the consumed rows into a copy of
    `inputs_embeds` at the routing's positions, checked against the `pad_ids` tokens of
    `input_ids` when both are given."""
    kind = "audio" if what == "audio" else "vision"
    embeds = _flat_embeds(inputs_embeds, kind)
    hidden = embeds.shape[-1]
    rows, positions = _exchange(local, routing, group, rank, stats, requires_grad, kind)
    if rows.shape[-1] != hidden:
        raise ValueError(f"{kind}_dp: encoder rows have width {rows.shape[-1]}, not {hidden}")
    if positions.numel() and int(positions.max()) >= embeds.shape[0]:
        raise ValueError(
            f"{kind}_dp: the routing places a row at local token {int(positions.max())} but "
            f"the shard has {embeds.shape[0]} tokens"
        )
    if input_ids is not None and pad_ids:
        ids = input_ids.reshape(-1)
        is_pad = torch.zeros_like(ids, dtype=torch.bool)
        for pad_id in pad_ids:
            is_pad |= ids == pad_id
        pads = is_pad.nonzero().reshape(-1)
        pads, where = pads.cpu().tolist(), positions.cpu().tolist()
        if pads != where:
            first = next((a for a, b in zip(pads, where) if a != b), None)
            if first is None:
                first = (pads if len(pads) > len(where) else where)[min(len(pads), len(where))]
            raise ValueError(
                f"{kind}_dp: rank {rank}'s shard has {len(pads)} {what}-pad tokens, the routing "
                f"places {len(where)} rows; they first differ at local token {first}"
            )
    out = embeds.index_copy(0, positions, rows.to(embeds.dtype))
    return out.unsqueeze(0) if inputs_embeds.dim() == 3 else out
