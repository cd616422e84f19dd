# The course in two commands: make book (set up, build the HTML) and make test (set up, check everything);
# make lab opens the notebooks, make help lists the rest. Everything installs from nothing: a virtual environment
# in .venv, the browser assets from the npm registry, and Chromium for the browser checks. What each part costs:
# tests/README.md, "The budget" (written by make budget).

# bash, for its time keyword: each check prints its wall and CPU time when it ends.
SHELL := bash

# The first of python3.13, 3.12, 3.11, 3.10 that runs (an inactive pyenv shim does not), or PYTHON=...
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell for p in python3.13 python3.12 python3.11 python3.10; do \
  $$p -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1 && { echo $$p; break; }; done)
endif
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
TORCH  := torch==2.13.0
# A check's recipe starts with $(TIME): "time unit: W s wall, U s user, S s system" when it ends (CPU: its
# processes and those they waited for, on all cores); make budget reads these lines.
TIMED  = TIMEFORMAT='time $(1): %1R s wall, %1U s user, %1S s system'; time
TIME   = $(call TIMED,$@)
# The second nbval pass, as another machine would compute: PyTorch's generic CPU kernels, one thread, MKL's AVX2
# path, an old OpenBLAS core. An output that changes here is fragile (tests/README.md, "Writing a stable output").
ALT_CPU := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
           MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Prescott
# nbval with the course's sanitize file; every cell's time goes to a JUnit report (pytest's own) for make budget.
NBVAL   := -m pytest -q --durations=10 --nbval --nbval-current-env \
           --nbval-sanitize-with tools/outputs/nbval_sanitize.cfg
NOTEBOOKS ?= notebooks
LAB_PORT ?= 8888
# The book checks (tests/book) without tests/'s conftest (it loads models) or the autoloaded plugins (nbval's
# import is slow); pytest-playwright (and the base-url plugin its fixtures need) gives them the browser.
BOOK_ENV    := PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
BOOK_PYTEST := $(PY) -m pytest -q --confcutdir tests/book -p pytest_playwright.pytest_playwright -p pytest_base_url.plugin
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TQDM_DISABLE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
# Idle torch threads sleep instead of spinning, which slows training on a busy machine; results are unchanged.
export OMP_WAIT_POLICY := PASSIVE
# Python caches what it compiles, even where the machine sets PYTHONDONTWRITEBYTECODE (CI does); see setup.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help python setup vendor chromium live live-check book book-clean test unit e2e nbval nbval-alt browser checked-book lab \
        fresh-book gpu-check serve outputs lock clean budget spread colab-twin test-steps lesson

help:  ## this list; CI (.ci/run) runs make test, then make nbval-alt and make colab-twin
	@awk -F ':.*## ' '/^[a-z0-9-]+:.*## /{printf "make %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# ---- set-up --------------------------------------------------------------
# The Python that makes .venv.
python:
	@test -n "$(PYTHON)" || { echo "No Python 3.10 to 3.13 found: install one, or run make PYTHON=/path/to/python3"; exit 1; }
	@echo "Python: $(PYTHON) ($$($(PYTHON) --version 2>&1))"

$(VENV)/.installed: pyproject.toml constraints.txt
	@if test -x $(PY); then echo "Python: $(PY) ($$($(PY) --version 2>&1), the existing .venv)"; \
	else $(MAKE) --no-print-directory python && $(PYTHON) -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	# torch first, alone and pinned: an unpinned torch pulls a multi-GB CUDA build, and on Linux so does PyPI's
	# torch: TORCH_INDEX=https://download.pytorch.org/whl/cpu takes the CPU build.
	$(PY) -m pip install --quiet --no-compile $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) --extra-index-url https://pypi.org/simple)
	# The rest with uv, pinned in constraints.txt: pip's versions, several times faster; it keeps that torch.
	$(PY) -m pip install --quiet --no-compile -c constraints.txt uv
	$(BIN)/uv pip install --quiet --python $(PY) -c constraints.txt -e ".[book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (course)" >/dev/null
	# Compile what every check imports once, here (on both cores), rather than in five jobs at once.
	$(PY) -c "import sklearn, matplotlib.pyplot, ipykernel.kernelapp, ipywidgets, nbval" & \
	$(PY) -c "import torch, transformers, sentence_transformers, labs.lessons.pooling"; rc=$$?; \
	wait $$! && exit $$rc
	touch $@

setup: $(VENV)/.installed  ## the virtual environment in .venv (again when pyproject.toml or constraints.txt change)

_vendor/.stamp: package.json package-lock.json .ci/vendor.sh
	# --ignore-scripts: onnxruntime-node's postinstall downloads from outside the registries; the book never runs it.
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	bash .ci/vendor.sh
	touch $@

# The browser assets from package-lock.json, served by the book from _vendor/ (offline).
vendor: _vendor/.stamp

# The browser and live-demo checks run in Debian's headless Chromium (CHROMIUM=/path/to/chromium: another).
chromium:
	@command -v $${CHROMIUM:-chromium-headless-shell} >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium-headless-shell for the browser checks"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; }

# ---- the book ------------------------------------------------------------
live: setup vendor  ## the in-page model and the live demos' files in _live/ (long once; a stamp skips it after)
	@$(TIME) $(PY) -m tools.live_model _live

live-check: setup chromium  ## the live demos in Chromium against the Python models, on the built book
	$(BOOK_ENV) $(BOOK_PYTEST) tests/book/test_live*.py --html-root _build/html

