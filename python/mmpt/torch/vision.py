"""The native vision encoder as a ``torch.nn.Module``: Qwen2-VL, Qwen2.5-VL and Qwen3-VL vision
towers in C++ on libtorch (``src/mmpt/vision``), with variable-length attention over packed
images and activation recomputation.

It eats what the loader produces (``pixel_values`` [patches, 1176] for 14-pixel patches, 1536 for
Qwen3-VL's 16, ``image_grid_thw``) and returns the merged embeddings, one row per image pad, in
the batch's order; a Qwen3-VL tower returns its DeepStack features beside them. Its parameters carry
Hugging Face's names (without ``visual.``), so optimizers, ``torch.distributed`` and
``state_dict`` see an ordinary module, and a Hugging Face ``model.safetensors`` loads directly.
"""

from typing import Optional, Sequence

import torch

from ..data import _refuse_old_names

try:
    from .. import _vision
except ImportError as e:  # built without MMPT_WITH_TORCH
    _vision = None
    _import_error = e

_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
           torch.float64: "float64"}
_RECOMPUTE = ("none", "selective", "full")


def _native():
    if _vision is None:
        raise ImportError("mmpt was built without the native vision encoder (cmake "
                          f"-DMMPT_WITH_TORCH=ON and libtorch-dev): {_import_error}")
    return _vision


class _Holder(torch.nn.Module):
    """A bare module: the tree of submodules that gives parameters their dotted names."""


class VisionEncoder(torch.nn.Module):
    """A Qwen2-VL, Qwen2.5-VL or Qwen3-VL vision tower described by a vision preset.

    ``vision`` is a vision preset's name (``"qwen2.5-vl"``, ``"qwen2-vl"``, ``"qwen3-vl"``) or
    its JSON text; ``layers``, ``hidden``, ``heads``, ``mlp_hidden``, ``full_attention_layers``,
    ``window_size``, ``position_embeddings`` and ``deepstack_layers`` override its ``encoder``
    fields (a smaller ``layers`` keeps the preset's full-attention and DeepStack layers below
    it; a windowed preset with none below it gets full attention at its last layer, as each
    group of Qwen2.5-VL's layers ends). ``out_hidden`` is the merger's output width, the LLM's
    hidden size: by default that of the LLM preset ``llm`` (mmpt's default LLM when None).
    ``recompute`` is ``"none"``, ``"selective"`` (core attention is recomputed in the backward
    pass, so no image² attention matrix is kept) or ``"full"`` (each block keeps only its input).
    Parameters start random (torch's global RNG) unless loaded.
    """

    def __init__(self, vision: str = "qwen2.5-vl", *, recompute: str = "none",
                 dtype: torch.dtype = torch.float32, out_hidden: Optional[int] = None,
                 llm: Optional[str] = None, layers: Optional[int] = None,
                 hidden: Optional[int] = None, heads: Optional[int] = None,
                 mlp_hidden: Optional[int] = None,
                 full_attention_layers: Optional[Sequence[int]] = None,
                 window_size: Optional[int] = None,
                 position_embeddings: Optional[int] = None,
                 deepstack_layers: Optional[Sequence[int]] = None, **renamed):
        _refuse_old_names(renamed, {"preset": "vision"})
        super().__init__()
        native = _native()
        if recompute not in _RECOMPUTE:
            raise ValueError(f"recompute {recompute!r}: expected one of {', '.join(_RECOMPUTE)}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype {dtype}: expected one of {', '.join(map(str, _DTYPES))}")
        options = {} if llm is None else {"llm": llm}
        self.config = native.make_config(
            vision, out_hidden, layers=layers, hidden=hidden, heads=heads, mlp_hidden=mlp_hidden,
            full_attention_layers=(list(full_attention_layers)
                                   if full_attention_layers is not None else None),
            window_size=window_size, position_embeddings=position_embeddings,
            deepstack_layers=(list(deepstack_layers) if deepstack_layers is not None else None),
            **options)
        self.recompute = recompute
        self._names = []
        for name, shape in self.config.parameters():
            owner = self
            *path, leaf = name.split(".")
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, _Holder())
                owner = getattr(owner, part)
            owner.register_parameter(leaf, torch.nn.Parameter(torch.empty(shape, dtype=dtype)))
            self._names.append(name)
        self.reset_parameters()

    @classmethod
    def from_pretrained(cls, path: str, vision: str = "qwen2.5-vl", **kwargs) -> "VisionEncoder":
        """An encoder with the weights of a Hugging Face checkpoint: a ``.safetensors`` file, a
        ``model.safetensors.index.json``, or a folder holding either. ``out_hidden`` comes from
        the checkpoint's merger unless given; the rest of the shape from ``vision`` and
        ``kwargs``, and the checkpoint must match it."""
        if kwargs.get("out_hidden") is None:
            shapes = _native().checkpoint_shapes(path)
            for prefix in ("visual.", "model.visual.", ""):
                shape = (shapes.get(prefix + "merger.mlp.2.weight")  # Qwen2-VL, Qwen2.5-VL
                         or shapes.get(prefix + "merger.linear_fc2.weight"))  # Qwen3-VL
                if shape:
                    kwargs["out_hidden"] = shape[0]
                    break
        encoder = cls(vision, **kwargs)
        encoder.load_safetensors(path)
        return encoder

    def parameter_names(self):
        """Hugging Face's names of the parameters, in the order the C++ encoder takes them."""
        return list(self._names)

    def _weights(self):
        return [self.get_parameter(name) for name in self._names]

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Linear, patch and position weights ~ N(0, 0.02), biases 0, norm weights 1 (torch's
        RNG)."""
        for name, p in zip(self._names, self._weights()):
            if name.endswith(".bias"):
                p.zero_()
            elif ".norm" in name or ".ln_q" in name:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)

    @torch.no_grad()
    def load_safetensors(self, path: str) -> None:
        """Copy the vision tower of a safetensors checkpoint into the parameters. A missing,
        extra or mis-shaped tensor raises ``mmpt.InvalidArgumentError`` naming it, and nothing
        is copied; the LLM's tensors are ignored."""
        weights = self._weights()
        loaded = _native().read_weights(self.config, path, _DTYPES[weights[0].dtype])
        for p, t in zip(weights, loaded):
            p.copy_(t)

    def forward(self, pixel_values: torch.Tensor, image_grid_thw):
        """Embeddings [patches / 4, out_hidden] of the pack's images, in image order. A tower
        with DeepStack layers (Qwen3-VL) returns ``(embeddings, deepstack)`` instead, as Hugging
        Face's ``Qwen3VLVisionModel`` does: ``deepstack`` lists one tensor shaped like the
        embeddings per DeepStack layer, in layer order."""
        grid = torch.as_tensor(image_grid_thw, dtype=torch.int64)
        if grid.dim() == 1 and grid.numel() == 0:
            grid = grid.view(0, 3)
        embeddings, deepstack = _vision.encode(self.config, self._weights(), pixel_values, grid,
                                               self.recompute)
        return (embeddings, deepstack) if self.config.deepstack_layers else embeddings

    def extra_repr(self) -> str:
        c = self.config
        return (f"{c.preset}: layers={c.layers}, hidden={c.hidden}, heads={c.heads}, "
                f"mlp_hidden={c.mlp_hidden}, out_hidden={c.out_hidden}, "
                f"full_attention_layers={c.full_attention_layers}, "
                f"deepstack_layers={c.deepstack_layers}, recompute={self.recompute}")
