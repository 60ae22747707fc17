"""The Python API as its documentation says: constructors that find what the mmpt command finds,
and defaults that are the presets' (cost::Defaults and the preset files), never a second copy."""

import json
import os
import subprocess

import numpy as np
import pytest

import load_corpus
import mmpt

PRESETS = os.path.join(load_corpus.ROOT, "presets")


def preset(kind, name):
    with open(os.path.join(PRESETS, kind, f"{name}.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def default_dataset(tmp_path_factory):
    """A dataset prepared by `mmpt prepare` with no --vision: the default preset."""
    root = tmp_path_factory.mktemp("default")
    with open(root / "tiny.jsonl", "w") as f:
        for i in range(8):
            f.write(json.dumps({"conversations": [
                {"from": "human", "value": "<image>\nWhat is it?"},
                {"from": "gpt", "value": "A cat on a mat. " * (1 + i)}],
                "image": {"width": 640 + 64 * i, "height": 480}}) + "\n")
    subprocess.run([load_corpus.MMPT, "prepare", str(root / "tiny.jsonl"), "--out",
                    str(root / "ds"), "--on-error", "fail"], check=True, capture_output=True)
    return str(root / "ds")


def test_tokenizer_constructor_finds_the_default_or_takes_a_path(tmp_path, monkeypatch):
    default = mmpt.Tokenizer()
    text = "A cat on a mat."
    assert default.encode(text) == mmpt.Tokenizer(mmpt.default_tokenizer_path()).encode(text)
    assert not hasattr(mmpt.Tokenizer, "load")  # one way to load one
    with pytest.raises(mmpt.NotFoundError, match="missing.json"):
        mmpt.Tokenizer(str(tmp_path / "missing.json"))
    # Found as the mmpt command finds it: $MMPT_TOKENIZER before the data directory's.
    monkeypatch.setenv("MMPT_TOKENIZER", str(tmp_path / "elsewhere.json"))
    with pytest.raises(mmpt.NotFoundError, match="elsewhere.json"):
        mmpt.Tokenizer()


def test_classes_construct_from_a_path(default_dataset):
    reader = mmpt.DatasetReader(default_dataset)
    assert reader.num_samples == 8 and reader.sample_meta(0)["images"] == [(640, 480)]
    dataset = mmpt.Dataset(default_dataset)
    assert len(dataset) == 8 and dataset.sources == reader.sources
    # 8 samples fill a step of 2048 tokens, each once.
    assert (mmpt.Planner(default_dataset, seq_len=2048).layout ==
            mmpt.Planner(dataset, seq_len=2048).layout)
    assert not hasattr(mmpt.Dataset, "open")  # the reader is mmpt.DatasetReader


def test_smart_resize_defaults_are_the_default_vision_presets(default_dataset):
    with open(os.path.join(default_dataset, "mmpt.json")) as f:
        prepared_with = json.load(f)["vision"]["preset"]
    resolution = preset("vision", prepared_with)["resolution"]
    # 2048² is under this preset's max_pixels: only rounded to multiples of 28, not shrunk.
    assert 2048 * 2048 <= resolution["max_pixels"]
    assert mmpt.smart_resize(2048, 2048) == (2044, 2044)
    assert mmpt.smart_resize(2048, 2048) == mmpt.smart_resize(2048, 2048, vision=prepared_with)
    cost = mmpt.image_cost(2048, 2048)
    assert (cost["resized_height"], cost["resized_width"]) == (2044, 2044)
    # Another preset, and explicit bounds over the preset's.
    assert all(side % 32 == 0 for side in mmpt.smart_resize(2048, 2048, vision="qwen3-vl"))
    height, width = mmpt.smart_resize(2048, 2048, max_pixels=28 * 28 * 1280)
    assert height * width <= 28 * 28 * 1280 and height % 28 == 0
    with pytest.raises(mmpt.InvalidArgumentError, match="smart_resize"):
        mmpt.smart_resize(100, 100, vision="siglip-so400m-384")
    with pytest.raises(mmpt.NotFoundError, match="no-such-encoder"):
        mmpt.smart_resize(100, 100, vision="no-such-encoder")
    assert prepared_with in mmpt.list_presets("vision")


def test_image_cost_defaults_to_the_default_llm_presets_width():
    # The README's defaults: Qwen2.5-VL's encoder into Qwen3-30B-A3B (cost::Defaults).
    hidden = preset("llm", "qwen3-30b-a3b")["hidden"]
    assert mmpt.image_cost(480, 640) == mmpt.image_cost(480, 640, "qwen2.5-vl", hidden)
    assert mmpt.image_cost(480, 640)["train_flops"] != mmpt.image_cost(
        480, 640, llm_hidden=hidden * 2)["train_flops"]


def test_old_argument_names_are_refused_naming_the_new_one(coco_dataset):
    """One vocabulary: `threads` and `prefetch`, as the mmpt command and the C++ API say them;
    the loader's defaults are the C++ loader's own."""
    planner = mmpt.Planner(coco_dataset, seq_len=2048)
    with pytest.raises(mmpt.InvalidArgumentError, match="num_threads= is now threads="):
        mmpt.Loader(coco_dataset, planner, num_threads=2)
    with pytest.raises(TypeError, match="jobs"):
        mmpt.Loader(coco_dataset, planner, jobs=2)
    assert mmpt._mmpt.LOADER_DEFAULTS == {"threads": 2, "prefetch_micro_steps": 4,
                                          "max_bytes": 4 << 30, "on_error": "fail"}
    batch = next(mmpt.Loader(coco_dataset, planner, steps=1, threads=1))
    assert batch["step"] == 0


def test_presets_are_vision_and_audio_and_the_old_keywords_name_them():
    """A vision preset is `vision=` and an audio preset `audio=` everywhere; `preset=` (and
    audio_in_video's `model=`) raise naming the new keyword."""
    pcm = np.zeros(1600, np.float32)
    tokens = mmpt.audio_tokens(10, audio="qwen3-omni")
    assert mmpt.log_mel(pcm, audio="qwen3-omni")["tokens"] == tokens
    for call in (lambda: mmpt.log_mel(pcm, preset="qwen2-audio"),
                 lambda: mmpt.mel_filters(preset="qwen2-audio"),
                 lambda: mmpt.audio_tokens(100, preset="qwen2-audio")):
        with pytest.raises(mmpt.InvalidArgumentError, match="preset= is now audio="):
            call()
    with pytest.raises(mmpt.InvalidArgumentError, match="model= is now audio="):
        mmpt.audio_in_video("qwen2.5-omni", [4, 28, 28], 1.0, 100, position_id_per_seconds=25,
                            model="qwen2.5-omni")
    with pytest.raises(TypeError, match="bogus"):
        mmpt.log_mel(pcm, bogus=1)
