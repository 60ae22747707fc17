"""The Qwen3-VL video reference (qwen3_vl_video_ref.py) checked on cases worked out by hand:
frame sampling (Hugging Face and qwen-vl-utils), timestamps and their text, resizing, M-RoPE
positions, and real ffmpeg clips read back through PyAV."""

import shutil

import numpy as np
import pytest

import qwen3_vl_video_ref as ref

PAD4 = ref.VISION_START + ref.VIDEO_PAD * 4 + ref.VISION_END


def test_hf_sample_takes_two_frames_a_second_over_the_whole_clip():
    # 10 s at 24 fps: int(240 / 24 * 2) = 20 frames, linspace(0, 239, 20), step 239 / 19.
    idx = ref.hf_sample(240, 24)
    assert len(idx) == 20
    assert idx[:3] == [0, 13, 25] and idx[-2:] == [226, 239]


def test_hf_sample_rounds_half_to_even():
    # 16 frames, 7 wanted: step 2.5, so 2.5 -> 2, 7.5 -> 8, 12.5 -> 12.
    assert ref.hf_sample(16, 16, fps=7.0) == [0, 2, 5, 8, 10, 12, 15]


def test_hf_sample_truncates_then_clamps():
    assert ref.hf_sample(47, 24) == [0, 15, 31, 46]  # int(3.9) = 3, raised to min_frames 4
    assert ref.hf_sample(3, 24) == [0, 1, 2]  # never more than the clip has


def test_an_odd_count_repeats_its_last_index_in_the_timestamps():
    # 2.5 s at 24 fps: 5 frames, linspace(0, 59, 5) = 0, 14.75, 29.5, 44.25, 59.
    idx = ref.hf_sample(60, 24)
    assert idx == [0, 15, 30, 44, 59]
    seconds = ref.timestamps(idx, 24)  # groups (0, 15), (30, 44), (59, 59)
    assert seconds == pytest.approx([15 / 48, 74 / 48, 59 / 24])
    text = ref.expand_video(seconds, 3, 4, 4)  # grid_t = ceil(5 / 2)
    assert text == "<0.3 seconds>" + PAD4 + "<1.5 seconds>" + PAD4 + "<2.5 seconds>" + PAD4


def test_timestamp_text_rounds_an_exact_tie_half_to_even():
    seconds = ref.timestamps([0, 1, 1, 2], 2.0)  # (0 + 0.5) / 2, (0.5 + 1) / 2
    assert seconds == [0.25, 0.75]
    assert ref.expand_video(seconds, 2, 4, 4) == "<0.2 seconds>" + PAD4 + "<0.8 seconds>" + PAD4


def test_expand_video_counts_merged_tokens_per_group():
    text = ref.expand_video([0.5], 1, 6, 8)
    assert text == "<0.5 seconds>" + ref.VISION_START + ref.VIDEO_PAD * 12 + ref.VISION_END


def test_utils_frame_range_and_sample_keep_absolute_indices():
    # 3 s at 30 fps, 1.0 s to 2.5 s: frames ceil(30) .. floor(75), 46 of them.
    assert ref.utils_frame_range(90, 30, 1.0, 2.5) == (30, 75, 46)
    idx = ref.utils_sample(90, 30, 1.0, 2.5)  # 46 / 30 * 2 = 3.07, raised to 4
    assert idx == [30, 45, 60, 75]
    seconds = ref.timestamps(idx, 30)
    assert seconds == [1.25, 2.25]
    assert ref.expand_video(seconds, 2, 4, 4) == "<1.2 seconds>" + PAD4 + "<2.2 seconds>" + PAD4


def test_utils_frame_range_defaults_and_clamps():
    assert ref.utils_frame_range(90, 30) == (0, 89, 90)
    assert ref.utils_frame_range(90, 30, video_start=1.0) == (30, 89, 60)
    assert ref.utils_frame_range(90, 30, video_end=10.0) == (0, 89, 90)
    assert ref.utils_sample(90, 30, video_start=1.0) == [30, 50, 69, 89]  # step 59 / 3
    with pytest.raises(ValueError):
        ref.utils_frame_range(90, 30, 2.0, 1.0)


def test_utils_nframes_floors_to_the_frame_factor():
    assert ref.utils_sample(240, 24) == [round(i * 239 / 19) for i in range(20)]
    assert ref.utils_nframes(75, 24) == 6  # 6.25 -> 6
    assert ref.utils_nframes(79, 24) == 6  # 6.58 -> 6 (hf_sample would take 6 too)
    assert ref.utils_nframes(84, 24) == 6  # 7.0 floored to 6; hf_sample takes 7
    assert len(ref.hf_sample(84, 24)) == 7


