"""One call at the top of every lesson: ``glue = setup()``.

It does what every lesson's first cell needs, the same way everywhere, before any model,
figure or CUDA call:

- quiet outputs: no progress bars (``TQDM_DISABLE``), no "loading weights" bars or warnings
  from transformers and sentence-transformers;
- the Hugging Face hub: off (the course's model ships in a pip package), except on Colab, where
  lesson 7 may download Qwen3-Embedding-0.6B for a GPU run (``offline=True`` or ``False``
  decides it; an ``HF_HUB_OFFLINE`` set before the kernel started always wins);
- one seed for every random source (`labs.retrieval.device.set_determinism`: Python, NumPy,
  torch on the CPU and every GPU), deterministic kernels, and on a GPU the settings that
  determinism and precision need before CUDA starts (a fixed cuBLAS workspace, set even when
  ``deterministic=False``; TF32 off so a GPU computes float32 as a CPU does). Nothing here
  starts CUDA; tests/notebooks/test_cuda_order.py rehearses every lesson's first two cells with
  CUDA mocked and fails if anything does before this call;
- ``threads`` torch threads;
- figures: inline, sharp ("retina"), drawn for a phone's column (`labs.classroom.figures`: 4.8 in
  wide by default, text 11-12 pt, log-axis decades in digits, a colour cycle of at least 4.5:1
  against white); each PNG records its smallest text in points for the browser check; SVG slider
  figures keep their text as text, with a stable id salt;
- NumPy prints ``precision`` decimals;
- returns ``glue``: the record myst-nb's ``glue`` writes (it hands numbers to the book's pages),
  or, where the book tools are not installed (Colab), a stand-in that does nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

__all__ = ["setup"]


#: myst-nb's prefix for a record that is not shown (myst_nb.ext.glue.GLUE_PREFIX).
GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, value: object, display: bool = True) -> None:
    """Hand ``value`` to the book's pages under ``name``: the display message myst_nb.glue sends,
    byte for byte (tests/classroom/test_setup.py compares them), without importing myst-nb's glue
    module, which imports nbformat and jsonschema (1.4 s in every lesson's kernel).

    ``display=False`` records the value without showing it in the notebook.
    """
    from IPython.core.formatters import format_display_data
    from IPython.display import display as ipy_display

    bundle, metadata = format_display_data(value)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    ipy_display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


def _no_glue(name: str, value: object, display: bool = True) -> None:
    """Stand-in for glue where the book tools are not installed: the number is not needed."""


def _record_smallest_text(shell) -> None:
    """The inline backend's retina PNGs, each with its smallest text in a tEXt chunk
    (`labs.classroom.figures.TEXT_KEY`): the browser check reads it to measure the text as shown."""
    from IPython.core.pylabtools import retina_figure
    from matplotlib.figure import Figure

    from labs.classroom.figures import png_metadata

    def png(fig):
        return retina_figure(fig, base64=True, bbox_inches="tight", metadata=png_metadata(fig))

    shell.display_formatter.formatters["image/png"].for_type(Figure, png)


def setup(seed: int = 0, *, threads: int = 2, deterministic: bool = True, precision: int = 3,
          svg_salt: str | None = None, offline: bool | None = None) -> Callable[..., None]:
    """Prepare a lesson's kernel (see the module docstring) and return ``glue``."""
    import sys

    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if offline is None:
        offline = "google.colab" not in sys.modules
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(name, "1" if offline else "0")

    import matplotlib.pyplot as plt
    import numpy as np
    import torch
    import transformers

    from labs.classroom import figures
    from labs.retrieval.device import CUBLAS_WORKSPACE, set_determinism

    # cuBLAS reads its workspace setting once, when CUDA starts: set it before anything can start
    # CUDA, whether or not this lesson asks for deterministic kernels (a later cell may). If CUDA
    # already started, setting it now would change nothing: set_determinism then says so.
    if not torch.cuda.is_initialized():
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    set_determinism(seed, deterministic=deterministic)  # before any CUDA work: it sets the cuBLAS workspace
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(threads)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    np.set_printoptions(precision=precision, suppress=True)
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")
        shell.run_line_magic("config", 'InlineBackend.figure_formats = ["retina"]')
        _record_smallest_text(shell)
    plt.rcParams.update({**figures.style(), "svg.fonttype": "none", "svg.hashsalt": svg_salt or f"labs-{seed}"})
    from importlib.util import find_spec

    return glue if find_spec("myst_nb") is not None else _no_glue
