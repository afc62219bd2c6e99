"""The store format version and its one migration (core/migrate.py): format 1 cards (no ``store_format``) have
their old config keys renamed, a current card is left as it is, a newer or malformed format is refused; a run of
format 1 is found from its migrated card and resumed. The legacy run folders the tests hold are migrated in
tests/test_h6_protocol.py (tests/data/h6_legacy_runs) and tests/test_dialect.py."""

from __future__ import annotations

import json

import pytest

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.migrate import STORE_FORMAT, card_format, migrate_card
from thai_eval_utils.core.store import RunStore

OLD_CONFIG = {"task": "th_gsm8k", "add_bos": False, "max_new": 32, "prompt_cap": 3000, "seed": 42}
NEW_CONFIG = {"task": "th_gsm8k", "add_bos_token": False, "max_new_tokens": 32, "max_prompt_tokens": 3000, "seed": 42}


def test_a_format_1_card_gets_todays_key_names_and_is_not_changed_in_place():
    card = {"config_id": "abc", "config": dict(OLD_CONFIG)}
    assert card_format(card) == 1 and STORE_FORMAT == 2
    assert migrate_card(card) == {"config_id": "abc", "config": NEW_CONFIG, "store_format": 2}
    assert card == {"config_id": "abc", "config": OLD_CONFIG}


def test_a_current_card_keeps_its_keys_whatever_their_names():
    """The format, not the key names, says what to migrate: a format 2 config key named ``max_new`` stays."""
    card = {"config": {"max_new": 5}, "store_format": 2}
    assert migrate_card(card) == card


@pytest.mark.parametrize(
    "version, words",
    [
        (3, r"field 'store_format': the run was written in store format 3, newer than this thai-eval's 2: upgrade"),
        (0, r"store_format 0 is not a positive integer"),
        (True, r"store_format True is not a positive integer"),
        ("1", r"store_format '1' is not a positive integer"),
    ],
)
def test_an_unknown_format_is_refused_naming_the_card(tmp_path, version, words):
    with pytest.raises(ThaiEvalDataError, match=words) as err:
        migrate_card({"config": {}, "store_format": version}, tmp_path / "run_card.json")
    assert err.value.path == str(tmp_path / "run_card.json")


def _write_format_1_run(tmp_path, config):
    """A run stored in format 1 under ``config``: written by today's store, then its card as format 1 wrote it."""
    with RunStore.open("m", "files/run", config, outputs=tmp_path) as old:
        old.append("a", {"acc": 1.0})
    card = json.loads(old.card_path.read_text(encoding="utf-8"))
    del card["store_format"]
    old.card_path.write_text(json.dumps(card), encoding="utf-8")
    return old


def test_a_format_1_run_is_found_by_its_migrated_card_and_resumed(tmp_path):
    old = _write_format_1_run(tmp_path, OLD_CONFIG)
    with RunStore.open("m", "files/run", NEW_CONFIG, outputs=tmp_path) as new:
        assert new.completed() == {"a": {"key": "a", "acc": 1.0}} and not old.root.exists()
        card = json.loads(new.card_path.read_text(encoding="utf-8"))
    assert card["migrated_from"] == old.config_id != new.config_id == card["config_id"]
    assert card["config"] == NEW_CONFIG and card["store_format"] == 2 and len(card["resumed_at"]) == 1


def test_a_format_1_run_with_other_settings_is_left_alone(tmp_path):
    old = _write_format_1_run(tmp_path, OLD_CONFIG)
    with RunStore.open("m", "files/run", {**NEW_CONFIG, "max_new_tokens": 64}, outputs=tmp_path) as new:
        assert new.completed() == {} and "migrated_from" not in new.card
    assert old.root.is_dir() and new.card["store_format"] == 2
