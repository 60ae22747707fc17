"""An independent PyTorch reference of Hugging Face's Qwen2-VL, Qwen2.5-VL and Qwen3-VL vision
towers (``Qwen2VisionTransformerPretrainedModel``, ``Qwen2_5_VisionTransformerPretrainedModel``
and ``Qwen3VLVisionModel``), written from their documented architecture for mmpt's fidelity
tests and encoder benchmark.

It is Hugging Face style on purpose: every block attends over all patches of the pack at once,
with a block-diagonal [N, N] additive mask (one block per image frame, or per 112-pixel window in
Qwen2.5-VL's windowed blocks), as Hugging Face's eager and SDPA paths do. That makes it the
baseline of ``bench/encoder_bench.py`` too. ``attention="loop"`` attends segment by segment
instead; the tests use it to check the mask.

Parameter names and shapes are Hugging Face's without the leading ``visual.``, so a
``state_dict()`` written with ``write_safetensors`` under ``visual.`` reads like a hub checkpoint.

    ref = QwenVisionRef("qwen2.5-vl", layers=4, hidden=1280, heads=16, mlp_hidden=3420,
                        out_hidden=3584, full_attention_layers=[3], window_size=112)
    out = ref(pixel_values, image_grid_thw)        # [patches / 4, out_hidden], image order
    write_safetensors(path, {"visual." + k: v for k, v in ref.state_dict().items()})

    ref3 = Qwen3VisionRef(layers=4, deepstack_layers=[1, 3])   # Qwen3-VL: 16-pixel patches
    out, deepstack = ref3(pixel_values, image_grid_thw)        # deepstack: one per layer above
"""

import json
import struct

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# The towers' fixed geometry: 14-pixel patches, 2 frames per temporal patch, 2x2 spatial merge.
PATCH = 14
TEMPORAL_PATCH = 2
MERGE = 2
IN_CHANNELS = 3
PATCH_VALUES = IN_CHANNELS * TEMPORAL_PATCH * PATCH * PATCH  # 1176 numbers per pixel row
NORM_EPS = 1e-6
ROPE_THETA = 10000.0

# Preset shapes (presets/vision/*.json; Hugging Face's configs for the 7B models).
ARCHS = {
    "qwen2-vl": dict(layers=32, hidden=1280, heads=16, mlp_hidden=5120, out_hidden=3584),
    "qwen2.5-vl": dict(layers=32, hidden=1280, heads=16, mlp_hidden=3420, out_hidden=3584,
                       full_attention_layers=[7, 15, 23, 31], window_size=112),
}
# Qwen3-VL (Hugging Face's Qwen3VLVisionConfig defaults): 16-pixel patches, a learned 48 x 48
# position table, DeepStack mergers after blocks 8, 16 and 24.
QWEN3_PATCH = 16
QWEN3_PATCH_VALUES = IN_CHANNELS * TEMPORAL_PATCH * QWEN3_PATCH * QWEN3_PATCH  # 1536
QWEN3 = dict(layers=27, hidden=1152, heads=16, mlp_hidden=4304, out_hidden=3584,
             position_embeddings=2304, deepstack_layers=[8, 16, 24])


# ---------------------------------------------------------------------------------------------
# Index bookkeeping: pure functions of image_grid_thw, shared by the model and the tests.

def _grids(image_grid_thw):
    grid = torch.as_tensor(image_grid_thw, dtype=torch.int64).reshape(-1, 3)
    return [tuple(int(v) for v in row) for row in grid.tolist()]


def frame_seqlens(image_grid_thw):
    """Cumulative patch counts of the attention segments of full-attention blocks: one segment
    per (image, frame), each h*w patches long. int64 [segments + 1], starting at 0."""
    lengths = [h * w for t, h, w in _grids(image_grid_thw) for _ in range(t)]
    return torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0)


