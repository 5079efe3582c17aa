"""vkspmd.optim: torch.optim.SGD and AdamW (their update traces into the step's graph)."""

from ._C.optim import SGD, AdamW, GradScaler, Optimizer  # noqa: F401
