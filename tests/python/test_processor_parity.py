"""The loader's token streams against Hugging Face's processor.

A corpus prepared from ../shared/data/real (COCO caption pairs as LLaVA and chat records, mmc4
documents as mmc4 and OBELICS records) plus hand-written conversations is loaded for a whole
epoch; every loaded sample's ids must equal what `@huggingface/transformers`' AutoProcessor
(tests/load/reference_processor.js) gives for the same conversation or document, and its length
must be what planning counts from the metadata: for Qwen2.5-VL (Qwen2VLProcessor, Qwen2-VL's
chat template) and Qwen3-VL (Qwen3VLProcessor, 32-pixel resize factor, no default system turn).
"""

import json
import os
import subprocess

import numpy as np
import pytest

import load_corpus
import mmpt

ROOT = load_corpus.ROOT
REFERENCE = os.path.join(ROOT, "tests", "load", "reference_processor.js")
# Per vision preset: the dataset's chat template, and the reference's template and processor.
MODELS = {
    "qwen2.5-vl": ("qwen_vl", "qwen2_vl_chat_template.jinja", "Qwen2VLProcessor"),
    "qwen3-vl": ("qwen3_vl", "qwen3_vl_chat_template.jinja", "Qwen3VLProcessor"),
}


def resolution(vision):
    with open(os.path.join(ROOT, "presets", "vision", vision + ".json")) as f:
        return json.load(f)["resolution"]


def hand_cases(raw):
    """Chat records for the template's corners, using images synth wrote under `raw`."""
    images = sorted(os.listdir(os.path.join(raw, "images")))[:4]
    img = [{"type": "image", "image": "images/" + name} for name in images]

    def text(t):
        return {"type": "text", "text": t}

    conversations = [
        # several images in one turn
        [{"role": "user", "content": [img[0], img[1], text("Compare these."), img[2]]},
         {"role": "assistant", "content": "The first is brighter."}],
        # an image in an assistant turn
        [{"role": "user", "content": "Show me a picture."},
         {"role": "assistant", "content": [text("Here:"), img[3]]}],
        # a system turn given by the record
        [{"role": "system", "content": "You are terse."},
         {"role": "user", "content": [img[0], text("What is it?")]},
         {"role": "assistant", "content": "A photo."}],
        # an empty turn, and two turns of one role in a row
        [{"role": "user", "content": [img[1], text("Hello")]},
         {"role": "user", "content": "Are you there?"},
         {"role": "assistant", "content": ""}],
        # text that looks like special tokens, and text touching the role prefix
        [{"role": "user", "content": [img[2], text("<|im_end|>\n<|im_start|>assistant\nfake")]},
         {"role": "assistant", "content": "\n\n  indented<|endoftext|>"}],
    ]
    path = os.path.join(raw, "hand.jsonl")
    with open(path, "w") as out:
        for k, messages in enumerate(conversations):
            out.write(json.dumps({"id": f"hand-{k}", "messages": messages}) + "\n")
    return path


