"""A fake OpenAI-compatible completions server backed by a real (tiny) transformers model, for tests.

``POST /v1/completions`` computes echoed log-probabilities with the model (float32 full forward), in the two
shapes real servers use: token-id prompts and lists of prompts (vLLM / SGLang: echoed tokens include a BOS
only if the ids do) and text prompts (llama-cpp-python: the server prepends BOS, hides it from the echo, puts
``None`` for the first echoed token and reports character ``text_offset``). ``style="generated_only"``
imitates llama.cpp's llama-server (log-probabilities for generated tokens only); ``ids=False`` refuses token
ids (HTTP ``ids_status``: 422, or 500 as llama-cpp-python 0.3.36 answers). Without ``echo`` the reply is a scripted generation
(``generation(prompt) -> text``). ``fault(body, n) -> None | name | int`` injects, from the n-th completions
request on, one of :data:`REPLY_FAULTS` (a malformed 200 reply), a transport fault (:data:`TRANSPORT_FAULTS`: a
dead replica, a reply held back, a reply trickled byte by byte) or an HTTP status; :func:`switch` makes the
usual one-fault switch. The fault server is bounded: it answers at most ``max_requests`` completions requests
(then HTTP 400, which ends any client loop), holds a reply back at most ``hold_s`` seconds and gives up at once
when the ``with`` block ends. ``GET /v1/models`` lists ``served_model``; ``POST /v1/chat/completions`` answers
"แชท: <last message>".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from local_http_server import LocalHTTPServer, ServerWithFake


def _last_prompt_token(fn: Callable[[dict, int], None]) -> Callable[[dict], None]:
    """A fault applied to every choice's logprobs at the last prompt position (a continuation token)."""

    def apply(payload: dict) -> None:
        for c in payload.get("choices", []):
            lp = c.get("logprobs")
            if lp:
                fn(lp, len(lp["token_logprobs"]) - 2)

    return apply


def _cut_echo(payload: dict) -> None:
    """Keep the echo of the first 60 % of the prompt tokens only (and no generated token)."""
    for c in payload.get("choices", []):
        lp = c.get("logprobs")
        if lp:
            keep = max(2, int(0.6 * (len(lp["token_logprobs"]) - 1)))
            for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
                lp[key] = lp[key][:keep]


def _zero_offsets(payload: dict) -> None:
    for c in payload.get("choices", []):
        if c.get("logprobs"):
            c["logprobs"]["text_offset"] = [0] * len(c["logprobs"]["text_offset"])


def _set_top(value: Any) -> Callable[[dict, int], None]:
    def apply(lp: dict, j: int) -> None:
        lp["top_logprobs"][j] = {k: value for k in lp["top_logprobs"][j]}

    return apply


def _set(key: str, value: Any) -> Callable[[dict, int], None]:
    def apply(lp: dict, j: int) -> None:
        lp[key][j] = value

    return apply


def _no_choices(payload: dict) -> None:
    payload["choices"] = []


def _no_logprobs(payload: dict) -> None:
    for c in payload.get("choices", []):
        c["logprobs"] = None


def _other_model(payload: dict) -> None:
    payload["model"] = "another-model"


#: Malformed 200 replies (the attacks of ``tests/test_served_faults.py``): name -> what it does to the reply payload, in place. The reply is
#: written with Python's ``json.dumps``, so NaN and infinities go out as ``NaN`` / ``-Infinity`` as a hostile or
#: buggy server would send them.
REPLY_FAULTS: dict[str, Callable[[dict], None]] = {
    "no_choices": _no_choices,
    "no_logprobs": _no_logprobs,
    "null_in_top_logprobs": _last_prompt_token(_set_top(None)),
    "nan_in_top_logprobs": _last_prompt_token(_set_top(float("nan"))),
    "null_text_offset": _last_prompt_token(_set("text_offset", None)),
    "text_offset_zz": _last_prompt_token(_set("text_offset", "zz")),
    "minus_inf_logprob": _last_prompt_token(_set("token_logprobs", float("-inf"))),
    "positive_logprob": _last_prompt_token(_set("token_logprobs", 0.5)),
    "string_logprob": _last_prompt_token(_set("token_logprobs", "-0.1")),
    "short_echo": _cut_echo,
    "repeated_offsets": _zero_offsets,
    "another_model": _other_model,
}
#: Transport faults: ``die`` drops the connection without a reply; ``hold`` sends nothing until ``hold_s`` has
#: passed (then drops it); ``trickle`` sends the reply one byte per 0.25 s (each read is quick, the reply never
#: ends in time).
TRANSPORT_FAULTS = ("die", "hold", "trickle")


