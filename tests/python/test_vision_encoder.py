"""Fidelity of mmpt.torch.VisionEncoder (the native Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision towers)
against the independent Hugging Face-style reference in qwen_vision_ref.py: the same random weights,
loaded through a safetensors file the test writes under ``visual.``, give the same embeddings
and the same gradients (pixels and every parameter) within fp32 tolerance, Qwen3-VL's DeepStack
features included, for real COCO image sizes with pixels from mmpt's own loader; recomputation
does not change gradients; bf16 runs;
bad checkpoints and bad grids are errors that name what is wrong.

The first tests check the reference itself (its mask, its window permutation, its names, its
safetensors writer), so a failing fidelity test points at the encoder, not at the reference.
Sizes are reduced (2-3 layers, hidden 64-96) so the tier runs in seconds.
"""

import json
import struct

import pytest
import torch

import load_corpus
import mmpt
import mmpt.torch
from qwen_vision_ref import (MERGE, PATCH_VALUES, QWEN3_PATCH_VALUES, Qwen3VisionRef,
                             QwenVisionRef, block_diagonal_mask, frame_seqlens,
                             interpolated_positions, read_safetensors, rotary_positions,
                             window_order, write_safetensors)

ARCHS = ["qwen2-vl", "qwen2.5-vl"]
# Reduced shapes: head_dim 16 (rotary on 4 frequencies per axis) and 24 (6 per axis). Small
# widths because real COCO images are 400-1600 patches each, and the reference attends per image.
SMALL = {"qwen2-vl": dict(layers=2, hidden=32, heads=2, mlp_hidden=48, out_hidden=40),
         "qwen2.5-vl": dict(layers=3, hidden=48, heads=2, mlp_hidden=40, out_hidden=36,
                            full_attention_layers=[1]),
         # A 6 x 6 position table: every real grid samples it between entries.
         "qwen3-vl": dict(layers=3, hidden=32, heads=2, mlp_hidden=40, out_hidden=24,
                          position_embeddings=36, deepstack_layers=[0, 1])}


def small_ref(arch, seed=0, **overrides):
    torch.manual_seed(seed)
    if arch == "qwen3-vl":
        return Qwen3VisionRef(**{**SMALL[arch], **overrides})
    return QwenVisionRef(arch, **{**SMALL[arch], **overrides})


def outputs(result):
    """A tower's outputs as a list: [embeddings], or [embeddings, *DeepStack features]."""
    return [result] if torch.is_tensor(result) else [result[0], *result[1]]


def rel_err(got, want, chunk=1 << 18):
    """max |got - want| / max |want|, in float64, a chunk of elements at a time (a gradient at a
    real width is tens of millions: whole-tensor float64 copies cost more than the models)."""
    got, want = got.detach().reshape(-1), want.detach().reshape(-1)
    diffs, tops = [], []  # per chunk; torch's max keeps a NaN
    for start in range(0, got.numel(), chunk):
        g, w = got[start:start + chunk].double(), want[start:start + chunk].double()
        diffs.append((g - w).abs().max())
        tops.append(w.abs().max())
    return (torch.stack(diffs).max() / torch.stack(tops).max().clamp_min(1e-12)).item()


def assert_close(got, want, what, tol):
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.isfinite(got).all(), f"{what}: not finite"
    err = rel_err(got, want)
    assert err <= tol, f"{what}: max error {err:.3g} of the largest value (tolerance {tol})"


def forward_backward(model, pixels, grid, cotangents=None, dtype=torch.float32):
    """Outputs (embeddings, then any DeepStack features) and the gradients of
    Σ <output, cotangent>: ([out], d pixels, {name: d param}, [cotangent])."""
    model.zero_grad(set_to_none=True)
    px = pixels.clone().to(dtype).requires_grad_(True)
    outs = outputs(model(px, grid))
    if cotangents is None:
        g = torch.Generator().manual_seed(7)
        cotangents = [torch.randn(out.shape, generator=g) for out in outs]
    assert len(cotangents) == len(outs)
    sum((out.float() * c).sum() for out, c in zip(outs, cotangents)).backward()
    # No copy: the next call sets the gradients to None first, so these stay as they are.
    grads = {name: p.grad.detach() for name, p in model.named_parameters()}
    return [out.detach() for out in outs], px.grad.detach(), grads, cotangents


# ---------------------------------------------------------------------------------------------
# The reference itself.

def random_pack(grids, seed=3):
    g = torch.Generator().manual_seed(seed)
    grid = torch.tensor(grids, dtype=torch.int64)
    return torch.randn(int(grid.prod(1).sum()), PATCH_VALUES, generator=g), grid


