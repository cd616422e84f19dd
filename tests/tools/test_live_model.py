"""The live demos' build (tools/live_model.py) without a browser: its fine-tuning is lesson 7's, it
refuses a transformers.js whose imports it does not know, and its stamps rebuild only on change."""

from __future__ import annotations

import ast
import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tools import live_model

ROOT = Path(__file__).resolve().parents[2]
LESSON7 = ROOT / "notebooks" / "07_finetuning.ipynb"


def _cpu_value(node: ast.AST, env: dict):
    """A notebook expression's value on a CPU: the else branch of ``A if on_gpu_condition else B``,
    names from earlier assignments (KeyError if none), dict(...) calls and literals."""
    if isinstance(node, ast.IfExp):
        return _cpu_value(node.orelse, env)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_cpu_value(e, env) for e in node.elts)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
        return {k.arg: _cpu_value(k.value, env) for k in node.keywords}
    return ast.literal_eval(node)


def lesson7_training() -> dict:
    """The settings of lesson 7's fine-tuning run (the first TrainConfig whose out is runs/tuned; a later one
    shows that a second run into the same folder is refused), as a CPU runs it."""
    env: dict = {}
    for cell in json.loads(LESSON7.read_text(encoding="utf-8"))["cells"]:
        try:
            tree = ast.parse("".join(cell["source"]) if cell["cell_type"] == "code" else "")
        except SyntaxError:
            continue
        for stmt in (s for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1):
            try:
                value = _cpu_value(stmt.value, env)
            except (KeyError, ValueError, TypeError, SyntaxError):
                continue
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts):
                env.update({t.id: v for t, v in zip(target.elts, value) if isinstance(t, ast.Name)})
        for call in ast.walk(tree):
            keywords = {k.arg: k.value for k in getattr(call, "keywords", ())}
            if (getattr(getattr(call, "func", None), "id", None) == "TrainConfig"
                    and getattr(keywords.get("out"), "value", None) == "runs/tuned"):
                settings = {}
                for k in call.keywords:
                    if k.arg is None:
                        settings.update(_cpu_value(k.value, env))
                    elif k.arg not in ("data", "out"):
                        settings[k.arg] = _cpu_value(k.value, env)
                return settings
    raise AssertionError(f"{LESSON7}: no TrainConfig(..., out=\"runs/tuned\", ...) cell found")


def test_the_fine_tuned_model_is_lesson_7s():
    """tools/live_model.py fine-tunes with the settings lesson 7 trains with on a CPU (its untouched
    defaults aside); change LESSON7_SETTINGS when the lesson changes."""
    settings = lesson7_training()
    settings = {k: v for k, v in settings.items() if not (k == "gradient_checkpointing" and v is False)}
    assert settings == live_model.LESSON7_SETTINGS, (
        f"lesson 7 trains with {settings}; tools/live_model.py LESSON7_SETTINGS is {live_model.LESSON7_SETTINGS}")


def test_an_unknown_or_missing_transformers_js_is_refused(tmp_path, monkeypatch):
    """A missing runtime file is named; the vendored transformers.js must hold each bare onnxruntime
    import exactly once, and each is pointed at the bundled wasm build."""
    monkeypatch.setattr(live_model, "NODE_MODULES", tmp_path)
    with pytest.raises(live_model.BuildError, match="transformers.web.min.js is missing: run make vendor"):
        live_model._runtime(tmp_path / "missing")
    for name, rel in live_model.RUNTIME.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('import{Tensor as a}from"onnxruntime-common";import*as b from"onnxruntime-web/webgpu";'
                        if name == "transformers.web.min.js" else "x")
    (tmp_path / "@huggingface" / "transformers" / "package.json").write_text('{"version": "0"}')
    (tmp_path / "onnxruntime-web" / "package.json").write_text('{"version": "0"}')
    live_model._runtime(tmp_path / "live")
    text = (tmp_path / "live" / "runtime" / "transformers.web.min.js").read_text()
    assert text.count('from"./ort.wasm.bundle.min.mjs"') == 2 and "onnxruntime-" not in text
    (tmp_path / live_model.RUNTIME["transformers.web.min.js"]).write_text('import*as b from"onnxruntime-web/webgpu";')
    with pytest.raises(live_model.BuildError, match="expected one import 'from\"onnxruntime-common\"', found 0"):
        live_model._runtime(tmp_path / "other")


def test_a_stamp_rebuilds_only_on_change(tmp_path):
    stamp = {"versions": {"torch": "1"}, "code": "abc"}
    assert not live_model._up_to_date(tmp_path, stamp)  # never built
    (tmp_path / "stamp.json").write_text(json.dumps(stamp))
    assert live_model._up_to_date(tmp_path, stamp)
    assert not live_model._up_to_date(tmp_path, dict(stamp, code="abd"))
    (tmp_path / "stamp.json").write_text("{not json")
    assert not live_model._up_to_date(tmp_path, stamp)


