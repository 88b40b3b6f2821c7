"""Client CPU per HTTP call: verify's call path against a trivial keep-alive client, in one run.

Both clients send the same judge request (a single-trait verdict with its JSON schema, the prompt
verify writes for a ~3,000-character answer) to the simulated OpenAI-compatible server, which runs
in its own process so its CPU is not the client's:

* **trivial**: raw asyncio streams, one HTTP/1.1 keep-alive connection per call in flight; each
  call is one ``json.dumps``, one write, one read of the headers and body, one ``json.loads``.
  This is the floor a Python client can hardly go under.
* **verify**: the judge model built as the runner builds it (:func:`verify.llm.build.build_model`:
  retry, adaptive limit, circuit breaker, the OpenAI-compatible adapter; no cache), called through
  its port with a structured request (``ChatModel.complete``).

Each is measured at 20 and at 200 calls in flight, after a warm-up on the same event loop (first
connections and the structured-output probe are not a call's steady state). CPU is this process's
(``time.process_time``); the ratios are measured in the same run, so a busy machine moves both sides.

Usage::

    python benchmarks/bench_http.py [--calls N] [--quick]

Prints ``name: value`` lines: ``trivial_cpu_ms_per_call_20``, ``verify_cpu_ms_per_call_20``,
``ratio_20`` (target <= 3), the same for 200, and each measurement's wall, CPU and load
(``benchmarks/machine.py``; ``_busy: 1`` marks a figure measured with load above the core count).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parent), str(_HERE)):  # run as a script from anywhere
    if _path not in sys.path:
        sys.path.insert(0, _path)

from benchgen import TRAITS, answer_text, endpoint, server_process  # noqa: E402
from machine import Measured  # noqa: E402

from verify.config.models import ModelConfig  # noqa: E402
from verify.judging import prompts  # noqa: E402
from verify.judging.verdicts import verdict_schema  # noqa: E402
from verify.llm.adaptive import AdaptiveLimit  # noqa: E402
from verify.llm.build import build_model  # noqa: E402
from verify.llm.ports import PURPOSE_HEADER, ChatModel, ChatRequest, Message, Purpose  # noqa: E402
from verify.llm.structured import json_schema_of  # noqa: E402

FLIGHTS = (20, 200)


@dataclass(frozen=True)
class Figure:
    """One client at one concurrency: CPU per call and the measurement it came from."""

    cpu_ms_per_call: float
    measured: Measured
    peak_in_flight: int


def judge_request() -> ChatRequest:
    """The request a standard single-trait verdict sends: the real prompt and schema."""
    trait = TRAITS[0]
    text = prompts.single_trait_prompt("How does fermentation work?", answer_text(0), trait, None)
    schema = json_schema_of(verdict_schema(trait))
    messages = (Message("system", "You are an expert evaluator."), Message("user", text))
    return ChatRequest(messages, schema=schema, purpose=Purpose.RUBRIC_SINGLE, trait=trait.name)


def wire_body(request: ChatRequest, model_name: str) -> dict[str, Any]:
    """The JSON body of ``request`` as a json_schema structured call (what the adapter sends)."""
    assert request.schema is not None
    return {
        "model": model_name,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": request.schema.get("title", "Reply"),
                                            "schema": request.schema, "strict": False}},
    }  # fmt: skip


# ------------------------------------------------------------------------------------------ trivial


async def _trivial_worker(host: str, port: int, path: str, body: dict[str, Any], calls: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer sk-test\r\n"
            f"Content-Type: application/json\r\n{PURPOSE_HEADER}: rubric_single\r\n")  # fmt: skip
    try:
        for _ in range(calls):
            content = json.dumps(body, ensure_ascii=False).encode()
            writer.write(f"{head}Content-Length: {len(content)}\r\n\r\n".encode() + content)
            headers = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in headers.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            data = json.loads(await reader.readexactly(length))
            assert data["choices"][0]["message"]["content"]
    finally:
        writer.close()


async def _trivial(url: str, body: dict[str, Any], flight: int, calls: int) -> Figure:
    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path + "/chat/completions"
    per_worker = max(1, calls // flight)
    await asyncio.gather(*(_trivial_worker(host, port, path, body, 2) for _ in range(flight)))  # warm-up
    started = time.process_time()
    with Measured(f"trivial_{flight}") as m:
        await asyncio.gather(*(_trivial_worker(host, port, path, body, per_worker) for _ in range(flight)))
    cpu = time.process_time() - started
    return Figure(cpu * 1000 / (per_worker * flight), m, flight)


# ------------------------------------------------------------------------------------------- verify


def _judge(url: str) -> tuple[ChatModel, AdaptiveLimit]:
    config = ModelConfig.model_validate(endpoint(url))
    adaptive = AdaptiveLimit("judge")
    return build_model(config, adaptive=adaptive), adaptive


async def _verify_worker(model: ChatModel, request: ChatRequest, calls: int) -> None:
    for _ in range(calls):
        reply = await model.complete(request)
        assert reply.parsed is not None, reply.text


async def _verify(url: str, request: ChatRequest, flight: int, calls: int) -> Figure:
    model, adaptive = _judge(url)
    per_worker = max(1, calls // flight)
    # warm-up: the structured-output probe, the connections, and the adaptive limit's growth
    await asyncio.gather(*(_verify_worker(model, request, 4) for _ in range(flight)))
    adaptive.peak_in_flight = 0
    started = time.process_time()
    with Measured(f"verify_{flight}") as m:
        await asyncio.gather(*(_verify_worker(model, request, per_worker) for _ in range(flight)))
    cpu = time.process_time() - started
    aclose = getattr(getattr(getattr(model, "inner", None), "inner", None), "aclose", None)
    if aclose is not None:
        await aclose()
    return Figure(cpu * 1000 / (per_worker * flight), m, adaptive.peak_in_flight)


# --------------------------------------------------------------------------------------------- main


def run(calls: int) -> dict[str, float]:
    """Every figure, measured against one server process."""
    request = judge_request()
    out: dict[str, float] = {}
    with server_process("--latency-ms", 0) as url:
        body = wire_body(request, str(endpoint(url)["model_name"]))
        for flight in FLIGHTS:
            trivial = asyncio.run(_trivial(url, body, flight, calls))
            verify = asyncio.run(_verify(url, request, flight, calls))
            out[f"trivial_cpu_ms_per_call_{flight}"] = trivial.cpu_ms_per_call
            out[f"verify_cpu_ms_per_call_{flight}"] = verify.cpu_ms_per_call
            out[f"ratio_{flight}"] = verify.cpu_ms_per_call / trivial.cpu_ms_per_call
            out[f"verify_peak_in_flight_{flight}"] = verify.peak_in_flight
            for figure in (trivial, verify):
                for line in figure.measured.lines():
                    name, value = line.split(": ")
                    out[name] = float(value)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4000, help="calls per measurement (default 4000)")
    parser.add_argument("--quick", action="store_true", help="1,000 calls per measurement")
    args = parser.parse_args(argv)
    for name, value in run(1000 if args.quick else args.calls).items():
        print(f"{name}: {value:.3f}" if isinstance(value, float) and not value.is_integer() else f"{name}: {value:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
