"""``python -m verify.llm.simulated serve --port N``: run the simulated OpenAI-compatible server."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from verify.llm.simulated.imperfect import BEHAVIOURS, Imperfections
from verify.llm.simulated.options import OVER_CAPACITY
from verify.llm.simulated.server import serve_forever


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a rate must be between 0 and 1, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m verify.llm.simulated", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve /v1/chat/completions on 127.0.0.1 with the simulated judge",
        description="Serve an OpenAI-compatible API on 127.0.0.1; prints the base URL, runs until Ctrl-C.",
    )
    serve.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0 = any free port)")
    serve.add_argument("--latency-ms", type=float, default=0.0, help="sleep this long per request")
    serve.add_argument(
        "--latency-cv", type=float, default=0.0,
        help="vary the latency: log-normal with median --latency-ms and this coefficient of variation (0.5: jittery)",
    )  # fmt: skip
    serve.add_argument(
        "--capacity", type=int, default=None,
        help="requests served at once; beyond it requests slow down or get 429 (see --over-capacity)",
    )  # fmt: skip
    serve.add_argument(
        "--over-capacity", choices=OVER_CAPACITY, default="queue",
        help="beyond --capacity: 'queue' (M in flight take M/capacity times longer) or '429' (refused at once)",
    )  # fmt: skip
    serve.add_argument("--rate-429", type=_rate, default=0.0, help="fraction of requests answered 429")
    serve.add_argument("--rate-500", type=_rate, default=0.0, help="fraction of requests answered 500")
    serve.add_argument("--malformed-rate", type=_rate, default=0.0, help="fraction of malformed JSON replies")
    serve.add_argument(
        "--fabricate-rate", type=_rate, default=0.0, help="fraction of replies with made-up excerpts"
    )
    serve.add_argument(
        "--truncate-rate", type=_rate, default=0.0, help="fraction of replies cut short (length)"
    )
    serve.add_argument(
        "--fail-first", type=int, default=0, help="answer the first N requests with --fail-status"
    )
    serve.add_argument(
        "--fail-status", type=int, default=429, help="HTTP status for --fail-first (default 429)"
    )
    serve.add_argument("--seed", type=int, default=0, help="seed for the fault decisions")
    serve.add_argument(
        "--reject-json-schema", action="store_true",
        help="answer response_format json_schema with llama.cpp's HTTP 500 (json_object still works)",
    )  # fmt: skip
    serve.add_argument(
        "--reject-json-object", action="store_true", help="answer response_format json_object with HTTP 400"
    )
    serve.add_argument("--no-tools", action="store_true", help="answer requests with tools with llama.cpp's 500")
    serve.add_argument(
        "--imperfection-rate", type=_rate, default=0.0, help="fraction of judge replies with one imperfection"
    )
    serve.add_argument(
        "--imperfections", default="", help=f"comma-separated imperfections (default all: {','.join(BEHAVIOURS)})"
    )
    serve.add_argument("--constant-reply", default=None, help="answer every judge request with this text")
    serve.add_argument(
        "--echo-auth-rate", type=_rate, default=0.0,
        help="fraction of requests answered 401 with the request's credential headers quoted in the error",
    )  # fmt: skip
    return parser


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        imperfections = Imperfections.of(args.imperfection_rate, args.imperfections, args.constant_reply)
    except ValueError as exc:
        parser.error(str(exc))
    signal.signal(signal.SIGTERM, _stop)
    print("simulated OpenAI-compatible server; Ctrl-C to stop", file=sys.stderr, flush=True)
    serve_forever(
        port=args.port,
        latency_ms=args.latency_ms,
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        malformed_rate=args.malformed_rate,
        fabricate_rate=args.fabricate_rate,
        truncate_rate=args.truncate_rate,
        fail_first=args.fail_first,
        fail_status=args.fail_status,
        seed=args.seed,
        reject_json_schema=args.reject_json_schema,
        reject_json_object=args.reject_json_object,
        no_tools=args.no_tools,
        imperfections=imperfections,
        echo_auth_rate=args.echo_auth_rate,
        latency_cv=args.latency_cv,
        capacity=args.capacity,
        over_capacity=args.over_capacity,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
