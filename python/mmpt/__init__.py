"""mmpt: plan, then load — multimodal pretraining data and scheduling engine.

The native engine is the extension module ``mmpt._mmpt``. A build (``-DMMPT_PYTHON=ON``) puts the
package, extension included, in ``build/<preset>/python``: put that one folder on ``PYTHONPATH``;
``cmake --install`` and ``pip install .`` install it (README "Install"). Every error the
engine reports is raised as a subclass of :class:`mmpt.Error` whose text is the C++ message;
each also derives from the matching built-in exception (``NotFoundError`` from
``FileNotFoundError``, ``InvalidArgumentError`` from ``ValueError``, ...).

``mmpt.Dataset``, ``mmpt.Planner`` and ``mmpt.Loader`` take a prepared dataset to batches
(``mmpt.Exchange`` when each node holds only its part of it);
``mmpt.torch`` holds the PyTorch helpers: ``to_tensors`` (a batch as tensors, no copy),
``megatron_batch``, and vision data parallelism under context parallelism (``vision_dp_embed``).
docs/python.md is the guide.
"""

try:
    from . import _mmpt  # noqa: F401 - the native module, imported first to fail clearly
except ImportError as error:  # pragma: no cover - exercised only in a broken setup
    raise ImportError(
        "mmpt: the native module mmpt._mmpt is not importable; build with "
        "`cmake --preset release && cmake --build build/release` and put build/release/python "
        f"(not python/) on PYTHONPATH, or install mmpt ({error})"
    ) from error

from ._mmpt import (  # noqa: F401 - re-exported
    CancelledError,
    CorruptError,
    DatasetReader,
    Error,
    InternalError,
    InvalidArgumentError,
    IOError,
    NotFoundError,
    OutOfRangeError,
    RankGrid,
    ThdSplit,
    TimeoutError,
    Tokenizer,
    __version__,
    assign_vision,
    audio_in_video,
    audio_tokens,
    calibrate,
    check_plan_agreement,
    decode_audio,
    default_tokenizer_path,
    hardware_preset,
    hash64,
    image_cost,
    list_presets,
    llm_preset,
    log_mel,
    mel_filters,
    merge,
    partitioned_indices,
    place_images,
    prepare,
    preprocess_video,
    preset_dir,
    read_file,
    simulate_cp_vision,
    smart_resize,
    split_thd,
    write_file_atomic,
    write_hardware_preset,
)

# (The store's DatasetReader is not mmpt.Dataset: that name is the loader's, in data.py.)
from .data import Dataset, Loader, Planner  # noqa: F401,E402
from .exchange import Exchange, Placement, place_dataset  # noqa: F401,E402
from .routing import RowSegment, Routing  # noqa: F401,E402


def __getattr__(name):
    """Names that were renamed: an old one raises AttributeError naming the new one."""
    renamed = {"VisionRouting": "Routing (it routes audio clips too)",
               "sample_holders": "Placement.sample_holder(dataset_reader, source, index)"}
    if name in renamed:
        raise AttributeError(f"mmpt.{name} is now mmpt.{renamed[name]}")
    raise AttributeError(f"module 'mmpt' has no attribute {name!r}")
