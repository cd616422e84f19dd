"""Choosing the checkpoint on validation, as the lessons teach: score before training and after
every epoch, keep the best, never look at test.

`validation_evaluator` is sentence-transformers' ``InformationRetrievalEvaluator`` with the
course's metrics (Recall, MRR, nDCG at 1, 5, 10); `best_on_validation` is the trainer callback
that asks for it at each epoch's end and keeps the weights with the best MRR@5 (the untouched
model can win). The history it keeps is the run's learning curve.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from labs.retrieval import progress
from labs.retrieval.models import save_model
from labs.retrieval.progress import show_progress

__all__ = ["METRICS", "validation_evaluator", "best_on_validation"]

METRICS = tuple(f"{m}@{k}" for k in (1, 5, 10) for m in ("recall", "mrr", "ndcg"))


def validation_evaluator(queries: dict[str, str], corpus: dict[str, str], qrels: dict[str, set[str]],
                         batch_size: int):
    """sentence-transformers' InformationRetrievalEvaluator: the course's metrics at 1, 5, 10.

    ``queries``: query id -> text as encoded (instruction included); ``corpus``: doc id -> text;
    ``qrels``: query id -> relevant doc ids."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    return InformationRetrievalEvaluator(
        queries, corpus, qrels, mrr_at_k=[1, 5, 10],
        ndcg_at_k=[1, 5, 10], accuracy_at_k=[1], precision_recall_at_k=[1, 5, 10], map_at_k=[10],
        batch_size=batch_size, name="val", write_csv=False, score_functions={"cosine": cos_sim},
        main_score_function="cosine", show_progress_bar=show_progress())


def best_on_validation(model, best_dir: Path | None, prompt: str, ends: list[int]):
    """A trainer callback: evaluate at each epoch's end (the steps in ``ends``); when validation
    MRR@5 beats every score so far (the untouched model's, epoch 0, included), keep the weights
    (``best_state``) and save them to ``best_dir`` with the query ``prompt``. It holds the
    history, and stops the run at the first loss that is not finite."""
    from transformers import TrainerCallback

    class SelectBest(TrainerCallback):
        def __init__(self) -> None:
            self.history: list[dict] = []
            self.best_epoch = 0
            self.best_state: dict[str, torch.Tensor] = {}

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step in ends or state.global_step == state.max_steps:
                control.should_evaluate = True

        def on_log(self, args, state, control, logs=None, **kwargs):
            loss = (logs or {}).get("loss")
            if loss is not None and not np.isfinite(loss):
                raise FloatingPointError(f"the training loss is {loss} at step {state.global_step}: lower --lr "
                                         "or --scale, or check the data; nothing was written")

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            step, last = state.global_step, (self.history[-1]["steps"] if self.history else 0)
            losses = [r["loss"] for r in state.log_history if "loss" in r and last < r.get("step", 0) <= step]
            epoch = next((e for e, end in enumerate(ends, start=1) if step <= end), len(ends)) if step else 0
            row = {"epoch": epoch, "steps": step, "train_loss": float(np.mean(losses)) if losses else None,
                   **{m: float(metrics[f"eval_val_cosine_{m}"]) for m in METRICS}}
            better = not self.history or row["mrr@5"] > max(h["mrr@5"] for h in self.history)
            self.history.append(row)
            if better:
                self.best_epoch = epoch
                self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
                if best_dir is not None:
                    save_model(model, best_dir, prompt)
            progress.stage(f"scored epoch {epoch}")

    return SelectBest()
