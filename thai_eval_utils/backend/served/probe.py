"""The probe of a served model's servers, run once before the first request (:meth:`.model.ServedModel.probe`).

Every replica must serve the same model ids including ``model_id``; a scoring request on a short Thai text must
echo a log-probability for every prompt token (llama.cpp's C++ ``llama-server`` returns them only for generated
tokens and is refused), and the echoed tokens must agree with the local tokenizer. The probe also decides the
prompt form (token ids where the server takes them, else text) and, for text, whether the server prepends BOS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai

from thai_eval_utils.backend.api_replies import describe_error
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.backend.openai_client import server_from_owners
from thai_eval_utils.backend.served.completions import SCORING_PARAMS, check_model, choices_in_order
from thai_eval_utils.backend.served.replicas import MalformedReply, Pool, RequestDeadline, within_deadline

#: Probe text: Thai with spaces, digits and a line break (what Thai-H6 prompts contain); written for this check.
#: Kept short: llama-cpp-python spends ~0.6 s per echoed token on Gemma 3's 262k vocabulary (2 CPU cores).
PROBE_TEXT = "ถาม: น้ำเดือด\nตอบ: 100 องศา"


@dataclass
class ProbeResult:
    """What the probe found: the prompt form, the server's BOS on text prompts, served ids, completions."""

    prompt_form: str | None = None  # "token ids" / "text" / None (no usable echo: loglikelihood refused)
    text_bos: bool | None = None
    served_models: list[str] = field(default_factory=list)
    completions: bool = True
    refusal: str | None = None
    server: str | None = None  # the server software, when its /v1/models entries name it (SERVER_BY_OWNER)


def _pieces_agree(server: list[str], local: list[str]) -> bool:
    """Echoed token strings against local ones: same count, and equal (stripped) wherever both are whole text."""
    if len(server) != len(local):
        return False
    return all(s.strip() == t.strip() for s, t in zip(server, local) if s and t and "\ufffd" not in s + t)


