"""Results directory: one record per cell, shared models, step checkpoints."""
from benchbackcompat.store.results import ResultStore

__all__ = ["ResultStore"]
