"""The loss and the optimizer, and one update written out by hand.

In plain words: `make_loss` is sentence-transformers' ``MultipleNegativesRankingLoss`` (every
question picks its own document out of the batch; ``scale`` = 1 / temperature) or its GradCache
form (the same loss computed in chunks of ``mini_batch_size``, for big batches on little
memory); ``gather`` lets each process see every process's documents (DDP). `adamw` builds AdamW
with the trainer's own weight-decay rule (biases and norms spared). `train_step` is what the
trainer does each step, by hand: the lesson of one update, and the peer of the trainer in
``benchmarks/trainer_vs_loop.py``.

Arguments are trusted: `labs.retrieval.config.TrainConfig` has checked them (its `LOSSES` are
the kinds `make_loss` builds).
"""

from __future__ import annotations

import torch

from labs.retrieval.device import assert_float32_master, autocast_dtype

__all__ = ["make_loss", "adamw", "train_step", "train_step_features"]


def make_loss(model, kind: str = "mnrl", *, scale: float = 20.0, mini_batch_size: int = 16, gather: bool = False):
    """sentence-transformers' MNRL (``"mnrl"``) or its GradCache version (``"cached"``, chunks of
    ``mini_batch_size``); ``gather`` sets ``gather_across_devices`` (negatives from every process)."""
    from sentence_transformers.sentence_transformer.losses import (CachedMultipleNegativesRankingLoss,
                                                                   MultipleNegativesRankingLoss)

    if kind == "mnrl":
        return MultipleNegativesRankingLoss(model, scale=scale, gather_across_devices=gather)
    return CachedMultipleNegativesRankingLoss(model, scale=scale, mini_batch_size=mini_batch_size,
                                              gather_across_devices=gather)


def adamw(model, lr: float, weight_decay: float = 0.01, device: str = "cpu") -> torch.optim.AdamW:
    """AdamW as the trainer builds it: weight decay on every weight except biases and norms;
    fused kernels on CUDA. Asserts float32 master weights first."""
    from sentence_transformers.sentence_transformer import SentenceTransformerTrainer

    assert_float32_master(model)
    decay = set(SentenceTransformerTrainer.get_decay_parameter_names(None, model))  # the trainer's own rule
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if n in decay], "weight_decay": weight_decay},
              {"params": [p for n, p in named if n not in decay], "weight_decay": 0.0}]
    cuda = str(device).startswith("cuda")
    return torch.optim.AdamW(groups, lr=lr, fused=cuda, foreach=None if cuda else False)


def train_step(model, loss_fn, optimizer, columns: list[list[str]], *, device: str, bf16: bool = False,
               precision: str | None = None, scaler=None) -> float:
    """One update from texts: tokenise each column, then `train_step_features`."""
    features = []
    for texts in columns:
        f = model.preprocess(texts)
        features.append({k: v.to(device) if torch.is_tensor(v) else v for k, v in f.items()})
    return train_step_features(model, loss_fn, optimizer, features, device=device, bf16=bf16,
                               precision=precision, scaler=scaler)


def train_step_features(model, loss_fn, optimizer, features: list[dict], *, device: str, bf16: bool = False,
                        precision: str | None = None, scaler=None) -> float:
    """One update from tokenised columns, by hand: loss (under autocast for ``precision`` "bf16" or
    "fp16" on CUDA; ``bf16=True`` is short for "bf16"), backward (through ``scaler``, a
    ``torch.amp.GradScaler``, for fp16), gradient norm clipped at 1, optimizer step. Returns the loss."""
    precision = precision or ("bf16" if bf16 else "fp32")
    dtype = autocast_dtype(precision)
    cuda = str(device).startswith("cuda")
    with torch.autocast(device_type="cuda", dtype=dtype or torch.bfloat16, enabled=cuda and dtype is not None):
        loss = loss_fn(features, None)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
    else:
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())
