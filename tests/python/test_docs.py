"""Documentation runs as written: every code block of README.md and docs/*.md is run in order
by doc_blocks.py (its docstring gives the fence conventions: a folder standing for the checkout,
this build's ``mmpt`` on PATH and its package on PYTHONPATH), or is marked as output, as a file
a later block runs, as a long reproduction that ``make bench`` runs, or as not tested with its
reason.
"""

import glob
import os
import subprocess
import sys

import pytest

import mmpt
from doc_blocks import parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The extension is build/<preset>/python/mmpt/_mmpt*.so (the .py files beside it are links).
BUILD = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(mmpt._mmpt.__file__))))
DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT)
                              for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def run_doc(doc, tmp_path, timeout=1200):
    """Run `doc`'s blocks (those marked bench left out); returns (exit status, output)."""
    command = [sys.executable, os.path.join(HERE, "doc_blocks.py"), os.path.join(ROOT, doc),
               "--checkout", BUILD, "--work", str(tmp_path)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout


def test_every_block_of_every_document_runs_or_says_why_not():
    blocks = [block for doc in DOCS for block in parse(os.path.join(ROOT, doc))]
    assert sum(block.runs for block in blocks) >= 10
    for block in blocks:
        if block.no_test is not None:
            assert len(block.no_test.split()) >= 3, f"{block.where}: give the reason in words"


def blocks_of(doc):
    """`doc`'s blocks, or none when it does not parse (running it then fails, naming why)."""
    try:
        return parse(os.path.join(ROOT, doc))
    except ValueError:
        return []


def tiered(doc):
    """`doc` as a test parameter, marked dist when its blocks start torch.distributed ranks."""
    dist = any("init_process_group" in block.code for block in blocks_of(doc))
    return pytest.param(doc, marks=[pytest.mark.dist] if dist else [])


@pytest.mark.parametrize("doc", [tiered(doc) for doc in DOCS])
def test_document_runs(doc, tmp_path):
    rc, out = run_doc(doc, tmp_path)
    assert rc == 0, out[-8000:]


# The runner itself, on small documents: what it must catch.

def write(tmp_path, text):
    path = tmp_path / "doc.md"
    path.write_text(text)
    return str(path)


def run_text(tmp_path, text, bench=False):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    command = [sys.executable, os.path.join(HERE, "doc_blocks.py"), write(tmp_path, text)]
    done = subprocess.run(command + (["--bench"] if bench else []), cwd=work,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    return done.returncode, done.stdout


def test_blocks_share_state_within_a_file_in_order(tmp_path):
    rc, out = run_text(tmp_path, "\n".join([
        "```sh", "X=41", "cd sub 2>/dev/null || { mkdir sub && cd sub; }", "```",
        "```python file=helper.py", "def answer(x):", "    return x + 1", "```",
        "```sh", 'echo "$((X + 1))" > n.txt', "cp ../helper.py .", "```",
        "```python", "import os, sys", "sys.path.insert(0, 'sub')", "from helper import answer",
        "value = answer(int(open('sub/n.txt').read()))", "```",
        "```python", "assert value == 43, value", "print('value', value)", "```", ""]))
    assert rc == 0, out
    assert "value 43" in out


@pytest.mark.parametrize("text, message", [
    ("```\nls\n```\n", "without a language"),
    ("```bash\nls\n```\n", "```bash block is not run"),
    ("```sh no-test\nls\n```\n", "unknown attribute"),
    ("```sh fast\nls\n```\n", "unknown attribute"),
    ("```sh slow\nls\n```\n", "unknown attribute"),
    ("```sh\nls\n", "never closed"),
    ("```python file=a.py\nx = 1\n```\n```sh\nls\n```\n", "file=a.py is written but no later"),
])
def test_unmarked_or_malformed_blocks_fail(tmp_path, text, message):
    rc, out = run_text(tmp_path, text)
    assert rc != 0 and message in out, out


def test_a_failing_block_is_named_and_stops_the_file(tmp_path):
    text = ("intro\n\n```sh\ntrue\n```\n\n```sh\nfalse | cat\necho after\n```\n\n"
            "```sh\necho next\n```\n")
    rc, out = run_text(tmp_path, text)
    assert rc != 0 and "doc.md:7: a command failed" in out and "after" not in out, out
    assert "next" not in out
    rc, out = run_text(tmp_path, "```python\n\nraise KeyError('routing')\n```\n")
    assert rc != 0 and "doc.md:1: the Python block raised" in out, out
    assert 'doc.md", line 3' in out and "KeyError: 'routing'" in out, out


def test_bench_blocks_run_only_with_bench_and_no_test_blocks_never(tmp_path):
    text = ("```sh bench\necho bench-ran\n```\n"
            "```sh no-test=\"it would fail\"\nfalse\n```\n"
            "```text\nnot a command\n```\n")
    rc, out = run_text(tmp_path, text)
    assert rc == 0 and "bench-ran" not in out and "bench, skipped" in out, out
    rc, out = run_text(tmp_path, text, bench=True)
    assert rc == 0 and "bench-ran" in out, out
