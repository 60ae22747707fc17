"""An installed mmpt needs nothing of its source or build tree: this build is installed with
`cmake --install` into a temporary prefix, the prefix is moved, and `mmpt prepare/verify/plan` and
`import mmpt` run from another folder with a clean environment while the source and build trees
are hidden (an empty tmpfs over each, in a private mount namespace of `unshare`)."""

import glob
import json
import os
import shutil
import subprocess

import pytest

import mmpt

pytestmark = pytest.mark.slow

# The extension is build/<preset>/python/mmpt/_mmpt*.so (the .py files beside it are links).
BUILD = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(mmpt._mmpt.__file__))))


def cache_value(name):
    with open(os.path.join(BUILD, "CMakeCache.txt")) as cache:
        for line in cache:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    raise KeyError(f"{name} is not in {BUILD}/CMakeCache.txt")


SOURCE = os.path.realpath(cache_value("CMAKE_HOME_DIRECTORY"))
# `sh -c HIDE BUILD SOURCE command...`: an empty tmpfs over the build tree, then over the source
# tree (the build tree is usually inside it), then the command.
HIDE = 'mount -t tmpfs none "$0" && mount -t tmpfs none "$1" && shift && exec "$@"'
UNSHARE = ["unshare", "--user", "--map-root-user", "--mount"]
CAN_HIDE = subprocess.run([*UNSHARE, "true"], stderr=subprocess.DEVNULL).returncode == 0


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """The install, moved from where `cmake --install` put it."""
    root = tmp_path_factory.mktemp("install")
    done = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(root / "first")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert done.returncode == 0, done.stdout
    shutil.move(str(root / "first"), str(root / "moved"))
    return root / "moved"


def run_hidden(prefix, cwd, *args, **extra_env):
    """Run `args` in `cwd` with only the installed prefix on PATH and PYTHONPATH, the source and
    build trees hidden. Returns (exit status, output); skips where user namespaces are off."""
    if not CAN_HIDE:
        pytest.skip("`unshare --user --mount` is not permitted here: cannot hide the source tree")
    (python_dir,) = glob.glob(str(prefix / "lib" / "python3*" / "dist-packages"))
    env = {"PATH": f"{prefix}/bin:/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": python_dir,
           **extra_env}
    command = [*UNSHARE, "sh", "-c", HIDE, BUILD, SOURCE, *args]
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    return done.returncode, done.stdout


def test_the_source_and_build_trees_are_out_of_reach(prefix, tmp_path):
    probes = [os.path.join(SOURCE, "CMakeLists.txt"), os.path.join(BUILD, "CMakeCache.txt")]
    assert all(os.path.exists(probe) for probe in probes)
    assert run_hidden(prefix, tmp_path, "sh", "-c", 'test ! -e "$0" && test ! -e "$1"',
                      *probes) == (0, "")


def test_the_install_holds_the_binary_its_data_and_the_package_without_the_source_path(prefix):
    data = prefix / "share" / "mmpt"
    for path in ("presets/vision/qwen2-vl.json", "presets/llm/qwen2.5-7b.json",
                 "presets/hardware/h200.json", "presets/chat/qwen_vl.json", "tokenizer.json",
                 "bench/python_loader_baseline.py"):
        assert (data / path).is_file(), path
    package = prefix / "lib" / "python3*" / "dist-packages" / "mmpt"
    (extension,) = glob.glob(str(package / "_mmpt*.so"))
    binaries = [str(prefix / "bin" / "mmpt"), extension]
    for binary in binaries:
        # What the program holds, less debug info (which names the sources by design).
        stripped = str(prefix.parent / "stripped")
        subprocess.run(["objcopy", "--strip-debug", binary, stripped], check=True)
        with open(stripped, "rb") as file:
            contents = file.read()
        os.remove(stripped)
        assert SOURCE.encode() not in contents, f"{binary} holds the source tree's path {SOURCE}"
        assert BUILD.encode() not in contents, f"{binary} holds the build tree's path {BUILD}"


def test_mmpt_prepares_verifies_and_plans_from_the_install_alone(prefix, tmp_path):
    with open(tmp_path / "tiny.jsonl", "w") as file:
        for i in range(24):
            file.write(json.dumps({
                "conversations": [{"from": "human", "value": f"<image>\nWhat is in picture {i}?"},
                                  {"from": "gpt", "value": "A cat on a mat. " * (1 + i % 5)}],
                "image": {"width": 320 + 16 * i, "height": 240 + 8 * i}}) + "\n")
    rc, out = run_hidden(prefix, tmp_path, "mmpt", "prepare", "tiny.jsonl", "--out", "ds",
                         "--on-error", "fail")
    assert rc == 0, out
    with open(tmp_path / "ds" / "mmpt.json") as file:
        manifest = json.load(file)
    # The default tokenizer is the installed one, found beside the binary.
    assert os.path.realpath(manifest["tokenizer"]["path"]) == \
        os.path.realpath(prefix / "share" / "mmpt" / "tokenizer.json")
    rc, out = run_hidden(prefix, tmp_path, "mmpt", "verify", "ds")
    assert rc == 0, out
    # 4 packs of 1024 tokens: the 24 samples fill a step without repeating one.
    rc, out = run_hidden(prefix, tmp_path, "mmpt", "plan", "ds", "--seq-len", "1024", "--dp", "2",
                         "--ga", "2", "--steps", "1", "--json")
    assert rc == 0, out
    assert json.loads(out), out

    # Without its data (another, empty data directory), mmpt says where a tokenizer can come from
    # and which preset it could not find.
    (tmp_path / "empty").mkdir()
    rc, out = run_hidden(prefix, tmp_path, "mmpt", "prepare", "tiny.jsonl", "--out", "ds2",
                         MMPT_HOME=str(tmp_path / "empty"))
    assert rc != 0
    for way in ("--tokenizer", "manifest", "$MMPT_TOKENIZER"):
        assert way in out, out
    rc, out = run_hidden(prefix, tmp_path, "mmpt", "plan", "ds", MMPT_HOME=str(tmp_path / "empty"))
    assert rc != 0
    assert "preset" in out and str(tmp_path / "empty") in out, out


def test_python_imports_mmpt_from_the_install_alone(prefix, tmp_path):
    script = ("import json, mmpt; print(json.dumps({'package': mmpt.__file__, "
              "'extension': mmpt._mmpt.__file__, 'resize': list(mmpt.smart_resize(427, 640)), "
              "'tokenizer': mmpt.default_tokenizer_path(), "
              "'tokens': mmpt.Tokenizer().count('A cat on a mat.')}))")
    rc, out = run_hidden(prefix, tmp_path, "/usr/bin/python3", "-c", script)
    assert rc == 0, out
    found = json.loads(out)
    for key in ("package", "extension", "tokenizer"):
        assert found[key].startswith(str(prefix)), found
    assert found["resize"] == list(mmpt.smart_resize(427, 640))
    assert found["tokens"] == mmpt.Tokenizer().count("A cat on a mat.")
