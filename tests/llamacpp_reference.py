"""llama.cpp run in this process as the reference for a llama-cpp-python server's echoed log-likelihoods."""

from __future__ import annotations


class LlamaCppReference:
    """(ll, greedy) from llama.cpp's own logits, computed here (not by the server's echo code): BOS + tokens of
    ctx + cont, the continuation = the tokens after those of the context (trailing whitespace moved first), a
    float64 log-softmax of the rows that predict them.

    llama.cpp's numbers depend on how a prompt is split into decode batches (its CPU kernels quantise activations
    differently for small batches: 0.39 nats on a 6-token suffix measured here), and llama-cpp-python keeps the
    previous prompt's KV cache and decodes only the new suffix. This reference does the same (same longest common
    prefix with the previous prompt, cache truncated there, suffix decoded as one batch), so it sees the batches
    the server sees. When the joint tokenization has a token
    that starts in the context and ends in the continuation, that token is scored with the continuation, as the
    client does (``completions.TEXT_BOUNDARY_RULE``).
    """

    def __init__(self, llm):
        self.llm, self.prev = llm, []
        self.straddled = 0  # requests whose boundary fell inside a token

    def __call__(self, ctx, cont):
        import numpy as np

        llm = self.llm
        n = len(ctx) - len(ctx.rstrip())
        if n:
            ctx, cont = ctx[:-n], ctx[-n:] + cont
        ids_ctx = llm.tokenize(ctx.encode(), add_bos=True, special=True)
        whole = llm.tokenize((ctx + cont).encode(), add_bos=True, special=True)
        start = len(ids_ctx)
        if whole[:start] != ids_ctx:  # a token straddles the boundary: scored with the continuation (the client's
            start = next(
                i
                for i in range(1, len(whole))  # TEXT_BOUNDARY_RULE), i.e. the first token ending after it
                if len(llm.detokenize(whole[1 : i + 1]).decode("utf-8", errors="ignore")) > len(ctx)
            )
            self.straddled += 1
        common = 0
        while common < min(len(whole) - 1, len(self.prev)) and whole[common] == self.prev[common]:
            common += 1
        if common:
            llm._ctx.kv_cache_seq_rm(-1, common, -1)
            llm.n_tokens = common
        else:
            llm.reset()
        llm.eval(whole[common:])
        self.prev = whole
        logits = np.asarray(llm.scores[start - 1 : len(whole) - 1], dtype=np.float64)
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        cont_ids = whole[start:]
        return (
            float(sum(logp[i, t] for i, t in enumerate(cont_ids))),
            bool(all(logp[i].argmax() == t for i, t in enumerate(cont_ids))),
        )
