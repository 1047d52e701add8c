"""Every hidden test, registered by its nbgrader cell id (importing the modules registers them)."""
from . import analysis, integration, learned, rope_alibi, sinusoidal  # noqa: F401  (registration side effect)
from .base import REGISTRY, Check

__all__ = ["REGISTRY", "Check"]
