"""Speech through the loader, as a trainer of Qwen2-Audio or Qwen2.5-Omni gets it: a corpus of
real espeak-ng speech in wav, flac, mp3 and ogg (`mmpt synth --profile audio`), prepared through
the qwen_omni chat template with the Qwen2.5-Omni tokenizer synth writes, planned and loaded.
Each batch holds every clip's log-mel input_features and feature_attention_mask as an
independent NumPy implementation of Whisper's feature extractor (whisper_ref.py) gives them for
the decoded file, one <|AUDIO|> per audio token between <|audio_bos|> and <|audio_eos|>, text
positions over the audio tokens (as Qwen2.5-Omni's M-RoPE gives clips without video), and the
plan's audio routing: under CP 2 each clip is encoded by exactly one rank and every audio row is
consumed once."""

import subprocess

import numpy as np
import pytest

import load_corpus
import mmpt
import whisper_ref

OMNI_IDS = {"<|AUDIO|>": 151646, "<|audio_bos|>": 151647, "<|audio_eos|>": 151648,
            "<|vision_bos|>": 151652, "<|vision_eos|>": 151653, "<|IMAGE|>": 151655,
            "<|VIDEO|>": 151656}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    work = tmp_path_factory.mktemp("audio_load")
    run = load_corpus.runner(work)
    out = run("synth", "--profile", "audio", "--source", load_corpus.REAL_COCO, "--samples", "8",
              "--out", "raw")
    assert "--chat-template qwen_omni --tokenizer" in out, out
    omni = ["--chat-template", "qwen_omni", "--tokenizer", "raw/audio.tokenizer.json"]
    run("prepare", "raw/audio.jsonl", "--out", "omni", *omni)
    run("prepare", "raw/audio.jsonl", "--out", "qwen2-audio", "--audio", "qwen2-audio", *omni)
    return work


def test_synth_writes_qwen25_omni_tokenizer(corpus):
    tokenizer = mmpt.Tokenizer(str(corpus / "raw" / "audio.tokenizer.json"))
    for token, id_ in OMNI_IDS.items():
        assert tokenizer.token_to_id(token) == id_, token
    # The vocabulary is Qwen's: ordinary text encodes as the default tokenizer encodes it.
    default = mmpt.Tokenizer(mmpt.default_tokenizer_path())
    text = "A man riding a wave on top of a surfboard."
    assert list(tokenizer.encode(text)) == list(default.encode(text))