def rotary_positions(image_grid_thw):
    """(row, column) of every pixel row in the loader's order, int64 [patches, 2].

    The processor emits an image's patches 2x2 merge unit by merge unit: for each merged row,
    for each merged column, the four patches (top-left, top-right, bottom-left, bottom-right);
    the whole frame again for each temporal patch."""
    out = []
    for t, h, w in _grids(image_grid_thw):
        units = (h // MERGE, MERGE, w // MERGE, MERGE)
        rows = torch.arange(h).view(h // MERGE, MERGE, 1, 1).expand(*units)
        cols = torch.arange(w).view(1, 1, w // MERGE, MERGE).expand(*units)
        # (merged row, merged col, row in unit, col in unit) order.
        rows = rows.permute(0, 2, 1, 3).reshape(-1)
        cols = cols.permute(0, 2, 1, 3).reshape(-1)
        out.append(torch.stack([rows, cols], dim=1).repeat(t, 1))
    if not out:
        return torch.zeros(0, 2, dtype=torch.int64)
    return torch.cat(out)


def window_order(image_grid_thw, window_size=112):
    """Qwen2.5-VL's window permutation.

    Returns (index, seqlens): ``index`` int64 [patches / 4] lists merge units (groups of 4 pixel
    rows) in window order: per image, per frame, windows of (window_size / 28)^2 merge units
    row-major over the frame (edge windows smaller), units row-major inside a window.
    ``seqlens`` int64 [windows + 1] are the cumulative pixel-row counts of the windows, with no
    empty window (Hugging Face pads the grid to whole windows and drops the empty ones)."""
    units_per_side = window_size // MERGE // PATCH
    if units_per_side < 1:
        raise ValueError(f"window_size {window_size} is under one merge unit ({MERGE * PATCH} px)")
    index, lengths, base = [], [], 0
    for t, h, w in _grids(image_grid_thw):
        mh, mw = h // MERGE, w // MERGE
        for frame in range(t):
            first = base + frame * mh * mw
            for r0 in range(0, mh, units_per_side):
                for c0 in range(0, mw, units_per_side):
                    rs = torch.arange(r0, min(r0 + units_per_side, mh))
                    cs = torch.arange(c0, min(c0 + units_per_side, mw))
                    units = (first + rs[:, None] * mw + cs[None, :]).reshape(-1)
                    index.append(units)
                    lengths.append(units.numel() * MERGE * MERGE)
        base += t * mh * mw
    idx = torch.cat(index) if index else torch.zeros(0, dtype=torch.int64)
    return idx, torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0)


def rotary(head_dim, image_grid_thw):
    """cos and sin, fp32 [patches, head_dim]: row positions on the first half of the rotary
    frequencies, column positions on the second, the whole repeated twice."""
    dim = head_dim // 2
    inv_freq = 1.0 / (ROPE_THETA ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    pos = rotary_positions(image_grid_thw).float()
    angles = torch.cat([pos[:, :1] * inv_freq, pos[:, 1:] * inv_freq], dim=1)  # [N, dim]
    emb = torch.cat([angles, angles], dim=1)
    return emb.cos(), emb.sin()


def interpolated_positions(table, image_grid_thw):
    """Qwen3-VL's learned position embedding for every pixel row, [patches, hidden] in the
    loader's order: per image, the side x side ``table`` sampled bilinearly at an h x w grid
    spread evenly over it (row i at i * (side - 1) / (h - 1), by torch.linspace in fp32),
    weights in the table's dtype, the four corners summed top-left, top-right, bottom-left,
    bottom-right; the grid then reordered into 2x2 merge units and repeated for each frame."""
    side = int(round(table.shape[0] ** 0.5))
    out = []
    for t, h, w in _grids(image_grid_thw):
        hs, ws = torch.linspace(0, side - 1, h), torch.linspace(0, side - 1, w)
        top, left = hs.long(), ws.long()
        bottom, right = (top + 1).clamp(max=side - 1), (left + 1).clamp(max=side - 1)
        dh, dw = (hs - top)[:, None], (ws - left)[None, :]
        corners = [(top[:, None] * side + left[None, :], (1 - dh) * (1 - dw)),
                   (top[:, None] * side + right[None, :], (1 - dh) * dw),
                   (bottom[:, None] * side + left[None, :], dh * (1 - dw)),
                   (bottom[:, None] * side + right[None, :], dh * dw)]
        grid = None
        for index, weight in corners:
            term = table[index.reshape(-1).to(table.device)] * \
                weight.reshape(-1, 1).to(table.device, table.dtype)
            grid = term if grid is None else grid + term
        units = grid.view(h // MERGE, MERGE, w // MERGE, MERGE, -1).permute(0, 2, 1, 3, 4)
        out.append(units.reshape(h * w, -1).repeat(t, 1))
    return torch.cat(out) if out else table.new_zeros(0, table.shape[1])


def block_diagonal_mask(seqlens, dtype, device="cpu"):
    """The additive [N, N] mask of Hugging Face's eager path: 0 inside a segment, the dtype's
    lowest value across segments."""
    n = int(seqlens[-1])
    segment = torch.repeat_interleave(torch.arange(len(seqlens) - 1), seqlens[1:] - seqlens[:-1])
    segment = segment.to(device)
    same = segment[:, None] == segment[None, :]
    mask = torch.full((n, n), torch.finfo(dtype).min, dtype=dtype, device=device)
    return mask.masked_fill_(same, 0.0)


# ---------------------------------------------------------------------------------------------
# Modules. Names follow Hugging Face's so the state_dict keys are the checkpoint's.

class RMSNorm(nn.Module):
    """Qwen2's RMSNorm: normalize in fp32, scale by the weight in the input's dtype."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + NORM_EPS)
        return self.weight * normed.to(x.dtype)


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=True)
        self.proj = nn.Linear(dim, dim, bias=True)

    def forward(self, x, cos, sin, seqlens, mode, mask_cache):
        n = x.shape[0]
        q, k, v = self.qkv(x).view(n, 3, self.heads, self.head_dim).unbind(1)  # [n, heads, hd] each
        # Rotary in fp32, back to the activations' dtype (Hugging Face's
        # apply_rotary_pos_emb_vision).
        c, s = cos[:, None, :], sin[:, None, :]
        q = (q.float() * c + rotate_half(q.float()) * s).to(x.dtype)
        k = (k.float() * c + rotate_half(k.float()) * s).to(x.dtype)
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))  # [heads, n, hd]
        scale = self.head_dim ** -0.5
        if mode == "mask":
            key = id(seqlens)  # the full or the window segments of this forward
            if key not in mask_cache:
                mask_cache[key] = block_diagonal_mask(seqlens, x.dtype, x.device)
            scores = torch.matmul(q, k.transpose(1, 2)) * scale + mask_cache[key]
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(x.dtype)
            out = torch.matmul(probs, v)
        else:  # "loop": one dense attention per segment
            parts = []
            for a, b in zip(seqlens[:-1].tolist(), seqlens[1:].tolist()):
                scores = torch.matmul(q[:, a:b], k[:, a:b].transpose(1, 2)) * scale
                probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(x.dtype)
                parts.append(torch.matmul(probs, v[:, a:b]))
            out = torch.cat(parts, dim=1)
        return self.proj(out.transpose(0, 1).reshape(n, -1))


class Qwen2MLP(nn.Module):
    def __init__(self, dim, mlp_hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, mlp_hidden)
        self.fc2 = nn.Linear(mlp_hidden, dim)

    def forward(self, x):
        return self.fc2(quick_gelu(self.fc1(x)))


class Qwen25MLP(nn.Module):
    def __init__(self, dim, mlp_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, mlp_hidden)
        self.up_proj = nn.Linear(dim, mlp_hidden)
        self.down_proj = nn.Linear(mlp_hidden, dim)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Qwen3MLP(nn.Module):
    def __init__(self, dim, mlp_hidden):
        super().__init__()
        self.linear_fc1 = nn.Linear(dim, mlp_hidden)
        self.linear_fc2 = nn.Linear(mlp_hidden, dim)

    def forward(self, x):
        return self.linear_fc2(F.gelu(self.linear_fc1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, arch, dim, heads, mlp_hidden):
        super().__init__()
        if arch in ("qwen2-vl", "qwen3-vl"):
            self.norm1 = nn.LayerNorm(dim, eps=NORM_EPS)
            self.norm2 = nn.LayerNorm(dim, eps=NORM_EPS)
            self.mlp = (Qwen2MLP if arch == "qwen2-vl" else Qwen3MLP)(dim, mlp_hidden)
        else:
            self.norm1 = RMSNorm(dim)
            self.norm2 = RMSNorm(dim)
            self.mlp = Qwen25MLP(dim, mlp_hidden)
        self.attn = Attention(dim, heads)

    def forward(self, x, cos, sin, seqlens, mode, mask_cache):
        x = x + self.attn(self.norm1(x), cos, sin, seqlens, mode, mask_cache)
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        kernel = (TEMPORAL_PATCH, PATCH, PATCH)
        self.proj = nn.Conv3d(IN_CHANNELS, dim, kernel_size=kernel, stride=kernel, bias=False)

    def forward(self, pixel_values):
        x = pixel_values.reshape(-1, IN_CHANNELS, TEMPORAL_PATCH, PATCH, PATCH)
        return self.proj(x.to(self.proj.weight.dtype)).reshape(x.shape[0], -1)


class PatchMerger(nn.Module):
    def __init__(self, arch, dim, out_hidden):
        super().__init__()
        self.unit_dim = dim * MERGE * MERGE
        self.ln_q = nn.LayerNorm(dim, eps=NORM_EPS) if arch == "qwen2-vl" else RMSNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(self.unit_dim, self.unit_dim), nn.GELU(),
                                 nn.Linear(self.unit_dim, out_hidden))

    def forward(self, x):
        return self.mlp(self.ln_q(x).reshape(-1, self.unit_dim))


class QwenVisionRef(nn.Module):
    """Hugging Face-style Qwen2-VL / Qwen2.5-VL vision tower (Qwen3-VL's: Qwen3VisionRef).

    ``arch``: "qwen2-vl" or "qwen2.5-vl"; the keyword arguments override the 7B preset shape.
    ``attention``: "mask" (one [N, N] block-diagonal mask over the whole pack, Hugging Face's
    eager path) or "loop" (dense attention per segment). Parameters are initialised from
    torch's global RNG: linear and convolution layers by torch's default (scaled by fan-in),
    norm weights 1 + N(0, 0.1) and LayerNorm biases N(0, 0.1), so that every parameter
    matters to the tests (Hugging Face would start the norms at exactly 1 and 0)."""

    def __init__(self, arch, layers=None, hidden=None, heads=None, mlp_hidden=None,
                 out_hidden=None, full_attention_layers=None, window_size=None,
                 attention="mask"):
        super().__init__()
        if arch not in ARCHS:
            raise ValueError(f"unknown architecture {arch!r}; expected one of {sorted(ARCHS)}")
        if attention not in ("mask", "loop"):
            raise ValueError(f"attention must be 'mask' or 'loop', not {attention!r}")
        cfg = dict(ARCHS[arch])
        given = dict(layers=layers, hidden=hidden, heads=heads, mlp_hidden=mlp_hidden,
                     out_hidden=out_hidden)
        if arch == "qwen2.5-vl":
            given.update(full_attention_layers=full_attention_layers, window_size=window_size)
        elif full_attention_layers is not None or window_size is not None:
            raise ValueError("qwen2-vl has no window attention: full_attention_layers and "
                             "window_size apply to qwen2.5-vl only")
        cfg.update({k: v for k, v in given.items() if v is not None})
        if cfg["hidden"] % cfg["heads"] or (cfg["hidden"] // cfg["heads"]) % 4:
            raise ValueError(f"hidden {cfg['hidden']} over heads {cfg['heads']} "
                             "must be a multiple of 4")
        self.arch, self.config, self.attention = arch, cfg, attention
        self.head_dim = cfg["hidden"] // cfg["heads"]
        self.full_attention_layers = set(cfg.get("full_attention_layers", range(cfg["layers"])))
        self.patch_embed = PatchEmbed(cfg["hidden"])
        self.blocks = nn.ModuleList(Block(arch, cfg["hidden"], cfg["heads"], cfg["mlp_hidden"])
                                    for _ in range(cfg["layers"]))
        self.merger = PatchMerger(arch, cfg["hidden"], cfg["out_hidden"])
        with torch.no_grad():
            norms = [m for m in self.modules() if isinstance(m, (nn.LayerNorm, RMSNorm))]
            for norm in norms:
                norm.weight.normal_(1.0, 0.1)
                if getattr(norm, "bias", None) is not None:
                    norm.bias.normal_(0.0, 0.1)

    def forward(self, pixel_values, image_grid_thw):
        grid = torch.as_tensor(image_grid_thw, dtype=torch.int64).reshape(-1, 3)
        if pixel_values.dim() != 2 or pixel_values.shape[1] != PATCH_VALUES:
            raise ValueError(f"pixel_values must be [patches, {PATCH_VALUES}], "
                             f"got {tuple(pixel_values.shape)}")
        if int(grid.prod(1).sum()) != pixel_values.shape[0]:
            raise ValueError(f"image_grid_thw covers {int(grid.prod(1).sum())} patches, "
                             f"pixel_values has {pixel_values.shape[0]} rows")
        x = self.patch_embed(pixel_values)
        cos, sin = rotary(self.head_dim, grid)
        full = frame_seqlens(grid)
        windowed = self.arch == "qwen2.5-vl"
        if windowed:
            order, window_seqlens = window_order(grid, self.config["window_size"])
            rows = (order[:, None] * (MERGE * MERGE) + torch.arange(MERGE * MERGE)).reshape(-1)
            x, cos, sin = x[rows.to(x.device)], cos[rows], sin[rows]
        cos, sin = cos.to(x.device), sin.to(x.device)
        mask_cache = {}
        for i, block in enumerate(self.blocks):
            seqlens = full if (not windowed or i in self.full_attention_layers) else window_seqlens
            x = block(x, cos, sin, seqlens, self.attention, mask_cache)
        x = self.merger(x)
        if windowed:
            x = x[torch.argsort(order).to(x.device)]
        return x


# ---------------------------------------------------------------------------------------------
# Qwen3-VL. Names follow Hugging Face's Qwen3VLVisionModel.

class Qwen3Merger(nn.Module):
    """LayerNorm over each patch (the final merger) or over the merged 2x2 unit (a DeepStack
    merger, ``postshuffle``), then merged width -> merged width -> out_hidden with exact GELU."""

    def __init__(self, dim, out_hidden, postshuffle):
        super().__init__()
        self.unit_dim = dim * MERGE * MERGE
        self.postshuffle = postshuffle
        self.norm = nn.LayerNorm(self.unit_dim if postshuffle else dim, eps=NORM_EPS)
        self.linear_fc1 = nn.Linear(self.unit_dim, self.unit_dim)
        self.linear_fc2 = nn.Linear(self.unit_dim, out_hidden)

    def forward(self, x):
        if self.postshuffle:
            x = self.norm(x.reshape(-1, self.unit_dim))
        else:
            x = self.norm(x).reshape(-1, self.unit_dim)
        return self.linear_fc2(F.gelu(self.linear_fc1(x)))


class Qwen3VisionRef(nn.Module):
    """Hugging Face-style Qwen3-VL vision tower: returns (embeddings, [DeepStack features]).

    Keyword arguments override QWEN3's shape; ``attention`` is "mask" or "loop" as in
    QwenVisionRef (every block attends within each frame: Qwen3-VL has no windows). Parameters
    start from torch's global RNG: linear, convolution and embedding layers by torch's defaults,
    norm weights 1 + N(0, 0.1) and biases N(0, 0.1)."""

    arch = "qwen3-vl"

    def __init__(self, attention="mask", **overrides):
        super().__init__()
        unknown = set(overrides) - set(QWEN3)
        if unknown:
            raise ValueError(f"unknown Qwen3-VL fields {sorted(unknown)}")
        if attention not in ("mask", "loop"):
            raise ValueError(f"attention must be 'mask' or 'loop', not {attention!r}")
        cfg = {**QWEN3, **{k: v for k, v in overrides.items() if v is not None}}
        if any(layer >= cfg["layers"] for layer in cfg["deepstack_layers"]):
            raise ValueError(f"deepstack_layers {cfg['deepstack_layers']} exceed the depth")
        self.config, self.attention = cfg, attention
        dim = cfg["hidden"]
        self.head_dim = dim // cfg["heads"]
        kernel = (TEMPORAL_PATCH, QWEN3_PATCH, QWEN3_PATCH)
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv3d(IN_CHANNELS, dim, kernel_size=kernel, stride=kernel,
                                          bias=True)
        self.pos_embed = nn.Embedding(cfg["position_embeddings"], dim)
        self.blocks = nn.ModuleList(Block(self.arch, dim, cfg["heads"], cfg["mlp_hidden"])
                                    for _ in range(cfg["layers"]))
        self.merger = Qwen3Merger(dim, cfg["out_hidden"], postshuffle=False)
        self.deepstack_merger_list = nn.ModuleList(
            Qwen3Merger(dim, cfg["out_hidden"], postshuffle=True)
            for _ in cfg["deepstack_layers"])
        with torch.no_grad():
            for norm in (m for m in self.modules() if isinstance(m, nn.LayerNorm)):
                norm.weight.normal_(1.0, 0.1)
                norm.bias.normal_(0.0, 0.1)

    def forward(self, pixel_values, image_grid_thw):
        grid = torch.as_tensor(image_grid_thw, dtype=torch.int64).reshape(-1, 3)
        if pixel_values.dim() != 2 or pixel_values.shape[1] != QWEN3_PATCH_VALUES:
            raise ValueError(f"pixel_values must be [patches, {QWEN3_PATCH_VALUES}], "
                             f"got {tuple(pixel_values.shape)}")
        proj = self.patch_embed.proj
        x = proj(pixel_values.reshape(-1, IN_CHANNELS, TEMPORAL_PATCH, QWEN3_PATCH, QWEN3_PATCH)
                 .to(proj.weight.dtype)).reshape(pixel_values.shape[0], -1)
        x = x + interpolated_positions(self.pos_embed.weight, grid)
        cos, sin = (t.to(x.device) for t in rotary(self.head_dim, grid))
        seqlens, mask_cache, deepstack = frame_seqlens(grid), {}, []
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, seqlens, self.attention, mask_cache)
            if i in self.config["deepstack_layers"]:
                k = self.config["deepstack_layers"].index(i)
                deepstack.append(self.deepstack_merger_list[k](x))
        return self.merger(x), deepstack


# ---------------------------------------------------------------------------------------------
# safetensors, by hand: u64 little-endian header size, a JSON header, then raw little-endian data.

_DTYPES = {torch.float32: ("F32", np.dtype("<f4")), torch.bfloat16: ("BF16", np.dtype("<u2")),
           torch.float16: ("F16", np.dtype("<f2")), torch.int64: ("I64", np.dtype("<i8")),
           torch.int32: ("I32", np.dtype("<i4"))}
_BY_NAME = {name: (dt, np_dt) for dt, (name, np_dt) in _DTYPES.items()}


def _raw(tensor):
    t = tensor.detach().cpu().contiguous()
    if t.dtype not in _DTYPES:
        raise ValueError(f"write_safetensors: dtype {t.dtype} is not supported")
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype(_DTYPES[t.dtype][1]).tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} as a safetensors file (F32, BF16, F16, I64, I32), tensors in
    name order, the header padded with spaces to a multiple of 8 bytes."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        blob = _raw(tensors[name])
        header[name] = {"dtype": _DTYPES[tensors[name].dtype][0],
                        "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """Read a safetensors file written by write_safetensors (or any F32/BF16/F16/I64/I32 one)
    into {name: tensor}."""
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    body = data[8 + size:]
    out = {}
    for name, info in header.items():
        dtype, np_dtype = _BY_NAME[info["dtype"]]
        a, b = info["data_offsets"]
        array = np.frombuffer(body[a:b], dtype=np_dtype).copy()
        t = torch.from_numpy(array.view(np.int16) if dtype == torch.bfloat16 else array)
        t = t.view(torch.bfloat16) if dtype == torch.bfloat16 else t
        out[name] = t.reshape(info["shape"])
    return out