@pytest.mark.parametrize("arch", ARCHS)
def test_reference_block_diagonal_mask_equals_a_loop_over_segments(arch):
    ref = small_ref(arch)
    pixels, grid = random_pack([[1, 10, 14], [1, 4, 4], [2, 18, 12], [1, 2, 2]])
    out_mask, dpx_mask, g_mask, cot = forward_backward(ref, pixels, grid)
    ref.attention = "loop"
    out_loop, dpx_loop, g_loop, _ = forward_backward(ref, pixels, grid, cot)
    assert_close(out_loop[0], out_mask[0], "embeddings", 1e-5)
    assert_close(dpx_loop, dpx_mask, "d pixel_values", 1e-5)
    for name in g_mask:
        assert_close(g_loop[name], g_mask[name], name, 1e-5)
    # The mask really separates images: a second image changes nothing in the first's rows.
    alone, _, _, _ = forward_backward(ref, pixels[:140], grid[:1])
    assert_close(out_mask[0][:35], alone[0], "first image alone", 1e-5)


def test_reference_mask_is_zero_inside_segments_and_lowest_across():
    mask = block_diagonal_mask(torch.tensor([0, 2, 5]), torch.float32)
    low = torch.finfo(torch.float32).min
    assert mask.shape == (5, 5)
    assert (mask[:2, :2] == 0).all() and (mask[2:, 2:] == 0).all()
    assert (mask[:2, 2:] == low).all() and (mask[2:, :2] == low).all()


def test_reference_rotary_positions_follow_the_2x2_merge_order():
    pos = rotary_positions(torch.tensor([[2, 4, 6]]))
    assert pos.shape == (2 * 4 * 6, 2)
    # Rows come merge unit by merge unit: unit (R, C) holds (2R, 2C), (2R, 2C+1), (2R+1, 2C), ...
    expected = [(2 * r + i, 2 * c + j) for r in range(2) for c in range(3)
                for i in range(2) for j in range(2)]
    assert [tuple(p) for p in pos[:24].tolist()] == expected
    assert torch.equal(pos[24:], pos[:24])  # the second frame repeats the first
    assert torch.equal(frame_seqlens(torch.tensor([[2, 4, 6], [1, 2, 2]])),
                       torch.tensor([0, 24, 48, 52]))


@pytest.mark.parametrize("grid", [[[1, 2, 2]], [[1, 8, 8]], [[1, 10, 18]],
                                  [[2, 34, 46], [1, 16, 6]]])
