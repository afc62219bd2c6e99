"""The results store's format version and its one migration: a run card of an earlier format, as today's writes it.

A run card records the format it was written in (``store_format``; a card without it is format 1). Formats:

1. thai-eval 0.1.0's first runs: no ``store_format`` field. Runs made before the config keys were named for
   what they are hold ``add_bos`` (now ``add_bos_token``; Thai-H6), ``max_new`` (now ``max_new_tokens``; Thai-H6
   and dialect generation) and ``prompt_cap`` (now ``max_prompt_tokens``; dialect generation). Runs made later in
   format 1 already hold today's names (renaming is then a no-op).
2. (:data:`STORE_FORMAT`) the card records ``store_format``; config keys as above.

Migration happens when a run is opened: when no folder has the run's config id yet,
:meth:`~thai_eval_utils.core.store.RunStore.open` reads each sibling folder's card through :func:`migrate_card`,
recomputes its config id under today's rules and, on a match, renames that folder and resumes it (the card records
``migrated_from``). A change of *what is keyed* needs no step here, since the id is recomputed from the card: served
runs keyed with their ``base_url``/``base_urls`` (early format 1) are found from any address that way.

Records are not migrated except in one case: the ThaiCLI judge of format 1 wrote ``NaN`` (not standard JSON) for an
unjudged item's ``served_model``; the judge opens its runs with ``legacy_nan_fields`` and
:meth:`~thai_eval_utils.core.store.RunStore.migrate_legacy_nan` rewrites those values as null once.

To change the format: raise :data:`STORE_FORMAT` and add one ``if version < N:`` step to :func:`migrate_card`
that brings a card of format ``N - 1`` to ``N``, with a run folder of the old format under ``tests/data``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError

#: The format :class:`~thai_eval_utils.core.store.RunStore` writes (the card's ``store_format``).
STORE_FORMAT = 2
#: Config keys of format 1 runs and their names since format 2.
RENAMED_CONFIG_KEYS = {"add_bos": "add_bos_token", "max_new": "max_new_tokens", "prompt_cap": "max_prompt_tokens"}


def card_format(card: Mapping[str, Any], path: str | Path | None = None) -> int:
    """The store format a run card was written in (1 when it does not say).

    Raises:
        ThaiEvalDataError: ``store_format`` is not a positive integer, or is newer than this thai-eval reads.
    """
    version = card.get("store_format", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ThaiEvalDataError(
            f"the run card's store_format {version!r} is not a positive integer; restore run_card.json from a backup",
            path=path,
            field="store_format",
        )
    if version > STORE_FORMAT:
        raise ThaiEvalDataError(
            f"the run was written in store format {version}, newer than this thai-eval's "
            f"{STORE_FORMAT}: upgrade thai-eval to read or resume it",
            path=path,
            field="store_format",
        )
    return version


def migrate_card(card: Mapping[str, Any], path: str | Path | None = None) -> dict[str, Any]:
    """``card`` (a run card of any format up to :data:`STORE_FORMAT`) as the current format writes it: a new
    dict, ``card`` is not changed. ``path`` names the card in errors (:func:`card_format`)."""
    version = card_format(card, path)
    out = dict(card)
    if version < 2:
        config = out.get("config")
        if isinstance(config, Mapping):
            out["config"] = {RENAMED_CONFIG_KEYS.get(k, k): v for k, v in config.items()}
    out["store_format"] = STORE_FORMAT
    return out
