"""Run the code blocks of a Markdown file in order, as a reader would (test_docs.py runs every
document this way, so documentation cannot drift from the commands and API it shows).

A fenced block's info string is a language and then attributes:

* ```` ```sh ````: run in one bash session per file (variables and ``cd`` carry over between
  blocks), ``set -e -o pipefail`` inside each block, stdin from /dev/null.
* ```` ```python ````: run in one Python namespace per file (names carry over), with the working
  folder first on ``sys.path`` as in an interactive session.
* ```` ```text ````: output or a diagram; not code, never run.
* ``file=NAME`` (any language): written to NAME in the working folder, not run; a later block
  must name NAME (a script that is written is a script that is run).
* ``bench``: a long reproduction (a benchmark's figures, the pip build): run only by
  ``make bench`` (``--bench``); ``make test`` skips it, and a smaller test stands in for it
  (docs/testing.md names each).
* ``no-test="REASON"``: never run; the reason is required and shown in the document.

Any other block -- no language, or one not listed -- is an error: a block is run, or says why
not. Usage: ``doc_blocks.py FILE.md [--bench] [--checkout BUILD [--work DIR]]``. With
``--checkout`` the blocks run in DIR/checkout (a new temporary folder without ``--work``), which
stands for the checkout: a link to every top-level entry of the source tree, ``build/release`` a
link to BUILD (whatever its preset) and ``../shared`` the checkout's, so commands written for the
checkout's root work while what they write stays there; BUILD's ``mmpt`` is on PATH and its
package on PYTHONPATH. Without it they run in the working folder as it is. Exits non-zero naming
``FILE:LINE`` of the first block that fails.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import List, Optional

RUN_LANGUAGES = ("sh", "python")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
BLOCK_SECONDS = float(os.environ.get("MMPT_DOC_BLOCK_SECONDS", "900"))


@dataclass
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    bench: bool = False
    no_test: Optional[str] = None
    file: Optional[str] = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def runs(self) -> bool:
        """Whether it is run (by `make test`, or by `make bench` when marked bench)."""
        return self.no_test is None and self.language != "text" and self.file is None


def parse(path: str) -> List[Block]:
    """Every fenced block of `path`, in order. Raises ValueError naming FILE:LINE for an info
    string that is not a known language with known attributes, or a fence left open."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = match.groups()
        if fence[0] == "`" and "`" in info:  # CommonMark: inline code, not a fence
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2)[0] == fence[0] and len(close.group(2)) >= len(fence) \
                    and not close.group(3).strip():
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        else:
            raise ValueError(f"{path}:{start}: the code block is never closed")
        i += 1
        blocks.append(_block(path, start, info.strip(), "\n".join(body) + "\n"))
    return blocks


def _block(path: str, line: int, info: str, code: str) -> Block:
    where = f"{path}:{line}"
    words = shlex.split(info) if info else []
    if not words:
        raise ValueError(f"{where}: a code block without a language: mark it ```sh or ```python "
                         "(run by the doc test), ```text (output), or add no-test=\"why\"")
    block = Block(path, line, words[0], code)
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key == "bench" and not value:
            block.bench = True
        elif key == "no-test" and value.strip():
            block.no_test = value
        elif key == "file" and value and os.path.basename(value) == value:
            block.file = value
        else:
            raise ValueError(f"{where}: unknown attribute {word!r} (bench, no-test=\"why\", "
                             "file=NAME)")
    if block.runs and block.language not in RUN_LANGUAGES:
        raise ValueError(f"{where}: a ```{block.language} block is not run: use ```sh, "
                         "```python or ```text (output), or add file=NAME or no-test=\"why\"")
    return block


def check(blocks: List[Block]) -> None:
    """Raise ValueError for a file= block that no later block names (a Python file may be
    named as a module, by its name without .py)."""
    for k, block in enumerate(blocks):
        if not block.file or block.no_test is not None:
            continue
        names = {block.file, block.file[:-3] if block.file.endswith(".py") else block.file}
        if not any(name in later.code for later in blocks[k + 1:] if later.runs for name in names):
            raise ValueError(f"{block.where}: file={block.file} is written but no later block "
                             "that runs names it")


class BlockFailed(Exception):
    pass


