"""A fake OpenAI-compatible completions server backed by a real (tiny) transformers model, for tests.

``POST /v1/completions`` computes echoed log-probabilities with the model (float32 full forward), in the two
shapes real servers use: token-id prompts and lists of prompts (vLLM / SGLang: echoed tokens include a BOS
only if the ids do) and text prompts (llama-cpp-python: the server prepends BOS, hides it from the echo, puts
``None`` for the first echoed token and reports character ``text_offset``). ``style="generated_only"``
imitates llama.cpp's llama-server (log-probabilities for generated tokens only); ``ids=False`` refuses token
ids (HTTP ``ids_status``: 422, or 500 as llama-cpp-python 0.3.36 answers). Without ``echo`` the reply is a scripted generation
(``generation(prompt) -> text``). ``fault(body, n) -> None | "no_choices" | "no_logprobs" | "die" | int``
injects malformed replies, a dead replica (connection dropped) or an HTTP status. ``GET /v1/models`` lists
``served_model``; ``POST /v1/chat/completions`` answers "แชท: <last message>".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from local_http_server import LocalHTTPServer, ServerWithFake


class FakeCompletionsServer(LocalHTTPServer):
    """``with FakeCompletionsServer(model, tokenizer) as srv: srv.base_url, srv.bodies, srv.n_completions``.

    ``bodies``: every POST body (completions and chat) in arrival order; ``n_completions`` counts completions."""

    def __init__(self, model: Any, tokenizer: Any, *, served_model: str = "tiny", ids: bool = True,
                 lists: bool = True, style: str = "echo", text_bos: bool = True, ids_status: int = 422,
                 fault: Callable[[dict, int], Any] | None = None,
                 generation: Callable[[Any], str] | None = None, owned_by: str = "fake") -> None:
        self.model, self.tok, self.served_model, self.owned_by = model, tokenizer, served_model, owned_by
        self.ids, self.lists, self.style, self.text_bos, self.ids_status = ids, lists, style, text_bos, ids_status
        self.fault = fault
        self.generation = generation or (lambda prompt: "ตอบ 42\n\nคำถาม: ต่อไป")
        self.bodies: list[dict] = []
        self.authorizations: list[str | None] = []  # the Authorization header of every request
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
            return {"tokens": tokens[-1:], "token_logprobs": values[-1:], "top_logprobs": tops[-1:],
                    "text_offset": offsets[-1:] if offsets else None}, gen
        return {"tokens": tokens, "token_logprobs": values, "top_logprobs": tops,
                "text_offset": offsets if text is not None else list(range(len(full)))}, gen

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
        return 200, {"id": "cmpl-fake", "object": "text_completion", "created": 0, "model": self.served_model,
                     "choices": choices, "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(batch),
                                                   "total_tokens": n_prompt + len(batch)}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ServerWithFake

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self.server.fake.authorizations.append(self.headers.get("Authorization"))
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": self.server.fake.served_model, "object": "model",
                                                          "created": 0, "owned_by": self.server.fake.owned_by}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        fake.authorizations.append(self.headers.get("Authorization"))
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        path = self.path.rstrip("/")
        if path == "/v1/chat/completions":
            with fake._lock:
                fake.bodies.append(body)
            text = "แชท: " + body["messages"][-1]["content"]
            self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": fake.served_model,
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                          "finish_reason": "stop"}]})
            return
        if path != "/v1/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        with fake._lock:
            fake.n_completions += 1
            n = fake.n_completions
            fake.bodies.append(body)
        action = fake.fault(body, n) if fake.fault else None
        if action == "die":  # a replica going away: drop the connection without a reply
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(action, int):
            self._send(action, {"error": {"message": "scripted failure", "type": "server_error"}})
            return
        status, payload = fake.complete(body)
        if action == "no_choices":
            payload["choices"] = []
        elif action == "no_logprobs":
            for c in payload.get("choices", []):
                c["logprobs"] = None
        self._send(status, payload)
