"""The results store on real run folders: standard JSON only, a served run keyed without its
addresses (a moved server, or other replicas, resume with no new scoring request; runs keyed with today's
addresses are migrated), every damaged or foreign file named with its line and what to do, a failed write
naming its file."""

from __future__ import annotations

import json
import os

import pytest
from fake_completions_server import FakeCompletionsServer
from fakes import FakeModel

from thai_eval_utils import h6
from thai_eval_utils.core import store as S
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.core.store import NonFiniteRecordError, RunStore, StoreWriteError

DATA = "data/thai_h6/h6"
PROTOCOL = h6.LEADERBOARD.replace(num_fewshot=0)


def strict(text: str):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def fresh_store(tmp_path, **kw):
    store = RunStore.open("m", "files/run", {"n": 1}, outputs=tmp_path, **kw)
    store.append("a", {"lls": [-1.5, -2.0], "acc": 1.0})
    store.append("b", {"lls": [-3.0, -0.5], "acc": 0.0})
    return store


# ------------------------------------------------------------------------------------ standard JSON only


def test_a_non_finite_number_is_never_stored(tmp_path):
    with fresh_store(tmp_path) as store:
        before = store.items_path.read_bytes()
        with pytest.raises(
            NonFiniteRecordError, match=r"items\.jsonl: item 'c': field lls\[1\] is not a finite number"
        ):
            store.append("c", {"lls": [-1.0, float("-inf")], "acc": 0.0})
        with pytest.raises(NonFiniteRecordError, match=r"field scores\.acc is not a finite"):
            store.append("d", {"scores": {"acc": float("nan")}})
        assert store.items_path.read_bytes() == before
        store.write_summary({"scores": {"acc": {"value": float("nan"), "n": 0}}, "spread": [1.0, float("inf")]})
        summary = strict(store.summary_path.read_text())
        card = strict(store.card_path.read_text())
    assert summary["scores"]["acc"] == {"value": None, "n": 0} and summary["spread"] == [1.0, None]
    assert card["finished_at"]
    assert [strict(x)["key"] for x in store.items_path.read_text().splitlines()] == ["a", "b"]


# ------------------------------------------------------------------------- served runs: keyed without address


def test_a_moved_served_model_resumes_with_no_new_scoring_request(tiny_llama, tiny_model_dir, tmp_path):
    """The same model on another port, then on two replicas: the same run folder, every document reused (only
    the probe's two requests per server and the order probe's two), the card recording the new addresses."""
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as first:
        a = h6.evaluate(
            ServedModel("tiny", base_url=first.base_url, tokenizer=tiny_model_dir),
            "th_arc",
            DATA,
            PROTOCOL,
            limit=2,
            outputs=tmp_path,
            progress=False,
        )
    assert first.n_completions > 2
    with FakeCompletionsServer(model, tok) as b, FakeCompletionsServer(model, tok) as c:
        m = ServedModel("tiny", base_url=[b.base_url, c.base_url], tokenizer=tiny_model_dir)
        again = h6.evaluate(m, "th_arc", DATA, PROTOCOL, limit=2, outputs=tmp_path, progress=False)
    assert (b.n_completions, c.n_completions) == (4, 4)  # the probes only
    assert again.run_dir == a.run_dir and list(again.table["lls"]) == list(a.table["lls"])
    card = json.loads((a.run_dir / "run_card.json").read_text())
    assert card["model"]["base_urls"] == [b.base_url, c.base_url] and len(card["resumed_at"]) == 1