def switch(name: str | int, *, after: int = 0) -> Callable[[dict, int], Any]:
    """The fault ``name`` on every completions request after the first ``after`` (e.g. the probe's)."""
    if not isinstance(name, int) and name not in REPLY_FAULTS and name not in TRANSPORT_FAULTS:
        raise ValueError(f"unknown fault {name!r}")
    return lambda body, n: name if n > after else None


class FakeCompletionsServer(LocalHTTPServer):
    """``with FakeCompletionsServer(model, tokenizer) as srv: srv.base_url, srv.bodies, srv.n_completions``.

    ``bodies``: every POST body (completions and chat) in arrival order; ``n_completions`` counts completions."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        served_model: str = "tiny",
        ids: bool = True,
        lists: bool = True,
        style: str = "echo",
        text_bos: bool = True,
        ids_status: int = 422,
        fault: Callable[[dict, int], Any] | None = None,
        generation: Callable[[Any], str] | None = None,
        owned_by: str = "fake",
        max_requests: int = 200,
        hold_s: float = 30.0,
    ) -> None:
        self.model, self.tok, self.served_model, self.owned_by = model, tokenizer, served_model, owned_by
        self.ids, self.lists, self.style, self.text_bos, self.ids_status = ids, lists, style, text_bos, ids_status
        self.fault, self.max_requests, self.hold_s = fault, max_requests, hold_s
        self.generation = generation or (lambda prompt: "ตอบ 42\n\nคำถาม: ต่อไป")
        self.bodies: list[dict] = []
        self.authorizations: list[str | None] = []  # the Authorization header of every request
        self.targets: list[tuple[str, str | None]] = []  # every request's target (path and query), api-key header
        self.n_completions = 0
        self._lock = threading.Lock()
        super().__init__(_Handler)

    # --- the model side ---------------------------------------------------------------------------------
    def _piece(self, tid: int) -> str:
        return self.tok.decode([tid]).replace("\ufffd", "")  # llama-cpp-python decodes with errors="ignore"

    def echo(self, ids: list[int], hidden_bos: bool, text: str | None) -> dict[str, Any]:
        """Echoed logprobs of ``ids`` (the first entry None) plus one greedy generated token."""
        import torch

        seq = ([self.tok.bos_token_id] if hidden_bos else []) + list(ids)
        with self._lock, torch.inference_mode():
            logp = torch.log_softmax(self.model(torch.tensor([seq])).logits[0].float(), dim=-1)
        off = 1 if hidden_bos else 0
        gen = int(logp[-1].argmax())
        tokens, values, tops, offsets = [], [], [], []
        full = list(ids) + [gen]
        for j, tid in enumerate(full):
            pos = j + off  # position of this token in seq (+ the generated one at the end)
            tokens.append(self._piece(tid))
            if pos == 0 or (j == 0 and hidden_bos):
                values.append(None)
                tops.append(None)
            else:
                row = logp[pos - 1]
                best = int(row.argmax())
                values.append(float(row[tid]))
                tops.append({self._piece(best): float(row[best]), self._piece(tid): float(row[tid])})
            if text is not None:
                offsets.append(len(self.tok.decode(full[:j]).rstrip("\ufffd")))
        if self.style == "generated_only":
            return {
                "tokens": tokens[-1:],
                "token_logprobs": values[-1:],
                "top_logprobs": tops[-1:],
                "text_offset": offsets[-1:] if offsets else None,
            }, gen
        return {
            "tokens": tokens,
            "token_logprobs": values,
            "top_logprobs": tops,
            "text_offset": offsets if text is not None else list(range(len(full))),
        }, gen

    def complete(self, body: dict) -> tuple[int, dict]:
        prompt = body.get("prompt")
        batch = prompt if isinstance(prompt, list) and prompt and isinstance(prompt[0], (list, str)) else [prompt]
        if any(isinstance(p, list) for p in batch) and not self.ids:
            return self.ids_status, {"detail": [{"msg": "Input should be a valid string", "loc": ["body", "prompt"]}]}
        if len(batch) > 1 and not self.lists:
            return 400, {"error": {"message": "one prompt per request"}}
        choices, n_prompt = [], 0
        for k, p in enumerate(batch):
            if not body.get("echo"):
                choices.append({"index": k, "text": self.generation(p), "finish_reason": "stop", "logprobs": None})
                continue
            if isinstance(p, str):
                ids = self.tok(p, add_special_tokens=False)["input_ids"]
                lp, gen = self.echo(ids, self.text_bos, p)
                n_prompt += len(ids) + self.text_bos
            else:
                lp, gen = self.echo(list(p), False, None)
                n_prompt += len(p)
            text = (p if isinstance(p, str) else self.tok.decode(p)) + self._piece(gen)
            choices.append({"index": k, "text": text, "finish_reason": "length", "logprobs": lp})
        return 200, {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": 0,
            "model": self.served_model,
            "choices": choices,
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": len(batch),
                "total_tokens": n_prompt + len(batch),
            },
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ServerWithFake

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict, *, trickle: bool = False) -> None:
        """The JSON reply; ``trickle``: headers at once, then the body one byte per 0.25 s, for at most
        ``hold_s`` seconds (the ``trickle`` fault)."""
        data = json.dumps(payload).encode("utf-8")
        fake = self.server.fake
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not trickle:
                self.wfile.write(data)
                return
            self.wfile.flush()
            for k in range(min(len(data), int(fake.hold_s / 0.25))):
                if fake.stopping.wait(0.25):
                    break
                self.wfile.write(data[k : k + 1])
                self.wfile.flush()
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self.server.fake.authorizations.append(self.headers.get("Authorization"))
        self.server.fake.targets.append((self.path, self.headers.get("api-key")))
        if self.path.split("?")[0].rstrip("/") == "/v1/models":
            self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.server.fake.served_model,
                            "object": "model",
                            "created": 0,
                            "owned_by": self.server.fake.owned_by,
                        }
                    ],
                },
            )
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        fake.authorizations.append(self.headers.get("Authorization"))
        fake.targets.append((self.path, self.headers.get("api-key")))
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        path = self.path.split("?")[0].rstrip("/")
        if path == "/v1/chat/completions":
            with fake._lock:
                fake.bodies.append(body)
            text = "แชท: " + body["messages"][-1]["content"]
            self._send(
                200,
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": fake.served_model,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                },
            )
            return
        if path != "/v1/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        with fake._lock:
            fake.n_completions += 1
            n = fake.n_completions
            fake.bodies.append(body)
        if n > fake.max_requests:  # bounded: a client that never stops asking gets a 400 (no retry)
            self._send(400, {"error": {"message": f"fault server: more than {fake.max_requests} requests"}})
            return
        action = fake.fault(body, n) if fake.fault else None
        if action in ("die", "hold"):  # a replica going away, or one that never answers
            if action == "hold":
                fake.stopping.wait(fake.hold_s)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(action, int):
            self._send(action, {"error": {"message": "scripted failure", "type": "server_error"}})
            return
        status, payload = fake.complete(body)
        if action in REPLY_FAULTS:
            REPLY_FAULTS[action](payload)
        self._send(status, payload, trickle=action == "trickle")
