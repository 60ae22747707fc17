"""The streaming exchange for node-local data: each node holds only its own shards, the plan
still decides which (DP rank, CP rank) trains on which sample, and the peer holding a sample
sends its stored bytes (line, token ids, and the media as stored, still compressed; under CP
each CP rank gets only the media it encodes) to the peers training on it, one all-to-all-v
per step.

``Exchange`` runs the collective on its own torch.distributed process group in a background
thread, ``prefetch_steps`` steps before the trainer, so it overlaps with training; checking and
packing what is sent and parsing what arrives run natively without the GIL. Hand it to
:class:`mmpt.Loader` (``exchange=``), which then renders and decodes the received samples with
the code that reads shared storage, so its batches are the shared-storage batches, byte for
byte. ``place_dataset`` makes a node-local copy of a
dataset (symlinks) as a placement distributes it, for tests and benchmarks.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from typing import Dict, List, Optional, Sequence, Union

from . import _mmpt
from .data import Dataset, Planner, _refuse_old_names

Placement = _mmpt.Placement

# Exchanges made in this process so far: every rank makes them in the same order (as process
# groups), so the count names one exchange's keys in the shared store alike on every rank.
_made = 0


def _loading_ranks(layout: Dict[str, int], order: str, world: int) -> List[int]:
    """The rank that loads for each (DP rank d, CP rank c) (RankGrid.loading_ranks), or every
    rank in order when the job has only DP × CP ranks."""
    grid = _mmpt.RankGrid(layout["dp"], layout["cp"], layout["tp"], layout["pp"], order)
    if world != grid.world_size:
        return list(range(layout["dp"] * layout["cp"]))
    return grid.loading_ranks()


def place_dataset(dataset: str, placement: Placement, peer: int, out: str) -> str:
    """Make ``out`` what ``peer`` holds of ``dataset`` under ``placement``: the manifest, shard
    and planning tables, every shard's ``.meta``, and the other files of its own shards only,
    as symlinks. Returns ``out``."""
    shards = _mmpt.DatasetReader(dataset).shard_paths
    os.makedirs(out, exist_ok=True)
    for name in _mmpt.DATASET_FILES:
        if os.path.exists(os.path.join(dataset, name)):
            os.symlink(os.path.abspath(os.path.join(dataset, name)), os.path.join(out, name))
    for shard, stem in enumerate(shards):
        folder, base = os.path.split(stem)
        os.makedirs(os.path.join(out, folder), exist_ok=True)
        for name in os.listdir(os.path.join(dataset, folder)):
            if not name.startswith(base + "."):
                continue
            if placement.holder(shard) == peer or name.endswith(".meta"):
                os.symlink(os.path.abspath(os.path.join(dataset, folder, name)),
                           os.path.join(out, folder, name))
    return out


class Exchange:
    """One peer of the streaming exchange.

    ``dataset`` is this peer's part of the dataset (a :class:`mmpt.Dataset` or its path: the
    manifest, every ``.meta``, and the data files of the shards it holds); ``planner`` the
    :class:`mmpt.Planner` every peer builds alike. torch.distributed must be initialized: the
    exchange makes its own gloo process group over ``ranks``, and a rank's place in that group
    is its peer number; every rank of the default group must construct its Exchange, in the
    same order, as for ``torch.distributed.new_group``. ``ranks`` defaults to the ranks that
    load: one per (DP rank, CP rank), the first rank of its TP × PP replica under ``order``
    (Megatron's ``"tp-cp-dp-pp"``, as :class:`mmpt.Loader`'s ``rank=`` places ranks), so the
    exchange feeds the one load per replica; without TP and PP, every rank. On a rank outside
    ``ranks`` the Exchange does nothing (``peer`` is None): its replica's loading rank loads
    for it. ``placement``: which peer holds which shard, a :class:`mmpt.Placement`, the path
    of a placement file (``{"peers": P, "shards": {"coco/00000": 0, ...}}``) or None for
    round-robin over the manifest's shards. ``trainer_peers[d * cp + c]`` is the peer that
    trains DP rank ``d``, CP rank ``c`` (default: the peer of its loading rank under
    ``order``). ``prefetch_steps``: steps exchanged before the trainer needs them. ``threads``:
    workers checking and packing the samples this peer sends (None: the native default).
    ``timeout_seconds``: how long a collective may wait for a peer; a late peer raises an error
    naming it, in the Loader's ``next``.
    """

    def __init__(self, dataset: Union[Dataset, str], planner: Planner,
                 placement: Union[Placement, str, None] = None,
                 trainer_peers: Optional[Sequence[int]] = None,
                 ranks: Optional[Sequence[int]] = None, prefetch_steps: int = 2,
                 timeout_seconds: float = 120.0, threads: Optional[int] = None,
                 order: str = _mmpt.DEFAULT_RANK_ORDER, **renamed):
        import torch.distributed as dist

        self.dataset = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        self.timeout = float(timeout_seconds)
        _refuse_old_names(renamed, {"ahead": "prefetch_steps", "prefetch": "prefetch_steps",
                                    "timeout": "timeout_seconds", "num_threads": "threads"})
        self.prefetch = int(prefetch_steps)
        self._dist = dist
        self._thread: Optional[threading.Thread] = None
        loading = _loading_ranks(planner.layout, order, dist.get_world_size())
        ranks = sorted(loading) if ranks is None else list(ranks)
        self._group = dist.new_group(ranks=ranks, backend="gloo",
                                     timeout=datetime.timedelta(seconds=self.timeout))
        if dist.get_rank() not in ranks:
            self.peer = None
            return
        self.peers = dist.get_world_size(self._group)
        self.peer = dist.get_rank(self._group)
        if trainer_peers is None:
            trainer_peers = [ranks.index(r) if r in ranks else -1 for r in loading]
        if placement is None:
            placement = Placement.round_robin(self.dataset.path, self.peers)
        elif isinstance(placement, (str, os.PathLike)):
            placement = Placement.read(str(placement), self.dataset.path)
        if placement.peers != self.peers:
            raise _mmpt.InvalidArgumentError(
                f"exchange: the placement has {placement.peers} peers, the group {self.peers}")
        self.placement = placement
        # A trainer waits for a step at most as long as its two collectives may take, plus
        # rendering it.
        given = {} if threads is None else {"threads": threads}  # else ExchangerOptions'
        self.trainer_peers = list(trainer_peers)
        self._native = _mmpt.Exchanger(self.dataset._source, planner._stream, placement,
                                       self.peer, self.trainer_peers, **given,
                                       timeout_seconds=3 * self.timeout)
        self.source = self._native.source
        # Peers count the steps they entered in the default store, so a timeout names who is late.
        global _made
        self._store = dist.distributed_c10d._get_default_store()
        self._key = f"mmpt_exchange/{_made}"
        _made += 1
        self._cv = threading.Condition()
        self._consumed = 0
        self._stopping = False
        self._seconds = {"pack": 0.0, "all_to_all": 0.0, "unpack": 0.0}

    def start(self, step: int, end_step: Optional[int] = None) -> None:
        """Exchange steps from ``step`` (to ``end_step``, exclusive; None: until closed) in the
        background. Every peer starts at the same step. :class:`mmpt.Loader` calls it."""
        self.close()
        self.source.reset()
        self._consumed = step
        self._stopping = False
        self._thread = threading.Thread(target=self._run, args=(step, end_step),
                                        name="mmpt-exchange", daemon=True)
        self._thread.start()

    def consumed(self, step: int) -> None:
        """The trainer holds a batch of ``step``: earlier steps are done, and steps up to
        ``step + prefetch_steps`` may be exchanged. :class:`mmpt.Loader` calls it for every
        batch."""
        with self._cv:
            if step > self._consumed:
                self._consumed = step
                self.source.release(step)
                self._cv.notify_all()

    def close(self) -> None:
        """Stop exchanging (a collective in flight finishes or times out first)."""
        if self._thread is None:
            return
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._thread.join(timeout=2 * self.timeout)
        self._thread = None

    def stats(self) -> Dict[str, object]:
        """Bytes and samples sent and received per peer (``bytes_sent[q]``: to peer q; a
        peer's own share counts, though it does not leave the process), ``steps`` exchanged,
        and the exchange thread's seconds in ``pack`` (rendering), ``all_to_all`` and
        ``unpack``."""
        stats = self._native.stats()
        stats["seconds"] = dict(self._seconds)
        return stats

    def lists(self, step: int) -> Dict[str, List[List[tuple]]]:
        """This peer's send and receive lists of ``step`` (``send[q]``: the ``(source, index)``
        of the samples it sends peer q, in plan order), from the plan alone."""
        return self._native.lists(step)

    def _run(self, step: int, end_step: Optional[int]) -> None:
        try:
            while end_step is None or step < end_step:
                with self._cv:
                    self._cv.wait_for(lambda: self._stopping or
                                      step <= self._consumed + self.prefetch)
                    if self._stopping:
                        return
                self._exchange(step)
                step += 1
        except Exception as error:  # reaches the trainer through the loader's next()
            self._native.fail(_mmpt._error_code(error),
                              f"exchange step {step} (peer {self.peer}): {error}")

    def _exchange(self, step: int) -> None:
        import torch

        begin = time.perf_counter()
        buffer, send_bytes = self._native.pack(step)
        packed = time.perf_counter()
        send_sizes = torch.tensor(send_bytes, dtype=torch.int64)
        recv_sizes = torch.empty(self.peers, dtype=torch.int64)
        self._store.add(f"{self._key}/{self.peer}", 1)
        self._collective(step, lambda: self._dist.all_to_all_single(
            recv_sizes, send_sizes, group=self._group))
        recv_bytes = recv_sizes.tolist()
        received = torch.from_numpy(self._native.receive(step, recv_bytes))
        self._collective(step, lambda: self._dist.all_to_all_single(
            received, torch.from_numpy(buffer), output_split_sizes=recv_bytes,
            input_split_sizes=list(send_bytes), group=self._group))
        exchanged = time.perf_counter()
        self._native.unpack(step)
        self._seconds["pack"] += packed - begin
        self._seconds["all_to_all"] += exchanged - packed
        self._seconds["unpack"] += time.perf_counter() - exchanged

    def _collective(self, step: int, run) -> None:
        try:
            run()
        except RuntimeError as error:
            entered = self._started_steps()
            late = [p for p in range(self.peers) if entered[p] < entered[self.peer]]
            who = (f"peer rank(s) {late} did not reach it" if late
                   else "no peer is behind in the step count")
            raise _mmpt.TimeoutError(f"the all-to-all of step {step} failed after up to "
                                     f"{self.timeout:g} s: {who} ({error})") from error

    def _started_steps(self) -> List[int]:
        return [int(self._store.add(f"{self._key}/{p}", 0)) for p in range(self.peers)]
