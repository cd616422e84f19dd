"""Scaling contrastive training on one machine: big batches on little memory, and what accumulation is not.

In plain words: with in-batch negatives a bigger batch is a harder exam (each
query picks its document out of more candidates), but memory grows with it.

* GradCache (sentence-transformers' ``CachedMultipleNegativesRankingLoss``):
  embed the batch in small chunks without keeping activations, compute the
  loss on all embeddings at once, then re-run each chunk with gradients. Same
  loss and gradients as plain ``MultipleNegativesRankingLoss`` (`compare_cached`),
  activation memory of one chunk, about one extra forward pass (`measure_step`).
Why gradient accumulation is not a bigger batch is shown in
`labs.lessons.accumulation`. Across processes (DDP, gathered negatives) is
`labs.retrieval.distributed`.

Shapes
------
==============  =========  ====================================================
name            shape      meaning
==============  =========  ====================================================
columns         2 x [B]    [queries, documents] texts; row i's answer is doc i
features        2 x dict   the model's tokenisation of each column
queries, docs   (N, d)     embeddings (d = 384 for MiniLM), normalised inside
micro-batch     m rows     N must be a multiple of m (accumulation)
grads           (P,)       every parameter gradient, flattened
==============  =========  ====================================================

Memory is the process's resident set (Linux ``VmHWM``, reset through
``/proc/self/clear_refs`` just before the measured steps), so it sees torch's
own allocations; ``tracemalloc`` would not. Each configuration runs in a fresh
process (`measure_step_isolated`), so one configuration's peak cannot leak into
the next. The benchmark is ``python benchmarks/scaling.py``.

Relations: the losses are sentence-transformers' own (scale 20 = tau 0.05); the step is
`labs.retrieval.loss.train_step_features`. Book page: ``book/scaling.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from labs.retrieval import machine
from labs.retrieval.config import LOSSES
from labs.retrieval.device import reset_peak, status_kib
from labs.retrieval.helpdesk import KINDS
from labs.retrieval.models import OFFLINE_VARIABLES, load_encoder, minilm_path
from labs.retrieval.loss import adamw, make_loss, train_step_features

__all__ = [
    "scale_pairs",
    "write_tiny_bert",
    "features_of",
    "flat_grads",
    "loss_and_grads",
    "compare_cached",
    "measure_step",
    "measure_step_isolated",
    "main",
]

_FIRST = ("Ca", "Do", "Fe", "Ki", "Lo", "Ma", "Ne", "Pi", "Ru", "Sa", "Te", "Vo")
_SECOND = ("bex", "dor", "lin", "mar", "nix", "ra", "sto", "vel")
_AREAS = ("Account", "Settings", "Profile", "Workspace", "Preferences")


def scale_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (query, document) pairs with distinct documents, help-desk style, shuffled with ``seed``.

    96 made-up products x the six help-desk article kinds = 576 pairs at most, so
    batches up to 576 hold no duplicate document (no false negative by construction).
    """
    rows = []
    for p, product in enumerate(a + b for a in _FIRST for b in _SECOND):
        for k, (title, menu, action, templates) in enumerate(KINDS.values()):
            doc = f"{product}: How to {title}. Open {_AREAS[p % len(_AREAS)]} then {menu} and choose {action}."
            rows.append((templates[(p + k) % 3].format(p=product), doc))
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= len(rows):
        raise ValueError(f"n must be an integer from 2 to {len(rows)}, got {n!r}")
    order = np.random.default_rng(seed).permutation(len(rows))
    return [rows[i] for i in order[:n]]


def write_tiny_bert(folder: str | Path, seed: int = 0, max_length: int = 64) -> Path:
    """Save a random 2-layer BERT (hidden 32, no dropout) with MiniLM's tokenizer as a
    sentence-transformers folder (mean pooling, Normalize). Nothing is downloaded."""
    import tempfile

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = Path(folder)
    machine.new_path(folder, "folder")
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    with tempfile.TemporaryDirectory() as raw:
        BertModel(config).save_pretrained(raw)
        AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(raw)
        transformer = Transformer(raw, max_seq_length=max_length)
        modules = [transformer, Pooling(transformer.get_embedding_dimension(), "mean"), Normalize()]
        SentenceTransformer(modules=modules, device="cpu").save(str(folder), create_model_card=False)
    return folder


def features_of(model, columns: list[list[str]]) -> list[dict]:
    """Tokenise each column (list of B texts) with the model's own preprocessing."""
    if len(columns) < 2 or len({len(c) for c in columns}) != 1 or len(columns[0]) < 2:
        raise ValueError("columns must be [queries, documents(, ...)] of equal length >= 2")
    return [dict(model.preprocess(list(texts))) for texts in columns]


