"""The fake Hugging Face Hub (tests/fake_hf_hub.py) against the real huggingface_hub client: downloads at a pinned
commit, a branch and a tag, snapshots with patterns, the hub cache layout, offline reads, cut and tampered downloads,
the request log, a client in a subprocess, and local git sources."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import constants, file_download, hf_hub_download, snapshot_download
from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError, RevisionNotFoundError

from fake_hf_hub import FakeHub, hub_client_at, hub_offline, make_git_repo

REPO = "thai-eval/tiny-set"
OLD = {"data/test.jsonl": b'{"q": "1+1"}\n', "data/dev.jsonl": b'{"q": "dev"}\n', "README.md": b"# v1\n"}
NEW = {"data/test.jsonl": b'{"q": "2+2"}\n{"q": "3+3"}\n', "data/dev.jsonl": b'{"q": "dev"}\n', "README.md": b"# v2\n"}


def _get(path: str, revision: str) -> bytes:
    with open(hf_hub_download(REPO, path, repo_type="dataset", revision=revision), "rb") as f:
        return f.read()


def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client waits 1 s before each resume: not in these tests."""
    monkeypatch.setattr(file_download, "time", types.SimpleNamespace(sleep=lambda seconds: None))


def test_download_at_a_pinned_commit_at_main_and_at_a_tag(fake_hub: FakeHub):
    old = fake_hub.add_dataset(REPO, OLD, tag="v1.0")
    new = fake_hub.add_dataset(REPO, NEW)
    assert len({old, new}) == 2 and all(len(s) == 40 and int(s, 16) >= 0 for s in (old, new))
    assert _get("data/test.jsonl", old) == OLD["data/test.jsonl"]
    assert _get("data/test.jsonl", "main") == NEW["data/test.jsonl"]
    assert _get("README.md", "v1.0") == b"# v1\n"
    # the hub cache layout: refs name commits, snapshots link to blobs named after the ETag (the git blob sha1)
    folder = fake_hub.cache_dir / "datasets--thai-eval--tiny-set"
    assert (folder / "refs" / "main").read_text() == new and (folder / "refs" / "v1.0").read_text() == old
    pinned = folder / "snapshots" / old / "data" / "test.jsonl"
    assert pinned.is_symlink() and pinned.read_bytes() == OLD["data/test.jsonl"]
    blob_name = hashlib.sha1(b"blob 13\0" + OLD["data/test.jsonl"]).hexdigest()
    assert pinned.resolve() == folder / "blobs" / blob_name
    # a commit's sha depends on its content and history: the same files again make a new commit
    assert fake_hub.add_dataset(REPO, NEW) != new


def test_snapshot_with_patterns_at_an_older_commit_gets_the_older_files(fake_hub: FakeHub):
    old = fake_hub.add_dataset(REPO, OLD)
    fake_hub.add_dataset(REPO, NEW)
    folder = snapshot_download(REPO, repo_type="dataset", revision=old, allow_patterns=["data/test*"])
    assert folder == str(fake_hub.cache_dir / "datasets--thai-eval--tiny-set" / "snapshots" / old)
    files = sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())
    assert files == ["data/test.jsonl"]
    with open(f"{folder}/data/test.jsonl", "rb") as f:
        assert f.read() == OLD["data/test.jsonl"]
    # a sha needs no revision lookup: the tree of that commit, then the one file
    assert fake_hub.requests == [
        ("GET", f"/api/datasets/{REPO}/tree/{old}"),
        ("HEAD", f"/datasets/{REPO}/resolve/{old}/data/test.jsonl"),
        ("GET", f"/datasets/{REPO}/resolve/{old}/data/test.jsonl"),
    ]


def test_snapshot_at_main_then_offline_reads_the_cache(fake_hub: FakeHub):
    fake_hub.add_dataset(REPO, OLD)
    new = fake_hub.add_dataset(REPO, NEW)
    folder = snapshot_download(REPO, repo_type="dataset", revision="main")
    assert folder.endswith(f"/snapshots/{new}")
    assert fake_hub.requests[0] == ("GET", f"/api/datasets/{REPO}/revision/main")
    seen = len(fake_hub.requests)
    with hub_offline():
        assert snapshot_download(REPO, repo_type="dataset", revision="main") == folder
        assert _get("README.md", "main") == b"# v2\n"
        with pytest.raises(LocalEntryNotFoundError):
            hf_hub_download(REPO, "missing.txt", repo_type="dataset")
    assert len(fake_hub.requests) == seen  # offline: nothing sent


