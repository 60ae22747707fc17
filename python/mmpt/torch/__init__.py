"""PyTorch helpers for mmpt batches: vision data parallelism under context parallelism."""

from .vision_dp import ExchangeStats, exchange_embeddings, vision_dp_embed  # noqa: F401
