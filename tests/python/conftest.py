"""pytest setup for mmpt's Python tests.

`make test` runs ``/usr/bin/python3 -m pytest tests/python`` with PYTHONPATH set to
build/<preset>/python (the package mmpt with its extension). Run by hand, this file adds that
folder itself (preset from $MMPT_PRESET, default release). The markers (``dist``, ``slow``,
``gpu``), the per-test timeout and ``--strict-markers`` are set in pyproject.toml; a ``gpu``
test is skipped where torch has no CUDA device. docs/testing.md says which tier runs what.
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_DATA = os.path.join(ROOT, "..", "shared", "data", "real")

for path in (
    os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "python"),
    os.path.dirname(os.path.abspath(__file__)),
):
    if path not in sys.path:
        sys.path.insert(0, path)


def pytest_collection_modifyitems(config, items):
    """Skip the ``gpu`` tests, naming why, where torch sees no CUDA device."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu:
        return
    import torch
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; torch.cuda.is_available() is False")
    for item in gpu:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def coco_dataset(tmp_path_factory):
    """The prepared corpus the tests that only read one share, prepared once a session:
    load_corpus.build's 120 COCO caption pairs (real sizes and captions) in 8 shards."""
    import load_corpus
    return load_corpus.build(str(tmp_path_factory.mktemp("coco")), samples=120, shards=8)