def flat_grads(model) -> torch.Tensor:
    """Every trainable parameter's gradient (zeros where none), flattened into one vector (P,)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                      for p in model.parameters() if p.requires_grad])


def loss_and_grads(model, loss_fn, features: list[dict]) -> tuple[float, torch.Tensor]:
    """One forward and backward; returns (loss, every parameter gradient flattened, shape (P,)); grads reset."""
    model.zero_grad(set_to_none=True)
    loss = loss_fn(features, None)
    loss.backward()
    grads = flat_grads(model).clone()
    model.zero_grad(set_to_none=True)
    return float(loss.detach()), grads


def compare_cached(model, columns: list[list[str]], *, scale: float = 20.0, mini_batch_size: int = 4) -> dict:
    """Plain MNRL and cached MNRL on the same batch: both losses and the largest gradient gap.

    Dropout would draw different masks in the two runs, so the model is put in eval mode.
    """
    model.eval()
    features = features_of(model, columns)
    plain, g_plain = loss_and_grads(model, make_loss(model, "mnrl", scale=scale), features)
    cached, g_cached = loss_and_grads(model, make_loss(model, "cached", scale=scale,
                                                      mini_batch_size=mini_batch_size), features)
    return {"batch": len(columns[0]), "mini_batch_size": mini_batch_size, "loss_mnrl": plain,
            "loss_cached": cached, "max_abs_grad": float(g_plain.abs().max()),
            "max_grad_gap": float((g_plain - g_cached).abs().max())}


def measure_step(kind: str = "mnrl", batch: int = 16, *, mini_batch_size: int = 16, steps: int = 2,
                 threads: int = 2, model: str = "minilm") -> dict:
    """Time and resident memory of one training step (loss, backward, clip, AdamW) in THIS process.

    A warm-up step on 2 pairs first creates the gradients and AdamW state, so what is
    measured is what grows with the batch. Then the resident high-water mark (VmHWM)
    is reset and ``steps`` steps at ``batch`` run; ``extra_mib`` = peak - resident before.
    Run each configuration in a fresh process (`measure_step_isolated`).
    """

    if kind not in LOSSES:
        raise ValueError(f"kind must be one of {LOSSES}, got {kind!r}")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    st, _, _ = load_encoder(model, "cpu", 128)
    st.train()
    loss_fn = make_loss(st, kind, mini_batch_size=mini_batch_size)
    optimizer = adamw(st, lr=2e-5)
    rows = scale_pairs(batch)
    columns = [[q for q, _ in rows], [d for _, d in rows]]
    features = features_of(st, columns)
    tokens = sum(int(f["attention_mask"].sum()) for f in features) / (2 * batch)
    train_step_features(st, loss_fn, optimizer, features_of(st, [c[:2] for c in columns]), device="cpu")
    before = status_kib("VmRSS")
    exact = reset_peak()
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = train_step_features(st, loss_fn, optimizer, features, device="cpu")
        seconds.append(time.perf_counter() - start)
    peak = status_kib("VmHWM")
    return {"loss": kind, "batch": batch, "mini_batch_size": mini_batch_size if kind == "cached" else None,
            "seconds": min(seconds), "rss_before_mib": before / 1024, "peak_mib": peak / 1024,
            "extra_mib": (peak - before) / 1024, "tokens_per_text": tokens, "first_loss": loss,
            "method": "VmHWM reset before the steps" if exact else "lifetime peak (clear_refs refused)"}


def measure_step_isolated(kind: str, batch: int, *, mini_batch_size: int = 16, steps: int = 2,
                          threads: int = 2, timeout: float = 900) -> dict:
    """`measure_step` in a fresh Python process (``python -m labs.retrieval.scaling measure ...``); its JSON result."""
    cmd = [sys.executable, "-m", "labs.retrieval.scaling", "measure", "--loss", kind, "--batch", str(batch),
           "--mini-batch-size", str(mini_batch_size), "--steps", str(steps), "--threads", str(threads)]
    env = {**os.environ, **dict.fromkeys(OFFLINE_VARIABLES, "1"), "TQDM_DISABLE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=Path(__file__).resolve().parent.parent)
    if done.returncode != 0:
        raise RuntimeError(f"measure {kind} batch {batch} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """``python -m labs.retrieval.scaling measure ...``: one benchmark configuration in this process, printed as JSON."""
    p = argparse.ArgumentParser(prog="python -m labs.retrieval.scaling", description=main.__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="time and peak memory of one training step (prints JSON)")
    m.add_argument("--loss", default="mnrl", choices=LOSSES, help="plain or cached (GradCache) MNRL")
    m.add_argument("--batch", type=int, default=16, help="pairs per step")
    m.add_argument("--mini-batch-size", type=int, default=16, help="chunk size of the cached loss")
    m.add_argument("--steps", type=int, default=2, help="measured steps (the fastest is reported)")
    m.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    a = p.parse_args(argv)
    print(json.dumps(measure_step(a.loss, a.batch, mini_batch_size=a.mini_batch_size, steps=a.steps,
                                  threads=a.threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
