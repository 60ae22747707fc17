"""A small real vision encoder, a per-token toy LM, and packed multimodal sequences built from
real COCO image sizes, for the vision-DP tests and benchmark.

Images: the sizes of COCO val2017 images (``../shared/data/real/coco_val2017_captions.json``)
go through the Qwen-VL resize rule scaled down for a CPU (patch 4, 2×2 merge: factor 8, area at
most ``max_pixels``), so aspect ratios and the spread of image tokens are real; pixels are
generated (no image files exist here). Text: each image's caption, one token per word (hashed
into a small vocabulary), in a Qwen-style layout ``<bos> <vision_start> <image_pad>×n
<vision_end> caption <eos>``.

The toy LM has no cross-token mixing (its attention would need ring attention under CP, which
is not what these tests are about): every token, image-pad tokens included, carries a
next-token loss, so every embedding row receives a gradient from the rank that consumes it.
"""

import json
import os
import random
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

import torch
from torch import nn

import mmpt

REAL_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                         "data", "real")
COCO_PATH = os.path.join(REAL_DATA, "coco_val2017_captions.json")

PATCH = 4            # pixels per patch side
MERGE = 2            # patches merged per side into one LLM token
TEMPORAL = 2         # a still image is two identical frames (Qwen-VL)
CHANNELS = 3
PATCH_DIM = CHANNELS * TEMPORAL * PATCH * PATCH
VOCAB = 97
BOS, VISION_START, IMAGE_PAD, VISION_END, EOS = 1, 2, 3, 4, 5
FIRST_WORD_ID = 6


