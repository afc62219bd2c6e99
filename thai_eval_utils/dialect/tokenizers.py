"""Word tokenizers for the dialect metrics, chosen by name as sacrebleu chooses its own (``tokenize="13a"``).

BLEU and ROUGE-L count words, and Thai writes no spaces between words, so the tokenizer is part of the score:
its name goes into every signature. Registered:

- ``newmm`` (the default and the paper's, arXiv 2504.05898, ``evaluation/metrics_utils.py``):
  ``pythainlp.word_tokenize(text, engine="newmm")`` with its default ``keep_whitespace=True``: each run of
  whitespace is one token holding that run (``"a  b"`` -> ``["a", "  ", "b"]``), so spaces count as words.
- ``longest``: pythainlp's longest-matching engine, whitespace kept (a run of spaces is one token per space).
- ``whitespace``: ``str.split()``, no Thai word segmentation (a Thai sentence without spaces is one token).

Each tokenizer is built once (:func:`get_tokenizer` caches it). newmm's dictionary changes between pythainlp
releases (5.4.0 tokenises 42 of the benchmark's 3,419 texts differently from the paper's 5.0.4; BLEU moves by at
most 0.043), so a pythainlp tokenizer's signature holds the version and building one under another version warns.
"""

from __future__ import annotations

import functools
import importlib.metadata
import warnings
from collections.abc import Callable
from dataclasses import dataclass


#: The pythainlp release the paper's code ran with (newmm output depends on it).
PAPER_PYTHAINLP_VERSION = "5.0.4"
#: The paper's tokenizer.
DEFAULT_TOKENIZER = "newmm"


@functools.lru_cache(maxsize=1)  # read once: bootstraps recompute BLEU (and this signature) thousands of times
def pythainlp_version() -> str:
    """The installed pythainlp version (recorded with every dialect score)."""
    return importlib.metadata.version("pythainlp")


def pythainlp_words(text: str, engine: str) -> list[str]:
    """``pythainlp.word_tokenize(text, engine=engine)`` with its whitespace tokens kept (the paper's call)."""
    from pythainlp import word_tokenize  # seconds to import: loaded by the first run that scores words

    return word_tokenize(text, engine=engine, keep_whitespace=True)


@dataclass(frozen=True)
class WordTokenizer:
    """A named word tokenizer with a signature; usable as a rouge-score tokenizer (``.tokenize``).

    Example: ``get_tokenizer("newmm").tokenize("กินข้าว  แล้ว")`` -> ``["กินข้าว", "  ", "แล้ว"]``.
    """

    name: str
    split: Callable[[str], list[str]]
    keep_whitespace: bool
    uses_pythainlp: bool

    def tokenize(self, text: str | None) -> list[str]:
        """The tokens of ``text`` (None counts as ""); never Unicode-normalised."""
        return self.split(text or "")

    __call__ = tokenize

    @property
    def signature(self) -> str:
        """``tok:<name>|keep_ws:<yes|no>``, plus ``|pythainlp:<version>`` for pythainlp's engines."""
        sig = f"tok:{self.name}|keep_ws:{'yes' if self.keep_whitespace else 'no'}"
        return sig + (f"|pythainlp:{pythainlp_version()}" if self.uses_pythainlp else "")


def _cached(split: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``split`` with each distinct text tokenised once (a bootstrap rescores the same sentences thousands of
    times); a fresh list is returned every call, so callers may change it."""
    memo = functools.lru_cache(maxsize=200_000)(lambda text: tuple(split(text)))
    return lambda text: list(memo(text))


def _pythainlp(name: str, engine: str) -> Callable[[], WordTokenizer]:
    @functools.cache  # built once (the registry's builders are cached: a tokenizer, and its warning, once per name)
    def build() -> WordTokenizer:
        if pythainlp_version() != PAPER_PYTHAINLP_VERSION:
            warnings.warn(
                f"pythainlp {pythainlp_version()} is installed; the paper's scores used {PAPER_PYTHAINLP_VERSION} "
                f"({engine} output, and so BLEU/ROUGE-L, can differ slightly)",
                stacklevel=2,  # the line of get_tokenizer that built it
            )
        return WordTokenizer(name, _cached(functools.partial(pythainlp_words, engine=engine)), True, True)

    return build


_REGISTRY: dict[str, Callable[[], WordTokenizer]] = {
    "newmm": _pythainlp("newmm", "newmm"),
    "longest": _pythainlp("longest", "longest"),
    "whitespace": functools.cache(lambda: WordTokenizer("whitespace", str.split, False, False)),
}


def tokenizer_names() -> list[str]:
    """The registered tokenizer names, sorted."""
    return sorted(_REGISTRY)


def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> WordTokenizer:
    """The tokenizer registered under ``name``, built on first use and cached.

    Raises:
        ValueError: ``name`` is not registered (the message lists the registered names).
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown word tokenizer {name!r}; registered: {', '.join(tokenizer_names())}")
    return _REGISTRY[name]()
