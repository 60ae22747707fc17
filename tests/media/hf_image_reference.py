#!/usr/bin/python3
"""The Hugging Face way of preparing an image for Qwen2-VL, in Pillow and NumPy.

Reproduces transformers' load_image (ImageOps.exif_transpose), the white-background alpha
composite of qwen_vl_utils, and Qwen2VLImageProcessor (smart_resize, Pillow BICUBIC resize
with reducing_gap=None, rescale 1/255, normalize, temporal repeat, patchify). mmpt's C++
pipeline is compared against it (media parity test) and timed against it (image benchmark).

  hf_image_reference.py reference DIR NAME...         write DIR/NAME.f32 and DIR/reference.txt
  hf_image_reference.py bench DIR NAME... [--rounds R] time the pipeline, print images/s

Run with Debian's /usr/bin/python3 (python3-pil, python3-numpy).
"""
import math
import sys
import time

import numpy as np
from PIL import Image, ImageOps

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)
PATCH, TEMPORAL, MERGE = 14, 2, 2
MIN_PIXELS, MAX_PIXELS = 56 * 56, 28 * 28 * 1280


def smart_resize(height, width, factor=PATCH * MERGE, min_pixels=MIN_PIXELS,
                 max_pixels=MAX_PIXELS):
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} above 200")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def load_rgb(path):
    """load_image: open, EXIF transpose; then RGB with any transparency composited on white."""
    image = Image.open(path)
    image = ImageOps.exif_transpose(image)
    if image.mode in ("I", "I;16", "I;16B"):
        # 16-bit gray: keep the high byte (Pillow's own conversion would clip at 255).
        image = Image.fromarray((np.asarray(image).astype(np.uint32) >> 8).astype(np.uint8), "L")
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    if has_alpha:
        rgba = image.convert("RGBA")
        white = Image.new("RGB", rgba.size, (255, 255, 255))
        white.paste(rgba, mask=rgba.split()[3])
        return white
    return image.convert("RGB")


def preprocess(path):
    """Qwen2VLImageProcessor on one still image: (pixel_values, (t, h, w))."""
    array = np.asarray(load_rgb(path))
    height, width = array.shape[:2]
    resized_h, resized_w = smart_resize(height, width)
    resized = Image.fromarray(array).resize((resized_w, resized_h), resample=Image.BICUBIC,
                                            reducing_gap=None)
    x = (np.asarray(resized).astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - MEAN) / STD
    x = x.transpose(2, 0, 1)                       # channels first
    patches = np.stack([x] * TEMPORAL)             # a still image fills every temporal slot
    grid_t, grid_h, grid_w = 1, resized_h // PATCH, resized_w // PATCH
    patches = patches.reshape(grid_t, TEMPORAL, 3, grid_h // MERGE, MERGE, PATCH,
                              grid_w // MERGE, MERGE, PATCH)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, 3 * TEMPORAL * PATCH * PATCH)
    return flat, (grid_t, grid_h, grid_w)


def main(argv):
    command = argv[1]
    if command == "reference":
        directory, names = argv[2], argv[3:]
        with open(f"{directory}/reference.txt", "w") as out:
            for name in names:
                flat, (t, h, w) = preprocess(f"{directory}/{name}")
                np.ascontiguousarray(flat, dtype="<f4").tofile(f"{directory}/{name}.f32")
                out.write(f"{name} {t} {h} {w} {flat.shape[0]} {flat.shape[1]}\n")
    elif command == "bench":
        rounds = 1
        names = argv[3:]
        if "--rounds" in names:
            at = names.index("--rounds")
            rounds = int(names[at + 1])
            names = names[:at] + names[at + 2:]
        paths = [f"{argv[2]}/{name}" for name in names]
        checksum = 0.0
        start = time.process_time()  # CPU time: per core, robust to other load
        for _ in range(rounds):
            for path in paths:
                flat, _ = preprocess(path)
                checksum += float(flat[0, 0])
        seconds = time.process_time() - start
        print(f"{rounds * len(paths) / seconds:.3f} images/s {checksum:.3f}")
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
