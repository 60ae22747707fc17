"""Routing maps of one encoder's items over a CP group: who encodes each item, who consumes
which rows. The items are a pack's (or a micro-step's) vision items, images and videos, for the
vision encoder (vision DP), or its audio clips for the audio encoder (audio DP); the maps read
the same, and the arrays keep the name ``image`` for an item.

This is the Python form of ``mmpt::cp::EncoderAssignment`` (``src/mmpt/cp/vision_assign.h``);
``mmpt.assign_vision`` returns it, and every loaded batch carries its micro-step's as
``batch["routing"]`` (vision items) and ``batch["audio_routing"]`` (audio clips), with the
exchange indices of the batch's own rank. It is computed identically on every rank of the
context-parallel (CP) group from the plan, so each rank knows every other rank's share without
communicating.

Terms:

* An item's *embedding* has ``image_rows[i]`` rows: one per LLM token of the image (after the
  encoder's spatial merge). Row ``j`` feeds the image's ``j``-th image-pad token.
* CP rank ``r`` *encodes* the images ``encoded[r]`` (ascending). Its encoder output, the *local
  embeddings*, is their embeddings concatenated in that order.
* CP rank ``r`` *consumes* ``consumed[r]``: the rows its token shard needs, as segments in its
  local token order. A segment is ``row_count`` consecutive rows of one image, starting at row
  ``row_begin``, placed at local token positions ``local_offset ...``, encoded by
  ``source_rank`` (``r`` itself when the rows are local).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence, Tuple

from . import _mmpt


@dataclass(frozen=True)
class RowSegment:
    """A run of embedding rows of one image that a consuming rank places contiguously."""

    image: int
    row_begin: int
    row_count: int
    local_offset: int
    source_rank: int


@dataclass(frozen=True)
class ExchangeIndices:
    """Index lists one rank needs to run the exchange (see :meth:`Routing.indices`).

    ``send_index``: rows of the local embeddings to send, grouped by destination rank
    (ascending) and, within a destination, in its local token order. ``send_splits[d]`` /
    ``recv_splits[s]``: rows sent to rank ``d`` / received from rank ``s`` (0 for oneself).
    ``gather_index``: for each consumed row in local token order, its row in
    ``concat(local_embeddings, received)``. ``positions``: the local token position of each
    consumed row.
    """

    send_index: List[int]
    send_splits: List[int]
    recv_splits: List[int]
    gather_index: List[int]
    positions: List[int]


@dataclass(frozen=True)
class Routing:
    """Which CP rank encodes each item (image, video or audio clip), and where every embedding
    row goes.

    Build it with :func:`mmpt.assign_vision`, :meth:`create` or :meth:`from_arrays`: each is
    checked by C++ (``cp::ValidateRouting``), the one statement of what the exchange needs.
    Immutable; safe to share between threads.
    """

    cp: int
    image_rows: Tuple[int, ...]
    encoded: Tuple[Tuple[int, ...], ...]
    consumed: Tuple[Tuple[RowSegment, ...], ...]
    policy: str = ""
    #: (rank, its ExchangeIndices) as the loader shipped them with a batch, or None.
    shipped: Optional[Tuple[int, "ExchangeIndices"]] = field(default=None, compare=False)

    @staticmethod
    def create(
        cp: int,
        image_rows: Sequence[int],
        encoded: Sequence[Sequence[int]],
        consumed: Sequence[Sequence[RowSegment]],
        policy: str = "",
    ) -> "Routing":
        """Build and check a routing. Raises InvalidArgumentError (a ValueError) naming the
        rank, item and segment at fault."""
        return _mmpt.routing(cp, list(image_rows), [list(e) for e in encoded],
                             _segment_tuples(consumed), policy)

    @staticmethod
    def from_arrays(
        cp: int,
        image_rows: Sequence[int],
        image_encoder: Sequence[int],
        routes: Sequence[Sequence[int]],
        policy: str = "",
    ) -> "Routing":
        """Build from the flat arrays a loaded Batch carries (``load::Batch``): per image its
        rows and its (first) encoding CP rank, and every segment as a row ``(consumer, image,
        row_begin, row_count, local_offset, source_rank)`` (a list of tuples or an [N, 6]
        array), in any order. Raises InvalidArgumentError naming the fault."""
        return _mmpt.routing_from_arrays(cp, [int(n) for n in image_rows],
                                         [int(r) for r in image_encoder],
                                         [tuple(int(v) for v in row) for row in routes], policy)

    @staticmethod
    def from_batch(batch, kind: str = "vision") -> "Routing":
        """The routing of a batch dict from ``mmpt.Loader``, at any CP size: of its vision
        items (keys ``cp``, ``image_rows``, ``image_encoder``, ``routes``), which the loader
        puts in every batch as ``batch["routing"]``, or with ``kind="audio"`` of its audio clips
        (``audio_rows``, ``audio_encoder``, ``audio_routes``; ``batch["audio_routing"]``)."""
        if kind not in ("vision", "audio"):
            raise ValueError(f"routing kind {kind!r}: expected 'vision' or 'audio'")
        prefix = "image" if kind == "vision" else "audio"
        routes = "routes" if kind == "vision" else "audio_routes"
        exchange = "exchange" if kind == "vision" else "audio_exchange"
        cp = int(batch["cp"])
        routing = Routing.from_arrays(cp, batch[f"{prefix}_rows"],
                                      batch[f"{prefix}_encoder"], batch[routes], "")
        splits = batch[f"{exchange}_splits"]
        shipped = ExchangeIndices(batch[f"{exchange}_send_index"].tolist(),
                                  splits[:cp].tolist(), splits[cp:].tolist(),
                                  batch[f"{exchange}_gather_index"].tolist(),
                                  batch[f"{exchange}_positions"].tolist())
        return replace(routing, shipped=(int(batch["cp_rank"]), shipped))

    def to_arrays(self):
        """(image_rows, image_encoder, routes): the inverse of :meth:`from_arrays`, in the
        loader's form (an image's first encoder; the others are the sources of its segments)."""
        encoder = [self.encoders(image)[0] for image in range(self.num_images)]
        routes = [(rank, s.image, s.row_begin, s.row_count, s.local_offset, s.source_rank)
                  for rank in range(self.cp) for s in self.consumed[rank]]
        return list(self.image_rows), encoder, routes

    @property
    def num_images(self) -> int:
        return len(self.image_rows)

    def encoders(self, image: int) -> List[int]:
        """CP ranks that encode `image` (one, except under the naive policy)."""
        return [rank for rank, images in enumerate(self.encoded) if image in images]

    def local_rows(self, cp_rank: int) -> int:
        """Rows of `cp_rank`'s local embeddings (its encoder output)."""
        return sum(self.image_rows[i] for i in self.encoded[cp_rank])

    def consumed_rows(self, cp_rank: int) -> int:
        """Rows `cp_rank`'s token shard consumes."""
        return sum(seg.row_count for seg in self.consumed[cp_rank])

    def cross_rank_rows(self) -> int:
        """Rows that cross ranks in the whole group; 0 means no collective is needed."""
        return sum(seg.row_count for rank, segments in enumerate(self.consumed)
                   for seg in segments if seg.source_rank != rank)

    def indices(self, cp_rank: int) -> ExchangeIndices:
        """Index lists for `cp_rank`'s side of the exchange: those the loader shipped with a
        batch's routing for its own rank, else ``cp::RankExchange``'s (the one derivation).
        Its ``send_splits`` / ``recv_splits`` sum to the rows `cp_rank` sends / receives."""
        if self.shipped is not None and self.shipped[0] == cp_rank:
            return self.shipped[1]
        return ExchangeIndices(*_mmpt.exchange_indices(
            self.cp, list(self.image_rows), [list(e) for e in self.encoded],
            _segment_tuples(self.consumed), cp_rank))


def _segment_tuples(consumed: Sequence[Sequence[RowSegment]]):
    return [[(s.image, s.row_begin, s.row_count, s.local_offset, s.source_rank) for s in segments]
            for segments in consumed]
