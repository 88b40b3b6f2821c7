"""``benchmarks/reliability.py`` in a tiny configuration, and the simulated server's credential echo."""

from __future__ import annotations

import importlib.util
import json
import random
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from verify.llm.simulated.echo import credential_headers
from verify.llm.simulated.server import start_server

pytestmark = pytest.mark.slow

HARNESS = Path(__file__).resolve().parent.parent / "benchmarks" / "reliability.py"


@pytest.fixture(scope="module")
def harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reliability", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reliability"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference(harness: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return harness.reference_run(tmp_path_factory.mktemp("reliability"))


def test_a_killed_and_resumed_run_loses_and_duplicates_nothing(
    harness: ModuleType, reference: Any, tmp_path: Path
) -> None:
    (case,) = harness.kill_cases(reference, tmp_path, signal.SIGKILL, 1, random.Random(3))
    assert case.problems == []
    assert (case.lost, case.duplicated) == (0, 0)
    assert case.passed


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_every_task_a_killed_run_counted_is_in_its_files(
    harness: ModuleType, reference: Any, tmp_path: Path, sig: signal.Signals
) -> None:
    case = harness.counted_case(reference, tmp_path, sig, random.Random(5))
    assert case.problems == [] and case.lost == 0


def test_two_runs_on_one_output_refuse_the_second_and_keep_every_task_once(
    harness: ModuleType, reference: Any, tmp_path: Path
) -> None:
    case = harness.two_process_case(reference, tmp_path)
    assert case.problems == []
    assert (case.lost, case.duplicated) == (0, 0)


def test_planted_secrets_show_nowhere_after_show_config_and_a_run(harness: ModuleType, tmp_path: Path) -> None:
    scan = harness.secrets_scan(tmp_path, steps=("show_config", "run_json"))
    assert [c.problems for c in scan.cases] == [[], []]
    assert scan.echoes > 0, "the server never quoted the credentials back: the echo was not exercised"
    assert scan.leaks == []


def test_the_leak_search_finds_a_value_split_by_a_wrapped_line(harness: ModuleType) -> None:
    value = harness.SECRET["header"]
    leaks = harness.find_leaks({"out": f"x {value[:5]}\n│ {value[5:]} y", "clean": "nothing here"})
    assert [(leak.secret, leak.place) for leak in leaks] == [("header", "out")]


# --------------------------------------------------------------------------- the echo option


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


CREDENTIALS = {
    "Authorization": "Bearer sk-echoed-1", "X-Custom-Auth": "hdr-echoed-2", "Content-Type": "application/json",
}


def test_echo_answers_401_quoting_every_credential_header() -> None:
    with start_server(echo_auth_rate=1.0) as server:
        status, body = post(server.url, CREDENTIALS)
    assert status == 401
    message = body["error"]["message"]
    assert "Bearer sk-echoed-1" in message and "hdr-echoed-2" in message
    assert "application/json" not in message
    assert body["error"]["code"] == "invalid_api_key"


def test_echo_rate_zero_answers_normally_and_a_share_is_refused() -> None:
    with start_server() as server:
        assert post(server.url, CREDENTIALS)[0] == 200
    with start_server(echo_auth_rate=0.5, seed=4) as server:
        statuses = [post(server.url, CREDENTIALS)[0] for _ in range(40)]
    assert set(statuses) == {200, 401}  # identical bodies get fresh draws when repeated


def test_credential_headers_are_chosen_by_name() -> None:
    headers = [("Authorization", "a"), ("api-key", "b"), ("X-Session-Token", "c"), ("Cookie", "d"),
               ("Content-Type", "e"), ("X-Verify-Purpose", "f"), ("User-Agent", "g")]  # fmt: skip
    quoted = [name for name, _ in credential_headers(headers)]
    assert quoted == ["Authorization", "api-key", "X-Session-Token", "Cookie"]


def test_the_serve_command_takes_echo_auth_rate() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "verify.llm.simulated", "serve", "--port", "0", "--echo-auth-rate", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        status, body = post(url, {"Authorization": "Bearer sk-from-the-cli"})
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert status == 401 and "sk-from-the-cli" in body["error"]["message"]