def test_hf_resize_bounds_the_whole_clip():
    # 20 x 480 x 640 is over 768 * 32 * 32: beta = sqrt(7.8125), 5.37 -> 5, 7.16 -> 7.
    assert ref.hf_resize(20, 480, 640) == (160, 224)
    # 4 x 448 x 448 = 802816 is over: beta = sqrt(802816 / 786432), 13.86 -> 13.
    assert ref.hf_resize(4, 448, 448) == (416, 416)


def test_hf_resize_tests_t_bar_but_scales_by_num_frames():
    # 3 frames: t_bar = round(1.5) * 2 = 4, 4 x 448 x 448 over the bound, but beta from
    # 3 x 448 x 448 is sqrt(0.765625) = 0.875: the "shrink" grows each side to 512.
    assert ref.hf_resize(3, 448, 448) == (512, 512)
    # 5 frames: t_bar = round(2.5) * 2 = 4, 4 x 416 x 416 = 692224 fits, so 5 frames pass.
    assert ref.hf_resize(5, 416, 416) == (416, 416)


def test_hf_resize_scales_a_small_side_up_first():
    # 20 x 100: x1.6 -> 32 x 160, then 4 x 32 x 160 under 128 * 32 * 32:
    # beta = sqrt(6.4), ceil(2.53) = 3, ceil(12.65) = 13.
    assert ref.hf_resize(4, 20, 100) == (96, 416)
    with pytest.raises(ValueError):
        ref.hf_resize(1, 448, 448)


def test_utils_resize_gives_each_frame_its_budget():
    assert ref.utils_resize(20, 480, 640) == (480, 640)  # 307200 within [131072, 786432]
    # 1080p at 768 tokens a frame: beta = sqrt(2073600 / 786432), 20.78 -> 20, 36.95 -> 36.
    assert ref.utils_resize(4, 1080, 1920) == (640, 1152)
    # 600 frames: 0.9 * 128000 * 1024 / 600 * 2 = 393216 a frame: 14.70 -> 14, 26.13 -> 26.
    assert ref.utils_resize(600, 1080, 1920) == (448, 832)
    # 64 x 64 under 128 tokens: beta = sqrt(32), ceil(11.31) = 12.
    assert ref.utils_resize(4, 64, 64) == (384, 384)


VS, VE, IMG, VID, TXT = 100, 101, 102, 103, 7


def test_rope_index_on_a_hand_built_sequence():
    ids = ([TXT, TXT, VS] + [IMG] * 4 + [VE, TXT] + [TXT, TXT]  # text, image 1x4x4, "<t s>"
           + [VS] + [VID] * 4 + [VE] + [TXT, TXT]  # first group, "<t s>"
           + [VS] + [VID] * 4 + [VE, TXT, TXT])  # second group, text
    pos = ref.rope_index(ids, [(1, 4, 4)], [(2, 4, 4)], 2, IMG, VID, VS)
    expected = np.array([
        [0, 1, 2, 3, 3, 3, 3, 5, 6, 7, 8, 9, 10, 10, 10, 10, 12, 13, 14, 15, 16, 16, 16, 16,
         18, 19, 20],
        [0, 1, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9, 10, 10, 11, 11, 12, 13, 14, 15, 16, 16, 17, 17,
         18, 19, 20],
        [0, 1, 2, 3, 4, 3, 4, 5, 6, 7, 8, 9, 10, 11, 10, 11, 12, 13, 14, 15, 16, 17, 16, 17,
         18, 19, 20]])
    assert pos.dtype == np.int64 and pos.shape == (3, len(ids))
    np.testing.assert_array_equal(pos, expected)


def test_rope_index_lays_a_wide_grid_out_row_by_row():
    ids = [VS] + [IMG] * 6 + [VE]  # 1 x 4 x 6: 2 rows of 3
    pos = ref.rope_index(ids, [(1, 4, 6)], [], 2, IMG, VID, VS)
    np.testing.assert_array_equal(pos, [[0, 1, 1, 1, 1, 1, 1, 4],
                                        [0, 1, 1, 1, 2, 2, 2, 4],
                                        [0, 1, 2, 3, 1, 2, 3, 4]])


needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")


@needs_ffmpeg
@pytest.mark.parametrize("rate,fps", [("24", 24.0), ("30000/1001", 30000 / 1001), ("30", 30.0)])
def test_make_video_and_probe(tmp_path, rate, fps):
    pytest.importorskip("av")
    path = ref.make_video(tmp_path / "clip.mp4", rate, 9, 64, 48)
    total, video_fps = ref.probe(path)
    assert total == 9
    assert video_fps == pytest.approx(fps, rel=1e-9)
    assert ref.hf_sample(total, video_fps) == [0, 3, 5, 8]  # linspace(0, 8, 4)
