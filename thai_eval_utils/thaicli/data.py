"""ThaiCLI loaders (Kim et al., arXiv 2410.04795, section 4; repo UpstageAI/ThaiCLI_H6 ``cli/``): question,
chosen and rejected answer triplets from the official ``CLI_{factoid,instruction}`` files or flat files.

Every bad input raises :class:`ThaiEvalDataError` naming file, row and field; everything is validated
before anything is returned. Thai text is returned exactly as stored (never Unicode-normalised).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.records import find_data_file, read_records, require_text

__all__ = ["THAICLI_FORMATS", "load_thaicli"]


THAICLI_FORMATS = ("factoid", "instruction")
_THAICLI_COLUMNS = ["id", "format", "theme", "question", "chosen", "rejected"]
#: The seven ThaiCLI themes (Kim et al. 2024, section 4; the official files' ``theme`` values).
THAICLI_THEMES = ("Royal Family", "Religion", "Culture", "Economy", "Humanity", "Lifestyle", "Politics")


def _question_text(value: Any) -> str | None:
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, Mapping):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _answer_pair(value: Any) -> tuple[str, str] | str:
    """(chosen, rejected) from the official ``answers`` list, or the reason it is invalid."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return f"answers is not valid JSON ({exc.msg})"
    if not isinstance(value, list) or not all(isinstance(a, Mapping) for a in value):
        return f"answers must be a list of {{'content', 'score'}} objects, got {value!r:.80}"
    chosen = [a.get("content") for a in value if a.get("score") == 1]  # strings ("1") never compare equal
    rejected = [a.get("content") for a in value if a.get("score") == 0]
    other = len(value) - len(chosen) - len(rejected)
    if len(chosen) != 1 or len(rejected) != 1 or other:
        return (
            f"expected exactly one chosen (score 1) and one rejected (score 0) answer, found {len(chosen)} chosen, "
            f"{len(rejected)} rejected and {other} other"
        )
    if not isinstance(chosen[0], str) or not isinstance(rejected[0], str):
        return "answer contents must be strings"
    return chosen[0], rejected[0]


def _thaicli_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if not source.exists():
        raise ThaiEvalDataError("file or folder not found", path=source)
    directory = source / "cli" if (source / "cli").is_dir() else source
    files = [p for stem in ("CLI_factoid", "CLI_instruction") if (p := find_data_file(directory, stem))]
    if not files:
        raise ThaiEvalDataError(
            "no ThaiCLI file found (expected CLI_factoid.* and/or CLI_instruction.*)", path=directory
        )
    return files


def _read_thaicli_file(path: Path) -> list[dict[str, Any]]:
    name_format = next((f for f in THAICLI_FORMATS if f in path.stem.lower()), None)
    records = read_records(path, {"question": (str, dict, list), "theme": str})
    official = "answers" in records[0]
    out, seen = [], {}
    for i, rec in enumerate(records):
        bad = functools.partial(ThaiEvalDataError, path=path, row=i)  # an error naming this row
        fmt = rec.get("format", name_format)
        fmt = fmt.strip().lower() if isinstance(fmt, str) else fmt
        if fmt not in THAICLI_FORMATS or (name_format and fmt != name_format):
            said = f" (file name says {name_format})" if name_format else ""
            why = f"format {rec.get('format')!r} is not factoid/instruction{said}"
            if fmt is None:
                why = "no format: name the file CLI_factoid/CLI_instruction or add a 'format' column"
            raise bad(why, field="format")
        question = _question_text(rec["question"])
        if question is None:
            raise bad("question must be a string or a {'content', 'role'} message", field="question")
        if official:
            if "answers" not in rec:
                raise bad(f"missing field 'answers'; fields found: {', '.join(rec)}", field="answers")
            pair = _answer_pair(rec["answers"])
            if isinstance(pair, str):
                raise bad(pair, field="answers")
        else:
            if rec["theme"] not in THAICLI_THEMES:
                raise bad(f"unknown theme {rec['theme']!r}; the themes are {', '.join(THAICLI_THEMES)}", field="theme")
            for name in ("chosen", "rejected"):
                if name not in rec:
                    raise bad(f"missing field {name!r}; fields found: {', '.join(rec)}", field=name)
                if not isinstance(rec[name], str):
                    raise bad(f"expected str, got {type(rec[name]).__name__}", field=name)
            pair = (rec["chosen"], rec["rejected"])
        require_text(question, path=path, row=i, field="question")  # not empty, not "NaN"
        for name, text in zip(("chosen", "rejected"), pair):
            require_text(text, path=path, row=i, field="answers" if official else name)
        rid = rec.get("id")
        if rid is None:  # flat files may lack ids: derive a stable 32-hex one
            rid = hashlib.md5(f"{fmt}\n{question}".encode()).hexdigest()
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):
            raise bad(f"expected str or int, got {type(rid).__name__}", field="id")
        if str(rid) in seen:
            raise bad(f"duplicate id {rid!r} (also row {seen[str(rid)]})", field="id")
        seen[str(rid)] = i
        out.append(dict(zip(_THAICLI_COLUMNS, (str(rid), fmt, rec["theme"], question, *pair))))
    return out


def load_thaicli(source: str | Path) -> pd.DataFrame:
    """Load ThaiCLI triplets: official ``cli/CLI_{factoid,instruction}.parquet`` or flat files.

    Args:
        source: the repository root, its ``cli/`` folder, or one file. Official rows have ``id``,
            ``question`` (a ``{"content", "role"}`` message or a string), ``answers`` (a list of
            ``{"content", "score": 1|0}``) and ``theme``; flat rows have ``question, chosen, rejected,
            theme`` (``id`` optional; ``theme`` one of :data:`THAICLI_THEMES`). The format comes from the file
            name or a ``format`` column.

    Returns:
        DataFrame with columns ``id, format, theme, question, chosen, rejected`` in file order
        (factoid file first); ``df.attrs["files"]`` lists the files read.

    Raises:
        ThaiEvalDataError: e.g. a row without exactly one chosen and one rejected answer (field ``answers``).
    """
    files = _thaicli_files(Path(source))
    rows = [r for path in files for r in _read_thaicli_file(path)]
    df = pd.DataFrame(rows, columns=_THAICLI_COLUMNS, dtype=object)
    df.attrs["files"] = files
    return df