book: setup vendor live  ## set up and build the HTML book into _build/html (warnings are errors)
	@$(TIME) $(BIN)/jupyter-book build . --builder html -W -n --keep-going

fresh-book: setup vendor  ## the book built from nothing (rm -rf _build first)
	rm -rf _build
	@$(MAKE) --no-print-directory book

book-clean:  ## remove _build
	rm -rf _build

serve:  ## serve _build/html on http://127.0.0.1:8000 for offline reading
	@test -f _build/html/index.html || { echo "No book yet: run 'make book' first"; exit 1; }
	@echo "Serving the book on http://127.0.0.1:8000 (Ctrl-C stops)"
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

outputs: setup  ## re-execute every notebook in place, keeping widget state (the only way stored outputs change)
	$(PY) -m tools.notebooks.execute notebooks/*.ipynb

lesson: setup  ## NAME=retrieval_eval [TITLE="A title"]: a new lesson that keeps the mechanical rules
	@test -n "$(NAME)" || { echo "make lesson NAME=lower_case_name [TITLE=\"A title\"]"; exit 2; }
	$(PY) -m tools.notebooks.lesson $(NAME) $(if $(TITLE),--title "$(TITLE)")

# ---- checks --------------------------------------------------------------
# The slow end-to-end tests (marked e2e) apart, so make unit stays quick; one thread a test process.
TEST_THREADS := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
UNIT_WORKERS := -n 2
unit: setup  ## the unit tests (not marked e2e), on two workers
	@$(TIME) $(TEST_THREADS) $(PY) -m pytest -q $(UNIT_WORKERS) --durations=15 -m "not e2e" tests

e2e: setup  ## the end-to-end tests (marked e2e: fresh processes, whole pipelines)
	@$(TIME) $(TEST_THREADS) $(PY) -m pytest -q --durations=10 -m e2e tests

nbval: setup  ## every cell of every notebook (NOTEBOOKS=...) against its stored output
	@mkdir -p .cache; $(TIME) $(PY) $(NBVAL) --junitxml=.cache/nbval.xml $(NOTEBOOKS)

nbval-alt: setup  ## nbval again as another CPU would compute (ALT_CPU); CI runs it after make test
	@echo "nbval again, as another CPU would compute: $(ALT_CPU)"
	@$(TIME) $(ALT_CPU) $(PY) $(NBVAL) $(NOTEBOOKS)

spread: setup  ## how far printed numbers move under 13 CPU settings (long; SPREAD_ARGS: tools.outputs.spread -h)
	$(PY) -m tools.outputs.spread $(SPREAD_ARGS)

lab: setup  ## set up and open the notebooks in JupyterLab on http://127.0.0.1:8888 (LAB_PORT=...)
	@echo "JupyterLab on http://127.0.0.1:$(LAB_PORT)/lab, notebooks/ with the kernel 'Python 3 (course)' (Ctrl-C stops)"
	$(BIN)/jupyter-lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) --ServerApp.root_dir=notebooks \
	  --MultiKernelManager.default_kernel_name=python3 $(if $(filter 0,$(shell id -u)),--allow-root)

gpu-check: setup  ## GPU only: the GPU path end to end into book/gpu-check.txt (exit 2 without CUDA)
	$(PY) benchmarks/gpu_check.py

colab-twin: setup  ## every notebook on a twin of Colab's runtime, every slider moved (long; TWIN_ARGS="--notebooks 04")
	nice $(PY) -m tools.platforms.colab_twin $(TWIN_ARGS)

browser: setup chromium  ## the browser check, screenshots in _build/screenshots (PAGES="notebooks/03_infonce.html ...")
	$(BOOK_ENV) $(BOOK_PYTEST) tests/book/test_browser.py --html-root _build/html \
	  --screenshots _build/screenshots $(if $(PAGES),--pages "$(PAGES)")

checked-book: fresh-book chromium  ## a clean build, then its page and live-demo checks side by side
	@mkdir -p .cache; $(TIME) $(BOOK_ENV) sh -c '\
	  $(BOOK_PYTEST) tests/book/test_live*.py --html-root _build/html > .cache/live-checks.log 2>&1 & live=$$!; \
	  $(BOOK_PYTEST) tests/book/test_browser.py --html-root _build/html; pages=$$?; \
	  wait $$live; live=$$?; cat .cache/live-checks.log; test $$pages = 0 && test $$live = 0'

test:  ## set up, then unit, e2e, nbval and checked-book side by side (nbval-alt would not fit its 600 s)
	@$(TIME) $(MAKE) --no-print-directory test-steps

# make test's steps: the set-up, then every check (each keeps its output together and ends with its time).
test-steps:
	@$(call TIMED,setup) $(MAKE) --no-print-directory -j2 setup vendor && \
	$(MAKE) --no-print-directory -j4 -k --output-sync=target UNIT_WORKERS= unit e2e nbval checked-book

budget:  ## make test, then its times into tests/README.md's budget table (tools/notebooks/budget.py)
	@mkdir -p .cache; set -o pipefail; $(MAKE) --no-print-directory test 2>&1 | tee .cache/make-test.log && \
	$(PY) -m tools.notebooks.budget .cache/make-test.log .cache/nbval.xml tests/README.md

lock: setup  ## pip freeze into .cache/freeze.txt, to review and copy into constraints.txt
	$(PY) -m pip freeze --exclude-editable | sed 's/+cpu//' > .cache/freeze.txt
	@echo "Review .cache/freeze.txt and copy it into constraints.txt"

clean:  ## remove the build, the vendored assets, the live model, node_modules and .cache
	rm -rf _build _vendor _live node_modules .cache