def test_a_served_run_keyed_with_its_addresses_is_migrated_from_any_address(
    tiny_llama, tiny_model_dir, tmp_path, monkeypatch
):
    """A run stored by the previous version (``base_urls`` keyed) is found from another port and resumed."""
    model, tok = tiny_llama
    monkeypatch.setattr(S, "UNKEYED_IDENTITY_KEYS", tuple(k for k in S.UNKEYED_IDENTITY_KEYS if k != "base_urls"))
    with FakeCompletionsServer(model, tok) as first:
        old = h6.evaluate(
            ServedModel("tiny", base_url=first.base_url, tokenizer=tiny_model_dir),
            "th_arc",
            DATA,
            PROTOCOL,
            limit=2,
            outputs=tmp_path,
            progress=False,
        )
    monkeypatch.undo()
    with FakeCompletionsServer(model, tok) as moved:
        new = h6.evaluate(
            ServedModel("tiny", base_url=moved.base_url, tokenizer=tiny_model_dir),
            "th_arc",
            DATA,
            PROTOCOL,
            limit=2,
            outputs=tmp_path,
            progress=False,
        )
    assert moved.n_completions == 4 and new.run_dir != old.run_dir and not old.run_dir.exists()
    card = json.loads((new.run_dir / "run_card.json").read_text())
    assert card["migrated_from"] == old.run_dir.name and card["config_id"] == new.run_dir.name
    assert list(new.table["lls"]) == list(old.table["lls"])


# --------------------------------------------------------------------------------- damaged or foreign files


@pytest.mark.parametrize(
    "line, words",
    [
        (b'{"foo": 1}', r"line 3 of the file \(\{\"foo\": 1\}\) is not a record of this run"),
        (b"null", r"line 3 of the file \(null\) is not a record of this run"),
        (
            b'{"key": "c", "v": NaN}',
            r"line 3 of the file is not a standard JSON record \(ValueError: NaN is not standard",
        ),
        (b'{"key": "c", "v": "\xe0\xb8"}', r"line 3 of the file is not a standard JSON record \(UnicodeDecodeError"),
        (b'{"key": "c", oops}', r"line 3 of the file is not a standard JSON record \(JSONDecodeError"),
    ],
)
def test_a_damaged_or_foreign_line_is_named_with_what_to_do(tmp_path, line, words):
    with fresh_store(tmp_path) as store:
        with open(store.items_path, "ab") as fh:
            fh.write(line + b"\n")
        with pytest.raises(ThaiEvalDataError, match=words) as err:
            store.completed()
    assert err.value.path == str(store.items_path) and err.value.row == 2
    assert "delete that line (the item is then computed again" in str(err.value)


def test_a_damaged_run_card_is_named(tmp_path):
    with fresh_store(tmp_path) as store:
        root, text = store.root, store.card_path.read_text()
    (root / "run_card.json").write_text(text[: len(text) // 2])
    with pytest.raises(
        ThaiEvalDataError, match=r"run_card\.json: the run card is damaged \(ValueError|JSONDecodeError"
    ) as err:
        RunStore.open("m", "files/run", {"n": 1}, outputs=tmp_path)
    assert "delete it: the next run with the same settings writes a new one" in str(err.value)
    with pytest.raises(ThaiEvalDataError, match=r"run_card\.json: the run card is damaged"):
        list_runs(tmp_path)
    (root / "run_card.json").unlink()  # the advice works: a new card, the stored items kept
    with RunStore.open("m", "files/run", {"n": 1}, outputs=tmp_path) as store:
        assert sorted(store.completed()) == ["a", "b"]


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("model", "gpt", r"field 'model': the run card's 'model' is \"gpt\", not dict"),
        (
            "config_id",
            "0123456789ab",
            r"field 'config_id': the run card's config_id '0123456789ab' is not its folder's",
        ),
        ("resumed_at", 3, r"field 'resumed_at': the run card's 'resumed_at' is 3, not list"),
        ("store_format", "2", r"field 'store_format': the run card's 'store_format' is \"2\", not int"),
        (
            "store_format",
            9,
            r"field 'store_format': the run was written in store format 9, newer than this thai-eval's 2",
        ),
    ],
)
def test_an_edited_run_card_field_is_named(tmp_path, field, value, words):
    with fresh_store(tmp_path) as store:
        card = json.loads(store.card_path.read_text())
        path = store.card_path
    path.write_text(json.dumps({**card, field: value}))
    with pytest.raises(ThaiEvalDataError, match=words):
        RunStore.open("m", "files/run", {"n": 1}, outputs=tmp_path)


