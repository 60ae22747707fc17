"""The mmpt command as a user meets it: `mmpt plan` on raw records says what to run instead."""

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