@dataclass
class Prober:
    """What the probe checks against: the model id, the local tokenizer (None: no tokenizer check, text prompts
    only), its spec (for messages), the prompt form asked for and the BOS asked for (None: the server's choice)."""

    model_id: str
    tokenizer: Any
    tokenizer_spec: Any
    prompt: str = "auto"
    bos_wanted: bool | None = None

    async def run(self, pool: Pool) -> ProbeResult:
        """Probe every replica of ``pool`` (entered); ModelLoadError naming the server for any failed check."""
        result = ProbeResult()
        result.served_models = await pool.check_model(self.model_id)
        result.server = server_from_owners({o for r in pool.replicas for o in r.owned_by})
        for r in pool.replicas:
            got = await self._probe_calls(r.client, r.public, pool.deadline)
            try:
                self._probe_replica(result, r.public, got)
            except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # odd types in the echo
                raise ModelLoadError(f"{r.public}: malformed probe reply ({type(exc).__name__}: {exc})"[:600]) from None
        if result.prompt_form == "text" and self.bos_wanted is not None and bool(self.bos_wanted) != result.text_bos:
            raise ModelLoadError(
                f"{pool.describe()} {'prepends' if result.text_bos else 'does not prepend'} BOS to text "
                f"prompts, so add_bos_token={self.bos_wanted} cannot be honoured; pass "
                f"add_bos_token=None to accept the server's choice, or serve with vLLM/SGLang (token ids)"
            )
        return result

    async def _probe_calls(self, client: Any, where: str, deadline: float | None) -> dict[str, Any]:
        """Raw probe replies of one replica: ``ids`` (token-id prompt), ``text`` (text prompt), errors."""
        out: dict[str, Any] = {}

        async def call(payload: Any, retries: int | None = None) -> Any:
            c = client if retries is None else client.with_options(max_retries=retries)
            try:
                resp = await within_deadline(
                    c.completions.create(model=self.model_id, prompt=payload, **SCORING_PARAMS), deadline
                )
                check_model(resp, self.model_id)
            except (RequestDeadline, MalformedReply) as exc:
                raise ModelLoadError(f"probe of {where} failed: {exc}") from None
            return resp

        try:
            out["text"] = await call(PROBE_TEXT)
        except openai.NotFoundError as exc:
            out["no_completions"] = describe_error(exc)
            return out
        except openai.APIError as exc:
            raise ModelLoadError(f"probe of {where} failed: {describe_error(exc)}") from None  # no raw server text
        tok = self.tokenizer
        if tok is not None:
            out["local"] = tok(PROBE_TEXT, add_special_tokens=False)["input_ids"]
        if tok is not None and self.prompt in ("auto", "tokens"):
            try:  # a server that takes only text answers 400/422 (llama-cpp-python: 500 with validation errors)
                out["ids"] = await call(list(out["local"]), retries=0)
            except openai.APIStatusError as exc:
                out["ids_refused"] = describe_error(exc)
            except openai.APIError as exc:
                raise ModelLoadError(f"probe of {where} failed: {describe_error(exc)}") from None  # no raw server text
        return out

    def _probe_replica(self, result: ProbeResult, where: str, got: dict[str, Any]) -> None:
        """Fold one replica's replies into ``result``: its prompt form and BOS, which must match the others'."""
        if "no_completions" in got:
            result.completions = False
            result.refusal = f"{where} has no /v1/completions endpoint ({got['no_completions']})"
            return
        form, bos = self._check_text_echo(where, got["text"], got.get("local"))
        if "ids" in got:
            self._check_id_echo(where, got["ids"], got["text"], len(got["local"]))
            form = "token ids"
        elif self.prompt == "tokens":
            raise ModelLoadError(
                f"{where} does not take token ids as the prompt ({got.get('ids_refused')}); use prompt='text'"
            )
        if result.prompt_form not in (None, form) or (result.text_bos is not None and result.text_bos != bos):
            raise ModelLoadError(
                f"replicas behave differently ({where}: prompt as {form}, BOS {bos}); refusing to mix them"
            )
        result.prompt_form, result.text_bos = form, bos

    def _echo_fields(self, where: str, resp: Any) -> dict[str, Any]:
        """The ``logprobs`` of an echoed probe reply as a dict; ModelLoadError when the echo has none."""
        try:
            choice = choices_in_order(resp, 1)[0]
            lp = choice.logprobs
            lp = lp if isinstance(lp, dict) else (lp.model_dump() if lp is not None else {})
        except MalformedReply as exc:
            raise ModelLoadError(f"{where}: malformed probe reply ({exc})") from None
        missing = [k for k in ("tokens", "token_logprobs", "top_logprobs") if not isinstance(lp.get(k), list)]
        if missing:
            raise ModelLoadError(
                f"{where} returned no {', '.join('logprobs.' + m for m in missing)} for an echoed prompt "
                "(echo=true, logprobs=1): it cannot score answer choices. llama.cpp's llama-server gives "
                "log-probabilities only for generated tokens; serve the model with vLLM, SGLang or "
                "llama-cpp-python instead"
            )
        return lp

    def _check_text_echo(self, where: str, resp: Any, local: list[int] | None) -> tuple[str, bool]:
        """Check the text prompt's echo (every prompt token scored, same tokens as the local tokenizer, at their
        offsets); returns ``("text", whether the server prepends BOS)``."""
        lp = self._echo_fields(where, resp)
        offsets, values = lp.get("text_offset") or [], lp["token_logprobs"]
        n_prompt = sum(1 for o in offsets if o < len(PROBE_TEXT)) if offsets else len(values) - 1
        scored = [v for v in values[1:n_prompt] if isinstance(v, (int, float))]
        if n_prompt < 2 or len(scored) < n_prompt - 1:
            raise ModelLoadError(
                f"{where} echoed log-probabilities for {len(scored)} of {n_prompt} prompt tokens "
                "(only generated tokens are scored): it cannot score answer choices. llama.cpp's "
                "llama-server does this; serve the model with vLLM, SGLang or llama-cpp-python instead"
            )
        pieces = lp["tokens"][:n_prompt]
        visible_bos = bool(
            self.tokenizer is not None and pieces and self.tokenizer.bos_token and pieces[0] == self.tokenizer.bos_token
        )
        if visible_bos:
            pieces = pieces[1:]
        usage = getattr(resp, "usage", None)
        hidden_bos = bool(usage is not None and getattr(usage, "prompt_tokens", 0) == n_prompt + 1)
        if local is not None:
            mine = [self.tokenizer.decode([t]) for t in local]
            if not _pieces_agree(pieces, mine):
                raise ModelLoadError(
                    f"{where} tokenizes the probe text into {len(pieces)} tokens {pieces[:8]}..., the local "
                    f"tokenizer ({self.tokenizer_spec}) into {len(mine)} {mine[:8]}...: wrong tokenizer "
                    "for this server; refusing to score"
                )
        if offsets:  # the echoed pieces must sit at their offsets (a byte-level piece may start 1-2 characters on)
            for piece, o in zip(lp["tokens"][:n_prompt], offsets):
                if (
                    piece
                    and "\ufffd" not in piece
                    and not (visible_bos and o == 0 and piece == self.tokenizer.bos_token)
                    and PROBE_TEXT.find(piece, o, o + len(piece) + 2) == -1
                ):
                    raise ModelLoadError(f"{where}: echoed token {piece!r} is not at text_offset {o} of the prompt")
        return "text", visible_bos or hidden_bos

    def _check_id_echo(self, where: str, resp: Any, text_resp: Any, n: int) -> None:
        """Check the token-id prompt's echo: every one of its ``n`` tokens scored, and the same tokens as the
        server's own tokenization of the text (else the local tokenizer is the wrong one)."""
        lp, lp_text = self._echo_fields(where, resp), self._echo_fields(where, text_resp)
        values = lp["token_logprobs"]
        if len(values) < n or any(not isinstance(v, (int, float)) for v in values[1:n]):
            raise ModelLoadError(
                f"{where} echoed {len(values)} log-probabilities for a prompt of {n} token ids: "
                "it cannot score answer choices"
            )
        ids_pieces, text_pieces = lp["tokens"][:n], lp_text["tokens"]
        if self.tokenizer.bos_token and text_pieces and text_pieces[0] == self.tokenizer.bos_token:
            text_pieces = text_pieces[1:]
        if ids_pieces != text_pieces[:n] or len(text_pieces) < n:
            raise ModelLoadError(
                f"{where}: the local tokenizer's ids of the probe text echo as {ids_pieces[:8]}..., the "
                f"server's own tokens are {text_pieces[:8]}...: wrong tokenizer for this server"
            )
