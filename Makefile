# The course in two commands:  make book   (set up, build the HTML)
#                              make test   (set up, check everything)
# Everything installs from nothing: a Python 3.11 virtual environment in .venv,
# the browser assets from the npm registry, and Chromium for the browser check.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
TORCH  := torch==2.13.0
TIMES  := .cache/timings
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TQDM_DISABLE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
# Idle torch threads sleep instead of spinning: on a busy 2-core machine spinning threads
# made training steps several times slower. Results are unchanged.
export OMP_WAIT_POLICY := PASSIVE

.PHONY: help setup vendor chromium book book-clean test unit nbval browser serve outputs lock clean report

help:
	@echo "make book     set up and build the HTML book into _build/html (warnings are errors)"
	@echo "make test     set up, then unit tests, nbval on every notebook, a clean book build, the browser check"
	@echo "make serve    serve _build/html on http://127.0.0.1:8000 for offline reading"
	@echo "make outputs  re-execute every notebook in place (saves widget state)"

# ---- set-up --------------------------------------------------------------
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	# torch first and alone: the CPU wheel. An unpinned torch pulls a multi-GB CUDA build.
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (course)" >/dev/null
	touch $@

setup: $(VENV)/.installed

_vendor/.stamp: package.json package-lock.json .ci/vendor.sh
	npm ci --no-audit --no-fund --loglevel=error
	bash .ci/vendor.sh
	touch $@

vendor: _vendor/.stamp

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser check"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# ---- the book ------------------------------------------------------------
book: setup vendor
	@mkdir -p $(TIMES)
	@start=$$(date +%s); \
	$(BIN)/jupyter-book build . --builder html -W -n --keep-going || exit 1; \
	echo "{\"book_build_s\": $$(( $$(date +%s) - start ))}" > $(TIMES)/book.json

book-clean:
	rm -rf _build

serve:
	@test -f _build/html/index.html || { echo "No book yet: run 'make book' first"; exit 1; }
	@echo "Serving the book on http://127.0.0.1:8000 (Ctrl-C stops)"
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

outputs: setup
	$(PY) .ci/execute_notebooks.py notebooks/*.ipynb

# ---- checks --------------------------------------------------------------
unit: setup
	$(PY) -m pytest -q tests

nbval: setup
	@mkdir -p $(TIMES)
	$(PY) -m pytest -q -p tests.nbval_timing --nbval --nbval-current-env \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks

browser: setup chromium
	$(PY) .ci/browser_check.py _build/html

test:
	@rm -rf $(TIMES); mkdir -p $(TIMES); start=$$(date +%s); \
	$(MAKE) --no-print-directory setup vendor unit nbval book-clean book browser; rc=$$?; \
	echo "{\"make_test_s\": $$(( $$(date +%s) - start ))}" > $(TIMES)/total.json; \
	$(PY) .ci/report.py $(TIMES) || true; \
	exit $$rc

report:
	$(PY) .ci/report.py $(TIMES)

lock: setup
	$(PY) -m pip freeze --exclude-editable | sed 's/+cpu//' > .cache/freeze.txt
	@echo "Review .cache/freeze.txt and copy it into constraints.txt"

clean:
	rm -rf _build _vendor node_modules .cache
