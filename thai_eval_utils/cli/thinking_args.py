"""``thai-eval run``'s thinking flags (``tasks/thinking.py``): ``--thinking``, ``--think-tags``,
``--max-thinking-tokens``, ``--enable-thinking``, ``--stop-after-thinking``, handed to the notebooks as the ``thinking``
section of their ``options`` parameter (``cli.run_config.notebook_options``; ``thinking`` there is ``mode``)."""

from __future__ import annotations

import argparse
from typing import Any

from thai_eval_utils.tasks.thinking import MODES as THINKING_MODES
from thai_eval_utils.tasks.thinking import thinking_option


def add_thinking(p: argparse.ArgumentParser) -> None:
    """The thinking option of every generation task (``tasks/thinking.py``)."""
    p.add_argument(
        "--thinking",
        choices=THINKING_MODES,
        default=None,
        help="models that think: 'strip' (default: "
        "closed <think> blocks cut before scoring, a block that never closes is a failed answer), "
        "'lighteval' or 'lm-eval' (their rules exactly), 'off' (score the raw reply); the raw reply is "
        "stored whole either way",
    )
    p.add_argument(
        "--think-tags", default=None, metavar="OPEN,CLOSE", help="the model's think tags (default: <think>,</think>)"
    )
    p.add_argument(
        "--max-thinking-tokens",
        type=int,
        default=None,
        metavar="N",
        help="a thinking budget where the "
        "model supports one (served vLLM: thinking_token_budget); recorded as not supported elsewhere",
    )
    p.add_argument(
        "--enable-thinking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pass enable_thinking to chat templates that take it (default: not passed)",
    )
    p.add_argument(
        "--stop-after-thinking",
        action="store_true",
        default=None,
        help="the model thinks: stop "
        "strings apply only after its thinking block closes (a stop inside the block never cuts the "
        "reply; servers are sent none). Off by default: not the papers' protocol; the signatures say so",
    )


def thinking_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The thinking flags by their parameter names (checked here once; unset: left out)."""
    thinking_option(
        args.thinking, args.think_tags, args.max_thinking_tokens, args.enable_thinking, args.stop_after_thinking
    )  # a bad value fails now
    params = {
        "thinking": args.thinking,
        "think_tags": args.think_tags,
        "max_thinking_tokens": args.max_thinking_tokens,
        "enable_thinking": args.enable_thinking,
        "stop_after_thinking": args.stop_after_thinking,
    }
    return {k: v for k, v in params.items() if v is not None}
