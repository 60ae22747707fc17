"""The mmpt command as a user meets it: `mmpt plan` on raw records says what to run instead."""

import json
import os
import re
import shlex
import subprocess

import load_corpus


def mmpt(*args, cwd=None):
    done = subprocess.run([load_corpus.MMPT, *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout


def test_plan_on_raw_records_prints_the_prepare_command_that_works(tmp_path):
    rc, out = mmpt("synth", "--profile", "coco", "--source", load_corpus.REAL_COCO, "--format",
                   "llava", "--samples", "24", "--out", "raw data", cwd=tmp_path)
    assert rc == 0, out
    rc, out = mmpt("plan", "raw data/coco.jsonl", "--seq-len", "4096", cwd=tmp_path)
    assert rc != 0
    assert "raw data/coco.jsonl:1: a llava record" in out, out
    found = re.search(r"mmpt prepare .*", out)
    assert found, out
    command = shlex.split(found.group(0))
    assert command == ["mmpt", "prepare", "raw data/coco.jsonl", "--out", "raw data/coco-dataset"]
    rc, out = mmpt(*command[1:], cwd=tmp_path)  # run exactly what it said, then plan that
    assert rc == 0, out
    rc, out = mmpt("plan", "raw data/coco-dataset", "--seq-len", "4096", cwd=tmp_path)
    assert rc == 0, out


def test_synth_omni_writes_every_kind_with_the_formats_asked(tmp_path):
    rc, out = mmpt("synth", "--profile", "omni", "--source", load_corpus.REAL_COCO, "--samples",
                   "4", "--min-duration", "0.5", "--max-duration", "1", "--video-format", "webm",
                   "--audio-format", "mp3", "--json", "--out", "omni", cwd=tmp_path)
    assert rc == 0, out
    report = json.loads(out)
    assert (report["samples"], report["images"], report["videos"], report["audio_clips"]) == \
        (4, 1, 2, 1)
    assert 1.0 <= report["video_seconds"] <= 2.0
    records = [json.loads(line) for line in (tmp_path / "omni" / "omni.jsonl").open()]
    video = records[1]["video"]
    assert video == "videos/omni-v1.webm"
    assert records[3]["images"][1] == {"video": "videos/omni-d1.webm"}
    assert records[2]["audio"] == "audio/omni-a1.mp3"
    # Debian's ffprobe, not mmpt's probe, says what the files are.
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name",
                            "-of", "csv=p=0", str(tmp_path / "omni" / video)],
                           stdout=subprocess.PIPE, text=True, check=True)
    assert probe.stdout.strip() == "vp9"


def test_synth_names_a_failing_tool_and_its_error(tmp_path):
    rc, out = mmpt("synth", "--profile", "video", "--video-format", "mkv", "--out", "v",
                   cwd=tmp_path)
    assert rc != 0 and "--video-format must be mp4, webm, avi or mix, not 'mkv'" in out, out
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "espeak-ng").write_text("#!/bin/sh\necho 'espeak-ng: no voice for this' >&2\nexit 3\n")
    (fake / "espeak-ng").chmod(0o755)
    done = subprocess.run([load_corpus.MMPT, "synth", "--profile", "audio", "--samples", "1",
                           "--source", load_corpus.REAL_COCO, "--out", "a"], cwd=tmp_path,
                          env=dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert done.returncode != 0
    assert "audio/audio-a1.wav: synth: espeak-ng: `espeak-ng -w" in done.stdout, done.stdout
    assert "espeak-ng: no voice for this" in done.stdout, done.stdout
