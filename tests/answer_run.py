"""Helpers of ``tests/test_answer_batch.py`` that its subprocesses import (no benchmark, no pandas: a subprocess starts
in a few seconds): :func:`answer_run`, the smallest generation run on the package's run loop (``RunStore`` +
``run_items`` + ``model.chat``: the mechanism every benchmark's generation run uses), and :class:`Echo`, the stand-in
model behind the fake servers and the stand-in for ``vllm run-batch``."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from fake_openai_server import Reply

from thai_eval_utils.backend.api_replies import ApiError
from thai_eval_utils.core.runloop import run_items
from thai_eval_utils.core.store import RunStore


def answer_run(model: Any, questions: list[str], outputs: str | Path) -> list[str | None]:
    """Answer each question (one user turn, greedy, 64 tokens); the stored answers, None where ungenerated."""
    keys = [f"q{i}" for i in range(len(questions))]

    def answer(rows: list[int]) -> list[dict[str, Any]]:
        texts = model.chat([[{"role": "user", "content": questions[i]}] for i in rows], max_new_tokens=64, seed=1)
        return [{"answer": t} for t in texts]

    with RunStore.open(
        model.name, "test/answers", {"max_new_tokens": 64}, model_identity={"name": model.name}, outputs=outputs
    ) as store:
        run = run_items(
            store,
            range(len(questions)),
            keys.__getitem__,
            answer,
            batch_size=getattr(model, "concurrency", 4),
            desc="answers",
            progress=False,
            tolerate=(ApiError,),
            fields={"answer": str},
        )
    return [run.records[k]["answer"] if k in run.records else None for k in keys]


class Echo:
    """A stand-in model behind the fake servers: the reply to a conversation is fixed by its last message
    (``"ตอบ "``, a hash of it and its last 12 characters), unless a script for a marker in the message says otherwise
    (its actions in order, then the default reply)."""

    def __init__(self, scripts: dict[str, list[Any]] | None = None) -> None:
        self.scripts = {k: list(v) for k, v in (scripts or {}).items()}
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    @staticmethod
    def text(content: str) -> str:
        return f"ตอบ {hashlib.sha256(content.encode()).hexdigest()[:6]} " + content.strip()[-12:]

    def __call__(self, body: dict[str, Any]) -> Any:
        content = body["messages"][-1]["content"]
        with self._lock:
            self.calls[content] += 1
            for marker, queue in self.scripts.items():
                if marker in content and queue:
                    return queue.pop(0)
        return Reply(self.text(content))


def run_batch_file(model: Any, requests: str | Path, replies: str | Path) -> int:
    """A stand-in for ``vllm run-batch -i requests -o replies``: every request of a Batch API input file answered by
    ``model.chat`` with the request's own settings, one output line each (the Batch API's output format); the count."""
    import json

    from fake_batch_server import FakeBatchServer

    lines = [json.loads(x) for x in Path(requests).read_text(encoding="utf-8").splitlines() if x.strip()]
    with open(replies, "w", encoding="utf-8") as out:
        for n, req in enumerate(lines):
            body = req["body"]
            text = model.chat(
                [body["messages"]],
                max_new_tokens=body["max_tokens"],
                temperature=body["temperature"],
                top_p=body["top_p"],
                seed=body.get("seed"),
                stop=body.get("stop"),
            )[0]
            _, line = FakeBatchServer.answer_line(req, Reply(text), model.name, f"req-{n}")
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(lines)
