"""PyTorch helpers for mmpt batches: tensors and Megatron-style batches from the loader's dicts
(``batch.py``), vision (and audio) data parallelism under context parallelism
(``vision_dp.py``), and the native vision encoder (``vision.py``)."""

from .vision_dp import (EmulatedCpRank, ExchangeStats, audio_dp_embed,  # noqa: F401
                        exchange_embeddings, vision_dp_embed)
from .batch import megatron_batch, to_tensors  # noqa: F401,E402
from .vision import VisionEncoder  # noqa: F401,E402
