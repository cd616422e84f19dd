"""labs.retrieval.qwen3 at load: the pooling contract (end token, left padding), float32 weights from a bf16 checkpoint."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from labs.retrieval import qwen3
from labs.retrieval.device import assert_float32_master
from labs.retrieval.machine import attention
from labs.retrieval.qwen3 import (
    assert_pooling_contract, build_qwen3, build_random_qwen3, EOS,
    write_tiny_qwen3,
)


@pytest.fixture(scope="module")
def tiny_bf16(tmp_path_factory):
    return write_tiny_qwen3(tmp_path_factory.mktemp("qwen") / "bf16", seed=0, dtype=torch.bfloat16)


@pytest.fixture
def tok(tiny_bf16):
    """A fresh copy of the saved Qwen tokenizer (loading tokenizer.json is faster than converting the ranks)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_bf16))


def _stored_dtypes(folder) -> set[str]:
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        return {str(f.get_slice(k).get_dtype()) for k in f.keys()}


def test_a_bf16_checkpoint_loads_with_float32_weights(tiny_bf16):
    assert _stored_dtypes(tiny_bf16) == {"BF16"}  # stored like the published checkpoint
    model = build_qwen3(tiny_bf16)
    assert_float32_master(model)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    low = build_qwen3(tiny_bf16, dtype=torch.bfloat16)  # inference in bf16 is still possible, and caught for training
    with pytest.raises(TypeError, match="is torch.bfloat16, not torch.float32"):
        assert_float32_master(low)


def test_the_qwen_tokenizer_keeps_the_contract(tok):
    assert_pooling_contract(tok)


def test_a_tokenizer_without_the_end_token_is_refused_at_load(tiny_bf16, tmp_path):
    import shutil

    folder = tmp_path / "no_eos"
    shutil.copytree(tiny_bf16, folder)
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                              "use_regex": False}  # what earlier Qwen3-Embedding tokenizer revisions did
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=r"does not end a short text with the end token <\|endoftext\|> \(id 151643\)"):
        build_qwen3(folder)


def test_a_different_end_token_is_refused(tok):
    from tokenizers import processors

    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="$A <|im_end|>", special_tokens=[("<|im_end|>", im_end)])
    with pytest.raises(ValueError, match=r"ends with '<\|im_end\|>'"):
        assert_pooling_contract(tok)


def test_right_padding_is_refused(tok):
    tok.padding_side = "right"
    with pytest.raises(ValueError, match="needs left padding, but the tokenizer pads on the right"):
        assert_pooling_contract(tok)


def test_truncation_keeps_the_end_token(tiny_bf16):
    model = build_qwen3(tiny_bf16, max_length=16)
    features = model.preprocess(["word " * 100, "short"])
    assert features["input_ids"].shape[1] == 16
    assert features["input_ids"][:, -1].tolist() == [model.tokenizer.convert_tokens_to_ids(EOS)] * 2


def test_a_model_that_does_not_pool_the_last_token_is_refused():
    from labs.retrieval.models import load_minilm

    with pytest.raises(ValueError, match="last-token pooling"):
        assert_pooling_contract(load_minilm("cpu"))


def test_attention_kernels_are_checked():
    assert attention("sdpa", "--attn") == "sdpa"
    with pytest.raises(ValueError, match="--attn must be one of"):
        attention("flash", "--attn")
    from transformers.utils import is_flash_attn_2_available

    if not is_flash_attn_2_available():
        with pytest.raises(ValueError, match="flash-attn"):
            attention("flash_attention_2", "--attn")


def test_build_random_qwen3_is_assembled_like_build_qwen3(tiny_bf16, tiny_qwen, monkeypatch):
    model = build_random_qwen3("tiny", device="cpu", max_length=16, seed=1)
    reference = build_qwen3(tiny_bf16, max_length=16)
    assert [type(m).__name__ for m in model] == [type(m).__name__ for m in reference]
    assert model[1].get_config_dict() == reference[1].get_config_dict()
    auto = model[0].auto_model
    assert auto.config._attn_implementation == "sdpa" and auto.config.num_hidden_layers == 2
    assert_float32_master(model)
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    # The second build only shows the weights are seeded: its tokenizer twin is the session's copy of the
    # same write_tiny_qwen3("tiny", seed=0) folder (building the Qwen tokenizer again costs seconds).
    monkeypatch.setattr(qwen3, "write_tiny_qwen3", lambda folder: Path(shutil.copytree(tiny_qwen, folder)))
    again = build_random_qwen3("tiny", device="cpu", max_length=16, seed=1)
    assert torch.equal(auto.embed_tokens.weight, again[0].auto_model.embed_tokens.weight)  # seeded
    assert not torch.equal(auto.embed_tokens.weight, reference[0].auto_model.embed_tokens.weight.float())
    emb = model.encode(["a question", "a much longer question about passwords"], convert_to_tensor=True)
    assert emb.shape == (2, 64) and torch.allclose(emb.norm(dim=1), torch.ones(2), atol=1e-5)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_training_memory_counts_what_autograd_saves(precision):
    """The activation formula against the tensors autograd actually keeps (distinct h, q, kv, f; left padding)."""
    from transformers import AutoModel, Qwen3Config

    from labs.retrieval.qwen3 import count_parameters, training_memory

    config = Qwen3Config(vocab_size=1000, hidden_size=48, intermediate_size=160, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=24, num_hidden_layers=3, use_cache=False)
    torch.manual_seed(0)
    model = AutoModel.from_config(config, attn_implementation="sdpa", dtype=torch.float32)
    ids = torch.randint(0, 1000, (4, 48))
    mask = torch.ones(4, 48, dtype=torch.long)
    mask[0, :10] = mask[1, :30] = 0
    params, kept = {p.data_ptr() for p in model.parameters()}, {}

    def pack(t):
        if t.data_ptr() not in params:
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        model(input_ids=ids, attention_mask=mask)
    est = training_memory(config, count_parameters(model), 4 * 48, precision=precision)
    assert sum(kept.values()) == pytest.approx(est["activations"] + est["autocast_copies"], rel=0.05)


def test_training_memory_of_the_full_size_model():
    from labs.retrieval.qwen3 import qwen3_config, training_memory

    n = 595_776_512
    fp32 = training_memory(qwen3_config("0.6b"), n, 128)
    assert fp32["weights"] + fp32["gradients"] + fp32["adam_moments"] == 16 * n  # the lesson's 8.88 GiB
    assert round(16 * n / 2**30, 2) == 8.88
    assert fp32["activations"] == 28 * 128 * 4 * (6 * 1024 + 7 * 2048 + 2 * 1024 + 4 * 3072)
    bf16 = training_memory(qwen3_config("0.6b"), n, 128, precision="bf16")
    assert bf16["activations"] < fp32["activations"] and bf16["autocast_copies"] == 2 * 440_401_920
    ckpt = training_memory(qwen3_config("0.6b"), n, 128, checkpointing=True)
    assert ckpt["activations"] == 28 * 128 * 4 * 1024 + fp32["activations"] // 28
    with pytest.raises(ValueError, match="precision"):
        training_memory(qwen3_config("0.6b"), n, 128, precision="fp8")
