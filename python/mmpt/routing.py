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
from typing import List, Optional, Sequence, Set, Tuple

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

    Build it with :func:`mmpt.assign_vision` (C++), or directly; call :meth:`validate` on one
    built by hand. Immutable; safe to share between threads.
    """

    cp_size: int
    image_rows: Tuple[int, ...]
    encoded: Tuple[Tuple[int, ...], ...]
    consumed: Tuple[Tuple[RowSegment, ...], ...]
    policy: str = ""
    #: (rank, its ExchangeIndices) as the loader shipped them with a batch, or None.
    shipped: Optional[Tuple[int, "ExchangeIndices"]] = field(default=None, compare=False)

    @staticmethod
    def create(
        cp_size: int,
        image_rows: Sequence[int],
        encoded: Sequence[Sequence[int]],
        consumed: Sequence[Sequence[RowSegment]],
        policy: str = "",
    ) -> "Routing":
        """Build and validate a routing. Raises ValueError naming the rank/image at fault."""
        routing = Routing(
            cp_size=int(cp_size),
            image_rows=tuple(int(n) for n in image_rows),
            encoded=tuple(tuple(int(i) for i in images) for images in encoded),
            consumed=tuple(tuple(segments) for segments in consumed),
            policy=policy,
        )
        routing.validate()
        return routing

    @staticmethod
    def from_arrays(
        cp_size: int,
        image_rows: Sequence[int],
        image_encoder: Sequence[int],
        routes: Sequence[Sequence[int]],
        policy: str = "",
    ) -> "Routing":
        """Build from the flat arrays a loaded Batch carries (``load::Batch``): per image its
        rows and its (first) encoding CP rank, and every segment as a row ``(consumer, image,
        row_begin, row_count, local_offset, source_rank)`` (a list of tuples or an [N, 6]
        array). A rank encodes the images named its encoder and those it is the source of a
        segment of (under the naive policy an image straddling ranks is encoded by each)."""
        encoded: List[Set[int]] = [set() for _ in range(int(cp_size))]
        for image, rank in enumerate(image_encoder):
            if not 0 <= int(rank) < int(cp_size):
                raise ValueError(f"routing: image {image}'s encoder {rank} is not in the group")
            encoded[int(rank)].add(image)
        consumed: List[List[RowSegment]] = [[] for _ in range(int(cp_size))]
        for row in routes:
            consumer, image, row_begin, row_count, local_offset, source = (int(v) for v in row)
            if not 0 <= consumer < int(cp_size):
                raise ValueError(f"routing: a segment of image {image} names consumer {consumer}")
            if not 0 <= source < int(cp_size):
                raise ValueError(f"routing: a segment of image {image} names source {source}")
            consumed[consumer].append(RowSegment(image, row_begin, row_count, local_offset, source))
            encoded[source].add(image)
        for segments in consumed:
            segments.sort(key=lambda seg: seg.local_offset)
        return Routing.create(cp_size, image_rows, [sorted(images) for images in encoded],
                              consumed, policy)

    @staticmethod
    def from_batch(batch, kind: str = "vision") -> "Routing":
        """The routing of a batch dict from ``mmpt.Loader``, at any CP size: of its vision
        items (keys ``cp_size``, ``image_rows``, ``image_encoder``, ``routes``), which the loader
        puts in every batch as ``batch["routing"]``, or with ``kind="audio"`` of its audio clips
        (``audio_rows``, ``audio_encoder``, ``audio_routes``; ``batch["audio_routing"]``)."""
        if kind not in ("vision", "audio"):
            raise ValueError(f"routing kind {kind!r}: expected 'vision' or 'audio'")
        prefix = "image" if kind == "vision" else "audio"
        routes = "routes" if kind == "vision" else "audio_routes"
        exchange = "exchange" if kind == "vision" else "audio_exchange"
        cp_size = int(batch["cp_size"])
        routing = Routing.from_arrays(cp_size, batch[f"{prefix}_rows"],
                                      batch[f"{prefix}_encoder"], batch[routes], "")
        splits = batch[f"{exchange}_splits"]
        shipped = ExchangeIndices(batch[f"{exchange}_send_index"].tolist(),
                                  splits[:cp_size].tolist(), splits[cp_size:].tolist(),
                                  batch[f"{exchange}_gather_index"].tolist(),
                                  batch[f"{exchange}_positions"].tolist())
        return replace(routing, shipped=(int(batch["cp_rank"]), shipped))

    def to_arrays(self):
        """(image_rows, image_encoder, routes): the inverse of :meth:`from_arrays`, in the
        loader's form (an image's first encoder; the others are the sources of its segments)."""
        encoder = [self.encoders(image)[0] for image in range(self.num_images)]
        routes = [(rank, s.image, s.row_begin, s.row_count, s.local_offset, s.source_rank)
                  for rank in range(self.cp_size) for s in self.consumed[rank]]
        return list(self.image_rows), encoder, routes

    def validate(self) -> None:
        """Check every invariant the exchange relies on; raise ValueError naming the fault.

        Each rank's encoded list is ascending and in range; each segment lies inside its image,
        comes from a rank that encodes the image, and does not overlap the rank's previous
        segment; every row of every image is consumed exactly once in the CP group.
        """
        if self.cp_size < 1:
            raise ValueError(f"routing: cp_size {self.cp_size} must be at least 1")
        if len(self.encoded) != self.cp_size or len(self.consumed) != self.cp_size:
            raise ValueError(
                f"routing: {len(self.encoded)} encoded lists and {len(self.consumed)} consumed "
                f"lists for cp_size {self.cp_size}"
            )
        num_images = len(self.image_rows)
        for image, rows in enumerate(self.image_rows):
            if rows < 0:
                raise ValueError(f"routing: image {image} has {rows} rows")
        encoded_sets = []
        for rank, images in enumerate(self.encoded):
            for a, b in zip(images, images[1:]):
                if not a < b:
                    raise ValueError(f"routing: rank {rank}'s encoded images are not ascending")
            for image in images:
                if not 0 <= image < num_images:
                    raise ValueError(f"routing: rank {rank} encodes image {image} of {num_images}")
            encoded_sets.append(set(images))
        covered = [0] * num_images
        for rank, segments in enumerate(self.consumed):
            end = 0
            for seg in segments:
                where = f"routing: rank {rank}, segment of image {seg.image}"
                if not 0 <= seg.image < num_images:
                    raise ValueError(f"{where}: no such image ({num_images} images)")
                if seg.row_count <= 0 or seg.row_begin < 0:
                    raise ValueError(f"{where}: rows [{seg.row_begin}, +{seg.row_count}) are empty")
                if seg.row_begin + seg.row_count > self.image_rows[seg.image]:
                    raise ValueError(
                        f"{where}: rows [{seg.row_begin}, {seg.row_begin + seg.row_count}) "
                        f"exceed its {self.image_rows[seg.image]} rows"
                    )
                if not 0 <= seg.source_rank < self.cp_size:
                    raise ValueError(f"{where}: source rank {seg.source_rank} is not in the group")
                if seg.image not in encoded_sets[seg.source_rank]:
                    raise ValueError(f"{where}: source rank {seg.source_rank} does not encode it")
                if seg.local_offset < end:
                    raise ValueError(
                        f"{where}: local offset {seg.local_offset} overlaps or precedes the "
                        f"previous segment (ends at {end}); segments must be in local order"
                    )
                end = seg.local_offset + seg.row_count
                covered[seg.image] += seg.row_count
        for image, rows in enumerate(self.image_rows):
            if covered[image] != rows:
                raise ValueError(
                    f"routing: image {image} has {rows} rows but {covered[image]} are consumed; "
                    "every row must be consumed exactly once"
                )

    @property
    def num_images(self) -> int:
        return len(self.image_rows)

    def encoders(self, image: int) -> List[int]:
        """CP ranks that encode `image` (one, except under the naive policy)."""
        return [rank for rank, images in enumerate(self.encoded) if image in images]

    def local_rows(self, rank: int) -> int:
        """Rows of `rank`'s local embeddings (its encoder output)."""
        return sum(self.image_rows[i] for i in self.encoded[rank])

    def consumed_rows(self, rank: int) -> int:
        """Rows `rank`'s token shard consumes."""
        return sum(seg.row_count for seg in self.consumed[rank])

    def local_row_offset(self, rank: int, image: int) -> int:
        """Row of `rank`'s local embeddings where `image`'s embedding starts."""
        offset = 0
        for i in self.encoded[rank]:
            if i == image:
                return offset
            offset += self.image_rows[i]
        raise ValueError(f"routing: rank {rank} does not encode image {image}")

    def rows_to_send(self, source: int, dest: int) -> List[RowSegment]:
        """Segments `source` sends to `dest` (source != dest), in dest's local order."""
        if source == dest:
            return []
        return [seg for seg in self.consumed[dest] if seg.source_rank == source]

    def rows_sent(self, rank: int) -> int:
        """Rows `rank` sends to other ranks in the forward exchange."""
        return sum(
            seg.row_count for dest in range(self.cp_size) for seg in self.rows_to_send(rank, dest)
        )

    def rows_received(self, rank: int) -> int:
        """Rows `rank` receives from other ranks in the forward exchange."""
        return sum(seg.row_count for seg in self.consumed[rank] if seg.source_rank != rank)

    def cross_rank_rows(self) -> int:
        """Rows that cross ranks in the whole group; 0 means no collective is needed."""
        return sum(self.rows_received(rank) for rank in range(self.cp_size))

    def indices(self, rank: int) -> ExchangeIndices:
        """Index lists for `rank`'s side of the exchange: those the loader shipped with a
        batch's routing for its own rank, else ``cp::RankExchange``'s (the one derivation)."""
        if not 0 <= rank < self.cp_size:
            raise ValueError(f"routing: rank {rank} is not in a CP group of {self.cp_size}")
        if self.shipped is not None and self.shipped[0] == rank:
            return self.shipped[1]
        consumed = [[(s.image, s.row_begin, s.row_count, s.local_offset, s.source_rank)
                     for s in segments] for segments in self.consumed]
        try:
            return ExchangeIndices(*_mmpt.exchange_indices(
                list(self.image_rows), [list(e) for e in self.encoded], consumed, rank))
        except _mmpt.InvalidArgumentError as error:
            raise ValueError(f"routing: {error}") from error
