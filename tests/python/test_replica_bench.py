"""bench/replica_bench.py runs end to end at a tiny size: both runs load the same batches (the
bench checks), and one load per replica reads each sample once per replica where every TP rank
loading reads it TP times."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import replica_bench  # noqa: E402


@pytest.mark.slow
@pytest.mark.dist
def test_replica_bench_reads_once_per_replica(tmp_path):
    report = replica_bench.main(["--work", str(tmp_path), "--tp", "2", "--steps", "1",
                                 "--ga", "2", "--samples", "60", "--seq-len", "2048"])
    rows = report["rows"]
    assert rows["samples"]["each"] == 2 * rows["samples"]["shared"] > 0
    assert rows["bytes"]["each"] == 2 * rows["bytes"]["shared"] > 0
    assert rows["cpu"]["each"] > 0 and rows["cpu"]["shared"] > 0
