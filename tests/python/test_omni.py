"""An omni corpus (images, video, speech) as a user meets it: synthesized, prepared through
Qwen2.5-Omni's chat template and tokenizer, inspected with tokens per modality, planned with the
vision and audio encoders costed apart, and loaded: images, videos and speech all reach the
batches."""

import json

import pytest

import load_corpus
import mmpt


@pytest.fixture(scope="module")
def omni(tmp_path_factory):
    work = tmp_path_factory.mktemp("omni")
    run = load_corpus.runner(work)
    run("synth", "--profile", "omni", "--source", load_corpus.REAL_COCO, "--samples", "8",
        "--min-duration", "1", "--max-duration", "2", "--out", "raw")
    omni = ["--chat-template", "qwen_omni", "--tokenizer", "raw/omni.tokenizer.json"]
    run("prepare", "raw/omni.jsonl", "--out", "ds", *omni)
    run("prepare", "raw/omni.jsonl", "--out", "ds-whisper", "--audio", "whisper-large-v3", *omni)
    return work, run


def test_inspect_counts_tokens_and_seconds_per_modality(omni):
    work, run = omni
    source = json.loads(run("inspect", "ds", "--json"))["sources"][0]
    assert source["images"]["total"] == 2 and source["videos"]["total"] == 4
    assert source["audios"]["total"] == 2
    # Qwen2.5-VL samples at least 4 frames (2 temporal patches); speech is 25 tokens a second.
    assert source["video_tokens"]["min"] == 0 and source["video_tokens"]["max"] > 0
    seconds = source["audio_duration_ms"]["total"] / 1000
    assert abs(source["audio_tokens"]["total"] - 25 * seconds) <= 2 * 2
    assert source["tokens"]["total"] == (source["text_tokens"]["total"] +
                                         source["image_tokens"]["total"] +
                                         source["video_tokens"]["total"] +
                                         source["audio_tokens"]["total"])


def test_the_plan_places_every_kind_and_the_loader_loads_them(omni):
    work, _ = omni
    dataset = mmpt.Dataset(str(work / "ds"))
    planner = mmpt.Planner(dataset, dp=1, seq_len=4096, allow_repeat=True)
    loaded = list(mmpt.Loader(dataset, planner, dp_rank=0, steps=4))
    assert not any(batch["dropped"] for batch in loaded)
    # Images, videos and speech all reach the batches.
    assert sum(len(b["encoded_images"]) for b in loaded) > 0
    assert sum(len(b["encoded_videos"]) for b in loaded) > 0
    assert sum(len(b["encoded_audios"]) for b in loaded) > 0


def test_plan_reports_the_audio_encoder_under_the_preset_asked(omni):
    work, run = omni
    plan = ["plan", "ds", "--seq-len", "4096", "--allow-repeat"]
    assert "audio imbalance max (mean)" in run(*plan)
    omni_seconds = json.loads(run(*plan, "--json"))["mmpt"]["audio_seconds"]
    # Whisper-large-v3 encodes the whole 30 s window whatever the clip; Qwen2.5-Omni only the
    # clip's frames (a few seconds here).
    plan[1] = "ds-whisper"  # prepared under the Whisper preset: its mmpt.json records it
    whisper_seconds = json.loads(run(*plan, "--json"))["mmpt"]["audio_seconds"]
    assert 0 < omni_seconds < whisper_seconds