def test_a_damaged_summary_is_named(tmp_path):
    with fresh_store(tmp_path) as store:
        store.write_summary({"n": 2})
        store.summary_path.write_text('{"n": 2, "scores": {')
        with pytest.raises(
            ThaiEvalDataError, match=r"summary\.json: the run's summary is damaged .*delete summary\.json"
        ):
            list_runs(tmp_path)
        store.summary_path.write_text('{"n": 0, "acc": NaN}')  # as earlier versions wrote an undefined score
        assert [r.summary for r in list_runs(tmp_path)] == [{"n": 0, "acc": None}]
        store.summary_path.write_text("[1, 2]")
        with pytest.raises(ThaiEvalDataError, match=r"summary is a JSON list, not an object"):
            list_runs(tmp_path)


def test_a_record_whose_output_was_replaced_is_named_at_its_line(tmp_path):
    """Thai-H6 resuming a run whose second record's ``lls`` was edited into a number: the file, its line and the
    field, before any model call."""
    model = FakeModel("careful", score=lambda ctx, cont: (-1.0 * len(cont), False))
    res = h6.evaluate(model, "th_arc", DATA, PROTOCOL, limit=3, outputs=tmp_path, progress=False)
    path = res.run_dir / "items.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "lls": 5}, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls = len(model.calls)
    with pytest.raises(
        ThaiEvalDataError,
        match=r"row 1, field 'lls': line 2 of the file: the stored 'lls' is 5, "
        r"not list; delete that line",
    ) as err:
        h6.evaluate(model, "th_arc", DATA, PROTOCOL, limit=3, outputs=tmp_path, progress=False)
    assert err.value.path == str(path) and len(model.calls) == calls


# --------------------------------------------------------------------------------------- failed writes


def test_a_full_disk_names_the_file_and_the_resume_repairs_the_torn_line(tmp_path, monkeypatch):
    store = fresh_store(tmp_path)
    real_write = os.write

    def half_then_full(fd, data):  # the kernel takes half the line, then the disk is full
        real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(
        StoreWriteError,
        match=r"items\.jsonl: could not write \(No space left on device\); free disk "
        r"space",
    ) as err:
        store.append("c", {"lls": [-1.0, -2.0], "acc": 1.0})
    monkeypatch.undo()
    assert err.value.errno == 28 and err.value.filename == str(store.items_path)
    assert not store.items_path.read_bytes().endswith(b"\n")  # the torn half line
    store.close()
    with RunStore.open("m", "files/run", {"n": 1}, outputs=tmp_path) as again:  # after freeing space
        assert sorted(again.completed()) == ["a", "b"]
        again.append("c", {"lls": [-1.0, -2.0], "acc": 1.0})
        assert sorted(again.completed()) == ["a", "b", "c"]


def test_a_summary_that_cannot_be_written_names_the_file(tmp_path, monkeypatch):
    with fresh_store(tmp_path) as store:

        def refuse(src, dst):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(os, "replace", refuse)
        with pytest.raises(StoreWriteError, match=r"summary\.json: could not write \(Permission denied\)"):
            store.write_summary({"n": 2})
        monkeypatch.undo()
        assert not store.summary_path.exists() and not list(store.root.glob("*.tmp*"))


def test_a_runs_part_keeps_its_own_items_under_the_runs_lock_and_is_no_run(tmp_path):
    """``RunStore.part`` (a judged metric's judgements): its own items.jsonl in ``<run>/<names>/``, a torn last line
    repaired when opened, the run's shared files; no card or summary of its own, so listings see one run."""
    from thai_eval_utils.core.runs import list_runs

    with RunStore.open("m", "files/run", {"n": 1}, outputs=tmp_path) as store:
        part = store.part("judgements", "quality")
        assert part.root == store.root / "judgements" / "quality"
        part.append("1:ab", {"id": "1", "score": 7})
        with open(part.items_path, "a", encoding="utf-8") as fh:
            fh.write('{"key": "2:cd", "id": "2", "sco')  # a kill mid-append
        again = store.part("judgements", "quality")
        assert list(again.completed()) == ["1:ab"]
        assert again.shared_file("c.jsonl") == store.shared_file("c.jsonl") == tmp_path / "cache" / "c.jsonl"
        with pytest.raises(TypeError, match="a run's part has no summary of its own"):
            again.write_summary({"scores": {}})
        store.write_summary({"scores": {}})
    assert [r.dir for r in list_runs(tmp_path)] == [store.root]