def test_reference_window_order_is_an_invertible_split_into_windows(grid):
    index, seqlens = window_order(torch.tensor(grid), window_size=112)
    units = sum(t * h * w for t, h, w in grid) // 4
    assert sorted(index.tolist()) == list(range(units))  # a permutation of the merge units
    assert torch.equal(index[torch.argsort(index)], torch.arange(units))
    lengths = (seqlens[1:] - seqlens[:-1]).tolist()
    assert seqlens[0] == 0 and seqlens[-1] == units * 4
    assert all(0 < n <= 64 and n % 4 == 0 for n in lengths)  # at most 4x4 merge units, none empty
    # Each window is one image frame's rectangle of at most 4x4 units.
    origin, start = [], 0
    for t, h, w in grid:
        for f in range(t):
            for u in range(h * w // 4):
                origin.append((start + f, u // (w // 2) // 4, u % (w // 2) // 4))
        start += t
    for a, b in zip(seqlens[:-1].tolist(), seqlens[1:].tolist()):
        assert len({origin[u] for u in index[a // 4:b // 4].tolist()}) == 1


def test_reference_window_attention_is_local_and_full_layers_are_global():
    windowed = small_ref("qwen2.5-vl", full_attention_layers=[])
    full = small_ref("qwen2.5-vl", full_attention_layers=[0, 1, 2])
    full.load_state_dict(windowed.state_dict())
    one_window, grid = random_pack([[1, 8, 8]])  # 112 x 112 pixels: exactly one window
    assert_close(windowed(one_window, grid), full(one_window, grid), "one window", 1e-5)
    large, grid = random_pack([[1, 16, 24]])  # 2 x 3 windows
    assert rel_err(windowed(large, grid), full(large, grid)) > 1e-2
    # Under window attention only, the top-left window does not see the rest of the image.
    index, _ = window_order(grid)
    changed = large.clone().view(-1, 4, PATCH_VALUES)
    changed[index[16:]] += 1.0
    out_a, out_b = windowed(large, grid), windowed(changed.view(-1, PATCH_VALUES), grid)
    assert_close(out_b[index[:16]], out_a[index[:16]], "top-left window", 1e-5)
    assert rel_err(out_b, out_a) > 1e-2


@pytest.mark.parametrize("arch", ARCHS)
def test_reference_names_and_shapes_are_hugging_faces(arch):
    d, i, o = 1280, 3420 if arch == "qwen2.5-vl" else 5120, 3584
    ref = QwenVisionRef(arch, layers=1)
    shapes = {k: tuple(v.shape) for k, v in ref.state_dict().items()}
    want = {"patch_embed.proj.weight": (d, 3, 2, 14, 14),
            "blocks.0.attn.qkv.weight": (3 * d, d), "blocks.0.attn.qkv.bias": (3 * d,),
            "blocks.0.attn.proj.weight": (d, d), "blocks.0.attn.proj.bias": (d,),
            "blocks.0.norm1.weight": (d,), "blocks.0.norm2.weight": (d,),
            "merger.ln_q.weight": (d,), "merger.mlp.0.weight": (4 * d, 4 * d),
            "merger.mlp.0.bias": (4 * d,), "merger.mlp.2.weight": (o, 4 * d),
            "merger.mlp.2.bias": (o,)}
    if arch == "qwen2-vl":
        want.update({"blocks.0.norm1.bias": (d,), "blocks.0.norm2.bias": (d,),
                     "merger.ln_q.bias": (d,), "blocks.0.mlp.fc1.weight": (i, d),
                     "blocks.0.mlp.fc1.bias": (i,), "blocks.0.mlp.fc2.weight": (d, i),
                     "blocks.0.mlp.fc2.bias": (d,)})
    else:
        for name in ("gate_proj", "up_proj"):
            want.update({f"blocks.0.mlp.{name}.weight": (i, d), f"blocks.0.mlp.{name}.bias": (i,)})
        want.update({"blocks.0.mlp.down_proj.weight": (d, i), "blocks.0.mlp.down_proj.bias": (d,)})
    assert shapes == want


def test_reference_safetensors_layout_and_round_trip(tmp_path):
    tensors = {"visual.a": torch.randn(3, 5), "visual.b": torch.randn(7).bfloat16(),
               "lm_head.weight": torch.arange(6, dtype=torch.float32).view(2, 3)}
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, tensors)
    raw = open(path, "rb").read()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    assert size % 8 == 0 and len(raw) == 8 + size + 15 * 4 + 7 * 2 + 6 * 4
    assert header["visual.b"]["dtype"] == "BF16" and header["visual.a"]["shape"] == [3, 5]
    spans = sorted(tuple(v["data_offsets"]) for v in header.values())
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    start = 8 + size + header["lm_head.weight"]["data_offsets"][0]
    assert struct.unpack("<6f", raw[start:start + 24]) == (0, 1, 2, 3, 4, 5)  # little-endian
    back = read_safetensors(path)
    assert all(torch.equal(back[k], v) for k, v in tensors.items())


# ---------------------------------------------------------------------------------------------
# Real inputs: COCO sizes through mmpt's loader.

def loader_images(work, vision):
    """(grid, pixel rows) of every image of two loader batches of a COCO corpus prepared for
    `vision` (real sizes, resized and patchified by mmpt)."""
    path = load_corpus.build(work, samples=24, vision=vision)
    dataset = mmpt.Dataset(path)
    planner = mmpt.Planner(dataset, seq_len=4096, dp=1, ga=1, seed=11, vision=vision)
    images = []
    for batch in mmpt.Loader(dataset, planner, steps=2):
        pixels = torch.from_numpy(batch["pixel_values"].copy())
        grids = batch["image_grid_thw"].tolist()
        assert pixels.shape[0] == sum(t * h * w for t, h, w in grids)
        start = 0
        for t, h, w in grids:
            images.append(((t, h, w), pixels[start:start + t * h * w]))
            start += t * h * w
    return images


@pytest.fixture(scope="module")
def coco_images(tmp_path_factory):
    """Real COCO images under the qwen2-vl preset (which resizes as qwen2.5-vl does)."""
    images = loader_images(str(tmp_path_factory.mktemp("coco_vision")), "qwen2-vl")
    assert len(images) >= 8
    return images


@pytest.fixture(scope="module")
def coco_images_qwen3(tmp_path_factory):
    """Real COCO images under the qwen3-vl preset: 16-pixel patches, sides multiples of 32."""
    images = loader_images(str(tmp_path_factory.mktemp("coco_vision3")), "qwen3-vl")
    assert len(images) >= 4
    assert all(px.shape[1] == QWEN3_PATCH_VALUES for _, px in images)
    return images


def smallest(images, count):
    """The `count` smallest real images (fewest patches), in loader order."""
    keep = sorted(range(len(images)), key=lambda i: images[i][0][1] * images[i][0][2])[:count]
    return [images[i] for i in sorted(keep)]


def pack(images):
    grid = torch.tensor([g for g, _ in images], dtype=torch.int64)
    return torch.cat([p for _, p in images]), grid


def crop(image, units_h, units_w, r0=0, c0=0):
    """A real image's top-left (from merge unit r0, c0) units_h x units_w merge units, as the
    loader would emit an image of that size (frame 0)."""
    (t, h, w), pixels = image
    mw = w // MERGE
    units = torch.tensor([(r0 + r) * mw + c0 + c for r in range(units_h) for c in range(units_w)])
    rows = (units[:, None] * 4 + torch.arange(4)).reshape(-1)
    return (1, units_h * MERGE, units_w * MERGE), pixels[rows]


@pytest.fixture(scope="module")
def VisionEncoder():
    if not hasattr(mmpt.torch, "VisionEncoder"):
        pytest.skip("mmpt was built without the native vision encoder (MMPT_WITH_TORCH=OFF)")
    return mmpt.torch.VisionEncoder


def checkpoint(tmp_path, ref, prefix="visual.", name="model.safetensors", extra=None, dtype=None):
    tensors = {prefix + k: (v if dtype is None else v.to(dtype))
               for k, v in ref.state_dict().items()}
    tensors.update(extra or {})
    path = str(tmp_path / name)
    write_safetensors(path, tensors)
    return path


def encoder_like(VisionEncoder, tmp_path, ref, recompute="none", dtype=torch.float32):
    arch = ref.arch
    dims = {k: v for k, v in SMALL[arch].items()}
    widths = ("layers", "hidden", "heads", "mlp_hidden", "out_hidden", "position_embeddings",
              "deepstack_layers")
    dims.update({k: ref.config[k] for k in widths if k in ref.config})
    if arch == "qwen2.5-vl":
        dims["full_attention_layers"] = sorted(ref.full_attention_layers)
    enc = VisionEncoder.from_pretrained(checkpoint(tmp_path, ref), arch, recompute=recompute,
                                        dtype=dtype, **dims)
    assert isinstance(enc, torch.nn.Module)
    return enc


def check_fidelity(VisionEncoder, tmp_path, arch, images, recompute="none", tol=2e-4, **overrides):
    ref = small_ref(arch, **overrides)
    ref.attention = "loop"  # same numbers as the mask (tested above), without an [N, N] tensor
    enc = encoder_like(VisionEncoder, tmp_path, ref, recompute)
    names = sorted(n for n, _ in ref.named_parameters())
    assert sorted(n for n, _ in enc.named_parameters()) == names
    pixels, grid = pack(images)
    want, want_dpx, want_grads, cot = forward_backward(ref, pixels, grid)
    got, got_dpx, got_grads, _ = forward_backward(enc, pixels, grid, cot)
    assert len(got) == 1 + len(ref.config.get("deepstack_layers", []))
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == (pixels.shape[0] // 4, ref.config["out_hidden"])
        assert_close(g, w, f"{arch} {'embeddings' if k == 0 else f'DeepStack {k - 1}'}", tol)
    assert_close(got_dpx, want_dpx, f"{arch} d pixel_values", tol)
    for name, grad in want_grads.items():
        assert_close(got_grads[name], grad, f"{arch} d {name}", tol)
    return got, got_grads


@pytest.mark.parametrize("arch", ARCHS)
def test_a_single_real_image_matches_the_reference(VisionEncoder, tmp_path, arch, coco_images):
    # The smallest real image whose merged sides are not whole windows (4 merge units), one odd.
    def ragged(image):
        mh, mw = image[0][1] // 2, image[0][2] // 2
        return (mh % 4 or mw % 4) and (mh % 2 or mw % 2)
    image = min(filter(ragged, coco_images), key=lambda im: im[0][1] * im[0][2])
    assert image[0][1] * image[0][2] > 64  # larger than one 112-px window
    check_fidelity(VisionEncoder, tmp_path, arch, [image])


@pytest.mark.parametrize("arch", ARCHS)
def test_several_real_images_in_one_pack_match_the_reference(
        VisionEncoder, tmp_path, arch, coco_images):
    images = smallest(coco_images, 4)
    assert len({g for g, _ in images}) >= 3  # several sizes in one pack
    check_fidelity(VisionEncoder, tmp_path, arch, images)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_every_image_of_two_loader_batches_in_one_pack_matches_the_reference(
        VisionEncoder, tmp_path, arch, coco_images):
    check_fidelity(VisionEncoder, tmp_path, arch, coco_images)


@pytest.mark.parametrize("arch", ARCHS)
def test_odd_and_tiny_grids_match_the_reference(VisionEncoder, tmp_path, arch, coco_images):
    # Cropped from real pixels: odd merged sides, one merge unit, exactly one 112-px window,
    # one window plus a sliver, a single row of units, and a two-frame (video-like) grid.
    a, b = coco_images[0], coco_images[1]
    images = [crop(a, 3, 5), crop(b, 1, 1), crop(a, 4, 4, 2, 1), crop(b, 5, 4), crop(a, 1, 9),
              crop(b, 7, 3, 1, 2)]
    frames = [crop(a, 3, 5, 1, 1), crop(b, 3, 5, 2, 0)]
    video = ((2, 6, 10), torch.cat([frames[0][1], frames[1][1]]))
    check_fidelity(VisionEncoder, tmp_path, arch, images + [video])


def test_qwen25_with_every_block_windowed_and_every_block_full(
        VisionEncoder, tmp_path, coco_images):
    images = smallest(coco_images, 1) + [crop(coco_images[3], 5, 7)]
    check_fidelity(VisionEncoder, tmp_path, "qwen2.5-vl", images, full_attention_layers=[])
    check_fidelity(VisionEncoder, tmp_path, "qwen2.5-vl", images, full_attention_layers=[0, 1, 2])


@pytest.mark.parametrize("arch", ARCHS)
def test_recompute_modes_give_the_same_gradients(VisionEncoder, tmp_path, arch, coco_images):
    images = smallest(coco_images, 1) + [crop(coco_images[5], 5, 3)]
    outs = {mode: check_fidelity(VisionEncoder, tmp_path, arch, images, recompute=mode)
            for mode in ("none", "selective", "full")}
    base_out, base_grads = outs["none"]
    for mode in ("selective", "full"):
        out, grads = outs[mode]
        # Selective recomputation runs another attention kernel (chunked, fp32): rounding differs.
        for k, (o, b) in enumerate(zip(out, base_out)):
            assert_close(o, b, f"{mode} output {k}", 1e-5)
        for name, grad in base_grads.items():
            assert_close(grads[name], grad, f"{mode} d {name}", 1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_bf16_runs_and_stays_close_to_fp32(VisionEncoder, tmp_path, arch, coco_images):
    ref = small_ref(arch)
    ref.attention = "loop"
    enc = encoder_like(VisionEncoder, tmp_path, ref, dtype=torch.bfloat16)
    assert all(p.dtype == torch.bfloat16 for p in enc.parameters())
    pixels, grid = pack(smallest(coco_images, 1) + [crop(coco_images[7], 3, 5)])
    want, want_dpx, want_grads, cot = forward_backward(ref, pixels, grid)
    got, got_dpx, got_grads, _ = forward_backward(enc, pixels, grid, cot, dtype=torch.bfloat16)
    assert got[0].dtype == torch.bfloat16
    assert_close(got[0].float(), want[0], "bf16 embeddings", 5e-2)
    assert_close(got_dpx.float(), want_dpx, "bf16 d pixel_values", 1e-1)
    for name in ("patch_embed.proj.weight", "blocks.0.attn.qkv.weight", "merger.mlp.2.weight"):
        assert_close(got_grads[name].float(), want_grads[name], f"bf16 d {name}", 1e-1)


# ---------------------------------------------------------------------------------------------
# Qwen3-VL: the reference's own parts, then fidelity on real COCO grids.

def test_qwen3_reference_mask_equals_a_loop_and_frames_attend_alone():
    ref = small_ref("qwen3-vl")
    g = torch.Generator().manual_seed(3)
    grid = torch.tensor([[1, 10, 14], [3, 4, 6], [1, 2, 2]])
    pixels = torch.randn(int(grid.prod(1).sum()), QWEN3_PATCH_VALUES, generator=g)
    out_mask, dpx_mask, g_mask, cot = forward_backward(ref, pixels, grid)
    assert len(out_mask) == 3  # embeddings and two DeepStack features
    ref.attention = "loop"
    out_loop, dpx_loop, g_loop, _ = forward_backward(ref, pixels, grid, cot)
    for k, (a, b) in enumerate(zip(out_loop, out_mask)):
        assert_close(a, b, f"output {k}", 1e-5)
    assert_close(dpx_loop, dpx_mask, "d pixel_values", 1e-5)
    for name in g_mask:
        assert_close(g_loop[name], g_mask[name], name, 1e-5)
    # The video's second frame encodes as that frame alone: attention and positions per frame.
    frame, _, _, _ = forward_backward(ref, pixels[140 + 24:140 + 48], torch.tensor([[1, 4, 6]]))
    for k in range(3):
        assert_close(out_mask[k][35 + 6:35 + 12], frame[k], f"frame output {k}", 1e-5)


def test_qwen3_reference_interpolates_the_position_table_bilinearly_in_merge_order():
    side = 5
    rows, cols = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    # A table linear in (row, col): bilinear interpolation reproduces the sampled place exactly.
    table = torch.stack([rows.reshape(-1), cols.reshape(-1)], 1).double() * 3 + 1
    grid = torch.tensor([[2, 8, 6], [1, 4, 4]])
    got = interpolated_positions(table, grid)
    heights = torch.tensor([8.0] * (2 * 48) + [4.0] * 16)
    widths = torch.tensor([6.0] * (2 * 48) + [4.0] * 16)
    pos = rotary_positions(grid).double()  # each row's (row, column) in merge order
    place = torch.stack([pos[:, 0] * (side - 1) / (heights - 1),
                         pos[:, 1] * (side - 1) / (widths - 1)], 1)
    assert torch.allclose(got, place * 3 + 1, atol=1e-5)
    # A grid of the table's own size samples its entries exactly, in 2x2 merge order.
    ref = small_ref("qwen3-vl", position_embeddings=16)
    table = ref.pos_embed.weight.detach()
    on_grid = interpolated_positions(table, torch.tensor([[1, 4, 4]]))
    order = [r * 4 + c for r, c in rotary_positions(torch.tensor([[1, 4, 4]])).tolist()]
    assert torch.equal(on_grid, table[order])


def test_qwen3_reference_names_and_shapes_are_hugging_faces():
    d, i, o, m = 1152, 4304, 3584, 4608
    ref = Qwen3VisionRef(layers=1, deepstack_layers=[0])
    shapes = {k: tuple(v.shape) for k, v in ref.state_dict().items()}
    want = {"patch_embed.proj.weight": (d, 3, 2, 16, 16), "patch_embed.proj.bias": (d,),
            "pos_embed.weight": (2304, d)}
    for name, width in (("norm1", d), ("norm2", d)):
        want.update({f"blocks.0.{name}.weight": (width,), f"blocks.0.{name}.bias": (width,)})
    for name, (out, inp) in {"attn.qkv": (3 * d, d), "attn.proj": (d, d),
                             "mlp.linear_fc1": (i, d), "mlp.linear_fc2": (d, i)}.items():
        want.update({f"blocks.0.{name}.weight": (out, inp), f"blocks.0.{name}.bias": (out,)})
    for prefix, norm in (("merger.", d), ("deepstack_merger_list.0.", m)):
        want.update({prefix + "norm.weight": (norm,), prefix + "norm.bias": (norm,),
                     prefix + "linear_fc1.weight": (m, m), prefix + "linear_fc1.bias": (m,),
                     prefix + "linear_fc2.weight": (o, m), prefix + "linear_fc2.bias": (o,)})
    assert shapes == want


def test_qwen3_single_real_image_matches_the_reference(VisionEncoder, tmp_path, coco_images_qwen3):
    image = min(coco_images_qwen3, key=lambda im: im[0][1] * im[0][2])
    enc_out, _ = check_fidelity(VisionEncoder, tmp_path, "qwen3-vl", [image])
    assert len(enc_out) == 3


def test_qwen3_several_real_images_and_a_video_match_the_reference(
        VisionEncoder, tmp_path, coco_images_qwen3):
    images = smallest(coco_images_qwen3, 3)
    a, b, c = coco_images_qwen3[:3]
    # Three frames (grid_t 3) cut from three real images, Qwen3-VL's full 48 x 48 table.
    frames = [crop(a, 5, 7), crop(b, 5, 7, 1, 2), crop(c, 5, 7, 2, 1)]
    video = ((3, 10, 14), torch.cat([f[1] for f in frames]))
    check_fidelity(VisionEncoder, tmp_path, "qwen3-vl", images + [video, crop(a, 3, 1)],
                   position_embeddings=2304)


def test_qwen3_recompute_modes_match_the_reference_and_each_other(
        VisionEncoder, tmp_path, coco_images_qwen3):
    a, b = coco_images_qwen3[:2]
    video = ((2, 8, 6), torch.cat([crop(a, 4, 3)[1], crop(b, 4, 3, 1, 1)[1]]))
    images = smallest(coco_images_qwen3, 1) + [video]
    outs = {mode: check_fidelity(VisionEncoder, tmp_path, "qwen3-vl", images, recompute=mode)
            for mode in ("none", "selective", "full")}
    for mode in ("selective", "full"):
        for k, (o, base) in enumerate(zip(outs[mode][0], outs["none"][0])):
            assert_close(o, base, f"{mode} output {k}", 1e-5)
        for name, grad in outs["none"][1].items():
            assert_close(outs[mode][1][name], grad, f"{mode} d {name}", 1e-5)


def test_qwen3_checkpoint_sets_out_hidden_and_names_a_missing_deepstack_tensor(
        VisionEncoder, tmp_path):
    ref = small_ref("qwen3-vl", out_hidden=20)
    dims = {k: v for k, v in SMALL["qwen3-vl"].items() if k != "out_hidden"}
    enc = VisionEncoder.from_pretrained(checkpoint(tmp_path, ref), "qwen3-vl", **dims)
    assert enc.config.out_hidden == 20 and enc.config.deepstack_layers == [0, 1]
    state = {"visual." + k: v for k, v in ref.state_dict().items()
             if k != "deepstack_merger_list.1.norm.bias"}
    path = str(tmp_path / "missing.safetensors")
    write_safetensors(path, state)
    with pytest.raises(ValueError, match=r"deepstack_merger_list\.1\.norm\.bias"):
        VisionEncoder("qwen3-vl", out_hidden=20, **dims).load_safetensors(path)
    # Without DeepStack layers the tower returns a tensor, like Qwen2.5-VL's.
    plain = VisionEncoder("qwen3-vl", layers=2, hidden=32, heads=2, mlp_hidden=40, out_hidden=8)
    assert plain.config.deepstack_layers == []
    out = plain(torch.randn(16, QWEN3_PATCH_VALUES), torch.tensor([[1, 4, 4]]))
    assert torch.is_tensor(out) and out.shape == (4, 8)


# ---------------------------------------------------------------------------------------------
# Checkpoints: names, prefixes, shards, and bad files.

@pytest.mark.parametrize("prefix", ["visual.", "model.visual.", ""])
def test_checkpoint_prefixes_load_and_llm_tensors_are_ignored(VisionEncoder, tmp_path, prefix):
    ref = small_ref("qwen2-vl")
    extra = {prefix + "rotary_pos_emb.inv_freq": torch.randn(2)}  # a buffer, not a parameter
    if prefix:  # a hub checkpoint: the LLM beside the tower (a bare-named file is the tower alone)
        extra.update({"model.layers.0.self_attn.q_proj.weight": torch.randn(4, 4),
                      "lm_head.weight": torch.randn(3, 4)})
    enc = VisionEncoder("qwen2-vl", **SMALL["qwen2-vl"])
    enc.load_safetensors(checkpoint(tmp_path, ref, prefix=prefix, extra=extra))
    state = enc.state_dict()
    assert sorted(state) == sorted(ref.state_dict())
    assert all(torch.equal(state[k], v) for k, v in ref.state_dict().items())


def test_a_sharded_checkpoint_loads_from_its_index_and_its_folder(VisionEncoder, tmp_path):
    ref = small_ref("qwen2.5-vl")
    names = sorted(ref.state_dict())
    half = len(names) // 2
    weight_map = {}
    for shard, part in (("model-00001-of-00002.safetensors", names[:half]),
                        ("model-00002-of-00002.safetensors", names[half:])):
        write_safetensors(str(tmp_path / shard), {"visual." + k: ref.state_dict()[k] for k in part})
        weight_map.update({"visual." + k: shard for k in part})
    with open(tmp_path / "model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    for source in (str(tmp_path / "model.safetensors.index.json"), str(tmp_path)):
        enc = VisionEncoder("qwen2.5-vl", **SMALL["qwen2.5-vl"])
        enc.load_safetensors(source)
        state = enc.state_dict()
        assert all(torch.equal(state[k], v) for k, v in ref.state_dict().items()), source


def test_a_checkpoint_of_the_other_architecture_is_refused_by_name(VisionEncoder, tmp_path):
    qwen25_widths = {k: v for k, v in SMALL["qwen2.5-vl"].items()
                     if k != "full_attention_layers"}
    path = checkpoint(tmp_path, small_ref("qwen2-vl", **qwen25_widths))
    with pytest.raises(ValueError, match=r"mlp\.(fc1|fc2|gate_proj|up_proj|down_proj)|bias"):
        VisionEncoder.from_pretrained(path, "qwen2.5-vl", **SMALL["qwen2.5-vl"])
    path = checkpoint(tmp_path, small_ref("qwen2.5-vl"), name="other.safetensors")
    with pytest.raises(ValueError, match=r"mlp\.(fc1|fc2|gate_proj|up_proj|down_proj)|bias"):
        VisionEncoder.from_pretrained(path, "qwen2-vl", **qwen25_widths)


@pytest.mark.parametrize("keep", [8 + 4, None, -100])
def test_a_truncated_safetensors_file_is_an_error_not_a_crash(VisionEncoder, tmp_path, keep):
    path = checkpoint(tmp_path, small_ref("qwen2-vl"))
    raw = open(path, "rb").read()
    (size,) = struct.unpack("<Q", raw[:8])
    cut = raw[:keep] if keep is not None else raw[:8 + size + 10]  # header cut / data cut
    with open(path, "wb") as f:
        f.write(cut)
    enc = VisionEncoder("qwen2-vl", **SMALL["qwen2-vl"])
    with pytest.raises((mmpt.Error, ValueError, OSError)) as error:
        enc.load_safetensors(path)
    assert "model.safetensors" in str(error.value)


def test_a_header_size_beyond_the_file_is_an_error(VisionEncoder, tmp_path):
    path = str(tmp_path / "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", 1 << 62) + b"{}")
    with pytest.raises((mmpt.Error, ValueError, OSError), match="model.safetensors"):
        VisionEncoder("qwen2-vl", **SMALL["qwen2-vl"]).load_safetensors(path)


@pytest.mark.parametrize("arch", ARCHS)
def test_missing_extra_and_misshaped_vision_tensors_are_named(VisionEncoder, tmp_path, arch):
    ref = small_ref(arch)
    state = {"visual." + k: v for k, v in ref.state_dict().items()}
    cases = {
        "missing": ({k: v for k, v in state.items() if k != "visual.blocks.1.attn.proj.bias"},
                    r"blocks\.1\.attn\.proj\.bias"),
        "extra": ({**state, "visual.blocks.9.attn.qkv.weight": torch.randn(3, 3)},
                  r"blocks\.9\.attn\.qkv\.weight"),
        "misshaped": ({**state, "visual.merger.mlp.0.weight": torch.randn(5, 5)},
                      r"merger\.mlp\.0\.weight"),
    }
    for case, (tensors, pattern) in cases.items():
        path = str(tmp_path / f"{case}.safetensors")
        write_safetensors(path, tensors)
        enc = VisionEncoder(arch, **SMALL[arch])
        with pytest.raises(ValueError, match=pattern):
            enc.load_safetensors(path)


@pytest.mark.parametrize("arch", ARCHS)
def test_grids_that_do_not_match_the_pixel_rows_are_errors(VisionEncoder, tmp_path, arch):
    enc = VisionEncoder(arch, **SMALL[arch])
    pixels, _ = random_pack([[1, 4, 6]])
    bad = [
        (pixels, torch.tensor([[1, 4, 8]])),          # more patches than rows
        (pixels, torch.tensor([[1, 4, 4]])),          # fewer
        (pixels, torch.tensor([[1, 3, 8]])),          # right count, side not a multiple of 2
        (pixels, torch.tensor([[1, 4, 6, 1]])),       # not [images, 3]
        (pixels, torch.tensor([[-1, -4, 6]])),        # negative
        (pixels[:, :1000], torch.tensor([[1, 4, 6]])),  # rows of the wrong width
    ]
    for px, grid in bad:  # a checked error (mmpt's or a ValueError), not an error deep in torch
        with pytest.raises((mmpt.Error, ValueError)):
            enc(px, grid)
    assert enc(pixels, torch.tensor([[1, 4, 6]])).shape == (6, SMALL[arch]["out_hidden"])


# ---------------------------------------------------------------------------------------------
# Real widths (slow).

@pytest.mark.slow
def test_qwen25_at_its_real_width_matches_the_reference(VisionEncoder, tmp_path, coco_images):
    images = smallest(coco_images, 1) + [crop(coco_images[1], 7, 5)]
    check_fidelity(VisionEncoder, tmp_path, "qwen2.5-vl", images, tol=5e-4, layers=2, hidden=1280,
                   heads=16, mlp_hidden=3420, out_hidden=3584, full_attention_layers=[1])


def test_the_tower_takes_its_preset_as_vision_and_names_it_for_the_old_keyword():
    small = dict(layers=1, hidden=32, heads=2, mlp_hidden=40, out_hidden=8)
    assert mmpt.torch.VisionEncoder(vision="qwen2-vl", **small).config.preset == "qwen2-vl"
    with pytest.raises(mmpt.InvalidArgumentError, match="preset= is now vision="):
        mmpt.torch.VisionEncoder(preset="qwen2-vl", **small)


def test_a_cut_windowed_tower_keeps_full_attention_at_its_last_layer(VisionEncoder):
    # Qwen2.5-VL's full-attention layers are 7, 15, 23, 31: a 12-layer tower keeps 7; a 3-layer
    # one has none below it and ends with full attention, as each group of its layers does.
    dims = dict(hidden=32, heads=2, mlp_hidden=40, out_hidden=8)
    assert VisionEncoder("qwen2.5-vl", layers=12, **dims).config.full_attention_layers == [7]
    assert VisionEncoder("qwen2.5-vl", layers=3, **dims).config.full_attention_layers == [2]
    given = VisionEncoder("qwen2.5-vl", layers=3, full_attention_layers=[], **dims)
    assert given.config.full_attention_layers == []
    assert VisionEncoder("qwen2-vl", layers=3, **dims).config.full_attention_layers == [0, 1, 2]
