"""A WebDataset tar (`mmpt synth --format wds`) prepared by mmpt.prepare plans and loads like any
other dataset, and a bad sample in it is skipped and named by file:member."""

import io
import subprocess
import tarfile

import numpy as np
import pytest

import load_corpus
import mmpt


@pytest.fixture
def coco_tar(tmp_path):
    subprocess.run([load_corpus.MMPT, "synth", "--profile", "coco", "--samples", "24", "--format",
                    "wds", "--out", str(tmp_path / "raw")], check=True, capture_output=True)
    return tmp_path / "raw" / "coco.tar"


def test_webdataset_tar_prepares_plans_and_loads(coco_tar, tmp_path):
    ds = str(tmp_path / "ds")
    report = mmpt.prepare([("coco", str(coco_tar))], ds, threads=2, on_error="fail")
    assert report["samples"] == 24 and report["skipped"] == 0
    planner = mmpt.Planner(ds, seq_len=2048)
    batches = list(mmpt.Loader(ds, planner, steps=1))
    assert batches
    for batch in batches:
        patches = int(np.prod(batch["image_grid_thw"], axis=1).sum())
        assert patches > 0 and batch["pixel_values"].shape[0] == patches
        assert set(batch["sample_source"].tolist()) == {0}
        assert batch["loss_mask"].sum() > 0  # the captions are the targets


def test_a_bad_sample_is_skipped_and_named_by_file_and_member(coco_tar, tmp_path):
    with tarfile.open(coco_tar, "a") as tar:
        for name, data in (("zzz.jpg", b"\xff\xd8 not a jpeg"), ("zzz.txt", b"a caption")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    report = mmpt.prepare([("coco", str(coco_tar))], str(tmp_path / "ds"), threads=1)
    assert report["samples"] == 24 and report["skipped"] == 1
    assert report["examples"][0].startswith(f"{coco_tar}:zzz.jpg: ")
