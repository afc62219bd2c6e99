"""Servers that thai-eval starts and stops itself (``thai-eval run --model vllm:MODEL``;
``backend/served/launch.py``), without a GPU or vLLM.

A stand-in ``vllm`` command, written into ``tmp_path/bin`` and put first on PATH, records its command line and
``CUDA_VISIBLE_DEVICES`` to a JSON file, answers ``vllm --version``, and then runs the REAL llama-cpp-python
server on :mod:`tiny_gguf`'s model (written without BOS, as the Thai-H6 notebook scores with
``add_bos_token=False``). The tests check the command lines and GPU pinning, a server that never becomes
healthy or exits at once, a replica dying mid-run, a taken port, the orphans of a ``kill -9``-ed launcher,
Ctrl-C and SIGTERM, and one ``thai-eval run`` from start to stop.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[serve]')")
psutil = pytest.importorskip("psutil")

from fake_completions_server import FakeCompletionsServer
from tiny_gguf import h6_sample_texts, write_tiny_gguf, write_tokenizer_folder

from thai_eval_utils import h6
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.backend.served import launch as L
from thai_eval_utils.backend.served.engines import (
    ENGINE_ENV,
    engine_flags,
    parse_engine_spec,
    plan_replicas,
    recorded_flags,
    served_name,
    server_command,
    visible_gpus,
)
from thai_eval_utils.backend.served.launch import launch_servers
from thai_eval_utils.cli import main
from thai_eval_utils.core.errors import ModelLoadError

REPO = Path(__file__).resolve().parents[1]
DATA = "data/thai_h6/h6"

STANDIN = r'''#!PYTHON
"""Stand-in for vLLM's `vllm` command (thai-eval tests): records its command line, then runs llama-cpp-python."""
import json, os, sys, time

args = sys.argv[1:]
if args == ["--version"]:
    print("INFO a log line first, as vLLM prints")
    print("0.0.0+standin")
    sys.exit(0)
with open(os.path.join(os.environ["STANDIN_RECORD"], f"{time.time_ns()}-{os.getpid()}.json"), "w") as f:
    json.dump({"argv": args, "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "pid": os.getpid(),
               "pgid": os.getpgid(0)}, f)
if os.environ.get("STANDIN_EXIT"):
    print("stand-in: cannot load the model", flush=True)
    sys.exit(3)
if os.environ.get("STANDIN_HANG"):
    print("stand-in: loading forever", flush=True)
    time.sleep(3600)
opt = lambda name: args[args.index(name) + 1]
os.execv(sys.executable, [sys.executable, "-m", "llama_cpp.server", "--model", args[1], "--host", opt("--host"),
                          "--port", opt("--port"), "--model_alias", opt("--served-model-name"), "--n_ctx", "16384",
                          "--n_threads", "1"])
