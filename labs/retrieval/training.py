"""Fine-tuning an embedding model on query/document pairs, chosen on validation, saved as a run folder.

In plain words: each step takes a batch of B training questions and their B articles
(`labs.retrieval.batches`), embeds them, and asks every question to pick its own article out
of the B in the batch (sentence-transformers' ``MultipleNegativesRankingLoss``, scale 20 =
temperature 0.05; the same loss as `labs.lessons.infonce.info_nce_torch`). Optionally each row
also brings a mined hard negative.

`train` is the one training path (the CLI's ``train``, the notebook, and ``torchrun`` for
several processes): the planned batches, fed in order to sentence-transformers'
``SentenceTransformerTrainer``; AdamW (weight decay 0.01, biases and norms spared), gradient
norm clipped at 1, no scheduler. The library's ``InformationRetrievalEvaluator`` scores
validation MRR@5 before training (epoch 0) and after every epoch; ``best/`` is saved only
when a score beats the best so far, so the untouched model can win. Test queries are never
read (`labs.retrieval.selection`). A loss that is not finite stops the run at once. The loss
and the by-hand step are in `labs.retrieval.loss`.

`labs.retrieval.config.TrainConfig` holds a run's settings and checks every one of them when it
is made, naming the flag; everything it hands on is trusted after that.

Precision: the weights the optimizer updates are float32 whatever the checkpoint stores
(`labs.retrieval.models.load_encoder` loads them so; the by-hand step's `labs.retrieval.loss.adamw`
asserts it with `labs.retrieval.device.assert_float32_master`); autocast computes in
bf16 on GPUs that support it natively, in fp16 with a gradient scaler on older GPUs, and not
at all on the CPU (`labs.retrieval.device.training_precision`). ``best/`` is saved in float32.

Shapes (the batches themselves: `labs.retrieval.batches`)
------
=============  ================  ============================================
embeddings     (B, d) per column d = 384 (MiniLM) or 1024 (Qwen3-0.6B)
similarities   (B, B) or (B, 2B) the loss's table; row i's answer is column i
=============  ================  ============================================

Several processes: ``book/scaling.md``.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict

import torch

from labs.retrieval import progress
from labs.retrieval.batches import PlannedSteps, plan_batches
from labs.retrieval.config import TrainConfig
from labs.retrieval.contract import CONTRACT, seal_run
from labs.retrieval.data import load_dataset
from labs.retrieval.device import (memory_report, reset_peak, set_determinism, training_precision,
                                   versions)
from labs.retrieval.files import build_atomically, temporary_folder, write_json
from labs.retrieval.index import rank_queries, write_index
from labs.retrieval.instruction import format_query, instruction_of, query_prompt
from labs.retrieval.loss import make_loss
from labs.retrieval.models import load_encoder
from labs.retrieval.progress import show_progress
from labs.retrieval.selection import best_on_validation, validation_evaluator

__all__ = ["MAX_PLANNED_PAIRS", "train"]

#: The most training pairs `labs.retrieval.batches.plan_batches` lays out ahead of a run (the plan
#: holds every step's rows in memory): ``--epochs`` or ``--max-steps`` beyond it are refused at once.
MAX_PLANNED_PAIRS = 5_000_000


def _check_plan_size(data, config: TrainConfig, world: int) -> None:
    """Refuse, before anything is planned or loaded, a run whose plan of steps would not fit
    (`MAX_PLANNED_PAIRS`) or that can plan no step at all; one line naming the flags."""
    distinct = len({p["positive"] for p in data.train_pairs})
    size = config.batch_size * world
    per_epoch = distinct // size if world > 1 else distinct // size + (distinct % size > 1)
    if config.epochs and not per_epoch:
        raise ValueError(f"no full global batch: {world} processes x --batch-size {config.batch_size} needs that "
                         "many distinct positives; lower --batch-size")
    steps = config.epochs * per_epoch if config.max_steps is None else min(config.epochs * per_epoch,
                                                                             config.max_steps)
    if steps * size > MAX_PLANNED_PAIRS:
        most = max(MAX_PLANNED_PAIRS // (per_epoch * size), 1)
        bound = "" if config.max_steps is None else f" and --max-steps {config.max_steps}"
        raise ValueError(f"--epochs {config.epochs}{bound} plan {steps:,} steps of {size} pairs ({distinct} distinct "
                         f"positives per epoch); at most {MAX_PLANNED_PAIRS:,} pairs are planned ahead: give "
                         f"--epochs {most} or fewer, or --max-steps {MAX_PLANNED_PAIRS // size} or fewer")

def train(config: TrainConfig) -> dict | None:
    """Train, select on validation MRR@5 (epoch 0 included), index the corpus; return metrics.json's content.

    The run folder is built next to ``config.out`` and moved into place only when the model,
    index, metrics and contract are all written; a second run on the same folder at the same
    time is refused at once. Under ``torchrun`` or ``accelerate launch`` (several processes)
    this is PyTorch DDP with negatives gathered from every process; process 0 writes the run
    and returns the report, the others return None.
    """
    import contextlib

    from datasets import Dataset
    from sentence_transformers.sentence_transformer import (SentenceTransformerTrainer,
                                                            SentenceTransformerTrainingArguments)
    from transformers.trainer_callback import PrinterCallback

    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    cuda = config.device.startswith("cuda")
    deterministic = torch.are_deterministic_algorithms_enabled()
    writing = build_atomically(config.out, "--out", last=CONTRACT) if rank == 0 else contextlib.nullcontext()
    try:
        # The lock first: a second run on the same --out is refused at once. The trainer's output_dir
        # (nothing is kept there) lives inside the folder being built, so even a killed run leaves it
        # only there, for the next builder to remove; other processes use the system's temporary folder.
        with writing as folder, temporary_folder("labs-trainer-", folder) as scratch:
            data = load_dataset(config.data)
            _check_plan_size(data, config, world)  # before the model loads: an endless plan is refused at once
            set_determinism(config.seed)
            precision = config.precision or training_precision(config.device)
            reset_peak()
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            model, source, revision = load_encoder(config.model, config.device, config.max_length, config.attn)
            plan = plan_batches(data, epochs=config.epochs, batch_size=config.batch_size, seed=config.seed,
                                hard_negatives=config.hard_negatives, max_steps=config.max_steps, world=world)
            steps = PlannedSteps(plan.steps, config.batch_size)
            # The instruction, added once to every query the model will see: training anchors, validation.
            instruction = instruction_of(model) if config.instruction is None else config.instruction
            prompt = query_prompt(instruction)
            room = config.max_length - len(model.tokenizer(prompt, verbose=False)["input_ids"])  # no "too long" warning
            if room < 8:
                taken = (f"--instruction takes {config.max_length - room} of the --max-length {config.max_length} "
                         "tokens" if instruction else f"the model's own special tokens take {config.max_length - room} "
                         f"of the --max-length {config.max_length} tokens")
                raise ValueError(f"{taken}, leaving {max(room, 0)} for the question (8 at least): "
                                 f"{'shorten it or ' if instruction else ''}raise --max-length")
            plan.columns["anchor"] = [format_query(q, instruction) for q in plan.columns["anchor"]]
            val = {q["query_id"]: format_query(q["text"], instruction) for q in data.split_queries("val")}
            model.prompts = {}  # the instruction is in the text already; never again as a saved prompt
            if config.gradient_checkpointing and hasattr(model[0], "auto_model"):
                auto = model[0].auto_model  # transformers 5 renamed the switch; 4.x has only the old name
                enable = getattr(auto, "activation_checkpointing_enable", None)
                if enable is not None:
                    enable(activation_checkpointing_kwargs={"use_reentrant": False})
                else:
                    auto.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            progress.stage("loaded")
            args = SentenceTransformerTrainingArguments(
                output_dir=scratch, per_device_train_batch_size=config.batch_size, num_train_epochs=1,
                max_steps=len(steps) // world or -1, learning_rate=config.lr, weight_decay=config.weight_decay,
                max_grad_norm=1.0, lr_scheduler_type="constant", warmup_steps=0,
                optim="adamw_torch_fused" if cuda else "adamw_torch", seed=config.seed,
                batch_sampler=lambda dataset, **_: steps, report_to="none", save_strategy="no", eval_strategy="no",
                logging_steps=1, logging_nan_inf_filter=False,  # a NaN loss is logged as NaN, and stops the run
                disable_tqdm=not show_progress(), use_cpu=not cuda, bf16=precision == "bf16", fp16=precision == "fp16",
                ddp_backend="gloo" if not cuda and world > 1 else None)
            corpus = {d["doc_id"]: d["text"] for d in data.corpus}
            qrels = data.qrels("val")
            selector = best_on_validation(model, folder / "best" if folder else None, prompt, plan.epoch_ends)
            evaluator = validation_evaluator(val, corpus, qrels, config.eval_batch_size)
            loss = make_loss(model, config.loss, scale=config.scale, mini_batch_size=config.mini_batch_size,
                             gather=world > 1)
            # Runs are saved without a model card: skip the card's widget examples (a notebook progress bar).
            model.model_card_data.widget = [{"text": "no model card is written"}]
            trainer = SentenceTransformerTrainer(
                model=model, args=args, train_dataset=Dataset.from_dict(plan.columns) if len(steps) else None,
                evaluator=evaluator, callbacks=[selector], loss=loss)
            if not show_progress():  # quiet under CI: no per-step log lines
                trainer.remove_callback(PrinterCallback)
            trainer.evaluate()  # epoch 0: the untouched model
            start = time.perf_counter()
            if len(steps):
                trainer.train()
            seconds = time.perf_counter() - start
            losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
            progress.stage("trained")
            if folder is None:
                return None
            parameters = sum(p.numel() for p in model.parameters())
            weights_dtype = "+".join(sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters()}))
            model.load_state_dict(selector.best_state)  # the selected weights, exactly as saved in best/
            index = write_index(folder, model, instruction=instruction, max_length=config.max_length,
                                source=source, revision=revision, corpus=data.corpus,
                                batch_size=config.eval_batch_size, corpus_sha256=data.sha256["corpus.jsonl"],
                                chunk=config.chunk, stride=config.stride)
            progress.stage("indexed")
            selected, rankings = rank_queries(model, val, qrels, index.embeddings, index.ids, config.eval_batch_size)
            report = {
                "config": asdict(config), "entry": "labs.retrieval.training.train (SentenceTransformerTrainer)",
                "source_model": source, "revision": revision, "instruction": instruction,
                "parameters": parameters, "dimensions": index.contract["dimensions"],
                "hard_negatives": bool(config.hard_negatives), "loss": config.loss, "precision": precision,
                "weights_dtype": weights_dtype, "gradient_checkpointing": config.gradient_checkpointing,
                "attn": config.attn, "processes": world, "global_batch": plan.global_batch,
                "gather_across_devices": world > 1, "steps": len(losses), "train_seconds": round(seconds, 2),
                "losses": losses, "history": selector.history, "selected_epoch": selector.best_epoch,
                "selected_validation": selected, "data_sha256": dict(data.sha256),
                "truncation": index.truncation,
                "memory": memory_report(config.device), "versions": versions(),
            }
            run_files = {"validation_rankings.json": write_json(folder / "validation_rankings.json", rankings),
                         "metrics.json": write_json(folder / "metrics.json", report)}
            progress.stage("written")
            seal_run(folder, index.contract, data.sha256, run_files)  # last: the contract says complete only now
            progress.stage("sealed")
        return report
    finally:
        torch.use_deterministic_algorithms(deterministic)
