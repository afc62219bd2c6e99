#!/usr/bin/env bash
# Prepare what travels to the GPU machine for benchmarks/gpu_bench.py (see benchmarks/README.md, "GPU"):
#   .whl/                            the wheels lm-eval 0.4.13's HF backend needs and the machine lacks
#   benchmarks/.work/gpu_tokenizer/  the embedded model's Gemma 3 tokenizer, gzipped
# The GPU machine (Python 3.12, torch 2.11, transformers 5.17, no network) has torch, transformers, accelerate,
# huggingface-hub, jinja2, pyyaml, requests, numpy, tqdm and packaging: everything `import
# lm_eval.models.huggingface` imports besides lm_eval itself (checked below), so only lm_eval travels.
# Its other Requires-Dist (datasets, evaluate, sqlitedict, pytablewriter, ...) serve lm-eval's task and
# evaluator machinery, which the benchmark does not use (it calls HFLM.loglikelihood and HFLM.generate_until directly).
#
#   benchmarks/gpu_wheels.sh            # PYTHON=... picks the interpreter for the import check (default .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
WHEELS=(lm_eval==0.4.13)

mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${WHEELS[@]}"
echo "lm_eval's requirements (Requires-Dist without extras):"
unzip -p .whl/lm_eval-0.4.13-*.whl '*/METADATA' | grep '^Requires-Dist' | grep -v 'extra ==' | sed 's/^/  /'

# The import check: a clean --target install of the wheels (as on the GPU machine), then the benchmark's
# imports (gpu_bench, gpu_generation, thai_eval_utils' LocalModel, generation engine and h6.tasks, lm-eval's
# HFLM) with only that folder added to the path; every third-party module they pull in beyond torch, transformers
# and huggingface_hub (the machine's own) must be lm_eval's or among the GPU machine's packages
# (/work/.library/device/KINDS.md, read 2026-11-17).
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$target" .whl/*.whl
PYTHONPATH="$target:$PWD/benchmarks" "$PYTHON" - "$target" "$PWD" <<'PY'
import sys
import huggingface_hub, torch, transformers  # noqa: E401,F401  the GPU machine's own, with their own dependencies
target, repo = sys.argv[1], sys.argv[2]
before = set(sys.modules)
import gpu_bench  # noqa: F401  (puts the repo on sys.path)
import gpu_generation  # noqa: F401  (the generation part)
from thai_eval_utils.backend.generation import generate  # noqa: F401
from thai_eval_utils.backend.stops import cut_at_stop  # noqa: F401
from lm_eval.api.instance import Instance  # noqa: F401
from lm_eval.models.huggingface import HFLM  # noqa: F401
from thai_eval_utils.backend.local_model import LocalModel  # noqa: F401
from thai_eval_utils.h6 import tasks  # noqa: F401
device = {"PIL", "accelerate", "certifi", "charset_normalizer", "cloudpickle", "colorama", "dateutil", "filelock",
          "fsspec", "hf_xet", "huggingface_hub", "idna", "jinja2", "joblib", "markupsafe", "mpmath", "networkx",
          "numpy", "packaging", "pandas", "peft", "psutil", "pyarrow", "regex", "requests", "safetensors", "scipy",
          "six", "sklearn", "sympy", "threadpoolctl", "tokenizers", "torch", "tqdm", "transformers",
          "typing_extensions", "urllib3", "yaml"}
new = {}
for name in set(sys.modules) - before:
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names or top.startswith("_"):
        continue  # the standard library, and compiled helpers of packages (torch's, scipy's)
    f = getattr(sys.modules.get(top), "__file__", None) or ""
    new[top] = ("wheel" if f.startswith(target) else "the repo" if f.startswith(repo) else
                "on the GPU machine" if top in device else "MISSING there")
for top in sorted(new):
    print(f"  imports {top}: {new[top]}")
missing = [t for t, w in new.items() if w.startswith("MISSING")]
sys.exit(f"modules the GPU machine lacks: {missing}" if missing else 0)
PY
echo "the benchmark's imports with only the wheels added: ok"
du -cb .whl/*.whl | awk '{printf "  %s: %.1f MiB\n", $2, $1 / 1048576}'

"$PYTHON" benchmarks/gpu_bench.py --prepare-tokenizer
du -cb .whl benchmarks/.work/gpu_tokenizer | tail -1 | awk '{printf "carried in all (.whl + tokenizer): %.1f MiB\n", $1 / 1048576}'
