"""One load per replica: the ranks of a model-parallel job that train on the same data share
one loader.

A DP replica is TP × PP ranks (for each CP rank). Its first rank (TP 0 of the first pipeline
stage) runs the loader; the others receive its batches, each only the fields its pipeline stage
consumes (``mmpt._mmpt.stage_fields``): the first stage the model's inputs (tokens, positions,
pixels, vision routing), the last the targets (labels, loss mask), stages between only the
sequence boundaries and shapes; a job without pipeline parallelism gets every field. On the
loading rank's node the batch goes through a bounded shared-memory ring (``ShmRingWriter``),
which readers view in place; to each other node it goes once, by a ``torch.distributed``
broadcast to that node's first rank of the replica, which puts it in its own node's ring. A
rank that dies or falls behind turns into an error naming it, within ``timeout`` seconds.

EP needs nothing here: expert parallelism reuses the DP × CP ranks, which load their own data.
"""

from __future__ import annotations

import datetime
import socket
import uuid
from typing import Any, Dict, List, Optional

from . import _mmpt

_KIND_BATCH, _KIND_END, _KIND_ERROR = 0, 1, 2


class ReplicaShare:
    """This rank's part in sharing its replica's load: what it is (the loading rank, a remote
    node's receiving rank, or a reader of its node's ring) and the transports it uses. Every
    rank of the job constructs one at the same time (it runs collectives to learn each rank's
    node and to create the broadcast groups)."""

    def __init__(self, layout: Dict[str, Any], rank: int, order: str, node: Optional[str],
                 timeout: float, slots: int, capacity: int, generation: int):
        grid = _mmpt.RankGrid(layout["dp"], layout["cp"], layout["tp"], layout["pp"], order)
        self.rank = rank
        self.place = grid.place(rank)
        self.fields = _mmpt.stage_fields(self.place["role"])
        self.timeout = timeout
        nodes, token = self._gather_nodes(grid.world_size, node)
        share = grid.share(nodes, rank)  # the plan of who sends what to whom: C++'s
        self._dist = None
        self.writer = None   # this node's ring, when this rank feeds it
        self.reader = None   # this node's ring, when this rank reads it
        self.source = None   # the group this rank receives the loading rank's broadcasts in
        self.sends = []      # (group, fields) this loading rank broadcasts to
        self.ring_fields = share["ring_fields"]
        self.bytes_received = 0
        self.loading_rank = share["loading_rank"]
        if share["groups"]:
            import torch.distributed as dist
            self._dist = dist
        # Every replica's broadcast groups, created in the same order on every rank.
        for index, (ranks, fields) in enumerate(share["groups"]):
            group = self._dist.new_group(ranks, timeout=datetime.timedelta(seconds=timeout))
            if index in share["sends"]:
                self.sends.append((group, fields))
            elif index == share["source"]:
                self.source = group
        leader, readers = share["ring_writer"], share["ring_readers"]
        name = f"/mmpt-{token}-{generation}-{leader}"
        if readers and rank == leader:
            self.writer = _mmpt.ShmRingWriter(name, leader, readers, slots, capacity, timeout)
        if grid.world_size > 1:
            # Every ring exists before a reader opens it: making one (up to `capacity` bytes of
            # shared memory) may take a loaded machine longer than `timeout`, which is for a
            # loading rank that dies or stalls, not for one that is starting.
            import torch.distributed as dist
            dist.barrier()
        if readers and rank != leader:
            self.reader = _mmpt.ShmRingReader(name, readers.index(rank), timeout)

    @staticmethod
    def _gather_nodes(world: int, node: Optional[str]):
        """Each rank's node label and a token naming this job's rings, agreed by all ranks."""
        label = node if node is not None else socket.gethostname()
        if world == 1:
            return [label], uuid.uuid4().hex[:12]
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() != world:
            raise _mmpt.InvalidArgumentError(
                f"sharing one load over {world} ranks needs torch.distributed initialized with "
                f"world size {world} (the layout's dp × cp × tp × pp)")
        gathered: List[Any] = [None] * world
        dist.all_gather_object(gathered, (label, uuid.uuid4().hex[:12]))
        return [g[0] for g in gathered], gathered[0][1]

    # ---- the loading rank ----

    def publish(self, batch) -> None:
        """Hand `batch` (a native Batch) to every other rank of the replica."""
        if self.writer is not None:
            self.writer.publish(batch, self.ring_fields)
        for group, fields in self.sends:
            import torch
            data = torch.from_numpy(batch.encode(fields))
            self._broadcast_header(group, _KIND_BATCH, data.numel())
            self._broadcast(group, data)

    def end(self, error: Optional[BaseException] = None) -> None:
        """The stream ends (error None) or fails with `error` on every rank of the replica."""
        if error is None:
            if self.writer is not None:
                self.writer.close()
            for group, _ in self.sends:
                self._broadcast_header(group, _KIND_END, 0)
            return
        code, message = _mmpt._error_code(error), str(error)
        if self.writer is not None:
            self.writer.fail(code, message)
        for group, _ in self.sends:
            import torch
            data = torch.tensor(list(message.encode()), dtype=torch.uint8)
            self._broadcast_header(group, _KIND_ERROR, data.numel(), code)
            self._broadcast(group, data)

    def _broadcast_header(self, group, kind: int, size: int, code: int = 0) -> None:
        import torch
        self._broadcast(group, torch.tensor([kind, size, code], dtype=torch.int64))

    def _broadcast(self, group, tensor):
        """Broadcast `tensor` from the loading rank over `group`; returns it on the CPU. The
        group is the job's backend: gloo carries CPU tensors, NCCL CUDA ones (through the
        current device)."""
        if self._dist.get_backend(group) == "nccl":
            on_device = tensor.cuda()
            self._dist.broadcast(on_device, self.loading_rank, group=group)
            return on_device.cpu()
        self._dist.broadcast(tensor, self.loading_rank, group=group)
        return tensor

    # ---- the other ranks ----

    def receive(self) -> Optional[Dict[str, Any]]:
        """The next batch's fields for this rank's stage (None at the end of the stream)."""
        if self.reader is not None:
            return self.reader.next(self.fields)
        try:
            return self._receive_broadcast()
        except RuntimeError as error:
            if isinstance(error, _mmpt.Error):
                raise  # the loading rank's own failure, passed on
            failure = _mmpt.TimeoutError(
                f"rank {self.rank}: nothing received from rank {self.loading_rank}, which loads "
                f"this replica's batches, within {self.timeout:g} s or its connection broke "
                f"(it died or fell behind): {error}")
            if self.writer is not None:  # this node's readers fail the same way
                self.writer.fail(_mmpt._error_code(failure), str(failure))
            raise failure from error

    def _receive_broadcast(self):
        import torch
        group = self.source
        header = self._broadcast(group, torch.zeros(3, dtype=torch.int64))
        kind, size, code = (int(v) for v in header)
        if kind == _KIND_END:
            if self.writer is not None:
                self.writer.close()
            return None
        data = self._broadcast(group, torch.empty(size, dtype=torch.uint8))
        if kind == _KIND_ERROR:
            message = bytes(data.numpy()).decode()
            if self.writer is not None:
                self.writer.fail(code, message)
            raise _mmpt._error_class(code)(message)
        self.bytes_received += size
        buffer = data.numpy()
        if self.writer is not None:
            self.writer.publish_bytes(buffer)
        return _mmpt.decode_batch(buffer, self.fields)
