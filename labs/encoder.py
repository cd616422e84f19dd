"""The encoder: load it with float32 weights, check it, give it a loss and an optimizer, save it.

In plain words: every training path of the course starts here. `load_encoder`
turns a name ("minilm", the Qwen3 hub id, a folder) into a sentence-transformers
model whose weights are float32 whatever the checkpoint stores (the optimizer
must update float32 master weights; autocast does the low-precision compute),
checks that a folder really holds weights, that ``max_length`` fits the model's
position table and that the attention kernel exists here. `make_loss` is the
library's MultipleNegativesRankingLoss (or its cached GradCache form), `adamw`
builds AdamW with the trainer's own weight-decay rule (biases and norms spared),
`train_step` is one update by hand (the lesson of what the trainer does each
step), `save_model` writes a folder that carries its query instruction.

Relations: `labs.finetune` trains with these; `labs.scaling` and
`labs.distributed` measure and spread the same loss. Lesson:
``notebooks/05_finetuning.ipynb``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from labs import plumbing
from labs.gpu import assert_float32_master, autocast_dtype
from labs.index import format_query, model_pooling
from labs.qwen3 import ATTENTION, QWEN3_ID, QWEN3_REVISION, build_qwen3, check_attention, check_pooling_contract

__all__ = [
    "DEFAULT_TASK",
    "LOSSES",
    "check_device",
    "load_encoder",
    "default_instruction",
    "make_loss",
    "adamw",
    "train_step",
    "train_step_features",
    "save_model",
]

DEFAULT_TASK = "Given a support question, retrieve the help article that answers it for the correct product."
LOSSES = ("mnrl", "cached")


def check_device(device: str) -> str:
    """``device`` if it is "cpu", or "cuda" with a GPU that torch can see; else ValueError."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no CUDA GPU here (a CPU build or no driver); use cpu")
    return device


def _check_model_folder(folder: Path) -> None:
    """A model folder must hold weights next to its config (a copied config alone is refused)."""
    weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
               "pytorch_model.bin.index.json")
    places = [folder]
    if (folder / "modules.json").is_file():
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        places = [folder / m.get("path", "") for m in modules if m.get("type", "").endswith("Transformer")]
    for place in places:
        if not any((place / w).is_file() for w in weights):
            raise ValueError(f"model folder {str(place)!r} has no weights ({' or '.join(weights[::2])}): "
                             "copy the whole model folder")


def load_encoder(model: str, device: str = "cpu", max_length: int = 128, attn: str = "sdpa"):
    """Return (SentenceTransformer with float32 weights, source description, revision) for ``model``.

    ``"minilm"``: the packaged all-MiniLM-L6-v2 (via `labs.pooling.load_minilm`). The Qwen3 id:
    `labs.qwen3.build_qwen3` at the pinned revision. A folder: a saved sentence-transformers
    model (has ``modules.json``), or a raw Qwen3 checkpoint assembled like the real one.
    Whatever dtype the checkpoint stores, the weights come back float32 (training needs
    float32 master weights; autocast does the low-precision compute). ``max_length`` must
    fit the model's position table.
    """
    from sentence_transformers import SentenceTransformer

    check_device(device)
    plumbing.check_int("max_length", max_length, 8)
    check_attention(attn)
    if not plumbing.show_progress():  # TQDM_DISABLE (CI, nbval): no "Loading weights" bar either
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    if model == "minilm":
        from labs.pooling import load_minilm

        st, source, revision = load_minilm(device), "sentence-transformers/all-MiniLM-L6-v2 (packaged)", None
    elif model == QWEN3_ID:
        st = build_qwen3(QWEN3_ID, device=device, max_length=max_length, dtype=torch.float32, attn=attn)
        source, revision = QWEN3_ID, QWEN3_REVISION
    elif Path(model).is_dir():
        folder, source, revision = Path(model), str(Path(model).resolve()), None
        if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
            raise ValueError(f"model folder {model!r} has neither modules.json nor config.json")
        _check_model_folder(folder)
        try:
            if (folder / "modules.json").is_file():
                st = SentenceTransformer(str(folder), device=device, trust_remote_code=False,
                                         local_files_only=True, model_kwargs={"dtype": torch.float32})
                if model_pooling(st)[0] == "lasttoken":  # a saved Qwen3 run: the same contract as at build
                    check_pooling_contract(st)
            else:
                st = build_qwen3(folder, device=device, max_length=max_length, dtype=torch.float32, attn=attn)
        except ValueError:
            raise
        except Exception as err:  # a damaged or foreign folder: bad input, said in one line
            text = " ".join(str(err).split())[:300]
            raise ValueError(f"model folder {model!r} cannot be loaded: {type(err).__name__}: {text}") from err
    else:
        raise ValueError(f"model must be 'minilm', {QWEN3_ID!r} or an existing folder, got {model!r}")
    auto = getattr(st[0], "auto_model", None)
    limit = getattr(getattr(auto, "config", None), "max_position_embeddings", None)
    if limit is not None and max_length > limit:
        raise ValueError(f"--max-length {max_length} is above the model's limit of {limit} positions "
                         f"(allowed: 8 to {limit})")
    if auto is not None and auto.config._attn_implementation != attn:
        auto.set_attn_implementation(attn)
    st.float()  # float32 master weights, whatever the checkpoint stores
    st.max_seq_length = max_length
    return st, source, revision


def default_instruction(model) -> str:
    """The instruction a model expects: a saved ``Instruct: ...\\nQuery:`` prompt, DEFAULT_TASK for Qwen3, else ''."""
    prompt = (getattr(model, "prompts", None) or {}).get("query") or ""
    if prompt.startswith("Instruct: ") and prompt.endswith("\nQuery:"):
        return prompt[len("Instruct: "):-len("\nQuery:")]
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    return DEFAULT_TASK if getattr(config, "model_type", "") == "qwen3" else ""


def make_loss(model, kind: str = "mnrl", *, scale: float = 20.0, mini_batch_size: int = 16, gather: bool = False):
    """sentence-transformers' MNRL (``"mnrl"``) or its GradCache version (``"cached"``, chunks of
    ``mini_batch_size``); ``gather`` sets ``gather_across_devices`` (negatives from every process)."""
    from sentence_transformers.sentence_transformer.losses import (CachedMultipleNegativesRankingLoss,
                                                                   MultipleNegativesRankingLoss)

    if kind not in LOSSES:
        raise ValueError(f"kind must be one of {LOSSES}, got {kind!r}")
    plumbing.check_int("mini_batch_size", mini_batch_size, 1)
    plumbing.check_positive("scale", scale)
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


def save_model(model, folder: str | Path, instruction: str) -> None:
    """Save a sentence-transformers folder (float32) carrying its query instruction as the "query" prompt;
    written to a sibling first and renamed, so ``folder`` is never half-written. The live model's own
    prompts are left as they were (a prompt on it would be added again by ``encode_query``)."""
    import shutil

    folder = Path(folder)
    before = dict(model.prompts or {})
    model.prompts = {"query": format_query("", instruction), "document": ""} if instruction else {}
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save(str(tmp), create_model_card=False)
    finally:
        model.prompts = before
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
