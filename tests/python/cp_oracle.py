"""Test oracle: a plain-Python THD split and vision-DP routing, written from the spec only.

It follows docs/design.md ("Context parallelism and vision DP") and the documented behaviour of
``src/mmpt/cp`` token by token, without the C++ code's segment arithmetic, so tests can check
the C++ routing (``mmpt.assign_vision``) against an independent derivation. Tests only; the
library uses the C++ module.
"""

from typing import Dict, List, Sequence, Tuple

from mmpt.routing import RowSegment, Routing


def split_thd(seq_lengths: Sequence[int], cp: int):
    """Return (cu_seqlens, cu_seqlens_padded, token_indices per rank).

    Each sub-sequence is padded to a multiple of 2·cp and cut into 2·cp chunks;
    rank r keeps chunks r and 2·cp−1−r of every sub-sequence, in that order.
    """
    cu, cu_padded = [0], [0]
    for length in seq_lengths:
        padded = -(-length // (2 * cp)) * (2 * cp)
        cu.append(cu[-1] + length)
        cu_padded.append(cu_padded[-1] + padded)
    indices: List[List[int]] = [[] for _ in range(cp)]
    for seq in range(len(seq_lengths)):
        chunk = (cu_padded[seq + 1] - cu_padded[seq]) // (2 * cp)
        for rank in range(cp):
            for k in (rank, 2 * cp - 1 - rank):
                start = cu_padded[seq] + k * chunk
                indices[rank].extend(range(start, start + chunk))
    return cu, cu_padded, indices


def _owner_map(indices: List[List[int]]) -> Dict[int, Tuple[int, int]]:
    """Padded position → (rank, local position)."""
    owner = {}
    for rank, positions in enumerate(indices):
        for local, padded in enumerate(positions):
            owner[padded] = (rank, local)
    return owner


def _padded_position(cu, cu_padded, position: int) -> int:
    seq = max(s for s in range(len(cu) - 1) if cu[s] <= position)
    return position - cu[seq] + cu_padded[seq]


def route(
    seq_lengths: Sequence[int],
    images: Sequence[Tuple[int, int, float]],
    cp: int,
    policy: str,
) -> Routing:
    """Routing of `images` ((token_start, token_count, cost), unpadded positions) under
    `policy` ("naive", "count", "cost"), derived one token at a time."""
    cu, cu_padded, indices = split_thd(seq_lengths, cp)
    owner = _owner_map(indices)

    # (rank, local position, image, row) for every image row, then runs of consecutive rows.
    rows_on = [[0] * cp for _ in images]
    placed: List[List[Tuple[int, int, int]]] = [[] for _ in range(cp)]
    for image, (start, count, _) in enumerate(images):
        for row in range(count):
            rank, local = owner[_padded_position(cu, cu_padded, start + row)]
            placed[rank].append((local, image, row))
            rows_on[image][rank] += 1
    runs: List[List[List[int]]] = []
    for rank in range(cp):
        rank_runs: List[List[int]] = []
        for local, image, row in sorted(placed[rank]):
            last = rank_runs[-1] if rank_runs else None
            follows = last and last[1] + last[2] == row and last[3] + last[2] == local
            if follows and last[0] == image:
                last[2] += 1
            else:
                rank_runs.append([image, row, 1, local])
        runs.append(rank_runs)

    token_order = sorted(range(len(images)), key=lambda i: images[i][0])
    encoders: List[List[int]] = [[] for _ in images]
    if policy == "naive":
        for image in range(len(images)):
            encoders[image] = [r for r in range(cp) if rows_on[image][r] > 0]
    elif policy == "count":
        base, extra = divmod(len(images), cp)
        position = 0
        for rank in range(cp):
            for _ in range(base + (1 if rank < extra else 0)):
                encoders[token_order[position]] = [rank]
                position += 1
    elif policy == "cost":
        # Longest processing time first: costliest image (ties: token order) to the least
        # loaded rank; equal loads go to the rank that consumes more of the image, then the
        # lower rank.
        load = [0.0] * cp
        for image in sorted(token_order, key=lambda i: -images[i][2]):
            best = min(range(cp), key=lambda r: (load[r], -rows_on[image][r], r))
            load[best] += images[image][2]
            encoders[image] = [best]
    else:
        raise ValueError(f"unknown policy {policy}")

    encoded = [[i for i in range(len(images)) if r in encoders[i]] for r in range(cp)]
    consumed = []
    for rank in range(cp):
        segments = []
        for image, row, count, local in runs[rank]:
            source = rank if policy == "naive" else encoders[image][0]
            segments.append(RowSegment(image, row, count, local, source))
        consumed.append(segments)
    return Routing.create(
        cp, [count for _, count, _ in images], encoded, consumed, policy
    )
