# thai-eval: `make demo` runs every notebook on the embedded model and the shipped samples;
# `make test` runs the test suite (CI calls it through .ci/run).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

MODELS ?= embedded
LIMIT ?=
DATA ?=
JUDGE ?=
DTYPE ?=
DEVICE_MAP ?=
# Where every target writes (runs, tables, figures, executed notebooks, exports): OUTPUTS=/data/thai-eval make ...
OUTPUTS ?= $(or $(THAI_EVAL_OUTPUTS),outputs)
FORMAT ?= lm-eval
THAI_EVAL := $(VENV)/bin/thai-eval

.PHONY: demo test lab tables model clean install compare runs export report browser docs format

install: $(VENV)/.installed

# torch is installed first on its own so pip takes the CPU wheel that lies on this kind of machine's disk.
$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed ($(PYTHON) not found)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

# The test suite also drives a real llama-cpp-python server (the `serve` extra). It compiles llama.cpp once
# (about 17 minutes on 2 cores; pip caches the wheel), so only `make test` installs it, never `make demo`.
$(VENV)/.installed-serve: $(VENV)/.installed
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet -e ".[dev,serve]"
	touch $@

# Dequantise the embedded Gemma 3 270M GGUF once into the cache ($$THAI_EVAL_CACHE or ~/.cache/thai-eval).
model: install
	$(PY) -c "from thai_eval_utils.backend.model_sources import embedded_model_dir; print('embedded model:', embedded_model_dir())"

demo: model
	$(PY) -m thai_eval_utils.notebook_runs --demo --outputs $(OUTPUTS)
	$(THAI_EVAL) report --outputs $(OUTPUTS) $$(test -d $(OUTPUTS)/demo_compare && echo $(OUTPUTS)/demo_compare) \
		--out $(OUTPUTS)/report.html --screenshots $(OUTPUTS)/report_screenshots

# The HTML report of the stored runs (opens offline): make report [REPORT_MODELS="a b"] [PAIR="a b"]. The demo's
# second few-shot seed ($(OUTPUTS)/demo_compare) shows as a second model, "embedded (fewshot_seed=7)".
REPORT_OUTPUTS ?= $(OUTPUTS) $(wildcard $(OUTPUTS)/demo_compare)
REPORT_MODELS ?=
PAIR ?=
report: install
	$(THAI_EVAL) report --outputs $(REPORT_OUTPUTS) --out $(OUTPUTS)/report.html \
		$(if $(REPORT_MODELS),--models "$(REPORT_MODELS)") $(if $(PAIR),--pair "$(PAIR)")

# Every benchmark for every model in MODELS, then the paper tables (thai-eval run; a rerun resumes).
tables: model
	$(THAI_EVAL) run $(foreach m,$(MODELS),--model $(m)) $(if $(LIMIT),--limit $(LIMIT)) $(if $(DATA),--data $(DATA)) \
		$(if $(JUDGE),--judge $(JUDGE)) $(if $(DTYPE),--dtype $(DTYPE)) $(if $(DEVICE_MAP),--device-map $(DEVICE_MAP)) --outputs $(OUTPUTS)

# The stored runs as a table; exports: make export FORMAT=lm-eval|thai-llm-leaderboard|parquet [TO=dir]
runs: install
	$(THAI_EVAL) runs --outputs $(OUTPUTS)

TO ?=
export: install
	$(THAI_EVAL) export --format $(FORMAT) --outputs $(OUTPUTS) $(if $(TO),--to $(TO))

# Compare two models' stored runs: make compare A=<model> B=<model> [BENCHMARKS="thai_h6 dialect"] [RESAMPLES=10000]
A ?=
B ?=
BENCHMARKS ?= thai_h6 thaicli dialect
RESAMPLES ?= 10000
compare: install
	@test -n "$(A)" -a -n "$(B)" || { echo 'usage: make compare A=<model or spec> B=<model or spec>'; exit 1; }
	$(THAI_EVAL) compare "$(A)" "$(B)" --benchmarks "$(BENCHMARKS)" --resamples $(RESAMPLES) --outputs $(OUTPUTS)

# The report's browser tests (tests/test_report_browser.py) drive the system Chromium (Debian's `chromium`; Thai
# fonts for readable screenshots) through playwright (dev extra), never a downloaded browser. Installed once where
# this runs as root with apt-get; elsewhere those tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-tlwg-loma-otf; \
		else echo "chromium is not installed and cannot be here (needs root and apt-get): the browser tests will skip"; fi; }

# ruff first (seconds; the layout and the rule set, and why: pyproject.toml [tool.ruff]), then the suite, which
# ends by listing its 25 slowest tests (where to trim when it grows).
# `make format` rewrites the files the check refuses.
test: $(VENV)/.installed-serve browser
	$(VENV)/bin/ruff format --check thai_eval_utils tests benchmarks
	$(VENV)/bin/ruff check thai_eval_utils tests benchmarks
	$(PY) -m pytest -q --durations=25

format: install
	$(VENV)/bin/ruff format thai_eval_utils tests benchmarks

# The documentation site, built offline into site/ (mkdocs.yml; open site/index.html). --strict: a broken link or
# anchor, a page missing from the nav or a docstring the API page cannot read fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

lab: install
	$(VENV)/bin/jupyter lab --notebook-dir=.

clean:
	rm -rf $(OUTPUTS)/runs $(OUTPUTS)/notebooks $(OUTPUTS)/tables $(OUTPUTS)/figures $(OUTPUTS)/exports $(OUTPUTS)/*.html $(OUTPUTS)/report_screenshots .pytest_cache site
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
