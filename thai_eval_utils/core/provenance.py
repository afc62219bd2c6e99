"""Provenance of every result: the :class:`Score` (value, n, standard error, signature), content hashes, the
package versions recorded in run cards, and :func:`redact`, which keeps secrets out of every file written.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Packages whose versions go into every run card.
RECORDED_PACKAGES = (
    "thai-eval",
    "torch",
    "transformers",
    "tokenizers",
    "accelerate",
    "gguf",
    "pythainlp",
    "sacrebleu",
    "rouge-score",
    "scikit-learn",
    "scipy",
    "numpy",
    "pandas",
    "openai",
)

#: Keys whose values are secrets and never land in a result file.
_SECRET_KEY = re.compile(
    r"^((.*[_-])?(api[_-]?key|secret|password|passwd|authori[sz]ation|bearer)"
    r"|((.*[_-])?(access|auth|hf|api|bearer|refresh|session)[_-]?)?token)$",
    re.I,
)
#: Values that look like API keys even under an innocent key.
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{20,})")
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")
#: Environment variables whose values are secrets (``OPENAI_API_KEY``, ``HF_TOKEN``, ``DB_PASSWORD``, ...).
_SECRET_ENV = re.compile(r"(API[_-]?KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.I)
#: Query parameters of a URL that carry credentials (Azure ``api-key``, ``token``, signed URLs' ``sig``).
_CREDENTIAL_PARAM = re.compile(r"key|token|secret|passw|sig|auth|credential", re.I)
#: Shorter registered values are not masked inside text (masking "abc" everywhere would corrupt data).
MIN_SECRET_LENGTH = 6
#: The secret values in use in this process (API keys, URL passwords): masked wherever they appear.
_SECRETS: set[str] = set()


@dataclass(frozen=True)
class Score:
    """A score with its sample size, standard error and provenance signature.

    Example: ``Score.mean("th_arc/acc_norm", [1, 0, 1, 1])`` prints as
    ``th_arc/acc_norm = 0.7500 ± 0.2500 (n=4)``.
    """

    name: str
    value: float
    n: int
    stderr: float | None = None
    signature: str = ""

    @classmethod
    def mean(cls, name: str, values: Sequence[float], signature: str = "") -> Score:
        """Mean of ``values`` with the sample standard error ``std(ddof=1) / sqrt(n)`` (lm-eval's)."""
        vals = [float(v) for v in values]
        n = len(vals)
        if n == 0:
            return cls(name, float("nan"), 0, None, signature)
        mu = sum(vals) / n
        se = (sum((v - mu) ** 2 for v in vals) / (n - 1)) ** 0.5 / n**0.5 if n > 1 else None
        return cls(name, mu, n, se, signature)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "n": self.n, "stderr": self.stderr, "signature": self.signature}

    def __str__(self) -> str:
        se = f" ± {self.stderr:.4f}" if self.stderr is not None else ""
        sig = f" | {self.signature}" if self.signature else ""
        return f"{self.name} = {self.value:.4f}{se} (n={self.n}){sig}"


def outputs_dir() -> Path:
    """The outputs folder: ``$THAI_EVAL_OUTPUTS`` or ``outputs`` under the current directory."""
    return Path(os.environ.get("THAI_EVAL_OUTPUTS", "outputs"))


