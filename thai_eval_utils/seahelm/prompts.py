"""SEA-HELM's prompts for a row (spec ``seahelm_thai.md`` 2.2-2.3): the messages of one turn and, for base models,
SEA-HELM's plain chat template.

``build_messages`` follows ``generate_formatted_conversation`` (``src/dataloaders/base_dataloader.py:325-389``) and
``prompt_formatter`` (``src/dataloaders/huggingface_dataloader.py:108-141``): k shots as (user, assistant) pairs in
file order, then the test row's user message; the preamble is glued to the FIRST message and that message is
stripped; roles are only ``user`` and ``assistant`` (no system prompt on the Thai path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thai_eval_utils.seahelm.config import TaskConfig

Messages = list[dict[str, str]]


def first_label(label: Any) -> Any:
    """A sequence-valued label becomes its first element (a few-shot label, ``huggingface_dataloader.py:94-98``; a QA
    row's gold, ``label[0]``)."""
    return label[0] if isinstance(label, list | tuple) and label else label


def build_messages(task: TaskConfig, row: Mapping[str, Any], shots: Sequence[Mapping[str, Any]] = ()) -> Messages:
    """The conversation SEA-HELM sends for ``row``'s first turn (MT-Bench's second: :func:`.mt_bench.turn_messages`).

    For each shot a user message ``task_template.format(**shot.prompts[0], answer_tag=TAG)`` and an assistant
    message ``answer_template.format(**shot, **shot.prompts[0], answer_tag=TAG)``; then the user message
    ``task_template.format(**row.prompts[0])``; the first message becomes
    ``(preamble.format(answer_tag=TAG) + "\\n\\n" + content).strip()``.
    """
    tag = task.answer_tag
    messages: Messages = []
    for shot in shots:
        p0 = dict(shot["prompts"][0])
        messages.append({"role": "user", "content": task.task_template.format(**{**p0, "answer_tag": tag})})
        fields = {**shot, "label": first_label(shot.get("label")), **p0, "answer_tag": tag}
        messages.append({"role": "assistant", "content": task.answer_template.format(**fields)})
    messages.append({"role": "user", "content": task.task_template.format(**{**row["prompts"][0], "answer_tag": tag})})
    messages[0]["content"] = (task.preamble.format(answer_tag=tag) + "\n\n" + messages[0]["content"]).strip()
    return messages


def render_base(messages: Messages, bos_token: str | None = None) -> str:
    """SEA-HELM's base-model template (``chat_templates/base_model.jinja``, spec 2.3): each content trimmed, the
    BOS token (when the tokenizer defines one) before the first, messages joined by ``"\\n\\n"``, and ``"\\n\\n"``
    as the generation prompt. Jinja's ``trim`` is Python's ``str.strip()``."""
    parts = [m["content"].strip() for m in messages]
    if parts and bos_token is not None:
        parts[0] = bos_token + parts[0]
    return "\n\n".join(parts) + "\n\n"
