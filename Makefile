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

.PHONY: demo test lab tables model clean install compare runs export

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
	$(PY) -c "from thai_eval_utils.core.model_sources import embedded_model_dir; print('embedded model:', embedded_model_dir())"

demo: model
	$(PY) -m thai_eval_utils.batch --demo --outputs $(OUTPUTS)

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

test: $(VENV)/.installed-serve
	$(PY) -m pytest -q

lab: install
	$(VENV)/bin/jupyter lab --notebook-dir=.

clean:
	rm -rf $(OUTPUTS)/runs $(OUTPUTS)/notebooks $(OUTPUTS)/tables $(OUTPUTS)/figures $(OUTPUTS)/exports $(OUTPUTS)/*.html .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
