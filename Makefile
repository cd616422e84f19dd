# The course in two commands:  make book   (set up, build the HTML)
#                              make test   (set up, check everything)
#                              make lab    (set up, open the notebooks in JupyterLab)
# Everything installs from nothing: a virtual environment in .venv, the browser assets
# from the npm registry, and Chromium for the browser checks. What each part costs:
# tests/README.md, "The budget" (written by make budget).

# bash, for its time keyword: each check prints its wall and CPU time when it ends.
SHELL := bash

# The first of python3.13, 3.12, 3.11, 3.10 that runs (or PYTHON=...). A name that exists
# but does not run (an inactive pyenv shim) is skipped.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell for p in python3.13 python3.12 python3.11 python3.10; do \
  $$p -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1 && { echo $$p; break; }; done)
endif
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
TORCH  := torch==2.13.0
# A check's recipe starts with $(TIME): "time unit: W s wall, U s user, S s system" when it
# ends (CPU: its processes and those they waited for, on all cores); make budget collects the lines.
TIMED  = TIMEFORMAT='time $(1): %1R s wall, %1U s user, %1S s system'; time
TIME   = $(call TIMED,$@)
# The second nbval pass: PyTorch's generic CPU kernels, one thread, MKL's AVX2 code path (this
# machine picks AVX-512) and an old OpenBLAS core, as another machine would pick them. An output
# that changes here is fragile (tests/README.md, "Writing a stable output"). Try another with
# make nbval-alt ALT_CPU="...".
ALT_CPU := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
           MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Prescott
# nbval with the course's sanitize file; the slowest cells at the end, every cell's time in a JUnit
# report (pytest's own) that make budget sums by notebook.
NBVAL   := -m pytest -q --durations=10 --nbval --nbval-current-env \
           --nbval-sanitize-with tools/outputs/nbval_sanitize.cfg
NOTEBOOKS ?= notebooks
LAB_PORT ?= 8888
# The book checks (tests/book): without the rest of tests/ (its fixtures load models) or pytest's
# installed plugins (nbval's import alone takes 2 s).
BOOK_ENV    := PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
# Their one plugin: pytest-playwright (and the base-url plugin its fixtures need) gives them the browser.
BOOK_PYTEST := $(PY) -m pytest -q --confcutdir tests/book -p pytest_playwright.pytest_playwright -p pytest_base_url.plugin
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TQDM_DISABLE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
# Idle torch threads sleep instead of spinning: on a busy 2-core machine spinning threads
# made training steps several times slower. Results are unchanged.
export OMP_WAIT_POLICY := PASSIVE
# Python caches compiled modules (__pycache__) for everything make runs, even where the machine
# sets PYTHONDONTWRITEBYTECODE (the CI machines do): the install skips byte-compiling every file it
# installs, and the few thousand the checks import are compiled once (end of setup).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help python setup vendor chromium live live-check book book-clean test unit e2e nbval nbval-alt browser checked-book lab \
        fresh-book gpu-check serve outputs lock clean budget spread colab-twin test-steps lesson

help:
	@echo "make book     set up and build the HTML book into _build/html (warnings are errors)"
	@echo "make test     set up, then unit tests, nbval on every notebook, a clean book build and its browser checks"
	@echo "              (CI then runs make nbval-alt and make colab-twin)"
	@echo "make nbval-alt  nbval on every notebook again, as another CPU would compute (CI runs it after make test)"
	@echo "make lab      set up and open the notebooks in JupyterLab on http://127.0.0.1:$(LAB_PORT)"
	@echo "make serve    serve _build/html on http://127.0.0.1:8000 for offline reading"
	@echo "make live     the in-page model and the live demos' files in _live/ (make book runs it; long the first"
	@echo "              time, quick when nothing changed)"
	@echo "make live-check  the live demos in Chromium against the Python models (make checked-book runs it)"
	@echo "make browser  the browser check on _build/html, with desktop and phone screenshots in _build/screenshots"
	@echo "              (PAGES=\"notebooks/03_infonce.html ...\" checks only those pages)"
	@echo "make outputs  re-execute every notebook in place (saves widget state)"
	@echo "make spread   measure how far each cell's printed numbers move under other CPU settings (niced, long)"
	@echo "              into tools/outputs/spread.json;"
	@echo "              SPREAD_ARGS=\"--notebook 03 --settings here,nbval-alt\" for a part, \"--no-run --declare\""
	@echo "              to write the tolerances into the notebooks (tests/README.md, \"Writing a stable output\")"
	@echo "make gpu-check  GPU only: the GPU path end to end, report in book/gpu-check.txt (exit 2 without CUDA)"
	@echo "make colab-twin  every notebook on a twin of Colab's runtime (Python 3.13, ipywidgets 7, Colab's versions in"
	@echo "              tools/platforms/colab_runtime.txt), installed by its first cell, every slider moved through the kernel"
	@echo "make budget   make test, then its measured times into tests/README.md's budget table"
	@echo "make lesson NAME=retrieval_eval  a new lesson that keeps the mechanical rules (notebook, _toc.yml line, exercises, CASES row)"

