"""An OpenAI-compatible judge on 127.0.0.1 with a fixed latency, for ``vs_karenina.py``.

Both karenina and verify send their deep-judgment rubric requests here. The judge sleeps the same
fixed latency before every reply (a real provider's round trip, without its CPU), and answers from
the request alone, whatever tool sent it:

* it finds the recorded answer the prompt is about (the longest of the known answers it contains);
* it finds the JSON schema asked for (``response_format``, a tool's parameters, else the last JSON
  block of the prompt) and fills it: excerpt lists get whole sentences copied verbatim from that
  answer, those sharing most words with the trait's criterion first (so both tools' quote checks
  accept them and neither retries); verdicts a valid value (true, an integer inside the bounds the
  schema or prompt gives, the first class or enum value); text fields a short reasoning; a batch's
  map by trait name gets every trait the prompt lists (verify's ``<trait name=.. kind=..>`` tags,
  karenina's ``- **name** (kind):`` lines), and a list of ``{trait_name, class_name}`` the literal ones;
* a request with no schema gets a short reasoning text naming the trait and the question.

It counts requests, prompt characters (the sum of the message contents) and the most requests in
flight at once, and stamps the first request's arrival (``time.time()``), per measured run:
``POST /bench/reset`` zeroes them (and may set ``latency_ms``), ``GET /bench/stats`` reads them.
``--log FILE`` appends every request and reply as JSON lines, to inspect what each tool really asks.

Standard library only; run it in its own process so its CPU is not charged to either tool::

    python benchmarks/latency_judge.py --answers traces.json --latency-ms 200   # prints its base URL
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_BLOCK = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")
_BOUNDS = (  # how the two tools state a score's bounds in the prompt, most specific first
    re.compile(r"outside \[(-?\d+), (-?\d+)\]"),
    re.compile(r"integer from (-?\d+) to (-?\d+)"),
)
_QUESTION = (re.compile(r"<question>(.*?)</question>", re.S), re.compile(r"## Question\n(.+)"))
_TRAIT = (re.compile(r'<trait name="([^"]+)"'), re.compile(r"## Trait\n(.+)"))
_CRITERION = (re.compile(r"<trait [^>]*>(.*?)</trait>", re.S), re.compile(r"## Criteria\n(.+)"))
_WORD = re.compile(r"[a-z]{4,}")
_VERIFY_TRAIT = re.compile(r'<trait name="([^"]+)" kind="(\w+)"(?: min="(-?\d+)" max="(-?\d+)")?>(.*?)</trait>', re.S)
_CLASSES = re.compile(r"Classes: (.+)")
_KARENINA_TRAIT = re.compile(r"^- \*\*([^*]+)\*\*(?: \((boolean|score (-?\d+)-(-?\d+))\))?:[^\n]*\n([^\n]*)", re.M)
_KARENINA_LINE = re.compile(r"^- \*\*([^*]+)\*\*[^:\n]*: ([^\n]*)", re.M)
_KARENINA_CLASSES = re.compile(r"\s*Classes: (.+)")


@dataclass(frozen=True)
class Prompt:
    """What a reply is made from: the prompt, sentences of its answer, and its batch traits' verdicts."""

    text: str
    quotes: list[str]
    traits: dict[str, bool | int | str]
    answer: str = ""
    trait: str | None = None  # inside a batch's per-trait object: that trait

    def about(self, trait: str) -> Prompt:
        """The prompt as seen for one trait of a batch: quotes chosen by that trait's criterion."""
        return Prompt(self.text, sentences(self.answer, criteria(self.text).get(trait, "")), self.traits,
                      self.answer, trait)  # fmt: skip


