#!/usr/bin/python3
"""The baseline `mmpt bench load` compares against: a straightforward Python loader of the kind
training stacks use today (Megatron-Energon style), run on the same micro-steps of the same
prepared dataset with the same number of worker processes as mmpt has threads.

Per sample it reads the canonical line through the Energon-compatible ``.jsonl.idx`` (seek +
readline + json.loads), the token ids from ``.tok``, the image from the shard's zip
(``zipfile``), decodes it with PIL, applies EXIF orientation, converts to RGB, resizes with
PIL's bicubic filter to Qwen2-VL's smart_resize size, rescales, normalizes and patchifies with
NumPy (Qwen2VLImageProcessor's layout), then packs the micro-step: tokens with image
placeholders, shifted labels, loss mask, 1-D and M-RoPE positions, cu_seqlens. Workers are a
``multiprocessing.Pool`` (as a PyTorch DataLoader with num_workers); batches come back to the
main process in order.

Input: a JSON file written by mmpt: {"dataset": DIR, "image_pad": ID, "factor": 28,
"min_pixels": .., "max_pixels": .., "micro_steps": [[{"stem", "line", "token_begin",
"text_tokens", "image_positions"}, ...], ...]}. Output (stdout): one JSON object with the timing
and memory.
"""

import argparse
import io
import json
import math
import multiprocessing
import os
import struct
import sys
import time
import zipfile

import numpy as np
from PIL import Image, ImageOps

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)
PATCH, TEMPORAL, MERGE = 14, 2, 2

_config = None
_files = {}


def smart_resize(height, width, factor, min_pixels, max_pixels):
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def shard(stem):
    files = _files.get(stem)
    if files is None:
        base = os.path.join(_config["dataset"], stem)
        files = {
            "jsonl": open(base + ".jsonl", "rb"),
            "idx": open(base + ".jsonl.idx", "rb"),
            "zip": zipfile.ZipFile(base + ".zip"),
            "tok": np.memmap(base + ".tok", dtype=np.int32, mode="r"),
        }
        _files[stem] = files
    return files


def read_line(files, line):
    files["idx"].seek(8 * line)
    (offset,) = struct.unpack("<Q", files["idx"].read(8))
    files["jsonl"].seek(offset)
    return json.loads(files["jsonl"].readline())


def preprocess(data):
    image = Image.open(io.BytesIO(data))
    image = ImageOps.exif_transpose(image)
    if image.mode != "RGB":
        image = image.convert("RGB")
    h, w = smart_resize(image.height, image.width, _config["factor"], _config["min_pixels"],
                        _config["max_pixels"])
    image = image.resize((w, h), resample=Image.BICUBIC)
    pixels = (np.asarray(image, dtype=np.float32) * (1 / 255.0) - MEAN) / STD
    patches = np.tile(pixels.transpose(2, 0, 1)[None], (TEMPORAL, 1, 1, 1))
    gh, gw = h // PATCH, w // PATCH
    patches = patches.reshape(1, TEMPORAL, 3, gh // MERGE, MERGE, PATCH, gw // MERGE, MERGE, PATCH)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(gh * gw, 3 * TEMPORAL * PATCH * PATCH)
    return flat, (1, gh, gw)


def mrope(length, images):
    t = np.empty(length, np.int64)
    h = np.empty(length, np.int64)
    w = np.empty(length, np.int64)
    i, nxt = 0, 0
    for start, (gt, gh, gw) in images:
        n = start - i
        t[i:start] = h[i:start] = w[i:start] = np.arange(nxt, nxt + n)
        nxt += n
        i = start
        lh, lw = gh // MERGE, gw // MERGE
        count = gt * lh * lw
        t[i:i + count] = nxt + np.repeat(np.arange(gt), lh * lw)
        h[i:i + count] = nxt + np.tile(np.repeat(np.arange(lh), lw), gt)
        w[i:i + count] = nxt + np.tile(np.arange(lw), gt * lh)
        nxt = max(t[i + count - 1], h[i + count - 1], w[i + count - 1]) + 1
        i += count
    n = length - i
    t[i:] = h[i:] = w[i:] = np.arange(nxt, nxt + n)
    return np.stack([t, h, w])


def load_micro_step(samples):
    tokens, labels, positions, pixels, grids, cu = [], [], [], [], [], [0]
    for s in samples:
        files = shard(s["stem"])
        record = read_line(files, s["line"])
        # The ids prepare rendered through the chat template; each image's pads go at its
        # position among them (.meta). The baseline takes these as stored (it does not render
        # the template again, as mmpt does to find the targets): every text token is a target.
        ids = files["tok"][s["token_begin"]:s["token_begin"] + s["text_tokens"]]
        seq, loss, images, id_at = [], [], [], 0
        for k, media in enumerate(record["media"]):
            position = s["image_positions"][k]
            seq.extend(ids[id_at:position].tolist())
            loss.extend([1] * (position - id_at))
            id_at = position
            flat, grid = preprocess(files["zip"].read(media["entry"]))
            n = flat.shape[0] // (MERGE * MERGE)
            images.append((len(seq), grid))
            seq.extend([_config["image_pad"]] * n)
            loss.extend([0] * n)
            pixels.append(flat)
            grids.append(grid)
        seq.extend(ids[id_at:].tolist())
        loss.extend([1] * (len(ids) - id_at))
        seq = np.array(seq, np.int64)
        lab = np.full(len(seq), -100, np.int64)
        shifted = np.array(loss[1:], bool)
        lab[:-1][shifted] = seq[1:][shifted]
        tokens.append(seq)
        labels.append(lab)
        positions.append(mrope(len(seq), images))
        cu.append(cu[-1] + len(seq))
    tokens = np.concatenate(tokens)
    labels = np.concatenate(labels)
    return {
        "tokens": tokens,
        "labels": labels,
        "loss_mask": (labels != -100).astype(np.float32),
        "position_ids": np.concatenate(positions, axis=1),
        "cu_seqlens": np.array(cu, np.int32),
        "pixel_values": np.concatenate(pixels) if pixels else np.zeros((0, 1176), np.float32),
        "image_grid_thw": np.array(grids, np.int64),
    }


def init(config):
    global _config
    _config = config


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="micro-step list written by mmpt")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with open(args.input) as f:
        config = json.load(f)
    steps = config.pop("micro_steps")
    start = time.perf_counter()
    peak = 0
    images = tokens = 0
    with multiprocessing.Pool(args.workers, initializer=init, initargs=(config,)) as pool:
        pids = [p.pid for p in pool._pool] + [os.getpid()]
        for batch in pool.imap(load_micro_step, steps, chunksize=1):
            images += len(batch["image_grid_thw"])
            tokens += len(batch["tokens"])
            peak = max(peak, sum(rss_bytes(p) for p in pids))
    seconds = time.perf_counter() - start
    json.dump({"micro_steps": len(steps), "seconds": seconds, "images": images,
               "tokens": tokens, "peak_rss_bytes": peak}, sys.stdout)


if __name__ == "__main__":
    main()