def slugify(name: str, max_len: int = 80) -> str:
    """A file-name-safe slug of a model name that can never escape its parent folder.

    Path separators, ``..`` and leading dots cannot survive, e.g.
    ``slugify("../../etc/passwd")`` -> ``"etc_passwd"``; long names keep a hash suffix.
    """
    slug = _SLUG_BAD.sub("_", name.strip()).strip("._-")
    slug = re.sub(r"\.{2,}", "_", slug)
    if not slug:
        slug = "model"
    if len(slug) > max_len:
        slug = slug[: max_len - 9] + "-" + sha256_text(name)[:8]
    return slug


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a UTF-8 string (prompt templates, item keys)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def canonical_json(obj: Any) -> str:
    """Deterministic JSON used for hashing configurations."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def package_versions(names: Iterable[str] = RECORDED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None when not installed), plus Python's."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def register_secret(value: str | None) -> None:
    """Mask ``value`` (an API key, a URL password) in everything :func:`redact` and :func:`scrub` return.

    ``ApiModel`` registers the key and the base-URL credentials it uses; secret-named environment variables
    (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) are picked up at every call. Values shorter
    than :data:`MIN_SECRET_LENGTH` characters are not masked inside text (a secret that short is no secret).
    """
    if value and len(value) >= MIN_SECRET_LENGTH:
        _SECRETS.add(value)
        quoted = urllib.parse.quote(value, safe="")
        if quoted != value:  # the form it takes inside a URL
            _SECRETS.add(quoted)


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its userinfo, and the URL's password (None if it has none).

    Every credential in the URL (user name, password, credential-looking query values) is registered as a
    secret. Example: ``split_credentials("http://u:pw@h:8/v1")`` -> ``("http://h:8/v1", "pw")``.
    """
    parts = urllib.parse.urlsplit(url)
    password = urllib.parse.unquote(parts.password) if parts.password else None
    register_secret(password)
    if parts.username:
        register_secret(urllib.parse.unquote(parts.username))
    for name, value in urllib.parse.parse_qsl(parts.query):
        if _CREDENTIAL_PARAM.search(name):
            register_secret(value)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), password


@dataclass(frozen=True)
class Endpoint:
    """An endpoint URL taken apart (:func:`split_endpoint`): where to send requests and with which credential."""

    url: str  # scheme, host, port and path: no userinfo, no query
    #: the URL's credential: its password, else a credential query value (Azure ``?api-key=``); not in the repr
    key: str | None = field(repr=False)
    query: dict[str, str]  # the other query parameters (``api-version``), sent with every request
    key_header: str | None  # a header the key is also sent in: ``api-key`` when the URL carried it so (Azure)


def split_endpoint(url: str) -> Endpoint:
    """``url`` split into where requests go, its credential and its plain query (every credential registered).

    The openai client appends request paths to ``base_url`` as text, so a query left in it would build paths
    such as ``/v1/?api-key=...completions`` and send the key in the URL: the credential goes to the caller (sent
    as the key), the rest of the query is sent as ``default_query``. Raises ValueError when the URL holds two
    different credentials (which one is meant cannot be guessed).
    """
    bare, password = split_credentials(url)
    parts = urllib.parse.urlsplit(bare)
    query: dict[str, str] = {}
    found: dict[str, str] = {}
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        (found if _CREDENTIAL_PARAM.search(name) else query)[name] = value
    keys = {v for v in [password, *found.values()] if v}
    if len(keys) > 1:
        raise ValueError(
            f"{public_url(bare)} carries {len(keys)} different credentials (password and/or query "
            f"parameters {', '.join(sorted(found))}); pass the key as api_key and a URL without them"
        )
    key = next(iter(keys), None)
    header = "api-key" if key and any(n.lower().replace("_", "-") == "api-key" for n in found) else None
    return Endpoint(public_url(bare), key, query, header)


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment, e.g. ``https://u:p@h:8/v1?k=x`` -> ``https://h:8/v1``."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _secrets_in_use() -> list[str]:
    env = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= MIN_SECRET_LENGTH}
    return sorted(_SECRETS | env, key=len, reverse=True)  # longest first: a secret containing another


def scrub(text: str) -> str:
    """``text`` with every key-shaped string and every secret in use (see :func:`register_secret`) masked.

    Key shapes first: masking a short registered secret first could cut a longer key out of its shape
    (``sk-test`` inside ``sk-test-...``) and leave the rest of it readable."""
    text = _SECRET_VALUE.sub("<redacted>", text)
    for secret in _secrets_in_use():
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text


def scrub_strings(obj: Any) -> Any:
    """A copy of ``obj`` (JSON-like) with :func:`scrub` applied to every string; keys are kept (a notebook)."""
    if isinstance(obj, Mapping):
        return {k: scrub_strings(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_strings(v) for v in obj]
    return scrub(obj) if isinstance(obj, str) else obj


def redact(obj: Any) -> Any:
    """A copy of ``obj`` with secret-looking keys dropped and secrets in strings masked (:func:`scrub`)."""
    if isinstance(obj, Mapping):
        return {k: redact(v) for k, v in obj.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return scrub(obj)
    return obj


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
