"""docs/python.md's table of every public signature is the modules' own (scripts/api_table.py
generates it; run it with --write after changing a signature)."""

import importlib.util
import os

from test_docs import ROOT


def load_generator():
    spec = importlib.util.spec_from_file_location("api_table",
                                                  os.path.join(ROOT, "scripts", "api_table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_signatures_are_the_modules():
    api_table = load_generator()
    with open(api_table.DOC) as doc:
        documented = api_table.in_doc(doc.read())
    assert documented is not None, "docs/python.md lost its api-table markers"
    generated = api_table.table()
    assert documented == generated, (
        "docs/python.md's signature table differs from the modules: run "
        "`PYTHONPATH=build/release/python /usr/bin/python3 scripts/api_table.py --write`")
    assert "| `mmpt.Planner` |" in generated and "| `mmpt.torch.VisionEncoder` |" in generated
