"""Bindings of the text, cost, cp placement and sim modules."""

import pytest

import mmpt


def test_tokenizer_round_trips_and_knows_qwen_special_tokens(tmp_path):
    tokenizer = mmpt.Tokenizer()
    text = "A man is in a kitchen making pizzas."
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    assert tokenizer.count(text) == len(ids) > 3
    image_pad = tokenizer.token_to_id("<|image_pad|>")
    assert isinstance(image_pad, int)
    assert tokenizer.encode("<|image_pad|>") == [image_pad]
    assert tokenizer.token_to_id("no such token, surely") is None
    with pytest.raises(mmpt.OutOfRangeError):
        tokenizer.decode([tokenizer.vocab_size + 10])
    with pytest.raises(mmpt.NotFoundError, match="missing.json"):
        mmpt.Tokenizer(str(tmp_path / "missing.json"))


def test_image_cost_follows_the_preset_rule():
    cost = mmpt.image_cost(427, 640, "qwen2-vl")
    height, width = mmpt.smart_resize(427, 640, max_pixels=12845056)
    assert (cost["resized_height"], cost["resized_width"]) == (height, width)
    # Both take (height, width), as the processors do: a portrait image is the transpose.
    portrait = mmpt.image_cost(640, 427, "qwen2-vl")
    assert (portrait["resized_height"], portrait["resized_width"]) == (width, height) != (
        height, width)
    assert cost["llm_tokens"] == height * width // (28 * 28)
    assert cost["patches"] == 4 * cost["llm_tokens"]
    bigger = mmpt.image_cost(854, 1280, "qwen2-vl")
    assert bigger["train_flops"] > 4 * cost["train_flops"]  # attention grows faster than area
    with pytest.raises(mmpt.NotFoundError, match="no-such-encoder"):
        mmpt.image_cost(640, 480, "no-such-encoder")
    with pytest.raises(mmpt.Error):
        mmpt.image_cost(640, 480, '{"name": "broken"}')


def test_simulator_divides_vision_work_as_the_routing_does():
    # One pack: three samples with one image each, costs 9, 1, 1 (token order).
    lengths = [300, 100, 100]
    images = [(0, 200, 9.0), (1, 40, 1.0), (2, 40, 1.0)]
    placed = mmpt.place_images(lengths, images)
    assert [start for start, _, _ in placed] == [50, 330, 430]  # text spread around each image
    plan = [[(300, [(200, 9.0)]), (100, [(40, 1.0)]), (100, [(40, 1.0)])]]
    for policy in ("count", "cost"):
        predicted = mmpt.simulate_cp_vision(plan, 2, policy, seconds_per_flop=1.0)
        routing = mmpt.assign_vision(mmpt.split_thd(lengths, 2), placed, policy)
        expected = [sum(images[i][2] for i in routing.encoded[r]) for r in range(2)]
        assert predicted["vision_seconds"][0] == pytest.approx(expected)
    count = mmpt.simulate_cp_vision(plan, 2, "count")["vision_seconds"][0]
    cost = mmpt.simulate_cp_vision(plan, 2, "cost")["vision_seconds"][0]
    assert max(cost) < max(count)  # count pairs the big image with a small one
    with pytest.raises(mmpt.InvalidArgumentError, match="policy"):
        mmpt.simulate_cp_vision(plan, 2, "fastest")
    with pytest.raises(mmpt.InvalidArgumentError, match="at least 1"):
        mmpt.simulate_cp_vision(plan, 0, "cost")  # refused, not a division by zero
    with pytest.raises(mmpt.InvalidArgumentError):
        mmpt.place_images([10], [(0, 20, 1.0)])  # more image tokens than the sample holds


def test_prepare_then_read_the_real_mix_back(tmp_path):
    from vdp_model import load_coco, write_real_mix

    coco = load_coco()
    inputs = write_real_mix(str(tmp_path / "inputs"), coco, num_captions=20, num_docs=4)
    report = mmpt.prepare(inputs, str(tmp_path / "ds"), threads=1, on_error="fail")
    assert (report["samples"], report["skipped"]) == (24, 0)
    dataset = mmpt.DatasetReader(str(tmp_path / "ds"))
    assert dataset.num_samples == 24 and dataset.sources == ["coco", "mmc4"]
    for i in range(20):
        meta = dataset.sample_meta(i)
        assert meta["source"] == "coco" and meta["images"] == [tuple(coco[i][:2])]
        ids = dataset.tokens(i)
        assert ids.dtype.name == "int32" and len(ids) == meta["text_tokens"] > 0
        assert not ids.flags.writeable
        assert dataset.media(i, 0) == b""  # metadata-only: a size, no bytes
    tokenizer = mmpt.Tokenizer()
    # Stored ids are the sample rendered through the chat template (image pads left out).
    text = tokenizer.decode(dataset.tokens(0).tolist())
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    assert text.endswith("<|im_start|>assistant\n" + coco[0][2].strip() + "<|im_end|>\n")
    doc = dataset.sample_meta(20)
    assert doc["source"] == "mmc4" and len(doc["images"]) >= 2
    with pytest.raises(mmpt.OutOfRangeError, match="sample 24"):
        dataset.sample_meta(24)
    with pytest.raises(mmpt.NotFoundError):
        mmpt.DatasetReader(str(tmp_path / "nothing-here"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "image": {"width": 0, "height": 5}, "conversations": []}\n')
    with pytest.raises(mmpt.Error, match="bad.jsonl:1"):
        mmpt.prepare([("bad", str(bad))], str(tmp_path / "ds2"), threads=1, on_error="fail")


def test_a_merged_dataset_plans_in_manifest_order(tmp_path):
    from vdp_model import load_coco, write_real_mix

    coco = load_coco()
    parts = []
    for name, first in (("pa", 0), ("pb", 20)):
        inputs = write_real_mix(str(tmp_path / name / "in"), coco[first:], num_captions=20,
                                num_docs=2)
        mmpt.prepare(inputs, str(tmp_path / name / "ds"), threads=1, on_error="fail")
        parts.append(str(tmp_path / name / "ds"))
    assert mmpt.merge(str(tmp_path / "pm"), parts) == 44
    (tmp_path / "pm" / "stray").mkdir()  # files the manifest does not name are no part of it
    (tmp_path / "pm" / "stray" / "00000.meta").write_bytes(
        (tmp_path / "pa" / "ds" / "coco" / "00000.meta").read_bytes())
    dataset = mmpt.Dataset(str(tmp_path / "pm"))
    assert dataset.num_samples == 44 and dataset.sources == ["coco", "mmc4"]
    plan = mmpt.Planner(dataset, seq_len=1024, dp=2).plan(0)
    placed = [s for rank in plan["rank_samples"] for s in rank]
    assert placed and len(set(placed)) == len(placed)
