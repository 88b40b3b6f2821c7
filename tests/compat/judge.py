"""A deterministic judge behind an OpenAI-compatible endpoint on 127.0.0.1, for the golden suite.

karenina (making the golden files, ``make_golden.py``) and verify (``test_golden.py``) both send
their parsing and rubric requests here. The reply is a function of the request only: find which
question the request is about (its question or its answer text is in the prompt), find the JSON
schema it asks for (``response_format``, else the last JSON block of the prompt), and fill every
property of that schema from a fixed table of values for that question (a property not in the
table gets a plain default: false, the minimum, the first choice, an empty string or list). Both
tools therefore see the same judgments, whatever their prompts say around them.

Standard library only: it runs in karenina's interpreter and in verify's.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Per question: its text, the recorded answer, and the judge's values by schema property name:
#: ``fields`` (template attributes, and a metric trait's ``tp``/``fn``/``fp``/``tn`` lists) and
#: ``traits`` (rubric trait name -> score, true/false, or a literal trait's class name).
CASES: dict[str, dict[str, Any]] = {}

_BLOCK = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)


def register(cases: Mapping[str, Mapping[str, Any]]) -> None:
    """Use these cases: ``{question id: {"question": ..., "answer": ..., "fields": {...}, "traits": {...}}}``."""
    CASES.clear()
    CASES.update({k: dict(v) for k, v in cases.items()})


def _case(text: str) -> dict[str, Any]:
    # the longest question text found wins, so a question quoted inside another cannot mislead
    found = [c for c in CASES.values() if c["question"] in text]
    if not found:
        found = [c for c in CASES.values() if c["answer"] and c["answer"] in text]
    return max(found, key=lambda c: len(c["question"])) if found else {}


def _schema(body: dict[str, Any], text: str) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        schema = fmt["json_schema"].get("schema")
        if isinstance(schema, dict):
            return schema
    for tool in body.get("tools") or []:
        params = (tool.get("function") or {}).get("parameters")
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


def _default(node: dict[str, Any], root: dict[str, Any]) -> Any:
    if any(isinstance(o, dict) and o.get("type") == "null" for o in node.get("anyOf") or []):
        return None
    node = _resolve(node, root)
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return node.get("minimum", 0)
    if kind == "array":
        return []
    if kind == "object":
        return fill(node, {}, "", root)
    return "" if kind == "string" else None


def _mentioned(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def _fits(value: Any, node: dict[str, Any], root: dict[str, Any]) -> bool:
    kinds = {_resolve(o, root).get("type") for o in node.get("anyOf") or [node] if isinstance(o, dict)}
    kind = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(value))
    return not kinds - {None} or kind in kinds or (kind == "integer" and "number" in kinds)


def fill(schema: dict[str, Any], case: Mapping[str, Any], text: str, root: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object for ``schema``: each property from the case's values by name; a map of scores
    (an object of ``additionalProperties``) gets every trait the prompt names whose value fits;
    a list of ``{trait_name, class_name}`` items gets the named traits' classes; else a default."""
    root = root or schema
    node = _resolve(schema, root)
    values = {**case.get("fields", {}), **case.get("traits", {})}
    traits = {name: v for name, v in case.get("traits", {}).items() if _mentioned(name, text)}
    out: dict[str, Any] = {}
    for name, prop in (node.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        shape = _resolve(prop, root)
        item = _resolve(shape.get("items") or {}, root) if shape.get("type") == "array" else {}
        if name in values:
            out[name] = values[name]
        elif shape.get("type") == "object" and isinstance(shape.get("additionalProperties"), dict):
            out[name] = {t: v for t, v in traits.items() if _fits(v, shape["additionalProperties"], root)}
        elif {"trait_name", "class_name"} <= set(item.get("properties") or {}):
            out[name] = [{"trait_name": t, "class_name": v} for t, v in traits.items() if isinstance(v, str)]
        elif shape.get("type") == "object":
            out[name] = fill(prop, case, text, root)
        else:
            out[name] = _default(prop, root)
    return out


def reply_text(body: dict[str, Any]) -> str:
    """The judge's reply to one chat-completions request body."""
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [] if isinstance(m, dict))
    schema = _schema(body, text)
    case = _case(text)
    return json.dumps(fill(schema, case, text) if schema else {**case.get("fields", {}), **case.get("traits", {})})


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet: tests read the request log instead
        pass

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._send({"object": "list", "data": [{"id": "judge", "object": "model", "owned_by": "golden"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.requests.append(body)  # type: ignore[attr-defined]
        content = reply_text(body)
        self._send({
            "id": "chatcmpl-golden", "object": "chat.completion", "created": 0, "model": body.get("model", "judge"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })


@contextmanager
def serve() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve the judge on a free port: yields its base URL (``.../v1``) and the request log."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