# ---- set-up --------------------------------------------------------------
python:
	@test -n "$(PYTHON)" || { echo "No Python 3.10 to 3.13 found: install one, or run make PYTHON=/path/to/python3"; exit 1; }
	@echo "Python: $(PYTHON) ($$($(PYTHON) --version 2>&1))"

$(VENV)/.installed: pyproject.toml constraints.txt
	@if test -x $(PY); then echo "Python: $(PY) ($$($(PY) --version 2>&1), the existing .venv)"; \
	else $(MAKE) --no-print-directory python && $(PYTHON) -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	# torch first and alone, pinned: an unpinned torch pulls a multi-GB CUDA build. CI here takes
	# the CPU wheel from the machine's wheel folder (Python 3.11); elsewhere on Linux, PyPI's torch
	# is the CUDA build and TORCH_INDEX=https://download.pytorch.org/whl/cpu takes the CPU build.
	$(PY) -m pip install --quiet --no-compile $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) --extra-index-url https://pypi.org/simple)
	# The rest with uv (pinned in constraints.txt): the same versions as pip installs from the same
	# constraints, several times faster; it keeps the torch installed above.
	$(PY) -m pip install --quiet --no-compile -c constraints.txt uv
	$(BIN)/uv pip install --quiet --python $(PY) -c constraints.txt -e ".[book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (course)" >/dev/null
	# Compile what every check imports once, here (on both cores), rather than in five jobs at once.
	$(PY) -c "import sklearn, matplotlib.pyplot, ipykernel.kernelapp, ipywidgets, nbval" & \
	$(PY) -c "import torch, transformers, sentence_transformers, labs.lessons.pooling"; rc=$$?; \
	wait $$! && exit $$rc
	touch $@

setup: $(VENV)/.installed

_vendor/.stamp: package.json package-lock.json .ci/vendor.sh
	# --ignore-scripts: onnxruntime-node (a dependency of transformers.js the book never loads) downloads
	# from a host outside the package registries in its postinstall; nothing the browser needs is lost.
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	bash .ci/vendor.sh
	touch $@

vendor: _vendor/.stamp

# The browser and live-demo checks run in Debian's headless Chromium (CHROMIUM=/path/to/chromium: another).
chromium:
	@command -v $${CHROMIUM:-chromium-headless-shell} >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium-headless-shell for the browser checks"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; }

# ---- the book ------------------------------------------------------------
# Its own target: a first build is long (tools/live_model.py fine-tunes lesson 7's model); a stamp skips it.
live: setup vendor
	@$(TIME) $(PY) -m tools.live_model _live

# The live demos in Chromium against the Python models, on the built book.
live-check: setup chromium
	$(BOOK_ENV) $(BOOK_PYTEST) tests/book/test_live*.py --html-root _build/html

book: setup vendor live
	@$(TIME) $(BIN)/jupyter-book build . --builder html -W -n --keep-going

fresh-book: setup vendor
	rm -rf _build
	@$(MAKE) --no-print-directory book

book-clean:
	rm -rf _build

serve:
	@test -f _build/html/index.html || { echo "No book yet: run 'make book' first"; exit 1; }
	@echo "Serving the book on http://127.0.0.1:8000 (Ctrl-C stops)"
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

