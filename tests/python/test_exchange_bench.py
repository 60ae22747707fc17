"""bench/exchange_bench.py at a tiny size, so that it cannot rot: both process counts run,
shared storage, the exchange and the pixel payload beside it, and the table has the figures it
promises."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
@pytest.mark.dist
def test_exchange_bench_runs_at_a_tiny_size(tmp_path):
    env = dict(os.environ)
    build = os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (build, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "exchange_bench.py"),
                           "--tiny", "--work", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout
    number = r"\s+([\d.]+)"
    rows = re.findall(r"^\s+(\d) \|" + number * 2 + r" \|" + number * 2 +
                      r" \|\s+([+-][\d.]+)\s+([+-][\d.]+)% \|" + number * 5 + r" \|" +
                      number * 3 + "$",
                      done.stdout, re.M)
    assert [r[0] for r in rows] == ["2", "4"], done.stdout
    for row in rows:
        shared, exchanged = float(row[1]), float(row[3])
        assert shared > 0 and exchanged > 0, row
        assert abs(float(row[5]) - (exchanged - shared)) < 2e-3, row  # added = exchange - shared
        assert float(row[7]) > 0 and float(row[8]) >= float(row[7]), row  # MB out <= MB total
        # The pixels the exchange sent before: several times the stored bytes.
        assert float(row[12]) > float(row[7]) and float(row[14]) > 2, row