def test_the_default_template_refuses_speech_naming_its_markers(corpus):
    done = subprocess.run([load_corpus.MMPT, "prepare", "raw/audio.jsonl", "--out", "vl"],
                          cwd=corpus, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert 'chat template qwen_vl has no "audio" markers' in done.stdout, done.stdout


def batches(path, cp=1, cp_rank=0, steps=2):
    return load_corpus.load_batches(path, cp, cp_rank, steps, seq_len=4096)


@pytest.mark.parametrize("preset,window", [("omni", None), ("qwen2-audio", 3000)])
def test_clips_load_as_the_audio_encoder_takes_them(corpus, preset, window):
    path = str(corpus / preset)
    reader = mmpt.DatasetReader(path)
    seen = 0
    for batch in batches(path):
        tokens, positions = batch["tokens"], batch["position_ids"]
        features, mask = batch["input_features"], batch["feature_attention_mask"]
        clips = len(batch["encoded_audios"])
        assert clips == len(batch["audio_rows"]) > 0
        assert features.shape == (clips, 128, mask.shape[1]) and features.dtype == np.float32
        frames = mask.sum(axis=1)
        # Qwen2-Audio's encoder runs over the whole 30 s window; Qwen2.5-Omni's takes the masked
        # frames only, so the batch pads to its longest clip.
        assert mask.shape[1] == (window if window else int(frames.max()))
        cu, cu_padded = batch["cu_seqlens"], batch["cu_seqlens_padded"]
        for s, index in enumerate(batch["sample_index"]):
            begin = int(cu_padded[s])
            ids = tokens[begin:begin + int(cu[s + 1] - cu[s])]
            pads = np.flatnonzero(ids == OMNI_IDS["<|AUDIO|>"])
            # Sample s holds one clip, clip s of the micro-step: its tokens, its features.
            assert len(pads) == batch["audio_rows"][s] == whisper_ref.audio_tokens(frames[s])
            assert ids[pads[0] - 1] == OMNI_IDS["<|audio_bos|>"]
            assert ids[pads[-1] + 1] == OMNI_IDS["<|audio_eos|>"]
            assert (np.diff(pads) == 1).all()
            item = reader.sample_meta(int(index))["media"][0]
            assert item["kind"] == "audio"
            pcm = np.asarray(mmpt.decode_audio(reader.media(int(index), 0)), dtype=np.float64)
            assert len(pcm) == item["frames"]  # the decoded length prepare recorded
            want, want_mask, _ = whisper_ref.log_mel(pcm, n_mels=128, chunk_seconds=30)
            n = mask.shape[1]
            np.testing.assert_array_equal(mask[s], want_mask[:n])
            np.testing.assert_allclose(features[s], want[:, :n], atol=1e-4, rtol=0)
            # Text positions: every row counts up through the clip's tokens.
            sub = positions[:, begin:begin + len(ids)]
            assert (sub == np.arange(len(ids))).all()
            seen += 1
    assert seen >= 2


def test_under_cp2_each_clip_is_encoded_once_and_routed(corpus):
    path = str(corpus / "omni")
    first = batches(path, cp=2, cp_rank=0, steps=1)[0]
    second = batches(path, cp=2, cp_rank=1, steps=1)[0]
    clips = len(first["audio_rows"])
    assert clips > 0 and list(first["audio_rows"]) == list(second["audio_rows"])
    assert sorted(list(first["encoded_audios"]) + list(second["encoded_audios"])) == list(
        range(clips))
    consumed = np.zeros(int(np.asarray(first["audio_rows"]).sum()), dtype=int)
    offsets = np.concatenate([[0], np.cumsum(first["audio_rows"])])
    for batch in (first, second):
        assert batch["input_features"].shape[0] == len(batch["encoded_audios"])
        pads = np.flatnonzero(batch["tokens"] == OMNI_IDS["<|AUDIO|>"])
        where = sorted(p for s in batch["audio_routing"].consumed[batch["cp_rank"]]
                       for p in range(s.local_offset, s.local_offset + s.row_count))
        assert where == list(pads)  # every audio pad of the shard gets a row
    for consumer, item, row_begin, row_count, _, _ in first["audio_routes"]:
        consumed[offsets[item] + row_begin:offsets[item] + row_begin + row_count] += 1
    assert (consumed == 1).all()


def test_audio_dp_embed_writes_the_clip_rows_at_the_audio_pads(corpus):
    torch = pytest.importorskip("torch")
    from mmpt.torch import audio_dp_embed, to_tensors
    batch = batches(str(corpus / "omni"), steps=1)[0]
    t = to_tensors(batch)
    rows = [int(r) for r in batch["audio_rows"]]

    def encoder(features, mask):  # one row per audio token: the clip's mean feature, its index
        out = [torch.stack([features[c].mean(), torch.tensor(float(c))]).repeat(rows[c], 1)
               for c in range(features.shape[0])]
        return torch.cat(out)

    embeds = torch.zeros(len(t["tokens"]), 2)
    out = audio_dp_embed(encoder, t["input_features"], t["feature_attention_mask"], embeds,
                         batch["audio_routing"], input_ids=t["tokens"],
                         audio_token_id=OMNI_IDS["<|AUDIO|>"])
    pads = (t["tokens"] == OMNI_IDS["<|AUDIO|>"]).nonzero().reshape(-1)
    torch.testing.assert_close(out[pads], encoder(t["input_features"], None), rtol=0, atol=0)
    assert (out[(t["tokens"] != OMNI_IDS["<|AUDIO|>"])] == 0).all()
    # Its errors speak of the audio encoder, not the vision one.
    with pytest.raises(ValueError, match="^audio_dp: inputs_embeds"):
        audio_dp_embed(encoder, t["input_features"], t["feature_attention_mask"],
                       torch.zeros(2, len(t["tokens"]), 2), batch["audio_routing"])


def test_the_memory_bound_counts_the_audio_features(corpus):
    dataset = mmpt.Dataset(str(corpus / "qwen2-audio"))
    planner = mmpt.Planner(dataset, dp=1, seq_len=4096, ga=1, allow_repeat=True)
    loader = mmpt.Loader(dataset, planner, dp_rank=0, steps=1, threads=1, prefetch_micro_steps=1)
    batch = next(loader)
    assert batch["input_features"].nbytes > 0
    assert loader.stats()["peak_bytes_in_flight"] >= batch["input_features"].nbytes


def test_a_plan_under_another_audio_preset_is_refused(corpus):
    done = subprocess.run([load_corpus.MMPT, "plan", "omni", "--seq-len", "4096",
                           "--allow-repeat", "--audio", "whisper-large-v3"], cwd=corpus,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert done.returncode != 0
    assert "audio preset 'whisper-large-v3' was asked for" in done.stdout, done.stdout


def test_a_corrupt_clip_drops_its_sample_alike_on_every_cp_rank(corpus, tmp_path):
    """A clip changed after prepare fails its CRC on every CP rank; under on_error="skip"
    its sample leaves the pack and the pack's cp stage is re-run with the remaining clips."""
    import glob
    import shutil
    path = str(tmp_path / "omni")
    shutil.copytree(str(corpus / "omni"), path)
    reader = mmpt.DatasetReader(path)
    clip = reader.media(0, 0)
    for zip_path in glob.glob(path + "/**/*.zip", recursive=True):
        data = bytearray(open(zip_path, "rb").read())
        at = data.find(clip[:256])
        if at >= 0:
            data[at + len(clip) // 2] ^= 0xFF
            open(zip_path, "wb").write(bytes(data))
            break
    else:
        pytest.fail("the clip's bytes are not stored as they are in any zip")
    dataset = mmpt.Dataset(path)
    planner = mmpt.Planner(dataset, dp=1, cp=2, seq_len=4096, ga=1, allow_repeat=True)
    ranks = [next(mmpt.Loader(dataset, planner, dp_rank=0, cp_rank=r, on_error="skip"))
             for r in (0, 1)]
    for batch in ranks:
        # Sample 0 each time it was placed (repeats are allowed), and nothing else.
        assert {d["index"] for d in batch["dropped"]} == {0}, batch["dropped"]
        assert all("CRC-32" in d["reason"] for d in batch["dropped"])
        assert 0 not in list(batch["sample_index"])
    clips = len(ranks[0]["audio_rows"])
    assert clips == len(ranks[0]["sample_index"]) > 0  # one clip a remaining sample
    assert sorted(list(ranks[0]["encoded_audios"]) + list(ranks[1]["encoded_audios"])) == list(
        range(clips))


def test_bench_load_plans_with_the_manifests_audio_preset(corpus):
    """`mmpt bench load` plans a dataset through the one constructor the loader's plans come
    from (PlanStream::Open): the manifest's audio preset, and another one refused by name."""
    args = ["bench", "load", "qwen2-audio", "--no-baseline", "--compare", "2", "--seconds", "0",
            "--seq-len", "4096", "--allow-repeat", "--threads", "1", "--json"]
    out = load_corpus.runner(corpus)(*args)
    assert '"micro_steps"' in out, out
    done = subprocess.run([load_corpus.MMPT, *args, "--audio", "qwen2.5-omni"], cwd=corpus,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert done.returncode != 0
    assert "'qwen2.5-omni'" in done.stdout and "'qwen2-audio'" in done.stdout, done.stdout


def test_the_planner_takes_the_audio_preset_as_the_commands_do(corpus):
    """mmpt.Planner(audio=) exists as --audio does: the dataset's preset, another refused."""
    path = str(corpus / "qwen2-audio")
    assert mmpt.Planner(path, seq_len=4096, allow_repeat=True, audio="qwen2-audio").plan(0)
    with pytest.raises(mmpt.InvalidArgumentError, match="qwen2.5-omni"):
        mmpt.Planner(path, seq_len=4096, allow_repeat=True, audio="qwen2.5-omni")