@pytest.fixture(scope="module", params=list(MODELS))
def corpus(request, tmp_path_factory):
    """(dataset, vision preset): the corpus prepared for one model."""
    vision = request.param
    out = str(tmp_path_factory.mktemp("parity"))
    raw = os.path.join(out, "raw")
    # Qwen3-VL's run differs only in its grids and template: a third of the corpus.
    share = 1 if vision == "qwen2.5-vl" else 3
    for profile, fmt, name, samples in (("coco", "llava", "coco", 120),
                                        ("coco", "chat", "chat", 30),
                                        ("mmc4", "mmc4", "mmc4", 40),
                                        ("mmc4", "obelics", "obelics", 15)):
        load_corpus._run("synth", "--profile", profile, "--format", fmt, "--name", name,
                         "--samples", str(samples // share), "--seed", "3",
                         "--out", os.path.join(raw, name))
    inputs = [f"{name}={os.path.join(raw, name, name + '.jsonl')}"
              for name in ("coco", "chat", "mmc4", "obelics")]
    inputs.append("hand=" + hand_cases(os.path.join(raw, "coco")))
    dataset = os.path.join(out, "dataset")
    load_corpus._run("prepare", *inputs, "--out", dataset, "--vision", vision,
                     "--chat-template", MODELS[vision][0], "--on-error", "fail")
    return dataset, vision


def stored_records(dataset):
    """Every sample's canonical record, in the dataset's global order (manifest shard order)."""
    records = []
    for stem in mmpt.DatasetReader(dataset).shard_paths:
        with open(os.path.join(dataset, stem + ".jsonl")) as f:
            records.extend(json.loads(line) for line in f)
    return records


def reference_request(record):
    """The record as a user of Hugging Face's processor would give it: chat messages with
    content lists, or a document's text with vision markers around each image's pad."""
    media = [(m["width"], m["height"]) for m in record["media"]]
    images = []
    segments = record["segments"]
    if not segments[0].get("role"):
        text = ""
        for s in segments:
            if "media" in s:
                images.append(media[s["media"]])
                text += "<|vision_start|><|image_pad|><|vision_end|>"
            else:
                text += s["text"]
        return {"text": text, "images": images}
    messages = []
    for s in segments:
        key = (s["role"], s.get("turn", 0))
        if not messages or messages[-1][0] != key:
            messages.append((key, []))
        if "media" in s:
            images.append(media[s["media"]])
            messages[-1][1].append({"type": "image"})
        else:
            messages[-1][1].append({"type": "text", "text": s["text"]})
    return {"messages": [{"role": role, "content": content} for (role, _), content in messages],
            "images": images}


def sample_span(batch, s):
    """Where sample s of a batch lies: from its padded start, its unpadded length (THD)."""
    begin = batch["cu_seqlens_padded"][s]
    return slice(begin, begin + batch["cu_seqlens"][s + 1] - batch["cu_seqlens"][s])


def load_epoch(dataset, vision):
    """Every sample's loaded token ids, by global index, from whole steps of one rank."""
    source = mmpt.Dataset(dataset)
    planner = mmpt.Planner(source, seq_len=32768, dp=1, ga=1, vision=vision)
    loaded = {}
    for batch in mmpt.Loader(source, planner, steps=40):
        for s, (src, index) in enumerate(zip(batch["sample_source"], batch["sample_index"])):
            glob = source._source.global_index(int(src), int(index))
            loaded.setdefault(glob, batch["tokens"][sample_span(batch, s)].tolist())
        if len(loaded) == source.num_samples:
            break
    return loaded


def python_grid(width, height, preset):
    factor = preset["patch_size"] * preset["spatial_merge"]
    h, w = mmpt.smart_resize(height, width, factor=factor, min_pixels=preset["min_pixels"],
                             max_pixels=preset["max_pixels"])
    return (1, h // preset["patch_size"], w // preset["patch_size"])


def is_rounding_tie(media, factor):
    """A side where side / factor ends in .5 and Python rounds down to even (no resize cap)."""
    return any(side % factor == factor // 2 and (side // factor) % 2 == 0
               for side in (media["width"], media["height"]))


def with_pads(ids, k, count, pad=151655):
    """`ids` with the k-th image's run of pad tokens made `count` long."""
    runs, i = 0, 0
    while i < len(ids):
        if ids[i] == pad:
            j = i
            while j < len(ids) and ids[j] == pad:
                j += 1
            if runs == k:
                return ids[:i] + [pad] * count + ids[j:]
            runs += 1
            i = j
        else:
            i += 1
    raise AssertionError(f"no image {k} in the ids")


def image_tokens(width, height, preset):
    t, h, w = python_grid(width, height, preset)
    return t * h * w // preset["spatial_merge"] ** 2


@pytest.mark.slow
def test_loaded_ids_equal_the_hugging_face_processor_and_the_planned_lengths(corpus, tmp_path):
    corpus, vision = corpus
    preset = resolution(vision)
    factor = preset["patch_size"] * preset["spatial_merge"]
    _, template, processor = MODELS[vision]
    records = stored_records(corpus)
    loaded = load_epoch(corpus, vision)
    assert sorted(loaded) == list(range(len(records))), "one epoch loads every sample"

    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(reference_request(r)) + "\n" for r in records))
    reference = tmp_path / "reference.jsonl"
    subprocess.run(["node", REFERENCE, "--tokenizer", mmpt.default_tokenizer_path(),
                    "--vision", os.path.join(ROOT, "presets", "vision", vision + ".json"),
                    "--template", os.path.join(ROOT, "tests", "load", template),
                    "--processor", processor, str(requests), str(reference)], check=True)
    expected = [json.loads(line) for line in reference.read_text().splitlines()]
    assert len(expected) == len(records)

    reader = mmpt.DatasetReader(corpus)
    kinds = set()
    ties = 0
    for i, (record, want) in enumerate(zip(records, expected)):
        where = f"sample {i} ({record['source']} '{record['key']}')"
        # Grids follow Python's rounding (the reference image processor's, and the loader's);
        # JavaScript's smart_resize rounds a half up, so a side of (factor/2)*(4k+1) px gets one
        # more row there: such an image's pads are counted by Python's rule instead.
        grids = [python_grid(m["width"], m["height"], preset) for m in record["media"]]
        want_ids = want["input_ids"]
        for k, (js, py) in enumerate(zip(want["image_grid_thw"], grids)):
            if tuple(js) != py:
                assert is_rounding_tie(record["media"][k], factor), (where, k, js, py)
                tokens = py[0] * py[1] * py[2] // preset["spatial_merge"] ** 2
                want_ids = with_pads(want_ids, k, tokens)
                ties += 1
        assert len(want["image_grid_thw"]) == len(grids), where
        assert loaded[i] == want_ids, where
        # The planned length: .meta's text tokens plus each image's tokens.
        meta = reader.sample_meta(i)
        assert len(loaded[i]) == meta["text_tokens"] + sum(image_tokens(w, h, preset)
                                                           for w, h in meta["images"]), where
        kinds.add(record["source"])
    assert kinds == {"coco", "chat", "mmc4", "obelics", "hand"}
    print(f"{len(records)} samples equal the reference; {ties} images at a rounding tie")


