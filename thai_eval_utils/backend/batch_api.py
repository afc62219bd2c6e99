"""The OpenAI Batch API as a batch transport (:class:`thai_eval_utils.core.batch_rounds.BatchTransport`):
upload a JSONL input file (``files.create(purpose="batch")``), create a batch on ``/v1/chat/completions`` with a 24 h
window, retrieve it, read its output and error files, and find the batch made from an input file (a run killed
between ``create`` and writing the batch id). The client is the ``ApiModel``'s endpoint and key (its
:class:`~thai_eval_utils.backend.client_options.ClientOptions`): the key is sent as the Bearer token and is never
written; every error is re-raised as an :class:`ApiError` whose text is scrubbed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import openai

from thai_eval_utils.backend.api_replies import ApiError, describe_error
from thai_eval_utils.backend.openai_client import ApiModel, public_base_url
from thai_eval_utils.core.batch_files import chat_body

#: The Batch API's completion window (the only one it offers).
COMPLETION_WINDOW = "24h"
ENDPOINT = "/v1/chat/completions"


class OpenAIBatchTransport:
    """Batches on ``model``'s endpoint with its key; request bodies as ``ApiSession.complete`` sends them."""

    def __init__(self, model: ApiModel) -> None:
        self.model = model
        self._client: openai.OpenAI | None = None
        _ = model.identity  # the server software, asked once as a live session does (its sampling overrides)

    def __repr__(self) -> str:
        return f"OpenAIBatchTransport({self.model!r})"

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            self._client = openai.OpenAI(**self.model.options.client_kwargs())
        return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except openai.APIError as exc:
            raise ApiError(f"batch {what}: {describe_error(exc)}") from None

    @property
    def endpoint(self) -> dict[str, str]:
        """Where the batches are (recorded in ``batch.json`` for ``thai-eval batch``): the public base URL (no
        credentials, no query) and the model id."""
        return {"base_url": public_base_url(self.model.base_url), "model": self.model.model_id}

    def body(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int | None,
        stop: Sequence[str] | str | None = None,
    ) -> dict[str, Any]:
        """A request body as ``ApiSession.complete`` sends it (seed and stop only when set)."""
        body = chat_body(
            self.model.model_id,
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            stop=stop,
        )
        body.update(self.model.sampling_overrides)  # extra_body's fields, as the live client sends them
        return body

    def observe(self, reply: Any) -> None:
        """Note a batch reply's served model id and fingerprint on the model (its ``identity``, as live calls do)."""
        if reply.model:
            self.model._served_models.add(reply.model)
        if reply.system_fingerprint:
            self.model._fingerprints.add(reply.system_fingerprint)

    def upload(self, data: bytes) -> str:
        return str(self._call("upload", self.client.files.create, file=("batch_input.jsonl", data), purpose="batch").id)

    def create(self, input_file_id: str, metadata: Mapping[str, str]) -> str:
        batch = self._call(
            "create",
            self.client.batches.create,
            input_file_id=input_file_id,
            endpoint=ENDPOINT,
            completion_window=COMPLETION_WINDOW,
            metadata=dict(metadata),
        )
        return str(batch.id)

    def find(self, input_file_id: str) -> str | None:
        page = self._call("list", self.client.batches.list, limit=100)
        for batch in getattr(page, "data", None) or []:
            if getattr(batch, "input_file_id", None) == input_file_id:
                return str(batch.id)
        return None

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        batch = self._call("retrieve", self.client.batches.retrieve, batch_id)
        counts = getattr(batch, "request_counts", None)
        return {
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "request_counts": {
                "total": getattr(counts, "total", 0),
                "completed": getattr(counts, "completed", 0),
                "failed": getattr(counts, "failed", 0),
            },
            "errors": batch.errors.model_dump() if getattr(batch, "errors", None) else None,
        }

    def content(self, file_id: str) -> str:
        return str(self._call("download", self.client.files.content, file_id).text)

    def cancel(self, batch_id: str) -> None:
        self._call("cancel", self.client.batches.cancel, batch_id)