def test_maths_becomes_a_classic_script():
    """live/maths.js is maths.mjs's functions as a classic script, and anything but `export function` is refused."""
    module = (live_model.PAGE_SOURCES / "maths.mjs").read_text(encoding="utf-8")
    classic = live_model.classic_maths(module)
    assert "export " not in classic and classic.startswith("/*")
    names = [line.split("(")[0].split()[-1] for line in module.splitlines() if line.startswith("export function ")]
    assert names and "window.labsLiveMaths = {" + ", ".join(f"{n}: {n}" for n in names) + "}" in classic
    with pytest.raises(live_model.BuildError, match="maths.mjs: expected only `export function NAME\\(` exports"):
        live_model.classic_maths(module + "\nexport const X = 1;\n")


def test_one_tokenizer_only_when_the_two_agree(tmp_path):
    """Truncation and padding may differ (the page does not read them); anything else is refused, naming the file."""
    one, other = tmp_path / "a.json", tmp_path / "b.json"
    spec = {"model": {"vocab": {"[PAD]": 0, "hello": 1}}, "truncation": {"max_length": 128}, "padding": None}
    one.write_text(json.dumps(spec))
    other.write_text(json.dumps({**spec, "truncation": {"max_length": 256}, "padding": {"strategy": "BatchLongest"}}))
    live_model._same_tokenizer(one, other)
    other.write_text(json.dumps({**spec, "model": {"vocab": {"[PAD]": 0, "hullo": 1}}}))
    with pytest.raises(live_model.BuildError, match=f"{other} tokenizes differently from {one}"):
        live_model._same_tokenizer(one, other)


def test_the_lookalike_vectors_follow_the_experiments_code():
    """The look-alike set's stamp covers every file whose bytes shape the experiment's numbers (its
    CODE_FILES), so an edit there rebuilds the page's vectors; the blocks are the experiment's calls."""
    tree = ast.parse((ROOT / "benchmarks" / "lookalike_experiment.py").read_text(encoding="utf-8"))
    code_files = next(ast.literal_eval(s.value) for s in tree.body if isinstance(s, ast.Assign)
                      and getattr(s.targets[0], "id", None) == "CODE_FILES")
    assert set(code_files) <= set(live_model.LOOKALIKE_CODE)
    stamp = live_model._stamp_lookalike({"versions": {"torch": "1"}, "weights": {"model.safetensors": "x"}})
    assert set(stamp["sources"]) == set(live_model.LOOKALIKE_CODE)
    assert live_model.LOOKALIKE_BLOCKS == ("Q", "P", "L", "Qh", "Ph", "Lh", "D")
    assert "adapter.mjs" in live_model.PAGE_FILES


@pytest.fixture
def work(tmp_path) -> Path:
    """A model's work folder as `_split` finds it: the tokenizer files and a model shaped like the export
    where split_table looks: its token table (random uint8 rows, one scale and zero point) looked up by
    input_ids, dequantized, then masked and shifted by the other two inputs."""
    from onnx import TensorProto, helper, numpy_helper, save

    work = tmp_path / "work"
    work.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):
        shutil.copyfile(live_model._minilm_folder() / name, work / name)
    (work / "checks.json").write_text('{"max_tokens": 256}')
    table = np.random.default_rng(0).integers(0, 256, size=(30522, 4), dtype=np.uint8)
    nodes = [helper.make_node("Gather", [live_model.WORD_TABLE, "input_ids"], ["rows"]),
             helper.make_node("DequantizeLinear", ["rows", "scale", "zero"], ["vectors"]),
             helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["token_type_ids"], ["t"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["m", "axis"], ["m3"]), helper.make_node("Unsqueeze", ["t", "axis"], ["t3"]),
             helper.make_node("Mul", ["vectors", "m3"], ["kept"]), helper.make_node("Add", ["kept", "t3"], ["last_hidden_state"])]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", table.shape[1]])
    inits = [numpy_helper.from_array(table, live_model.WORD_TABLE), numpy_helper.from_array(np.float32(0.01), "scale"),
             numpy_helper.from_array(np.uint8(83), "zero"), numpy_helper.from_array(np.array([2], np.int64), "axis")]
    graph = helper.make_graph(nodes, "tiny", inputs, [out], inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(work / "model_quantized.onnx"))
    return work