'''

LAUNCHER = r"""
import json, signal, sys, time
from thai_eval_utils.backend.served.launch import launch_servers
# Python keeps a SIGINT its parent ignored ignored (a background job of a shell without job control has it so, and in
# the whole suite the test process once did): Ctrl-C is what this launcher stands for, so it takes SIGINT as an
# interactive program does.
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    with launch_servers("vllm", sys.argv[1], logs_dir=sys.argv[2], replicas=int(sys.argv[3]), deadline_s=60,
                        grace_s=5) as launch:
        print(json.dumps([r.proc.pid for r in launch.replicas]), flush=True)
        time.sleep(600)
except KeyboardInterrupt:
    sys.exit(130)
"""


# ------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_tiny_gguf(
        tmp_path_factory.mktemp("tiny") / "tiny-thai.gguf", h6_sample_texts(DATA), n_ctx=16384, add_bos=False
    )


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bin")
    script = folder / "vllm"
    script.write_text(STANDIN.replace("PYTHON", sys.executable))
    script.chmod(0o755)
    return folder


@pytest.fixture
def standin(bin_dir, tmp_path, monkeypatch):
    """The stand-in first on PATH, no GPUs visible; yields the folder its records go to. Afterwards any server a
    failed test left running is killed (by its recorded process group)."""
    folder = tmp_path / "records"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_RECORD", str(folder))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    yield folder
    for rec in records(folder):
        if running(rec["pid"]):
            os.killpg(rec["pgid"], signal.SIGKILL)


def records(folder: Path) -> list[dict]:
    """The stand-in's records, in the order it was started."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def port_of(record: dict) -> int:
    return int(record["argv"][record["argv"].index("--port") + 1])


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def requests_from_samples(n_docs: int = 16) -> list[tuple[str, str]]:
    """Log-likelihood requests from the Thai-H6 samples: short contexts, four continuations each."""
    texts = [t for t in h6_sample_texts(DATA) if 20 <= len(t) <= 200]
    return [(texts[i][:120], " " + texts[i + k + 1][:24]) for i in range(n_docs) for k in range(4)]


def launcher(gguf: Path, logs: Path, replicas: int, tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """A launcher process holding ``replicas`` servers; returns it and its servers' pids once they answer."""
    script = tmp_path / "launcher.py"
    script.write_text(LAUNCHER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(gguf), str(logs), str(replicas)], stdout=subprocess.PIPE, text=True, env=env
    )
    line = proc.stdout.readline()
    assert line, f"the launcher ended with code {proc.wait()}"
    return proc, json.loads(line)


# ------------------------------------------------------------------------------- plans and command lines
def test_gpus_and_replica_plans(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    gpus = visible_gpus()
    assert gpus == ["0", "1", "2", "3"]
    assert plan_replicas(gpus, tp=2) == [("0", "1"), ("2", "3")]
    assert plan_replicas(gpus, tp=2, replicas=1) == [("0", "1")]
    assert plan_replicas(gpus, tp=3) == [("0", "1", "2")]
    assert plan_replicas(gpus) == [("0",), ("1",), ("2",), ("3",)]
    with pytest.raises(
        ModelLoadError, match=r"^3 replica\(s\) x --tp 2 need 6 GPUs; this machine shows 4 \(0, 1, 2, 3;"
    ):
        plan_replicas(gpus, tp=2, replicas=3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,-1,6")  # CUDA stops at an invalid entry
    assert visible_gpus() == ["5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == [] and plan_replicas([]) == [()] and plan_replicas([], replicas=2) == [(), ()]


def test_documented_command_lines():
    flags = engine_flags("vllm", 2, False, ["--dtype", "bfloat16"])
    assert server_command("vllm", "/m/qwen", "qwen", 8001, flags) == [
        "vllm",
        "serve",
        "/m/qwen",
        "--host",
        "127.0.0.1",
        "--port",
        "8001",
        "--tensor-parallel-size",
        "2",
        "--served-model-name",
        "qwen",
        "--no-enable-prefix-caching",
        "--dtype",
        "bfloat16",
    ]
    assert engine_flags("vllm", 1, True) == ["--tensor-parallel-size", "1", "--enable-prefix-caching"]
    assert engine_flags("vllm", 1, None) == ["--tensor-parallel-size", "1"]  # the engine's default
    sglang = server_command("sglang", "org/m", "org/m", 30000, engine_flags("sglang", 4, False))
    assert sglang[1:] == [
        "-m",
        "sglang.launch_server",
        "--model-path",
        "org/m",
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--tp-size",
        "4",
        "--served-model-name",
        "org/m",
        "--disable-radix-cache",
    ]
    assert engine_flags("sglang", 1, True) == ["--tp-size", "1"]  # the radix cache is on unless disabled


def test_specs_names_and_secret_flags(tmp_path):
    (tmp_path / "qwen").mkdir()
    assert parse_engine_spec(f"vllm:{tmp_path / 'qwen'}").model == str(tmp_path / "qwen")
    assert parse_engine_spec("sglang:org/m").engine == "sglang"
    assert parse_engine_spec("completions:x") is None and parse_engine_spec("embedded") is None
    with pytest.raises(ModelLoadError, match="names no model"):
        parse_engine_spec("vllm:")
    assert served_name(str(tmp_path / "qwen") + "/") == "qwen" and served_name("org/m") == "org/m"
    assert recorded_flags(["--api-key", "sk-1", "--hf-token=abc", "--dtype", "half"]) == [
        "--api-key",
        "***",
        "--hf-token=***",
        "--dtype",
        "half",
    ]


def _launched(urls, flags, replicas):
    return json.dumps(
        {
            "model_id": "tiny",
            "base_urls": urls,
            "engine": {"name": "vllm", "version": "0.9", "model": "/m", "flags": flags},
            "engine_launch": {"replicas": replicas, "gpus": [], "logs": [], "started": "t"},
        }
    )


def test_run_cards_key_the_engine_and_not_where_it_ran(tiny_llama, tiny_model_dir, tmp_path, monkeypatch):
    """Other ports and replicas resume the same run (the card updated); other flags are another run; servers
    started by hand (no record, or a record of other servers) record no engine."""
    model, tok = tiny_llama
    proto = h6.LEADERBOARD.replace(num_fewshot=0)

    def run(servers, flags):
        urls = [s.base_url for s in servers]
        monkeypatch.setenv(ENGINE_ENV, _launched(urls, flags, len(urls)))
        m = ServedModel("tiny", base_url=urls, tokenizer=tiny_model_dir)
        res = h6.evaluate(m, "th_arc", DATA, proto, limit=1, outputs=tmp_path, progress=False)
        return res.run_dir, json.loads((res.run_dir / "run_card.json").read_text())["model"]

    off = ["--tensor-parallel-size", "1", "--no-enable-prefix-caching"]
    with FakeCompletionsServer(model, tok) as a:
        first, card = run([a], off)
        assert card["engine"]["flags"] == off and card["engine_launch"]["replicas"] == 1
        monkeypatch.setenv(ENGINE_ENV, _launched(["http://127.0.0.1:1/v1"], off, 1))
        assert "engine" not in ServedModel("tiny", base_url=a.base_url, tokenizer=tiny_model_dir).identity
    with FakeCompletionsServer(model, tok) as b, FakeCompletionsServer(model, tok) as c:
        again, card = run([b, c], off)
        other, _ = run([b, c], ["--tensor-parallel-size", "1", "--enable-prefix-caching"])
    assert again == first and card["engine_launch"]["replicas"] == 2
    assert other != first


@pytest.mark.parametrize("task, flag", [("th_winogrande", "--no-enable-prefix-caching"), ("th_gsm8k", None)])
def test_dry_run_prints_the_servers_and_starts_none(standin, monkeypatch, capsys, task, flag):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert (
        main(
            [
                "run",
                "--model",
                "vllm:org/tiny",
                "--tp",
                "2",
                "--benchmarks",
                f"thai_h6/{task}",
                "--limit",
                "1",
                "--dry-run",
                "--server-arg",
                "--max-model-len 4096",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    line = (
        "  vllm serve org/tiny --host 127.0.0.1 --port 0 --tensor-parallel-size 2 --served-model-name org/tiny"
        f"{' ' + flag if flag else ''} --max-model-len 4096"
    )
    assert out.count(line + "\n") == 2 and records(standin) == []


# ------------------------------------------------------------------------------- real servers (stand-in)
def _kill_after_a_request(log: Path, seen: int, pgid: int, when: dict) -> None:
    """SIGKILL group ``pgid`` as soon as its log shows one more completions request than ``seen``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count("POST /v1/completions") > seen:
            os.killpg(pgid, signal.SIGKILL)
            when["killed"] = time.monotonic()
            return
        time.sleep(0.01)


@pytest.mark.filterwarnings("ignore:.*straddling the context")
def test_replicas_pinned_to_their_gpus_and_one_dying_mid_run(gguf, standin, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    logs = tmp_path / "servers"
    reqs = requests_from_samples()
    with launch_servers(
        "vllm", str(gguf), tp=2, extra_args=["--max-model-len", "4096"], logs_dir=logs, deadline_s=60, grace_s=5
    ) as launch:
        ports = [replica.port for replica in launch.replicas]
        recs = sorted(records(standin), key=lambda r: ports.index(port_of(r)))  # the replicas start concurrently
        assert [r["cuda"] for r in recs] == ["0,1", "2,3"]
        for r, replica in zip(recs, launch.replicas):
            assert r["argv"] == [
                "serve",
                str(gguf),
                "--host",
                "127.0.0.1",
                "--port",
                str(replica.port),
                "--tensor-parallel-size",
                "2",
                "--served-model-name",
                "tiny-thai",
                "--no-enable-prefix-caching",
                "--max-model-len",
                "4096",
            ]
            assert r["pgid"] == r["pid"] and replica.log == logs / f"vllm-tiny-thai-{replica.index}.log"
        record = json.loads((logs / "running.json").read_text())
        assert record["launcher_pid"] == os.getpid()
        assert [(s["pid"], s["port"]) for s in record["servers"]] == [(r["pid"], port_of(r)) for r in recs]
        assert launch.identity()["engine"] == {
            "name": "vllm",
            "version": "0.0.0+standin",
            "model": str(gguf),
            "flags": ["--tensor-parallel-size", "2", "--no-enable-prefix-caching", "--max-model-len", "4096"],
        }
        assert launch.identity()["engine_launch"]["gpus"] == ["0,1", "2,3"]

        single = ServedModel("tiny-thai", base_url=launch.base_urls[0], max_retries=1).loglikelihood(
            reqs, progress=False
        )
        pooled = ServedModel("tiny-thai", base_url=launch.base_urls, max_retries=1)
        pooled.probe()
        pooled.prepare_loglikelihood()  # the request-order probe first: the kill below is meant for the scoring calls
        victim, when = recs[1], {}
        seen = launch.replicas[1].log.read_text().count("POST /v1/completions")
        killer = threading.Thread(
            target=_kill_after_a_request, args=(launch.replicas[1].log, seen, victim["pgid"], when)
        )
        killer.start()
        got = pooled.loglikelihood(reqs, progress=False)
        finished = time.monotonic()
        killer.join()
        assert when["killed"] < finished and not running(victim["pid"])
        assert pooled.observed["replicas"][launch.base_urls[1]] < len(reqs) // 4  # dropped before the end
        assert [g for _, g in got] == [g for _, g in single]
        assert max(abs(a - b) for (a, _), (b, _) in zip(got, single)) <= 1e-3  # llama.cpp's decode batches differ
    assert not (logs / "running.json").exists()
    assert not any(running(r["pid"]) for r in recs)


@pytest.mark.parametrize(
    "mode, what, said",
    [
        ("STANDIN_HANG", "did not become healthy within the 3 s deadline", "stand-in: loading forever"),
        ("STANDIN_EXIT", "exited with code 3 before it became healthy", "stand-in: cannot load the model"),
    ],
)
def test_a_server_that_never_answers_is_named_and_everything_stopped(
    gguf, standin, tmp_path, monkeypatch, mode, what, said
):
    monkeypatch.setenv(mode, "1")
    logs = tmp_path / "servers"
    began = time.monotonic()
    with pytest.raises(ModelLoadError) as err:
        launch_servers("vllm", str(gguf), logs_dir=logs, deadline_s=3, grace_s=2)
    took = time.monotonic() - began
    (rec,) = records(standin)
    head = (
        f"vllm replica 0 (port {port_of(rec)}, GPUs none) {what}; the servers were stopped. Last lines of "
        f"{logs / 'vllm-tiny-thai-0.log'}:\n"
    )
    assert str(err.value).startswith(head) and str(err.value).endswith(said)
    assert took < 3 + 2 + 3
    assert not running(rec["pid"]) and not (logs / "running.json").exists()


def test_a_taken_port_is_replaced_by_a_fresh_one(gguf, standin, tmp_path, monkeypatch):
    logs = tmp_path / "servers"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        ports, fresh = iter([taken]), L.free_port
        monkeypatch.setattr(L, "free_port", lambda: next(ports, None) or fresh())
        with launch_servers("vllm", str(gguf), logs_dir=logs, deadline_s=60, grace_s=5) as launch:
            first, second = records(standin)
            assert port_of(first) == taken and port_of(second) == launch.replicas[0].port != taken
            assert "address already in use" in launch.replicas[0].log.read_text()
            assert [s["pid"] for s in json.loads((logs / "running.json").read_text())["servers"]] == [second["pid"]]
            assert not running(first["pid"])
    assert not running(second["pid"])


def test_servers_of_a_killed_launcher_are_ended_by_the_next_launch(gguf, standin, tmp_path, capsys):
    logs = tmp_path / "servers"
    proc, pids = launcher(gguf, logs, 2, tmp_path)
    proc.kill()  # kill -9: no cleanup
    proc.wait()
    assert all(running(p) for p in pids)  # orphans, still holding their GPUs
    with launch_servers("vllm", str(gguf), logs_dir=logs, deadline_s=60, grace_s=5) as launch:
        assert not any(running(p) for p in pids)
        assert (
            f"thai-eval: ended 2 server(s) left running by an earlier thai-eval (pid {proc.pid}) that no longer "
            f"runs: pids {pids[0]}, {pids[1]} ({logs / 'running.json'})"
        ) in capsys.readouterr().err
        assert json.loads((logs / "running.json").read_text())["launcher_pid"] == os.getpid()
        assert launch.replicas[0].proc.poll() is None


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_the_servers(gguf, standin, tmp_path, sig, code):
    logs = tmp_path / "servers"
    proc, pids = launcher(gguf, logs, 1, tmp_path)
    proc.send_signal(sig)
    try:
        assert proc.wait(timeout=30) == code
    finally:
        proc.kill()  # a launcher that ignored the signal
    assert not any(running(p) for p in pids) and not (logs / "running.json").exists()


def test_thai_eval_run_starts_the_servers_and_stops_them(gguf, standin, tmp_path):
    """One ``thai-eval run --model vllm:<gguf>`` through the stand-in: the notebook scores through the started
    server, the run card records the engine, and no server is left. (Thai-H6 Winogrande: 5-shot, short; ARC's
    25-shot prompts take llama-cpp-python ~10 s each to echo.)"""
    tokenizer = write_tokenizer_folder(gguf, tmp_path / "tokenizer")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-m",
        "thai_eval_utils",
        "run",
        "--model",
        f"vllm:{gguf}",
        "--benchmarks",
        "thai_h6/th_winogrande",
        "--limit",
        "2",
        "--no-paper",
        "--outputs",
        str(out),
        "--tokenizer",
        str(tokenizer),
        "--server-arg",
        "--max-model-len 4096",
        "--server-deadline",
        "120",
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    (rec,) = records(standin)
    assert rec["argv"][rec["argv"].index("--served-model-name") + 1] == "tiny-thai"
    (card_path,) = (out / "runs").rglob("run_card.json")
    card = json.loads(card_path.read_text())
    assert card["model"]["model_id"] == "tiny-thai" and card["model"]["base_urls"] == [
        f"http://127.0.0.1:{port_of(rec)}/v1"
    ]
    assert card["model"]["engine"] == {
        "name": "vllm",
        "version": "0.0.0+standin",
        "model": str(gguf),
        "flags": ["--tensor-parallel-size", "1", "--no-enable-prefix-caching", "--max-model-len", "4096"],
    }
    assert card["model"]["engine_launch"]["replicas"] == 1 and card["model"]["tokenizer"] == str(tokenizer.resolve())
    assert not (out / "servers" / "running.json").exists() and (out / "servers" / "vllm-tiny-thai-0.log").is_file()
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(gguf) in " ".join(p.info["cmdline"] or [])]
    assert not [p for p in left if running(p)]
