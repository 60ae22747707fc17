"""Datasets, plans and the loader: from a prepared dataset to training batches.

``Dataset`` opens a dataset prepared by ``mmpt prepare``; ``Planner`` computes the global plan of
every step (the same on every rank, with no communication); ``Loader`` executes one rank's share
of the plans ahead of the trainer and yields one batch per micro-step: a dict of NumPy arrays that
share mmpt's memory (no copies; each array keeps its batch alive).

Batch keys (T = this CP rank's tokens): ``tokens``, ``labels`` (-100 where no loss; Megatron's
shifted convention: ``labels[i]`` is the token after ``tokens[i]``), ``loss_mask`` (float32),
``position_ids`` ([T] or [3, T] M-RoPE), ``cu_seqlens`` / ``cu_seqlens_padded`` (int32, whole
micro-step), ``max_seqlen``, ``pixel_values`` ([patches, 1176] float32, Qwen layout; only the
images this CP rank encodes), ``image_grid_thw`` ([images, 3]), the videos it encodes likewise
(``pixel_values_videos`` [patches, 1176], ``video_grid_thw`` [videos, 3], Qwen2.5-VL's
``second_per_grid_ts`` [videos]; M-RoPE positions time-aligned as the vision preset says),
``routing`` (the :class:`mmpt.Routing` of the micro-step's vision items, pack by pack its
images then its videos: who encodes each, which rows go to which token positions of which CP
rank; at CP 1 every item is this rank's) and the arrays it is read from (``encoded_images``,
``encoded_videos``, ``image_rows``, ``image_encoder``, ``routes`` [segments, 6]: consumer,
item, row_begin, row_count, local_offset, source_rank), the audio clips it encodes as Qwen2-Audio
and Qwen2.5-Omni take them (``input_features`` [clips, mel bins, frames] log-mel and
``feature_attention_mask`` [clips, frames]: padded to the audio preset's window when its encoder
runs over all of it, else to the longest clip; audio tokens take text positions) with
``audio_routing`` (the same form, over the micro-step's clips pack by pack) and its arrays
(``encoded_audios``, ``audio_rows``, ``audio_encoder``, ``audio_routes``),
``sample_source`` / ``sample_index``,
``dropped`` (samples left out under ``on_error="skip"``, with the reason), ``step``,
``micro_step``, ``dp_rank``, ``cp_rank``, ``cp``, ``plan_hash`` and ``num_tokens`` (T).
Under TP or PP with one load per replica (``Loader(rank=...)``), a rank's batch holds only
what its pipeline stage consumes.
``mmpt.torch.to_tensors(batch)`` turns the arrays into torch tensors without copying.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

from . import _mmpt
from ._mmpt import Error, InvalidArgumentError
from .routing import Routing


def _refuse_old_names(given: Dict[str, Any], renamed: Dict[str, str]) -> None:
    """Raise for keyword arguments the API no longer takes: InvalidArgumentError naming the new
    name of a renamed one, TypeError for any other."""
    for name in given:
        if name in renamed:
            raise InvalidArgumentError(f"{name}= is now {renamed[name]}= (the name the mmpt "
                                       f"command, the C++ API and the docs use)")
        raise TypeError(f"unexpected keyword argument {name!r}")


class Dataset:
    """A prepared dataset (``mmpt prepare``) opened for loading.

    Samples render through the chat template the dataset was prepared with (its manifest), so
    token ids are those of Hugging Face's processor. ``loss``: ``"assistant"`` (the template's
    targets: the assistant's turns of a conversation, a document's text) or ``"all"`` (every
    text token). ``tokenizer``: a tokenizer path, None (default) for the one the manifest records.
    ``verify_crc`` checks every image against its recorded CRC-32 before decoding, so an image
    changed after prepare is caught the same way on every rank. Raises ``mmpt.NotFoundError``
    for a directory that is not a dataset. Why two: this one renders the samples a plan names
    into batches, for the loader; ``mmpt.DatasetReader`` reads a stored sample, its token ids and
    media bytes by index, as stored, for tools and inspection.
    """

    def __init__(self, path: str, loss: str = "assistant", tokenizer: Optional[str] = None,
                 verify_crc: bool = True):
        self.path = str(path)
        self._source = _mmpt.DatasetSource(self.path, loss=loss, tokenizer=tokenizer or "",
                                           verify_crc=verify_crc)

    @property
    def num_samples(self) -> int:
        return self._source.num_samples

    def reads(self) -> Dict[str, int]:
        """What this process has read of the dataset so far: ``samples`` rendered, ``media``
        items decoded (images, videos, audio clips), and ``bytes`` of sample lines, token ids
        and media (media twice when ``verify_crc`` checks them before decoding)."""
        return self._source.reads()

    @property
    def sources(self):
        """Source names, in the planner's order (a batch's ``sample_source`` indexes this)."""
        return list(self._source.sources)

    def __len__(self) -> int:
        return self.num_samples


class Planner:
    """The global plan of every step of a dataset, identical on every rank.

    Layout arguments follow Megatron: ``dp`` data-parallel ranks, ``ga`` micro-steps per step,
    ``mbs`` packs per micro-step, ``cp`` context-parallel size, ``seq_len`` tokens per pack;
    ``sync`` is where ranks wait (``"step"``, ``"microstep"``, ``"pipeline"``). ``vision``,
    ``audio``, ``llm`` and ``hardware`` name cost presets. ``vision_policy`` says who encodes a
    pack's images under CP: ``"cost"`` (vision DP balanced by encoder cost), ``"count"`` (by image
    count, as Megatron Bridge does) or ``"naive"`` (each CP rank encodes what its shard needs, no
    exchange); the plan decides it and every loader executes it. ``overlong``: a sample longer
    than ``seq_len`` is ``"truncate"``-d (text cut, images kept; dropped if its images alone do
    not fit) or ``"drop"``-ped; :meth:`plan` lists the dropped ones. A step holds each sample at
    most once: a sample the stream draws again while the step holds it waits for the next step.
    So the dataset must fill a step with distinct samples, one per pack at least (``dp * ga *
    mbs``: no pack is empty) and each source as much as its weight asks, or InvalidArgumentError
    names the numbers; ``allow_repeat=True`` lets a step repeat samples instead (a dataset
    smaller than a step, or a small source weighted beyond its size). An argument left
    out (None) takes the default the ``mmpt`` command uses too (one table, in C++:
    ``plan::Layout``, ``plan::PlannerConfig`` and ``cost::Defaults``); ``vision`` and
    ``audio`` default to the presets the dataset was prepared with (its ``mmpt.json``), and
    another one raises InvalidArgumentError naming both, as ``--vision`` and ``--audio`` do.
    ``layout`` holds the values used.

    ``planner="vanilla"`` serves the baseline's plans instead of mmpt's: the blended stream
    dealt round-robin to the DP ranks, each packing a buffer of ``vanilla_buffer`` samples
    first-fit decreasing, as Megatron Bridge with Megatron Energon does (``mmpt plan`` prints
    it beside mmpt's), so a training run can measure what mmpt's plans buy. ``planner="packed"``
    serves mmpt's global packs dealt in packing order, not reordered (the ablation's "+ global
    packing" stage). Neither can be saved or resumed (:meth:`state_dict` raises
    InvalidArgumentError).
    """

    def __init__(self, dataset, seq_len: Optional[int] = None, dp: Optional[int] = None,
                 ga: Optional[int] = None, mbs: Optional[int] = None, cp: Optional[int] = None,
                 tp: Optional[int] = None, pp: Optional[int] = None, ep: Optional[int] = None,
                 sync: Optional[str] = None, seed: Optional[int] = None,
                 vision: Optional[str] = None, audio: Optional[str] = None,
                 llm: Optional[str] = None, hardware: Optional[str] = None,
                 vision_policy: Optional[str] = None,
                 overlong: Optional[str] = None, allow_repeat: Optional[bool] = None,
                 planner: Optional[str] = None, vanilla_buffer: Optional[int] = None):
        path = dataset.path if isinstance(dataset, Dataset) else str(dataset)
        given = dict(seq_len=seq_len, dp=dp, ga=ga, mbs=mbs, cp=cp, tp=tp, pp=pp, ep=ep,
                     sync=sync, seed=seed, vision=vision, audio=audio, llm=llm,
                     hardware=hardware,
                     vision_policy=vision_policy, overlong=overlong, allow_repeat=allow_repeat,
                     planner=planner, vanilla_buffer=vanilla_buffer)
        self._stream = _mmpt.PlanStream(path, **{k: v for k, v in given.items() if v is not None})
        self.layout = self._stream.layout
        self.resume_point = (0, 0)  # (step, micro_step) a new Loader starts at
        self.position = (0, 0)  # (step, micro_step) of the next batch: its Loaders move it

    def plan(self, step: int) -> Dict[str, Any]:
        """Summary of step ``step``'s plan: ``hash``, layout, ``rank_samples`` per DP rank (a
        list of ``(source, index)``), and ``dropped``: the ``(source, index)`` of every sample
        the step drew and dropped as over-long, in draw order (its length is the step's count)."""
        return self._stream.plan(step)

    def simulate(self, step: int, **params) -> Dict[str, Any]:
        """What mmpt's step-time model (``sim::SimulateStep``, as ``mmpt simulate`` runs it)
        predicts for step ``step``'s plan on this planner's presets: ``vision_seconds`` and
        ``llm_seconds`` per ``[dp_rank][micro_step][cp_rank]`` before any wait (and
        ``attention_pairs``, the causal pairs each rank's queries attend), ``step_seconds``
        under the layout's sync model, ``lower_bound_seconds``, ``atomic_lower_bound_seconds``
        (what no placement of the step's packs or CP assignment of their indivisible images
        beats), ``tokens``, ``hardware`` and
        ``parameters``. Keyword arguments set the model's parameters (``vision_speed_factor``,
        ``cp_llm_overhead``, ``vision_dp_exchange_overhead``, ``microstep_overhead_seconds``,
        ``grad_allreduce_seconds``); the others keep ``mmpt simulate``'s defaults."""
        return _mmpt.simulate_step(self._stream, step, **params)

    def synced_seconds(self, vision, llm) -> float:
        """The step time of per-rank seconds, ``vision`` and ``llm`` each
        ``[dp_rank][micro_step][cp_rank]`` (measured, or :meth:`simulate`'s), as the ranks of this
        layout wait for each other (its ``sync`` model; what ``step_seconds`` of :meth:`simulate`
        is made of), before the all-reduce and the optimizer."""
        return _mmpt.synced_seconds(self._stream, vision, llm)

    def state_dict(self, *position) -> Dict[str, Any]:
        """The planner's state at :attr:`position`, the (step, micro_step) of the next batch: the
        resume point until a :class:`Loader` of it delivers, then where that loader stands, as
        a PyTorch sampler keeps its own position (a few KB; inside a step, a few bytes more per
        sample the step's later micro-steps hold)."""
        if position:
            raise InvalidArgumentError(
                "Planner.state_dict() takes no (step, micro_step): the planner keeps its "
                "position (Planner.position, moved by its Loader)")
        return self._state_at(*self.position)

    def _state_at(self, step: int, micro_step: int) -> Dict[str, Any]:
        return {"step": int(step), "micro_step": int(micro_step),
                "planner_state": self._stream.state_at(step, micro_step)}

    def load_state_dict(self, state: Dict[str, Any]) -> Dict[str, Any]:
        """Resume from :meth:`state_dict`, under this planner's layout, which may differ from the
        one the state was saved under (elastic resume: DP, GA, MBS, CP, EP, TP, PP and seq_len may
        change; the dataset, seed and blend may not). Returns where the next batch comes from,
        ``step`` and ``micro_step``, and ``changed``: each setting that differs ("dp 8 → 4").
        Under the same layout the same batches follow, from the saved micro-step. Under another,
        the sample stream goes on where it stood: no sample is lost or repeated; the samples the
        saved step had not delivered yet, and those it carried, enter the next step (the saved
        step + 1 when saved inside a step). A :class:`Loader` made after it starts there."""
        resume = self._stream.restore(state["planner_state"])
        self.resume_point = self.position = (int(resume["step"]), int(resume["micro_step"]))
        return resume


class Loader:
    """One rank's batches, one per micro-step, in order, loaded ahead by native threads.

    ``dataset`` is a :class:`Dataset` or its path (as for :class:`Planner`), ``planner`` the
    plans to execute; ``dp_rank`` and ``cp_rank`` say which share of them is this rank's.

    Under tensor or pipeline parallelism pass ``rank`` (the global rank) instead: the planner's
    layout places it (``order``, Megatron's ``"tp-cp-dp-pp"`` by default), and the TP × PP
    ranks of each (DP rank, CP rank) share one load (:mod:`mmpt.replica`): the first of them
    loads, the others receive its batches through shared memory on its node (``share_bytes``
    of ring, viewed in place) and a ``torch.distributed`` broadcast to other nodes. Each rank's
    batch holds only what its pipeline stage consumes: the first stage ``tokens``,
    ``position_ids``, pixels and routing; the last ``labels`` and ``loss_mask``; stages between
    only ``cu_seqlens``, ``num_tokens`` and the ids (with no pipeline parallelism, everything).
    Every rank of the job constructs its Loader at the same time (and calls
    ``load_state_dict`` together), with ``torch.distributed`` initialized when there is more
    than one rank. ``node`` labels this rank's machine (default: its host name). A rank that
    dies or falls behind makes the others raise :class:`mmpt.TimeoutError` (or
    :class:`mmpt.IOError` for a rank that exited) naming it, within ``timeout_seconds``.
    ``steps``: how many steps to load (None: until stopped), from ``start_step`` (None: where
    the planner resumes, step 0 unless it was restored). ``threads`` workers assemble
    micro-steps in parallel, at most ``prefetch_micro_steps`` finished ones wait, and the
    batches being built or waiting hold at most ``max_bytes``. ``on_error``: ``"fail"`` (raise,
    naming the sample) or ``"skip"`` (leave it out; the batch's ``dropped`` says which and why),
    as for :func:`mmpt.prepare`. None: the C++ loader's defaults
    (``mmpt._mmpt.LOADER_DEFAULTS``).
    Iteration blocks without holding the GIL. ``state_dict()`` / ``load_state_dict()`` save
    and restore the position together with the planner's state. ``exchange``: a
    :class:`mmpt.Exchange` when this node holds only part of the dataset; the loader then reads
    the samples the exchange received (the same batches as on shared storage). With ``rank=``
    only each replica's loading rank exchanges (the Exchange's default peers).
    """

    def __init__(self, dataset, planner: Planner, dp_rank: int = 0, cp_rank: int = 0,
                 threads: Optional[int] = None, prefetch_micro_steps: Optional[int] = None,
                 max_bytes: Optional[int] = None,
                 on_error: Optional[str] = None, mrope: bool = True,
                 steps: Optional[int] = None, start_step: Optional[int] = None,
                 rank: Optional[int] = None, order: str = _mmpt.DEFAULT_RANK_ORDER,
                 node: Optional[str] = None, timeout_seconds: float = 300.0,
                 share_bytes: int = 1 << 30, exchange=None, **renamed):
        _refuse_old_names(renamed, {"num_threads": "threads", "on_bad_sample": "on_error",
                                    "prefetch": "prefetch_micro_steps",
                                    "timeout": "timeout_seconds"})
        defaults = _mmpt.LOADER_DEFAULTS
        threads = defaults["threads"] if threads is None else threads
        prefetch = (defaults["prefetch_micro_steps"] if prefetch_micro_steps is None
                    else prefetch_micro_steps)
        max_bytes = defaults["max_bytes"] if max_bytes is None else max_bytes
        on_error = defaults["on_error"] if on_error is None else on_error
        self.dataset = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        self._exchange = exchange
        self.planner = planner
        self._share_args = None
        if rank is not None and (dp_rank, cp_rank) != (0, 0):
            raise InvalidArgumentError(
                f"a Loader takes rank= (its DP and CP ranks follow from the layout) or "
                f"dp_rank=/cp_rank=, not both (got rank {rank}, dp_rank {dp_rank}, "
                f"cp_rank {cp_rank})")
        if rank is not None:
            layout = planner.layout
            self._share_args = dict(layout=layout, rank=rank, order=order, node=node,
                                    timeout=timeout_seconds, capacity=share_bytes,
                                    slots=prefetch + 2 * layout["pp"])
            place = _mmpt.RankGrid(layout["dp"], layout["cp"], layout["tp"], layout["pp"],
                                   order).place(rank)
            dp_rank, cp_rank = place["dp"], place["cp"]
        self._args = dict(dp_rank=dp_rank, cp_rank=cp_rank, threads=threads,
                          prefetch_micro_steps=prefetch, max_bytes=max_bytes,
                          on_error=on_error,
                          mrope=mrope)
        step, micro = planner.resume_point if start_step is None else (start_step, 0)
        self._end_step = None if steps is None else step + steps
        self._native = None
        self._share = None
        self._generation = 0
        self._start(step, micro)

    def _start(self, step: int, micro_step: int) -> None:
        self._native = None  # stop the old pipeline before starting the new one
        self._share = None
        self._position = (step, micro_step)
        self._received = 0
        if self._share_args is not None:
            from .replica import ReplicaShare
            self._generation += 1
            self._share = ReplicaShare(generation=self._generation, **self._share_args)
            if self._share.rank != self._share.loading_rank:
                return  # this rank receives; it loads nothing
        source = self.dataset._source
        if self._exchange is not None:
            place = self._args["dp_rank"] * self.planner.layout["cp"] + self._args["cp_rank"]
            if (self._exchange.peer is None or
                    self._exchange.trainer_peers[place] != self._exchange.peer):
                raise InvalidArgumentError(
                    f"this rank loads DP rank {self._args['dp_rank']} CP rank "
                    f"{self._args['cp_rank']}, but its Exchange does not train it here (peer "
                    f"{self._exchange.peer}): give the Exchange the loading ranks and their "
                    f"trainer_peers (its defaults)")
            self._exchange.start(step, self._end_step)
            source = self._exchange.source
        self._native = _mmpt.Loader(source, self.planner._stream,
                                    start_step=step, start_micro_step=micro_step,
                                    end_step=self._end_step, **self._args)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self

    def __next__(self) -> Dict[str, Any]:
        if self._native is None:
            batch = self._share.receive()
            if batch is not None:
                self._received += 1
        else:
            batch = self._load()
        if batch is None:
            raise StopIteration
        step, micro = batch["step"], batch["micro_step"] + 1
        self._position = (step + 1, 0) if micro == self.planner.layout["ga"] else (step, micro)
        self.planner.position = self._position
        if self._exchange is not None and self._native is not None:
            self._exchange.consumed(step)
        if "routes" in batch:
            batch["routing"] = Routing.from_batch(batch)
            batch["audio_routing"] = Routing.from_batch(batch, "audio")
        return batch

    def _load(self) -> Optional[Dict[str, Any]]:
        """The next batch of this rank's own loader, handed to the rest of its replica first."""
        try:
            native = self._native.next()
        except Error as error:
            if self._share is not None:
                self._share.end(error)
            raise
        if self._share is None:
            return None if native is None else native.as_dict()
        if native is None:
            self._share.end()
            return None
        self._share.publish(native)
        return native.as_dict(self._share.fields)

    @property
    def position(self):
        """(step, micro_step) of the next batch."""
        return self._position

    @property
    def role(self) -> Dict[str, Any]:
        """This rank's place (``rank``, ``dp``, ``cp``, ``tp``, ``pp``, ``role``: ``"only"``,
        ``"first"``, ``"middle"`` or ``"last"``) and ``loading_rank``, the rank that loads
        for it; for a loader made with ``dp_rank``/``cp_rank``, that it loads itself."""
        if self._share is None:
            return dict(dp=self._args["dp_rank"], cp=self._args["cp_rank"], role="only",
                        loading_rank=None)
        return dict(self._share.place, loading_rank=self._share.loading_rank)

    def stats(self) -> Dict[str, int]:
        """The loader's counters (``batches``, ``samples``, ``images``, ``dropped``, bytes in
        flight); on a rank that receives from its replica's loading rank, ``batches`` received
        and zero loaded, with ``bytes_received`` by broadcast."""
        if self._native is not None:
            return self._native.stats()
        return dict(batches=self._received, samples=0, images=0, dropped=0,
                    bytes_in_flight=0, peak_bytes_in_flight=0, peak_micro_steps_in_flight=0,
                    bytes_received=self._share.bytes_received)

    def state_dict(self) -> Dict[str, Any]:
        """Where the next batch comes from, with the planner's state there (the same on every
        rank: saving one rank's is enough)."""
        return self.planner._state_at(*self._position)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue where :meth:`state_dict` was taken: the same batches follow under the same
        layout; under another, the stream goes on (:meth:`Planner.load_state_dict`)."""
        resume = self.planner.load_state_dict(state)
        self._start(int(resume["step"]), int(resume["micro_step"]))
