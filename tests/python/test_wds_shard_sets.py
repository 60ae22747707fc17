"""A WebDataset shard set (`shard-0000.tar` …, Energon's quoted `shard-{0000..0999}.tar`, or a
directory of tars) prepares into one source, and `mmpt plan` blends sources by size unless
--weights says otherwise, printing each source's weight."""

import io
import json
import os
import subprocess
import tarfile

import load_corpus

MMPT = load_corpus.MMPT


def run(*args):
    done = subprocess.run([MMPT, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def split_into_tars(tmp_path, folder, stem, tars, per_tar, first):
    """`tars` tars of `per_tar` samples each under `folder`, cut from synth's tiny pairs."""
    synth = tmp_path / f"synth-{folder}"
    run("synth", "--profile", "tiny", "--samples", tars * per_tar, "--format", "wds", "--out",
        synth, "--name", f"s{first}")
    samples = {}
    with tarfile.open(synth / f"s{first}.tar") as tar:
        for member in tar.getmembers():
            samples.setdefault(member.name.split(".", 1)[0], []).append(
                (member, tar.extractfile(member).read()))
    keys = list(samples)
    os.makedirs(tmp_path / folder)
    for t in range(tars):
        with tarfile.open(tmp_path / folder / f"{stem}{t:04}.tar", "w") as out:
            for key in keys[t * per_tar:(t + 1) * per_tar]:
                for member, data in samples[key]:
                    out.addfile(member, io.BytesIO(data))
    return tmp_path / folder


def sources_of(dataset):
    with open(os.path.join(dataset, "mmpt.json")) as f:
        sources = json.load(f)["sources"]
    return sorted(s["name"] for s in sources), sum(s["shards"] for s in sources)


def test_a_thousand_tars_are_one_source_and_plan_by_size(tmp_path):
    big = split_into_tars(tmp_path, "big", "shard-", 1000, 2, 0)
    ds = tmp_path / "ds"
    report = json.loads(run("prepare", f"{big}/shard-{{0000..0999}}.tar", "--out", ds, "--json",
                            "--threads", 2))
    assert report["samples"] == 2000
    assert sources_of(ds) == (["shard"], 2)  # 1000 small tars, 1000 samples a shard
    text = run("plan", ds, "--seq-len", 2048)
    assert "source weights" in text and "shard" in text and "1.0000" in text, text

    small = split_into_tars(tmp_path, "small", "part_", 50, 4, 1)  # 200 samples
    both = tmp_path / "both"
    run("prepare", *[f"{big}/shard-{t:04}.tar" for t in range(1000)], small, "--out", both)
    assert sources_of(both)[0] == ["shard", "small"]
    plan = json.loads(run("plan", both, "--seq-len", 2048, "--json"))
    weights = {s["name"]: (s["samples"], s["weight"]) for s in plan["sources"]}
    assert weights["shard"][0] == 2000 and weights["small"][0] == 200
    assert abs(weights["shard"][1] - 2000 / 2200) < 1e-9, weights
    assert abs(weights["small"][1] - 200 / 2200) < 1e-9, weights
    given = json.loads(run("plan", both, "--seq-len", 2048, "--json", "--weights", 1, 3))
    assert [s["weight"] for s in given["sources"]] == [0.25, 0.75]


def test_a_malformed_brace_is_refused_naming_it(tmp_path):
    done = subprocess.run([MMPT, "prepare", "shard-{0000..}.tar", "--out", tmp_path / "ds"],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "malformed brace in 'shard-{0000..}.tar'" in done.stderr, done.stderr


def test_the_python_api_takes_inputs_as_the_cli_does(tmp_path):
    import mmpt

    tars = split_into_tars(tmp_path, "set", "shard-", 3, 2, 0)
    report = mmpt.prepare([f"{tars}/shard-{{0000..0002}}.tar"], str(tmp_path / "ds"), threads=1,
                          on_error="fail")
    assert report["samples"] == 6 and sources_of(tmp_path / "ds")[0] == ["shard"]
    mmpt.prepare([("named", str(tars))], str(tmp_path / "named"), threads=1, on_error="fail")
    assert sources_of(tmp_path / "named")[0] == ["named"]  # a directory under a given name
