"""The native module's boundary: Status codes become Python exceptions with the C++ message."""

import ctypes
import ctypes.util
import os

import numpy as np
import pytest

import mmpt


def _libxxhash():
    name = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
    lib = ctypes.CDLL(name)
    lib.XXH3_64bits_withSeed.restype = ctypes.c_uint64
    lib.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib


def test_hash64_matches_libxxhash_on_bytes_and_arrays():
    lib = _libxxhash()
    for data, seed in [(b"", 0), (b"mmpt", 0), (b"mmpt", 7), (bytes(range(256)) * 9, 123)]:
        assert mmpt.hash64(data, seed) == lib.XXH3_64bits_withSeed(data, len(data), seed)
    array = np.arange(1000, dtype=np.int32)
    raw = array.tobytes()
    assert mmpt.hash64(array) == lib.XXH3_64bits_withSeed(raw, len(raw), 0)
    assert mmpt.hash64(bytearray(raw)) == mmpt.hash64(array)


def test_hash64_rejects_a_strided_buffer():
    array = np.arange(100, dtype=np.int64)[::2]
    with pytest.raises(mmpt.InvalidArgumentError, match="C-contiguous"):
        mmpt.hash64(array)


def test_missing_file_raises_not_found_with_the_cpp_message(tmp_path):
    missing = str(tmp_path / "no_such_file.json")
    with pytest.raises(mmpt.NotFoundError) as info:
        mmpt.read_file(missing)
    assert missing in str(info.value)
    # Generic handlers work too: NotFoundError is a FileNotFoundError and an mmpt.Error.
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, mmpt.Error)


def test_write_then_read_round_trips_atomically(tmp_path):
    path = str(tmp_path / "manifest.json")
    mmpt.write_file_atomic(path, b'{"version": 1}')
    assert mmpt.read_file(path) == b'{"version": 1}'
    mmpt.write_file_atomic(path, b"x" * 100000)
    assert mmpt.read_file(path) == b"x" * 100000
    assert sorted(os.listdir(tmp_path)) == ["manifest.json"]  # no temporary left behind


def test_write_into_a_missing_directory_raises_io_error(tmp_path):
    with pytest.raises(mmpt.Error) as info:
        mmpt.write_file_atomic(str(tmp_path / "missing" / "f.bin"), b"data")
    assert "missing" in str(info.value)
    assert isinstance(info.value, OSError)


def test_every_status_code_has_its_class():
    assert issubclass(mmpt.InvalidArgumentError, ValueError)
    assert issubclass(mmpt.CorruptError, ValueError)
    assert issubclass(mmpt.OutOfRangeError, IndexError)
    assert issubclass(mmpt.InternalError, RuntimeError)
    for cls in (mmpt.InvalidArgumentError, mmpt.NotFoundError, mmpt.IOError, mmpt.CorruptError,
                mmpt.OutOfRangeError, mmpt.CancelledError, mmpt.InternalError):
        assert issubclass(cls, mmpt.Error)
        assert cls.__module__ == "mmpt"


def test_smart_resize_follows_the_qwen_rule_and_raises_on_bad_sizes():
    # COCO's most common size: 640x427 (w x h). Multiples of 28, area within bounds.
    height, width = mmpt.smart_resize(427, 640)
    assert (height, width) == (420, 644)
    height, width = mmpt.smart_resize(4000, 3000, max_pixels=28 * 28 * 1280)
    assert height % 28 == 0 and width % 28 == 0 and height * width <= 28 * 28 * 1280
    # Rounding gives 96x96, above max_pixels, so both sides shrink by sqrt(area/max) and floor.
    assert mmpt.smart_resize(100, 100, factor=32, min_pixels=32 * 32, max_pixels=64 * 64) == (
        64, 64)
    with pytest.raises(mmpt.InvalidArgumentError, match="zero side"):
        mmpt.smart_resize(0, 640)
    with pytest.raises(ValueError, match="aspect ratio"):
        mmpt.smart_resize(10, 5000)