class Shell:
    """One bash session: each block is sourced from a file, then bash reports on a pipe."""

    def __init__(self, scripts: str):
        self.scripts = scripts
        self.done_read, done_write = os.pipe()
        self.bash = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                                     text=True, pass_fds=(done_write,), start_new_session=True)
        os.close(done_write)
        self.done_fd = done_write
        self.count = 0

    def run(self, block: Block) -> None:
        self.count += 1
        script = os.path.join(self.scripts, f"block{self.count}.sh")
        with open(script, "w") as f:
            f.write(block.code)
        self.bash.stdin.write(f"set -e -o pipefail; source {shlex.quote(script)} </dev/null; "
                              f"set +e +o pipefail; echo ok >&{self.done_fd}\n")
        self.bash.stdin.flush()
        ready, _, _ = select.select([self.done_read], [], [], BLOCK_SECONDS)
        if not ready:
            self.close()
            raise BlockFailed(f"{block.where}: still running after {BLOCK_SECONDS:.0f} s")
        if not os.read(self.done_read, 16):
            raise BlockFailed(f"{block.where}: a command failed (bash exited with status "
                              f"{self.bash.wait()})")

    def close(self) -> None:
        """End the session and everything it started (background jobs included)."""
        if self.bash.poll() is None:
            self.bash.stdin.close()
            try:
                self.bash.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.bash.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.bash.wait()


def run(path: str, bench: bool) -> int:
    try:
        blocks = parse(path)
        check(blocks)
    except ValueError as error:
        print(f"FAILED {error}", flush=True)
        return 1
    scripts = tempfile.mkdtemp(prefix="mmpt_doc_blocks_")
    shell = Shell(scripts)
    namespace = {"__name__": "__main__"}
    sys.path.insert(0, "")  # the working folder, as `python3` at a prompt has it
    try:
        for block in blocks:
            sys.stdout.flush()
            if block.no_test is not None or block.language == "text":
                continue
            if block.bench and not bench:
                print(f"=== {block.where}: bench, skipped (make bench runs it)", flush=True)
                continue
            if block.file:
                with open(block.file, "w") as f:
                    f.write(block.code)
                continue
            print(f"=== {block.where} ({block.language})", flush=True)
            start = time.monotonic()
            if block.language == "sh":
                shell.run(block)
            else:
                # Blank lines first, so a traceback's line numbers are the document's.
                code = compile("\n" * block.line + block.code, path, "exec")
                try:
                    exec(code, namespace)
                except Exception:
                    traceback.print_exc()
                    raise BlockFailed(f"{block.where}: the Python block raised")
            sys.stdout.flush()
            print(f"=== {block.where}: ok in {time.monotonic() - start:.1f} s", flush=True)
    except BlockFailed as failure:
        sys.stdout.flush()
        print(f"FAILED {failure}", flush=True)
        return 1
    finally:
        shell.close()
        shutil.rmtree(scripts, ignore_errors=True)
    return 0


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def enter_checkout(work: str, build: str) -> None:
    """Make `work`/checkout stand for the checkout (see the module docstring), beside a link to
    the checkout's ../shared, and run from it with `build`'s mmpt and package."""
    build = os.path.abspath(build)
    checkout = os.path.join(work, "checkout")
    os.makedirs(os.path.join(checkout, "build"))
    os.symlink(os.path.join(ROOT, "..", "shared"), os.path.join(work, "shared"))
    for entry in os.listdir(ROOT):
        if entry != "build" and not entry.startswith("."):
            os.symlink(os.path.join(ROOT, entry), os.path.join(checkout, entry))
    os.symlink(build, os.path.join(checkout, "build", "release"))
    python = os.path.join(build, "python")
    os.environ["PATH"] = build + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTHONPATH"] = python
    sys.path.insert(0, python)
    os.chdir(checkout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("markdown")
    parser.add_argument("--bench", action="store_true", help="also run blocks marked bench")
    parser.add_argument("--checkout", metavar="BUILD",
                        help="run in a folder standing for the checkout, with this build")
    parser.add_argument("--work", help="where --checkout makes that folder (default: a new "
                        "temporary folder)")
    args = parser.parse_args()
    markdown = os.path.abspath(args.markdown)
    if args.checkout:
        enter_checkout(args.work or tempfile.mkdtemp(prefix="mmpt_docs_"), args.checkout)
    return run(markdown, args.bench)


if __name__ == "__main__":
    sys.exit(main())
