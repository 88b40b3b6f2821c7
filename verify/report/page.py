"""The HTML file: one self-contained page (inline CSS, script and data), safe for untrusted text.

The data travels as JSON in ``<script type="application/json" id="report-data">``, which the browser
never runs. Inside it ``<``, ``>`` and ``&`` are written as ``\\u003c``, ``\\u003e`` and ``\\u0026`` (so
no answer can close the script element or open a comment), and U+2028/U+2029 and lone surrogates
as ``\\uXXXX`` escapes (they would break some JavaScript parsers or the UTF-8 file). Past
:data:`COMPRESS_ABOVE` characters the JSON is gzipped and base64-encoded (``{"gzip": "..."}``); the
page inflates it with the browser's ``DecompressionStream``, so a few thousand tasks stay mailable.

Credentials are masked once more (:func:`verify.secrets.mask_data`) before the data is written.

A Content-Security-Policy allows only the page's own script and stylesheet (by hash): should text
ever slip through as markup, no script in it could run and nothing could be loaded from anywhere.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import math
import re
from importlib import resources
from typing import Any

from verify.secrets import mask_data, may_hold_secret

__all__ = ["COMPRESS_ABOVE", "CSS", "SCRIPT", "SCRIPT_PARTS", "data_of_page", "render_page", "script_json"]

COMPRESS_ABOVE = 1_000_000
"""Characters of JSON above which the data is embedded gzipped (the demo's page stays readable)."""



def _asset(name: str) -> str:
    """A file of the page's script or stylesheet, shipped in the wheel (verify/report/assets)."""
    return resources.files("verify.report").joinpath("assets", name).read_text(encoding="utf-8")


#: The page's stylesheet and script parts, in order: helpers and data, charts, the task table, the
#: task view, revisions and transcripts (each file's first comment says what it holds).
CSS = _asset("page.css")
SCRIPT_PARTS = ("base.js", "charts.js", "table.js", "view.js", "agent.js")
SCRIPT = "(function () {\n" + "".join(_asset(name) for name in SCRIPT_PARTS) + """
loadData().then(init, err => {
  const p = document.getElementById('loading');
  if (p) p.textContent = 'This report could not be read: ' + err;
});
})();
"""

_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)
_STATUS_OPTIONS = (("all", "all statuses"), ("passed", "passed"), ("judged", "judged (no pass rule)"), ("failed", "failed"),
                   ("incomplete", "incomplete"), ("auto_failed", "auto-failed"))


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as null (JSON has neither; a page must still open)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def script_json(value: Any) -> str:
    """``value`` as JSON that can sit inside a ``<script>`` element whatever its strings hold."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _embedded(data: dict[str, Any]) -> str:
    # exports are masked when written; masking again covers secrets this process knows of (--report on a run)
    text = script_json(data)
    if may_hold_secret(text):  # the data is walked only when one look at its text finds a candidate
        text = script_json(mask_data(data))
    if len(text) <= COMPRESS_ABOVE:
        return text
    packed = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    return script_json({"gzip": base64.b64encode(packed).decode("ascii")})


def data_of_page(page: str) -> dict[str, Any]:
    """The data a page embeds, as its script reads it (for tests and tools)."""
    match = _DATA.search(page)
    if match is None:
        raise ValueError("no report data in this page")
    data: dict[str, Any] = json.loads(match.group(1))
    if isinstance(data.get("gzip"), str):
        data = json.loads(gzip.decompress(base64.b64decode(data["gzip"])).decode("utf-8"))
    return data


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def render_page(data: dict[str, Any], title: str) -> str:
    """The whole HTML document for ``data`` (see :mod:`verify.report`)."""
    policy = (f"default-src 'none'; script-src {_hash(SCRIPT)}; style-src {_hash(CSS)}; img-src data:; "
              "base-uri 'none'; form-action 'none'")
    options = "".join(f'<option value="{v}">{label}</option>' for v, label in _STATUS_OPTIONS)
    heading = html.escape(title)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{heading}</title>
<style>{CSS}</style>
</head>
<body>
<header class="page"><h1>{heading}</h1><p id="loading" class="muted">Loading the report…</p>
<noscript><p>This report is drawn by its own script: open it in a browser with JavaScript on.</p></noscript></header>
<main>
<section id="run"></section>
<section id="compare" hidden></section>
<section id="overview"></section>
<section id="table-section">
<h2>Tasks</h2>
<div class="filters">
<input id="search" type="search" placeholder="search questions, answers, models, reasons" aria-label="search tasks">
<select id="status-filter" aria-label="status">{options}</select>
<select id="model-filter" aria-label="models"><option value="all">all models</option></select>
<select id="trait-filter" aria-label="trait"><option value="all">all traits</option></select>
<select id="category-filter" aria-label="failure category"><option value="all">all failure categories</option></select>
<select id="revision-filter" aria-label="revision status" hidden><option value="all">all revision statuses</option></select>
<span id="shown" class="muted"></span>
</div>
<div class="table-wrap"><table id="tasks"></table></div>
<div id="pager"></div>
</section>
<div id="view"></div>
</main>
<script type="application/json" id="report-data">{_embedded(data)}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""