outputs: setup
	$(PY) -m tools.notebooks.execute notebooks/*.ipynb

# A new lesson starts from what every lesson must hold (tools/notebooks/lesson.py), not from a copy of another.
lesson: setup
	@test -n "$(NAME)" || { echo "make lesson NAME=lower_case_name [TITLE=\"A title\"]"; exit 2; }
	$(PY) -m tools.notebooks.lesson $(NAME) $(if $(TITLE),--title "$(TITLE)")

# ---- checks --------------------------------------------------------------
# The slow end-to-end tests (marked e2e) apart, so make unit stays quick; one thread a test process.
TEST_THREADS := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
UNIT_WORKERS := -n 2
unit: setup
	@$(TIME) $(TEST_THREADS) $(PY) -m pytest -q $(UNIT_WORKERS) --durations=15 -m "not e2e" tests

e2e: setup
	@$(TIME) $(TEST_THREADS) $(PY) -m pytest -q --durations=10 -m e2e tests

nbval: setup
	@mkdir -p .cache; $(TIME) $(PY) $(NBVAL) --junitxml=.cache/nbval.xml $(NOTEBOOKS)

nbval-alt: setup
	@echo "nbval again, as another CPU would compute: $(ALT_CPU)"
	@$(TIME) $(ALT_CPU) $(PY) $(NBVAL) $(NOTEBOOKS)

# Not in make test (every notebook under 13 settings): needed when a cell prints other numbers (test_spread names it).
spread: setup
	$(PY) -m tools.outputs.spread $(SPREAD_ARGS)

lab: setup
	@echo "JupyterLab on http://127.0.0.1:$(LAB_PORT)/lab, notebooks/ with the kernel 'Python 3 (course)' (Ctrl-C stops)"
	$(BIN)/jupyter-lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) --ServerApp.root_dir=notebooks \
	  --MultiKernelManager.default_kernel_name=python3 $(if $(filter 0,$(shell id -u)),--allow-root)

# GPU only, outside make test: the GPU path end to end (benchmarks/gpu_check.py), into book/gpu-check.txt.
gpu-check: setup
	$(PY) benchmarks/gpu_check.py

# Colab's versions (tools/platforms/colab_twin.py says what a pass proves); too long for make test. TWIN_ARGS="--notebooks 04".
colab-twin: setup
	nice $(PY) -m tools.platforms.colab_twin $(TWIN_ARGS)

# The browser check, with screenshots to look at; PAGES="notebooks/03_infonce.html ..." for a part.
browser: setup chromium
	$(BOOK_ENV) $(BOOK_PYTEST) tests/book/test_browser.py --html-root _build/html \
	  --screenshots _build/screenshots $(if $(PAGES),--pages "$(PAGES)")

# make test's last step: a clean build, then the page and live-demo checks side by side (one leaves a core idle).
checked-book: fresh-book chromium
	@mkdir -p .cache; $(TIME) $(BOOK_ENV) sh -c '\
	  $(BOOK_PYTEST) tests/book/test_live*.py --html-root _build/html > .cache/live-checks.log 2>&1 & live=$$!; \
	  $(BOOK_PYTEST) tests/book/test_browser.py --html-root _build/html; pages=$$?; \
	  wait $$live; live=$$?; cat .cache/live-checks.log; test $$pages = 0 && test $$live = 0'

# Every check side by side, so no core waits on one job. CI runs nbval-alt after it: it would not fit 600 s.
test:
	@$(TIME) $(MAKE) --no-print-directory test-steps

# make test's steps: the set-up, then every check (each keeps its output together and ends with its time).
test-steps:
	@$(call TIMED,setup) $(MAKE) --no-print-directory -j2 setup vendor && \
	$(MAKE) --no-print-directory -j4 -k --output-sync=target UNIT_WORKERS= unit e2e nbval checked-book

# tests/README.md's budget table, from a measured make test (time lines, nbval's JUnit report): tools/notebooks/budget.py.
budget:
	@mkdir -p .cache; set -o pipefail; $(MAKE) --no-print-directory test 2>&1 | tee .cache/make-test.log && \
	$(PY) -m tools.notebooks.budget .cache/make-test.log .cache/nbval.xml tests/README.md

lock: setup
	$(PY) -m pip freeze --exclude-editable | sed 's/+cpu//' > .cache/freeze.txt
	@echo "Review .cache/freeze.txt and copy it into constraints.txt"

clean:
	rm -rf _build _vendor _live node_modules .cache
