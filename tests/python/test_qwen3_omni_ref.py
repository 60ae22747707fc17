"""The Qwen3-Omni reference (qwen3_omni_ref.py) against cases computed by hand from
transformers' qwen3_omni_moe and feature_extraction_whisper.py, and mmpt's audio token rule
against the reference."""

import numpy as np

import mmpt
import qwen3_omni_ref as ref

S, E, P = ref.AUDIO_START, ref.AUDIO_END, ref.AUDIO_PAD
VS, VE, IMG, VID = ref.VISION_START, ref.VISION_END, ref.IMAGE_PAD, ref.VIDEO_PAD


def test_valid_frames_count_whole_hops_of_a_clip_padded_to_itself():
    assert ref.valid_frames(16000) == 100   # 1 s: the mask's every 160th sample, 100 of them
    assert ref.valid_frames(16159) == 100   # 101 taken, the last dropped: 16159 % 160 != 0
    assert ref.valid_frames(16160) == 101
    assert ref.valid_frames(159) == 0


def test_audio_tokens_by_hand():
    # r = n % 100; (r - 1) // 2 + 1 three times; 13 per full chunk.
    for frames, tokens in [(0, 0), (1, 1), (8, 1), (9, 2), (99, 13), (100, 13), (101, 14),
                           (250, 33), (30000, 3900)]:
        assert ref.audio_tokens(frames) == tokens, frames
        assert mmpt.audio_tokens(frames, audio="qwen3-omni") == tokens, frames


def test_mmpt_audio_tokens_equal_the_reference_for_every_length():
    frames = np.arange(0, 1201)
    want = ref.audio_tokens(frames)
    got = [mmpt.audio_tokens(int(n), audio="qwen3-omni") for n in frames]
    np.testing.assert_array_equal(got, want)


def test_positions_of_text_and_audio_by_hand():
    # Text, a clip of 9 frames (2 tokens), text, a clip of 1 frame (1 token): every token one
    # past the one before, on all three rows.
    ids = [1, 2, S, P, P, E, 3, S, P, E]
    want = np.arange(10)
    np.testing.assert_array_equal(ref.rope_index(ids, audio_frames=[9, 1]),
                                  np.stack([want] * 3))


def test_positions_of_an_image_and_a_video_by_hand():
    # An image of grid (1, 4, 4): 2x2 merged tokens at (0, r, c) from its start. Then a video of
    # grid (2, 2, 2), one merged token a step, 0.5 s a step: time 0 and 6.5 (13 a second).
    ids = [7, VS, IMG, IMG, IMG, IMG, VE, VS, VID, VID, VE, 8]
    got = ref.rope_index(ids, image_grids=[(1, 4, 4)], video_grids=[(2, 2, 2)],
                         second_per_grids=[0.5])
    text0 = [0, 1]                      # 7, <|vision_start|>
    image = [(2, 2, 2), (2, 2, 3), (2, 3, 2), (2, 3, 3)]
    end0 = 4                            # one past the image's largest position (3)
    video = [(6, 6, 6), (12.5, 6, 6)]   # start 6 (after <|vision_start|> at 5)
    want = ([(p, p, p) for p in text0] + image + [(end0,) * 3, (5, 5, 5)] + video
            + [(13.5,) * 3, (14.5,) * 3])
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float64).T)
