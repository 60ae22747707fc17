"""pytest setup for mmpt's Python tests.

`make test` runs ``/usr/bin/python3 -m pytest tests/python`` with PYTHONPATH set to
build/<preset>/python (the package mmpt with its extension). Run by hand, this file adds that
folder itself (preset from $MMPT_PRESET, default release). Markers: ``dist`` for tests that start several processes
(torch.distributed, gloo), ``slow`` for long ones; `make unit` deselects both.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_DATA = os.path.join(ROOT, "..", "shared", "data", "real")

for path in (
    os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "python"),
    os.path.dirname(os.path.abspath(__file__)),
):
    if path not in sys.path:
        sys.path.insert(0, path)


def pytest_configure(config):
    config.addinivalue_line("markers", "dist: starts several processes (torch.distributed, gloo)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