def load_coco(path: str = COCO_PATH):
    """(width, height, caption) of every COCO image, in file order. Fails if the file is absent."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"real data missing: {path} (tests read ../shared/data/real beside the checkout)"
        )
    with open(path) as f:
        coco = json.load(f)
    captions = {}
    for annotation in coco["annotations"]:
        captions.setdefault(annotation["image_id"], annotation["caption"])
    return [(im["width"], im["height"], captions.get(im["id"], "")) for im in coco["images"]]


@dataclass
class Sample:
    tokens: List[int]
    # Per image: offset of its first image-pad token in the sample, and its (t, h, w) grid in
    # patches.
    images: List[Tuple[int, Tuple[int, int, int]]] = field(default_factory=list)


@dataclass
class Pack:
    """One packed sequence: samples back to back, with their images' pixels."""

    samples: List[Sample]
    pixels: List[torch.Tensor] = field(default_factory=list)  # per image [t·h·w, PATCH_DIM]
    costs: List[float] = field(default_factory=list)           # per image, encoder FLOP proxy

    @property
    def seq_lengths(self) -> List[int]:
        return [len(s.tokens) for s in self.samples]

    @property
    def tokens(self) -> List[int]:
        return [t for s in self.samples for t in s.tokens]

    @property
    def grids(self) -> List[Tuple[int, int, int]]:
        return [grid for s in self.samples for _, grid in s.images]

    def images(self) -> List[Tuple[int, int, float]]:
        """(token_start, token_count, vision_cost) per image, in the unpadded pack."""
        out, offset = [], 0
        for sample in self.samples:
            for start, (t, h, w) in sample.images:
                out.append((offset + start, t * h * w // (MERGE * MERGE), self.costs[len(out)]))
            offset += len(sample.tokens)
        return out

    def labels(self) -> List[int]:
        """Next token within each sample; -100 on each sample's last token."""
        out = []
        for sample in self.samples:
            out.extend(sample.tokens[1:] + [-100])
        return out


def shard_tokens(pack: "Pack", split, rank: int):
    """(tokens, labels, real) of CP rank `rank`'s shard in its local THD layout; padding
    tokens are 0 with label -100 and real False."""
    cu, cu_padded = split.cu_seqlens.tolist(), split.cu_seqlens_padded.tolist()
    unpadded = [None] * split.padded_tokens
    for seq in range(len(cu) - 1):
        for position in range(cu[seq], cu[seq + 1]):
            unpadded[position - cu[seq] + cu_padded[seq]] = position
    local = [unpadded[p] for p in split.token_indices(rank).tolist()]
    tokens, labels = pack.tokens, pack.labels()
    return (torch.tensor([tokens[i] if i is not None else 0 for i in local]),
            torch.tensor([labels[i] if i is not None else -100 for i in local]),
            torch.tensor([i is not None for i in local]))


def image_cost(patches: int, hidden: int = 32, layers: int = 1) -> float:
    """Encoder FLOP proxy: linear layers ∝ patches, attention ∝ patches² (docs/design.md)."""
    return layers * (24.0 * patches * hidden * hidden + 4.0 * patches * patches * hidden)


def make_interleaved(words: List[int], sizes: Sequence[Tuple[int, int]], rng: random.Random,
                     max_pixels: int) -> Tuple[Sample, List[torch.Tensor]]:
    """A sample of `words` with images of `sizes` (width, height) spread evenly through the
    text, each as <vision_start> <image_pad>×n <vision_end>; returns it and the images' pixels."""
    factor = PATCH * MERGE
    sample, pixels = Sample([BOS]), []
    gaps = len(sizes) + 1
    for k, (width, height) in enumerate(sizes):
        sample.tokens += words[k * len(words) // gaps:(k + 1) * len(words) // gaps]
        h, w = mmpt.smart_resize(height, width, factor=factor, min_pixels=factor * factor * 4,
                                 max_pixels=max_pixels)
        grid = (1, h // PATCH, w // PATCH)
        sample.tokens.append(VISION_START)
        sample.images.append((len(sample.tokens), grid))
        sample.tokens += [IMAGE_PAD] * (grid[1] * grid[2] // (MERGE * MERGE)) + [VISION_END]
        generator = torch.Generator().manual_seed(rng.randrange(1 << 30))
        pixels.append(torch.randn(grid[1] * grid[2], PATCH_DIM, generator=generator,
                                  dtype=torch.float64))
    sample.tokens += words[len(sizes) * len(words) // gaps:] + [EOS]
    return sample, pixels


def make_sample(width: int, height: int, caption: str, rng: random.Random,
                max_pixels: int, with_image: bool = True) -> Tuple[Sample, List[torch.Tensor]]:
    """A caption sample: the image first, then the caption (one token per word)."""
    words = [FIRST_WORD_ID + (hash_word(w) % (VOCAB - FIRST_WORD_ID)) for w in caption.split()]
    sample, pixels = make_interleaved([], [(width, height)] if with_image else [], rng,
                                      max_pixels)
    sample.tokens = sample.tokens[:-1] + words + [EOS]
    return sample, pixels


def hash_word(word: str) -> int:
    return mmpt.hash64(word.lower().encode()) & 0x7FFFFFFF


def make_pack(coco, seed: int, num_samples: int, max_pixels: int = 8 * 8 * 48,
              text_only: Sequence[int] = ()) -> Pack:
    """A pack of `num_samples` COCO samples drawn with `seed`; samples whose index is in
    `text_only` keep their caption but drop the image."""
    rng = random.Random(seed)
    pack = Pack([])
    for k in range(num_samples):
        width, height, caption = coco[rng.randrange(len(coco))]
        sample, pixels = make_sample(width, height, caption, rng, max_pixels,
                                     with_image=k not in text_only)
        pack.samples.append(sample)
        pack.pixels += pixels
        pack.costs += [image_cost(p.shape[0]) for p in pixels]
    return pack


def write_real_mix(directory: str, coco, num_captions: int = 60, num_docs: int = 12,
                   seed: int = 0) -> List[Tuple[str, str]]:
    """Write the real-data mix as JSONL inputs for mmpt.prepare: COCO caption pairs in LLaVA
    form and mmc4 documents, their images metadata-only ({width, height}: no pixels exist here;
    mmc4 records carry no sizes, so theirs are COCO sizes drawn with `seed`).
    Returns [(source, path)]."""
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    captions_path = os.path.join(directory, "coco.jsonl")
    with open(captions_path, "w") as f:
        for i in range(num_captions):
            width, height, caption = coco[i]
            f.write(json.dumps({"id": f"coco-{i}", "image": {"width": width, "height": height},
                                "conversations": [
                                    {"from": "human", "value": "<image>\nDescribe the image."},
                                    {"from": "gpt", "value": caption}]}) + "\n")
    mmc4_source = os.path.join(REAL_DATA, "mmc4_core_ff_docs.jsonl")
    if not os.path.exists(mmc4_source):
        raise FileNotFoundError(f"real data missing: {mmc4_source}")
    docs_path = os.path.join(directory, "mmc4.jsonl")
    with open(mmc4_source) as src, open(docs_path, "w") as f:
        for i, line in enumerate(src):
            if i == num_docs:
                break
            doc = json.loads(line)
            images = []
            for info in doc["image_info"]:
                width, height, _ = coco[rng.randrange(len(coco))]
                images.append({"matched_text_index": info["matched_text_index"],
                               "width": width, "height": height})
            f.write(json.dumps({"id": f"mmc4-{i}", "text_list": doc["text_list"],
                                "image_info": images}) + "\n")
    return [("coco", captions_path), ("mmc4", docs_path)]


def pack_from_dataset(dataset, indices: Sequence[int], seed: int = 0,
                      max_pixels: int = 8 * 8 * 48, max_words: int = 120) -> Pack:
    """A pack of the prepared samples `indices`: their stored Qwen3 token ids folded into the
    toy vocabulary (at most `max_words` per sample, to keep CPU tests small) and their images
    at their recorded sizes, spread through the text."""
    rng = random.Random(seed)
    pack = Pack([])
    for i in indices:
        meta = dataset.sample_meta(i)
        ids = dataset.tokens(i)[:max_words].tolist()
        words = [FIRST_WORD_ID + (t % (VOCAB - FIRST_WORD_ID)) for t in ids]
        sample, pixels = make_interleaved(words, meta["images"], rng, max_pixels)
        pack.samples.append(sample)
        pack.pixels += pixels
        pack.costs += [image_cost(p.shape[0]) for p in pixels]
    return pack


class SmallEncoder(nn.Module):
    """Patch embedding + attention blocks (per image) with MLPs + a 2×2 merger, Qwen2-VL style.

    forward(pixel_values [patches, PATCH_DIM], grid_thw [images, 3]) → [patches/4, out_dim]:
    one row per LLM token, images in order. Patches of a 2×2 merge group are consecutive rows,
    as in Qwen's pixel layout.
    """

    def __init__(self, hidden: int = 32, out_dim: int = 32, heads: int = 4, layers: int = 1,
                 patch_dim: int = PATCH_DIM):
        super().__init__()
        self.patch_embed = nn.Linear(patch_dim, hidden)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "norm1": nn.LayerNorm(hidden),
                "attn": nn.MultiheadAttention(hidden, heads, batch_first=True),
                "norm2": nn.LayerNorm(hidden),
                "mlp": nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                     nn.Linear(4 * hidden, hidden)),
            }))
        merged = MERGE * MERGE * hidden  # Qwen2-VL's PatchMerger: LN, Linear, GELU, Linear
        self.merger = nn.Sequential(nn.LayerNorm(merged), nn.Linear(merged, merged), nn.GELU(),
                                    nn.Linear(merged, out_dim))

    def forward(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(pixel_values)
        sizes = [int(t * h * w) for t, h, w in grid_thw.tolist()]
        outputs = []
        for image in torch.split(x, sizes):
            y = image.unsqueeze(0)
            for block in self.blocks:
                z = block["norm1"](y)
                y = y + block["attn"](z, z, z, need_weights=False)[0]
                y = y + block["mlp"](block["norm2"](y))
            outputs.append(y.squeeze(0))
        x = torch.cat(outputs) if outputs else x
        return self.merger(x.reshape(-1, MERGE * MERGE * x.shape[-1]))


class ToyLM(nn.Module):
    """Token embedding and a per-token head; loss = Σ weight·cross-entropy (sum, not mean, so
    the CP ranks' losses add up to the whole pack's)."""

    def __init__(self, hidden: int = 32):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, hidden)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, VOCAB))

    def loss(self, embeds: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor):
        logits = self.head(embeds)
        losses = nn.functional.cross_entropy(logits, labels.clamp(min=0), reduction="none")
        return (losses * weights * (labels >= 0)).sum()


