"""The settings of one training run, `TrainConfig`: each flag of ``python -m labs train`` written once.

Each field holds its default, and in its metadata its help text and its choices (as
Hugging Face's ``HfArgumentParser`` reads a dataclass); `labs.retrieval.cli` builds the
``train`` parser from the fields, so no default, help or choice is written twice. A field
whose metadata has ``"none": WORD`` is None in Python and WORD on the command line
(``--precision auto``); one with ``"flag": False`` has no flag.

`TrainConfig` checks every setting when it is made, naming the flag: a bad one is a
ValueError before any data or model is read, and everything it hands on is trusted after
that (`labs.retrieval.training.train`). The checks that must ask torch (a CUDA device, an
attention kernel's package) come last, so a wrong number is refused before torch loads.

This module imports no torch: ``python -m labs --help`` and every refused flag stay quick.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from pathlib import Path

from labs import checks
from labs.retrieval import machine
from labs.retrieval.instruction import QUERY_TEMPLATE, has_instruction
from labs.retrieval.qwen3 import QWEN3_ID

__all__ = ["LOSSES", "PRECISIONS", "MAX_SCALE", "MAX_LR", "TrainConfig", "flag_of"]

#: The losses `labs.retrieval.loss.make_loss` builds: MultipleNegativesRankingLoss, or its
#: GradCache form computed in chunks.
LOSSES = ("mnrl", "cached")
#: Autocast precisions (`labs.retrieval.device.training_precision` picks one for a device).
PRECISIONS = ("bf16", "fp16", "fp32")
MAX_SCALE = 1000.0  # 1 / temperature: tau = 0.001 already turns a cosine gap of 0.01 into 10 nats
MAX_LR = 1.0


def flag_of(name: str) -> str:
    """The command-line flag of a field: ``batch_size`` -> ``--batch-size``."""
    return "--" + name.replace("_", "-")


def _setting(default=MISSING, help: str = "", **metadata):
    return field(default=default, metadata={"help": help, **metadata})


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run (the flags of ``python -m labs train``), each checked when the
    config is made: a bad one is a ValueError naming its flag, before any data or model is read."""

    data: str = _setting(help="data folder (see make-data)")
    out: str = _setting(help="new run folder; refused if it already has files")
    model: str = _setting("minilm", f"'minilm' (packaged all-MiniLM-L6-v2), '{QWEN3_ID}' (needs the hub), or a "
                          "local folder (a saved sentence-transformers model or a raw Qwen3 checkpoint)")
    device: str = _setting("cpu", "where to train and encode: cpu, cuda or cuda:N")
    epochs: int = _setting(3, "passes over the distinct positives; 0 only indexes the untouched model")
    batch_size: int = _setting(16, "pairs per step and process (>= 2); each query's negatives are the other "
                               "documents of its batch")
    lr: float = _setting(2e-5, "AdamW learning rate (no scheduler)")
    scale: float = _setting(20.0, "similarity scale = 1 / temperature")
    max_length: int = _setting(128, "tokens per text, instruction included (at most the model's position limit)")
    seed: int = _setting(0, "seed for sampling batches and torch")
    hard_negatives: bool = _setting(False, "add one TF-IDF-mined hard negative per pair (training queries and "
                                    "documents only, verified not relevant)")
    instruction: str | None = _setting(None, "task text for 'Instruct: {task}\\nQuery:{query}'; default: the "
                                       "model's own (Qwen3: a help-desk task; MiniLM: none). Pass '' for none")
    max_steps: int | None = _setting(None, "stop after this many updates (>= 1; smoke runs, e.g. 2 before a long "
                                     "GPU run)")
    eval_batch_size: int = _setting(32, "texts per encoding batch")
    loss: str = _setting("mnrl", "'cached': GradCache, the same loss in chunks of --mini-batch-size (big "
                         "batches, little memory)", choices=LOSSES)
    mini_batch_size: int = _setting(16, "chunk size of --loss cached")
    precision: str | None = _setting(None, "autocast on CUDA; auto: bf16 where the GPU runs it natively, else fp16 "
                                     "with a gradient scaler; fp32 on the CPU. Weights stay float32 in every case",
                                     choices=PRECISIONS, none="auto")
    gradient_checkpointing: bool = _setting(False, "recompute activations in the backward pass: less memory, "
                                            "about a third more time")
    attn: str = _setting("sdpa", "attention kernel; flash_attention_2 needs the flash-attn package and a CUDA GPU",
                         choices=machine.ATTENTION)
    chunk: int | None = _setting(None, "also index each document as overlapping windows of this many tokens (at "
                                 "most --max-length - 2); search and evaluate score a document by its best window")
    stride: int | None = _setting(None, "with --chunk: a new window every this many tokens (1 to --chunk; half of "
                                  "--chunk makes each window overlap the next by half)")
    weight_decay: float = _setting(0.01, "AdamW weight decay (biases and norms spared)", flag=False)

    def __post_init__(self) -> None:
        for name in ("data", "out", "model"):
            value = getattr(self, name)
            if not isinstance(value, (str, Path)):
                raise ValueError(f"{flag_of(name)} must be a path or a name, got {value!r}")
            if value == "":  # Path("") would be the working folder
                raise ValueError(f"{flag_of(name)} is empty")
            checks.text(str(value), flag_of(name))  # recorded in metrics.json: real text
        machine.new_path(self.out, "--out")
        if self.model not in ("minilm", QWEN3_ID) and not Path(self.model).is_dir():
            raise ValueError(f"--model must be 'minilm', {QWEN3_ID!r} or an existing folder, got {self.model!r}")
        for name, low, high in (("epochs", 0, None), ("batch_size", 2, None), ("max_length", 8, None),
                                ("seed", 0, 2**32 - 1), ("eval_batch_size", 1, None), ("mini_batch_size", 1, None)):
            checks.integer(getattr(self, name), flag_of(name), low, high)
        if self.max_steps is not None:
            checks.integer(self.max_steps, "--max-steps", 1)
        if (self.chunk is None) != (self.stride is None):
            raise ValueError("--chunk and --stride go together: give both (e.g. --chunk 96 --stride 48) or neither")
        if self.chunk is not None:
            checks.integer(self.chunk, "--chunk", 8, self.max_length - 2)
            checks.integer(self.stride, "--stride", 1, self.chunk)
        checks.positive(self.lr, "--lr", maximum=MAX_LR)
        checks.positive(self.scale, "--scale", maximum=MAX_SCALE)
        if self.weight_decay != 0:
            checks.positive(self.weight_decay, "weight_decay", maximum=1.0)
        checks.choice(self.loss, "--loss", LOSSES)
        if self.precision is not None:
            checks.choice(self.precision, "--precision", PRECISIONS)
            if self.precision != "fp32" and self.device == "cpu":
                raise ValueError(f"--precision {self.precision} needs --device cuda; the CPU trains in fp32")
        if self.instruction is not None:
            checks.text(self.instruction, "--instruction")
            if has_instruction(self.instruction) or "\nQuery:" in self.instruction:
                raise ValueError(f"--instruction is the task alone, got {self.instruction!r}: the template "
                                 f"{QUERY_TEMPLATE!r} is put around it once, here")
        for name in ("hard_negatives", "gradient_checkpointing"):
            checks.flag(getattr(self, name), flag_of(name))
        # Last: these ask torch (is there a CUDA GPU?) or transformers (is flash-attn installed?).
        machine.device(self.device, "--device")
        machine.attention(self.attn, "--attn")