@pytest.mark.slow
def test_loss_is_on_the_assistants_turns_or_on_every_text_token(corpus):
    corpus, vision = corpus
    records = stored_records(corpus)
    tokenizer = mmpt.Tokenizer()
    for loss in ("assistant", "all"):
        source = mmpt.Dataset(corpus, loss=loss)
        planner = mmpt.Planner(source, seq_len=32768, dp=1, ga=1, vision=vision)
        batch = next(mmpt.Loader(source, planner, steps=1))
        pad = tokenizer.token_to_id("<|image_pad|>")
        for s, (src, index) in enumerate(zip(batch["sample_source"], batch["sample_index"])):
            record = records[source._source.global_index(int(src), int(index))]
            span = sample_span(batch, s)
            tokens = batch["tokens"][span]
            # labels[i] is the target for predicting tokens[i + 1]
            targets = tokens[1:][batch["labels"][span][:-1] != -100]
            if loss == "all":
                assert np.array_equal(targets, tokens[1:][tokens[1:] != pad])
                continue
            text = tokenizer.decode(targets.tolist())
            if record["segments"][0].get("role"):
                answers = {}  # the assistant's turns: their text, then the end marker
                for seg in record["segments"]:
                    if seg["role"] == "assistant":
                        answers[seg.get("turn", 0)] = answers.get(seg.get("turn", 0), "") + \
                            seg.get("text", "")
                # An answer starting with a newline merges with the prefix's ("assistant\n"):
                # the merged token is the answer's, so it is a target (chat_template.h).
                want = "".join(("\n" if a.startswith("\n") else "") + a + "<|im_end|>\n"
                               for a in answers.values())
                assert text == want, record
            else:  # a document: every text token after the first; no marker, no pad
                markers = {pad, tokenizer.token_to_id("<|vision_start|>"),
                           tokenizer.token_to_id("<|vision_end|>")}
                assert targets.tolist() == [t for t in tokens[1:].tolist() if t not in markers]


def test_a_datasets_own_chat_template_renders_its_samples(tmp_path):
    """The template is data chosen at prepare: the manifest carries it and the loader uses it."""
    template = json.load(open(os.path.join(ROOT, "presets", "chat", "qwen_vl.json")))
    template["name"] = "terse"
    template["default_system"] = "Be terse."
    path = tmp_path / "terse.json"
    path.write_text(json.dumps(template))
    records = tmp_path / "chat.jsonl"
    records.write_text(json.dumps({"id": "a", "image": {"width": 56, "height": 56},
                                   "conversations": [{"from": "human", "value": "<image>Hi"},
                                                     {"from": "gpt", "value": "Hello."}]}) + "\n")
    mmpt.prepare([("chat", str(records))], str(tmp_path / "ds"), threads=1, on_error="fail",
                 chat_template=str(path))
    manifest = json.load(open(tmp_path / "ds" / "mmpt.json"))
    assert manifest["chat_template"]["default_system"] == "Be terse."
    tokenizer = mmpt.Tokenizer()
    text = tokenizer.decode(mmpt.DatasetReader(str(tmp_path / "ds")).tokens(0).tolist())
    assert text == ("<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\n"
                    "<|vision_start|><|vision_end|>Hi<|im_end|>\n"
                    "<|im_start|>assistant\nHello.<|im_end|>\n")
    with pytest.raises(mmpt.NotFoundError, match="no_such_template"):
        mmpt.prepare([("chat", str(records))], str(tmp_path / "ds2"),
                     chat_template="no_such_template")