def test_a_second_download_gets_no_file(fake_hub: FakeHub):
    sha = fake_hub.add_dataset(REPO, OLD)
    _get("data/test.jsonl", "main")
    _get("data/test.jsonl", "main")  # a branch: one HEAD to learn its commit, no GET
    _get("data/test.jsonl", sha)  # a cached sha: nothing sent at all
    path = f"/datasets/{REPO}/resolve/main/data/test.jsonl"
    assert fake_hub.requests == [("HEAD", path), ("GET", path), ("HEAD", path)]
    assert [s.range for s in fake_hub.downloads("data/test.jsonl")] == [None]


def test_a_cut_download_resumes_with_a_range_request(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch):
    data = bytes(range(40))
    fake_hub.add_dataset(REPO, {"big.bin": data})
    _no_sleep(monkeypatch)
    # the client keeps what it received in whole chunks (10 MiB): 4-byte chunks let a 40-byte file show a resume
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4)
    fake_hub.cut_next_download("big.bin", 10)
    assert _get("big.bin", "main") == data  # the same call resumed from the last whole chunk
    assert [s.range for s in fake_hub.downloads("big.bin")] == [None, "bytes=8-"]


def test_a_download_cut_every_time_raises_and_the_next_call_starts_over(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
):
    sha = fake_hub.add_dataset(REPO, OLD)
    _no_sleep(monkeypatch)
    fake_hub.cut_next_download("README.md", 2, times=6)  # the client gives up after 5 resumes with no progress
    with pytest.raises(httpx2.RemoteProtocolError, match=r"peer closed connection .*\(received 2 bytes, expected 5\)"):
        _get("README.md", "main")
    assert len(fake_hub.downloads("README.md")) == 6
    folder = fake_hub.cache_dir / "datasets--thai-eval--tiny-set"
    assert list((folder / "blobs").iterdir()) == []  # no partial file is kept
    assert (folder / "refs" / "main").read_text() == sha  # though main already names the commit
    assert _get("README.md", "main") == b"# v1\n"
    assert fake_hub.downloads("README.md")[-1].range is None  # the whole file again


def test_tampered_bytes_are_served_under_the_commits_metadata(fake_hub: FakeHub):
    sha = fake_hub.add_dataset(REPO, OLD, lfs=["data/dev.jsonl"])
    fake_hub.tamper(REPO, "main", "data/test.jsonl", b'{"q": "9+9"}\n')  # same length: the client cannot tell
    fake_hub.tamper(REPO, sha, "README.md", b"# v1, longer\n")
    assert _get("data/test.jsonl", "main") == b'{"q": "9+9"}\n'
    with pytest.raises(OSError, match="Consistency check failed: file should be of size 5 but has size 13"):
        _get("README.md", "main")
    # an LFS file's blob is named after its sha256
    dev = hf_hub_download(REPO, "data/dev.jsonl", repo_type="dataset")
    assert os.path.basename(os.path.realpath(dev)) == hashlib.sha256(OLD["data/dev.jsonl"]).hexdigest()
    with pytest.raises(KeyError, match="has no 'nope.txt'"):
        fake_hub.tamper(REPO, sha, "nope.txt", b"")


def test_unknown_revisions_and_files_raise_the_clients_errors(fake_hub: FakeHub):
    fake_hub.add_dataset(REPO, OLD)
    with pytest.raises(RevisionNotFoundError):
        _get("README.md", "v9")
    with pytest.raises(EntryNotFoundError):
        _get("nope.txt", "main")
    with pytest.raises(RevisionNotFoundError):
        snapshot_download(REPO, repo_type="dataset", revision="0" * 40)


