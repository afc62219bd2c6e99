"""Fixture maker for tests/test_thinking.py: the scored text that lighteval's and lm-eval's own functions
give for hand-made replies, written to tests/data/thinking/reference_cuts.json.

The two functions are read unchanged from the fetched repositories (no import of either package, so no side
environment is needed: both functions are pure Python):
  lighteval  src/lighteval/utils/utils.py          remove_reasoning_tags       (commit printed in the fixture)
  lm-eval    lm_eval/models/utils.py               postprocess_generated_text  (stop=None)

Usage: python benchmarks/thinking_reference.py LIGHTEVAL_GIT_DIR LM_EVAL_GIT_DIR
(e.g. /work/.mirror/huggingface+lighteval/repo /work/.mirror/EleutherAI+lm-evaluation-harness/repo).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

CASES = {
    "closed": "<think>คิดก่อน 2+2=4</think>คำตอบคือ 4",
    "closed_newlines": "<think>\nreasoning\n</think>\n\nThe answer is 4",
    "unclosed": "<think>คิดไปเรื่อย ๆ แต่ไม่จบ",
    "twice": "<think>a</think>ตอบหนึ่ง <think>b</think>ตอบสอง",
    "close_without_open": "เหตุผลในใจ</think>คำตอบ",
    "close_then_block": "x</think>y<think>z</think>w",
    "closed_then_unclosed": "<think>a</think>คำตอบ<think>ยังคิดอยู่",
    "nested": "<think>a<think>b</think>c</think>d",
    "no_thinking": "คำตอบคือ 42",
    "empty": "",
    "empty_block": "<think></think>ตอบ",
    "text_before_block": "ก่อน <think>คิด</think> หลัง",
}


def function_from(git_dir: str, path: str, name: str) -> tuple[object, str]:
    """The function ``name`` of ``path`` at the repository's HEAD, compiled alone, and the commit."""
    source = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True, capture_output=True, text=True
    ).stdout
    commit = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict[str, object] = {}
    exec(
        compile("from __future__ import annotations\n" + ast.get_source_segment(source, node), path, "exec"), namespace
    )
    return namespace[name], commit


def main(lighteval_dir: str, lm_eval_dir: str) -> None:
    lighteval, le_commit = function_from(lighteval_dir, "src/lighteval/utils/utils.py", "remove_reasoning_tags")
    lm_eval, lm_commit = function_from(lm_eval_dir, "lm_eval/models/utils.py", "postprocess_generated_text")
    out = {
        "lighteval": {
            "repo": "huggingface/lighteval",
            "commit": le_commit,
            "function": "src/lighteval/utils/utils.py:remove_reasoning_tags",
        },
        "lm-eval": {
            "repo": "EleutherAI/lm-evaluation-harness",
            "commit": lm_commit,
            "function": "lm_eval/models/utils.py:postprocess_generated_text (stop=None)",
        },
        "cases": {},
    }
    for name, raw in CASES.items():
        out["cases"][name] = {
            "raw": raw,
            "lighteval": lighteval(raw, [("<think>", "</think>")]),
            "lm-eval": lm_eval(raw, None, "</think>"),
        }
    target = Path(__file__).resolve().parents[1] / "tests" / "data" / "thinking" / "reference_cuts.json"
    target.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}: {len(CASES)} cases")


if __name__ == "__main__":
    main(*sys.argv[1:3])
