"""lm-evaluation-harness 0.4.13's ``HFLM.generate_until`` on given prompts, timed (run inside the lm-eval venv).

Usage: ``python lmeval_generate.py MODEL_DIR BATCH_SIZE IN.json OUT.json``. IN holds ``{"prompts": [...],
"until": [...], "max_gen_toks": N}``, or ``{"requests": [{"prompt", "until", "max_gen_toks"}, ...]}`` (each request
its own stops and budget; lm-eval groups requests of equal generation arguments into its batches); OUT gets the texts in prompt order, the seconds inside ``generate_until``
(tokenization included, model loading excluded) and the token positions each ``model.generate`` call computed
(rows x (context width + new tokens - 1): padding and finished rows included).
"""

from __future__ import annotations

import json
import sys
import time


def count_positions(lm) -> list[int]:
    """Wrap ``lm._model_generate`` (an ``HFLM``) so that each call appends the token positions it computed,
    rows x (padded width + new tokens - 1), to the returned list (also used by ``gpu_generation.py``)."""
    computed: list[int] = []
    original = lm._model_generate

    def counted(context, *args, **kwargs):
        out = original(context, *args, **kwargs)
        computed.append(int(out.shape[0]) * (int(out.shape[1]) - 1))
        return out

    lm._model_generate = counted
    return computed


def main() -> None:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    model_dir, bs, src, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    spec = json.loads(open(src, encoding="utf-8").read())
    lm = HFLM(pretrained=model_dir, dtype="float32", device="cpu", batch_size=bs, add_bos_token=False)
    computed = count_positions(lm)
    if "requests" in spec:
        given = [(r["prompt"], r["until"], r["max_gen_toks"]) for r in spec["requests"]]
    else:
        given = [(p, spec["until"], spec["max_gen_toks"]) for p in spec["prompts"]]
    reqs = [
        Instance(
            request_type="generate_until",
            doc={},
            idx=0,
            arguments=(p, {"until": list(until), "max_gen_toks": int(n), "do_sample": False}),
        )
        for p, until, n in given
    ]
    t0 = time.perf_counter()
    texts = lm.generate_until(reqs, disable_tqdm=True)
    seconds = time.perf_counter() - t0
    json.dump(
        {"texts": texts, "seconds": seconds, "computed_positions": sum(computed), "batch_size": bs},
        open(dst, "w", encoding="utf-8"),
        ensure_ascii=False,
    )


if __name__ == "__main__":
    main()