def test_the_token_table_is_split_out_without_changing_a_number(work):
    """`_split`: the body takes the table's rows in place of the ids and computes exactly what the whole
    model does, and goes gzipped; the table's files hold its rows, checked by their SHA-256; a file
    changed is named."""
    split = live_model._split(work)
    rows = live_model.load_table(split / "table" / "index.json")
    index = json.loads((split / "table" / "index.json").read_text())
    assert index["rows"] == 30522 and index["dim"] == 4 and len(index["files"]) == -(-30522 // live_model.TABLE_ROWS)
    assert np.array_equal(rows, np.random.default_rng(0).integers(0, 256, size=(30522, 4), dtype=np.uint8))
    whole = live_model.OnnxEncoder(work / "model_quantized.onnx", work, 256)
    body = live_model.RowsEncoder(split / "body_quantized.onnx", work, 256, rows, index["input"])
    texts = ["how do I factory reset my router", "a kettle"]
    assert np.array_equal(whole.grid(texts)[0], body.grid(texts)[0])
    assert gzip.decompress((split / "body_quantized.onnx.gz").read_bytes()) == (split / "body_quantized.onnx").read_bytes()
    changed = split / "table" / "0003.bin"
    changed.write_bytes(b"\0" + changed.read_bytes()[1:])
    with pytest.raises(live_model.BuildError, match="0003.bin is not the file .*index.json lists"):
        live_model.load_table(split / "table" / "index.json")


def test_the_fine_tuned_body_goes_as_what_changed(tmp_path, work):
    """`_delta`: the bytes that, added to the untouched body modulo 256, make the fine-tuned one; none for
    bodies of different lengths (the page gets the whole body). `_split` makes it again when the base changes."""
    rng = np.random.default_rng(0)
    base, body = tmp_path / "base.onnx", tmp_path / "tuned" / "body_quantized.onnx"
    body.parent.mkdir()
    a = rng.integers(0, 256, 6000, dtype=np.uint8)
    b = a.copy()
    b[::5] += 200  # wraps past 255
    base.write_bytes(a.tobytes())
    body.write_bytes(b.tobytes())
    delta = live_model._delta(base, body)
    assert (a + np.frombuffer(gzip.decompress(delta.read_bytes()), dtype=np.uint8)).tobytes() == b.tobytes()
    assert len(delta.read_bytes()) < len(b.tobytes()) / 2  # mostly zeros
    body.write_bytes(b[:-1].tobytes())
    assert live_model._delta(base, body) is None

    split = live_model._split(work)
    whole = (split / "body_quantized.onnx").read_bytes()
    base.write_bytes(bytes(len(whole)))  # a base of zeros: the difference is the body itself
    live_model._split(work, base)
    assert [p.name for p in split.glob("*.gz")] == ["body_quantized.delta.gz"]
    assert gzip.decompress((split / "body_quantized.delta.gz").read_bytes()) == whole
    base.write_bytes(bytes([1]) * len(whole))  # another base: made again
    live_model._split(work, base)
    assert gzip.decompress((split / "body_quantized.delta.gz").read_bytes()) != whole


def test_the_layers_matrices_have_matrix_bits_levels(tmp_path):
    """`quantize`: each MatMulNBits matrix holds 2**MATRIX_BITS - 1 levels a block (bytes 128 +- 63 for 7
    bits), every weight within half a level of its fp32 value, and onnxruntime runs the result as
    the matrix product of those numbers."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    k, n, block = 256, 8, live_model.NBITS_BLOCK
    w = np.random.default_rng(0).normal(size=(k, n)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
                              [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(tmp_path / "fp32.onnx"))
    live_model.quantize(tmp_path / "fp32.onnx", tmp_path / "int.onnx")
    model = onnx.load(str(tmp_path / "int.onnx"))
    node = next(x for x in model.graph.node if x.op_type == "MatMulNBits")
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    b, scale = stored[node.input[1]].astype(np.float64), stored[node.input[2]].reshape(n, k // block, 1)
    most = 2 ** (live_model.MATRIX_BITS - 1) - 1
    assert b.min() >= 128 - most and b.max() <= 128 + most and len(np.unique(b)) > most  # the levels, used
    numbers = ((b - 128) * scale).reshape(n, k).T  # (K, N), as the runtime reads them
    assert np.abs(numbers - w).max() <= scale.max() / 2 * (1 + 1e-6)
    x = np.random.default_rng(1).normal(size=(1, k)).astype(np.float32)
    y = ort.InferenceSession(str(tmp_path / "int.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.allclose(y, x.astype(np.float64) @ numbers, atol=1e-4)


def test_the_served_model_names_no_folder_of_the_build(tmp_path):
    """`drop_provenance`: the exporter's record of each node (a stack trace through this checkout's files)
    leaves the file; the graph computes as before."""
    from onnx import TensorProto, helper, load, save

    node = helper.make_node("Relu", ["x"], ["y"])
    helper.set_metadata_props(node, {"pkg.torch.onnx.stack_trace": f'File "{ROOT}/tools/live_model.py", line 1'})
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    path = tmp_path / "model.onnx"
    save(helper.make_model(helper.make_graph([node], "g", [x], [y])), str(path))
    assert str(ROOT).encode() in path.read_bytes()
    live_model.drop_provenance(path)
    assert str(ROOT).encode() not in path.read_bytes()
    assert [n.op_type for n in load(str(path)).graph.node] == ["Relu"]
