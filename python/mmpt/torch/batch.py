"""mmpt batches as PyTorch tensors, and in the shape Megatron-LM's GPT step takes them."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import torch


def to_tensors(batch: Dict[str, Any]) -> Dict[str, Any]:
    """Every NumPy array of ``batch`` as a CPU tensor sharing its memory (``torch.from_numpy``,
    no copy; the tensor keeps mmpt's batch alive), except the small unsigned sample-id arrays,
    which become int64 copies. Other entries are passed through."""
    out = {}
    for key, value in batch.items():
        if isinstance(value, np.ndarray) and value.dtype in (np.uint32, np.uint64):
            value = value.astype(np.int64)  # sample ids: torch has no unsigned 32/64-bit type
        out[key] = torch.from_numpy(value) if isinstance(value, np.ndarray) else value
    return out


def megatron_batch(batch: Dict[str, Any], device: Any = None) -> Dict[str, Any]:
    """The batch as Megatron-LM's GPT forward step takes a THD-packed micro-batch.

    ``tokens``, ``labels`` and ``position_ids`` become int64 with a leading batch dimension of 1
    (``position_ids`` [3, 1, T] with M-RoPE, as Qwen-VL's rotary embedding takes it): Megatron
    wants int64, so these are copies; ``loss_mask`` ([1, T] float32) and the pixel values are not.
    A pipeline stage's batch (``mmpt.Loader(rank=...)``) lacks what the stage does not consume;
    those entries are None, as in Megatron's ``get_batch`` on that stage.
    ``packed_seq_params`` holds the THD boundaries as Transformer Engine takes them
    (``cu_seqlens_q``/``_kv`` unpadded, ``..._padded`` padded, int32; ``max_seqlen_q``/``_kv``;
    ``qkv_format="thd"``); pass it to ``megatron.core.packed_seq_params.PackedSeqParams(**...)``.
    """
    t = to_tensors(batch)
    positions = t.get("position_ids")
    if positions is not None:
        positions = positions.long()
        positions = positions.unsqueeze(0) if positions.dim() == 1 else positions.unsqueeze(1)
    cu = t["cu_seqlens"]
    cu_padded = t["cu_seqlens_padded"]
    row = lambda key: None if key not in t else t[key].unsqueeze(0)  # noqa: E731
    out = {
        "tokens": None if "tokens" not in t else t["tokens"].long().unsqueeze(0),
        "labels": None if "labels" not in t else t["labels"].long().unsqueeze(0),
        "loss_mask": row("loss_mask"),
        "position_ids": positions,
        "attention_mask": None,
        "pixel_values": t.get("pixel_values"),
        "image_grid_thw": t.get("image_grid_thw"),
        "pixel_values_videos": t.get("pixel_values_videos"),
        "video_grid_thw": t.get("video_grid_thw"),
        "second_per_grid_ts": t.get("second_per_grid_ts"),
        "input_features": t.get("input_features"),
        "feature_attention_mask": t.get("feature_attention_mask"),
        "packed_seq_params": {
            "qkv_format": "thd",
            "cu_seqlens_q": cu,
            "cu_seqlens_kv": cu,
            "cu_seqlens_q_padded": cu_padded,
            "cu_seqlens_kv_padded": cu_padded,
            "max_seqlen_q": int(batch["max_seqlen"]),
            "max_seqlen_kv": int(batch["max_seqlen"]),
        },
    }
    if device is not None:
        for key, value in list(out.items()):
            if isinstance(value, torch.Tensor):
                out[key] = value.to(device, non_blocking=True)
        params = out["packed_seq_params"]
        for key, value in list(params.items()):
            if isinstance(value, torch.Tensor):
                params[key] = value.to(device, non_blocking=True)
    return out