def build_models(seed: int = 0, dtype=torch.float64, layers: int = 1):
    torch.manual_seed(seed)
    encoder = SmallEncoder(layers=layers).to(dtype)
    lm = ToyLM().to(dtype)
    return encoder, lm


def reference_step(pack: Pack, encoder: SmallEncoder, lm: ToyLM, weights: torch.Tensor,
                   frozen: bool = False):
    """CP = 1: encode every image, write rows at the image-pad tokens, loss over all tokens.

    Returns (loss, {param name: grad}, [per-image pixel grad or None]).
    """
    dtype = next(lm.parameters()).dtype
    encoder.requires_grad_(not frozen)
    pixels = [p.to(dtype).clone().requires_grad_(not frozen) for p in pack.pixels]
    tokens = torch.tensor(pack.tokens)
    embeds = lm.embed_tokens(tokens)
    if pixels:
        rows = encoder(torch.cat(pixels), torch.tensor(pack.grids))
        positions = torch.tensor([s + r for s, n, _ in pack.images() for r in range(n)])
        embeds = embeds.index_copy(0, positions, rows)
    loss = lm.loss(embeds, torch.tensor(pack.labels()), weights.to(dtype))
    loss.backward()
    grads = {f"encoder.{n}": p.grad.clone() for n, p in encoder.named_parameters()
             if p.grad is not None}
    grads.update({f"lm.{n}": p.grad.clone() for n, p in lm.named_parameters()})
    return loss.detach(), grads, [p.grad.clone() if p.grad is not None else None for p in pixels]


def token_weights(pack: Pack, cp: int, weighted: bool) -> torch.Tensor:
    """Per unpadded token: owner CP rank + 1 when `weighted`, else 1."""
    if not weighted:
        return torch.ones(len(pack.tokens), dtype=torch.float64)
    split = mmpt.split_thd(pack.seq_lengths, cp)
    cu, cu_padded = split.cu_seqlens.tolist(), split.cu_seqlens_padded.tolist()
    owner = {}
    for rank in range(cp):
        for padded in split.token_indices(rank).tolist():
            owner[padded] = rank
    weights = []
    for seq in range(len(cu) - 1):
        for position in range(cu[seq], cu[seq + 1]):
            weights.append(owner[position - cu[seq] + cu_padded[seq]] + 1.0)
    return torch.tensor(weights, dtype=torch.float64)