class Judge:
    """The replies and the counters of one server (shared by its handler threads)."""

    def __init__(self, answers: list[str], latency_ms: float, log: Path | None = None) -> None:
        self.answers = sorted(answers, key=len, reverse=True)
        self.latency_ms = latency_ms
        self.log = log
        self.lock = threading.Lock()
        self.reset()

    def reset(self, latency_ms: float | None = None) -> None:
        with self.lock:
            self.requests = 0
            self.prompt_chars = 0
            self.first_request_at: float | None = None
            self.in_flight = self.max_in_flight = 0
            if latency_ms is not None:
                self.latency_ms = latency_ms

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.requests,
                "prompt_chars": self.prompt_chars,
                "first_request_at": self.first_request_at,
                "latency_ms": self.latency_ms,
                "max_in_flight": self.max_in_flight,
            }

    def count(self, text: str) -> float:
        """Count one request; returns the latency to wait before answering it."""
        with self.lock:
            if self.first_request_at is None:
                self.first_request_at = time.time()
            self.requests += 1
            self.prompt_chars += len(text)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.latency_ms

    def done(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def reply(self, body: dict[str, Any], text: str) -> str:
        answer = next((a for a in self.answers if a in text), "")
        schema = find_schema(body, text)
        criterion = _first(_CRITERION, text.replace(answer, ""), text.replace(answer, ""))
        prompt = Prompt(text, sentences(answer, criterion), traits(text), answer)
        content = json.dumps(fill(schema, schema, prompt)) if schema else reasoning(text)
        if self.log is not None:
            with self.lock, self.log.open("a") as out:
                out.write(json.dumps({"at": time.time(), "request": body, "reply": content}) + "\n")
        return content


def message_text(body: dict[str, Any]) -> str:
    """The prompt: every message's content (text parts of a list content included), joined."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def sentences(answer: str, rest: str) -> list[str]:
    """Whole sentences of the answer, exactly as written and each once, those sharing most words
    with ``rest`` (the trait's criterion) first."""
    found = list(dict.fromkeys(s.strip() for s in _SENTENCE.findall(answer) if len(s.strip()) > 30))
    words = set(_WORD.findall(rest.lower()))
    return sorted(found, key=lambda s: -len(words & set(_WORD.findall(s.lower()))))


def _first(patterns: tuple[re.Pattern[str], ...], text: str, default: str) -> str:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found[1].strip()
    return default


def reasoning(text: str, trait: str | None = None) -> str:
    """A short reasoning naming the trait and the question, as a judge's would (so that two
    questions' verdict requests differ, and no client cache can answer one from the other)."""
    trait = trait or _first(_TRAIT, text, "the trait")
    question = _first(_QUESTION, text, "the question")
    return (
        f"Evidence: the quoted passages bear on {trait} for the question {question!r} [E1].\n"
        "Interpretation: they show the criterion is met.\nConclusion: The response meets the criterion."
    )


def find_schema(body: dict[str, Any], text: str) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        schema = fmt["json_schema"].get("schema")
        if isinstance(schema, dict):
            return schema
    for tool in body.get("tools") or []:
        params = (tool.get("function") or {}).get("parameters") if isinstance(tool, dict) else None
        if isinstance(params, dict):
            return params
    for block in reversed(_BLOCK.findall(text)):
        try:
            schema = json.loads(block)
        except ValueError:
            continue
        if isinstance(schema, dict) and "properties" in schema:
            return schema
    return None


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _resolve(target, root) if isinstance(target, dict) else {}
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in node.get(key) or [] if isinstance(o, dict) and o.get("type") != "null"]
        if options:
            return _resolve(options[0], root)
    return node


def _integer(node: dict[str, Any], text: str) -> int:
    # a score inside the schema's bounds, else inside the bounds the prompt states (1..5 if none)
    low, high = node.get("minimum"), node.get("maximum")
    if low is None or high is None:
        found = next((m for m in (p.search(text) for p in _BOUNDS) if m), None)
        low, high = (int(found[1]), int(found[2])) if found else (1, 5)
    return _score(int(low), int(high))


def _score(low: int, high: int) -> int:
    return high - 1 if high - low >= 2 else high


def traits(text: str) -> dict[str, bool | int | str]:
    """The verdict for every trait a batch prompt lists (verify's ``<trait name=.. kind=..>`` tags,
    karenina's ``- **name** (kind): ...`` lines): true, a score inside the bounds, the first class."""
    found: dict[str, bool | int | str] = {}
    for name, kind, low, high, body in _VERIFY_TRAIT.findall(text):
        classes = _CLASSES.search(body)
        if kind == "literal" and classes:
            found[name] = classes[1].split(";")[0].split(":")[0].strip()
        elif kind == "score":
            found[name] = _score(int(low or 1), int(high or 5))
        elif kind == "boolean":
            found[name] = True
    for name, kind, low, high, after in _KARENINA_TRAIT.findall(text):
        classes = _KARENINA_CLASSES.match(after)
        if classes:
            found[name] = classes[1].split(",")[0].strip()
        elif kind.startswith("score"):
            found[name] = _score(int(low or 1), int(high or 5))
        elif kind == "boolean":
            found[name] = True
    return found


def criteria(text: str) -> dict[str, str]:
    """Each listed trait's criterion, by name (a batch prompt lists several)."""
    found = {name: body.split("\nClasses:")[0] for name, _, _, _, body in _VERIFY_TRAIT.findall(text)}
    found.update((m[1], m[0]) for m in _KARENINA_LINE.finditer(text))
    return found


def fill(node: dict[str, Any], root: dict[str, Any], prompt: Prompt, name: str = "") -> Any:
    """A value for ``node``: see the module docstring for what each kind of field gets."""
    node = _resolve(node, root)
    kind = node.get("type")
    if "enum" in node:
        return node["enum"][0]
    extra = node.get("additionalProperties")
    if kind == "object" and isinstance(extra, dict):  # a batch: a map by trait name
        per_trait = _resolve(extra, root)
        if per_trait.get("type") == "object" or "properties" in per_trait:
            return {trait: fill(per_trait, root, prompt.about(trait), trait) for trait in prompt.traits}
        if per_trait.get("type") == "string":
            return {trait: reasoning(prompt.text, trait) for trait in prompt.traits}
        return {trait: value for trait, value in prompt.traits.items() if not isinstance(value, str)}
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {key: fill(sub, root, prompt, key) for key, sub in props.items() if isinstance(sub, dict)}
    if kind == "array":
        item = _resolve(node.get("items") if isinstance(node.get("items"), dict) else {}, root)
        if "excerpt" in name.lower() or "quote" in name.lower():
            one = [Prompt(prompt.text, [quote], prompt.traits, prompt.answer, prompt.trait) for quote in prompt.quotes[:3]]
            return [fill(item, root, quote, "text") for quote in one]
        if {"trait_name", "class_name"} <= set(item.get("properties") or {}):  # a batch's literal classes
            return [{"trait_name": t, "class_name": c} for t, c in prompt.traits.items() if isinstance(c, str)]
        return []  # e.g. hallucination risks, which need search results this benchmark has none of
    if kind == "boolean":  # a verdict is true; a flag saying nothing bears on the trait is not
        return not any(word in name.lower() for word in ("nothing", "none", "no_"))
    if kind in ("integer", "number"):
        return _integer(node, prompt.text)
    if kind == "string":
        lowered = name.lower()
        if lowered in ("text", "excerpt", "quote") and prompt.quotes:
            return prompt.quotes[0]
        return "high" if "confidence" in lowered else reasoning(prompt.text, prompt.trait)
    if prompt.trait in prompt.traits:  # an untyped verdict field of a batch's per-trait object
        return prompt.traits[prompt.trait]
    return None


def make_handler(judge: Judge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real provider's front end

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any]:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = json.loads(raw or b"{}")
            return data if isinstance(data, dict) else {}

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.endswith("/bench/stats"):
                self._send(judge.stats())
            else:
                self._send({"object": "list", "data": [{"id": "judge", "object": "model", "owned_by": "bench"}]})

        def do_POST(self) -> None:  # noqa: N802
            body = self._body()
            if self.path.endswith("/bench/reset"):
                judge.reset(body.get("latency_ms"))
                self._send(judge.stats())
                return
            text = message_text(body)
            time.sleep(judge.count(text) / 1000)
            try:
                content = judge.reply(body, text)
            finally:
                judge.done()
            self._send({
                "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "judge"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(content) // 4,
                          "total_tokens": (len(text) + len(content)) // 4},
            })  # fmt: skip

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the default backlog of 5 drops connections when 20 workers open them at once


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=Path, help="manual traces JSON {hash: answer}: the answers to quote")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, help="append every request and reply to this JSON-lines file")
    args = parser.parse_args(argv)
    answers = list(json.loads(args.answers.read_text()).values()) if args.answers else []
    judge = Judge(answers, args.latency_ms, args.log)
    server = Server(("127.0.0.1", args.port), make_handler(judge))
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
