"""Stop strings, as lm-evaluation-harness's ``generate_until`` applies them: keep the text before the first stop."""

from __future__ import annotations

from collections.abc import Sequence


def cut_at_stop(text: str, stop: Sequence[str] | str | None) -> str:
    """``text`` cut before the earliest occurrence of any stop string (empty stop strings are ignored).

    Example: ``cut_at_stop("ตอบ: 42\\n\\nQuestion: x", [":", "Question:"])`` -> ``"ตอบ"``.
    """
    if not stop:
        return text
    stops = [stop] if isinstance(stop, str) else list(stop)
    return text[: min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=len(text))]