def test_a_subprocess_client_uses_the_hub_through_its_environment(fake_hub: FakeHub):
    sha = fake_hub.add_dataset(REPO, OLD)
    code = (
        "import json, sys\nfrom huggingface_hub import hf_hub_download\n"
        f"p = hf_hub_download({REPO!r}, 'README.md', repo_type='dataset')\n"
        "print(json.dumps([p, open(p).read()]))\n"
    )
    env = fake_hub.subprocess_env({"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HF_TOKEN": "hf_secret"})
    assert "HF_TOKEN" not in env and env["HF_HUB_OFFLINE"] == "0" and env["HF_ENDPOINT"] == fake_hub.endpoint
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60)
    path, text = json.loads(out.stdout)
    assert text == "# v1\n" and path == str(
        fake_hub.cache_dir / "datasets--thai-eval--tiny-set" / "snapshots" / sha / "README.md"
    )


def test_make_git_repo_can_be_cloned_and_an_older_commit_fetched(tmp_path):
    source = tmp_path / "source"
    old = make_git_repo(source, {"a.txt": b"one\n", "sub/b.txt": b"b\n"}, message="first")
    new = make_git_repo(source, {"a.txt": b"two\n"}, message="second")
    assert old != new and len(new) == 40
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{source}", str(clone)], check=True)
    assert (clone / "a.txt").read_bytes() == b"two\n" and not (clone / "sub").exists()  # exactly those files
    # protocol v0: there the source must allow a want by sha (uploadpack.allowAnySHA1InWant); v2 always does
    fetch = ["git", "-C", str(clone), "-c", "protocol.version=0", "fetch", "-q", "--depth", "1", "origin", old]
    subprocess.run(fetch, check=True)
    shown = subprocess.run(["git", "-C", str(clone), "show", f"{old}:sub/b.txt"], check=True, capture_output=True)
    assert shown.stdout == b"b\n"


def test_the_hub_answers_heads_and_ranges_as_the_hub_does():
    hub, client = FakeHub().start(), httpx2.Client()
    try:
        sha = hub.add_dataset(REPO, {"f.bin": b"0123456789"})
        blob_id = hashlib.sha1(b"blob 10\0" + b"0123456789").hexdigest()  # what git names the file
        url = f"{hub.endpoint}/datasets/{REPO}/resolve/main/f.bin"
        head = client.head(url)
        assert head.status_code == 200 and head.headers["X-Repo-Commit"] == sha
        assert head.headers["ETag"] == f'"{blob_id}"'
        assert head.headers["Content-Length"] == "10" and "X-Xet-Hash" not in head.headers  # plain HTTP, no Xet
        for asked, status, content_range, body in (
            ("bytes=3-5", 206, "bytes 3-5/10", b"345"),
            ("bytes=7-", 206, "bytes 7-9/10", b"789"),
            ("bytes=-2", 206, "bytes 8-9/10", b"89"),
            ("bytes=8-99", 206, "bytes 8-9/10", b"89"),
            ("bytes=10-", 416, "bytes */10", b""),
        ):
            got = client.get(url, headers={"Range": asked})
            assert (got.status_code, got.headers["Content-Range"], got.content) == (status, content_range, body)
        assert client.get(url).content == b"0123456789"
        missing = client.get(f"{hub.endpoint}/api/datasets/{REPO}/revision/v2")
        assert missing.status_code == 404 and missing.headers["X-Error-Code"] == "RevisionNotFound"
        tree = client.get(f"{hub.endpoint}/api/datasets/{REPO}/tree/{sha}").json()
        assert tree == [{"type": "file", "path": "f.bin", "size": 10, "oid": blob_id}]
    finally:
        client.close()
        hub.stop()
    assert [m for m, _ in hub.requests] == ["HEAD"] + ["GET"] * 8


def test_the_fixture_puts_the_client_back(tmp_path):
    before = (constants.ENDPOINT, constants.HF_HUB_OFFLINE, constants.HF_HUB_CACHE, os.environ.get("HF_ENDPOINT"))
    with FakeHub() as hub, hub_client_at(hub.endpoint, tmp_path) as env:
        assert (constants.ENDPOINT, constants.HF_HUB_OFFLINE, constants.HF_HUB_CACHE) == (
            hub.endpoint,
            False,
            str(tmp_path / "hub"),
        )
        assert os.environ["HF_ENDPOINT"] == env["HF_ENDPOINT"] == hub.endpoint
    assert (
        constants.ENDPOINT,
        constants.HF_HUB_OFFLINE,
        constants.HF_HUB_CACHE,
        os.environ.get("HF_ENDPOINT"),
    ) == before
