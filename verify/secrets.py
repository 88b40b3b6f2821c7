"""Recognising and removing credentials, in one place. A credential is recognised three ways:

* by **name**: :func:`is_secret_key` says whether a settings key, header or environment variable
  names one (``Authorization``, ``X-Custom-Auth``, ``api_key``, ``Set-Cookie``, ``HF_TOKEN``...);
* by **value**: every secret configured for this process, at any length from 8 characters, once
  registered (:func:`register_secrets`, :func:`register_config_secrets`, :func:`register_env_secrets`);
* by **shape**: provider keys (``sk-...``), ``Bearer ...`` tokens, credentials in URLs
  (``scheme://user:password@host``, ``?api_key=...``) and ``api_key=...`` assignments.

:func:`scrub` removes them from free text (answers, logs, errors; an assignment only when its value
looks like a credential: ``export OPENAI_API_KEY=...`` stays); :func:`redact` also shortens;
:func:`mask_data` and :func:`mask_json` scrub the strings of data before it is serialised, never its keys
or structure (a trait called ``password`` stays, the JSON stays valid); :func:`mask_secrets` masks (or
drops) them in settings dumps, by name too (``[name, value]`` pairs, ``{"name", "value"}`` entries).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, SecretStr

__all__ = [
    "FREE_FORM_FIELDS", "MASK", "MIN_SECRET_LENGTH", "clear_secrets", "is_secret_key", "mask_data", "mask_json",
    "mask_secrets", "may_hold_secret", "redact", "register_config_secrets", "register_env_secrets", "register_secrets",
    "scrub",
]

MASK = "**********"
#: Shorter registered values are ignored: masking every ``"ok"`` or ``"1234"`` would garble results.
MIN_SECRET_LENGTH = 8
#: Config fields passed through as given (client options, headers): only inside these are keys and
#: ``[name, value]`` pairs read as credential names. Elsewhere a list like ``["token_usage", "clarity"]``
#: is just two trait names.
FREE_FORM_FIELDS = frozenset({"extra_kwargs", "agent_runtime", "agent_middleware", "db_config"})

# --------------------------------------------------------------------------- names

_SECRET_WORDS = frozenset({
    "auth", "authn", "authz", "authorization", "authentication", "bearer", "key", "apikey", "privatekey",
    "token", "secret", "secrets", "password", "passwd", "passphrase", "cookie", "cookies", "signature", "sig",
    "credential", "credentials",
})
# Credentials run together inside one word: ``APIKEY``, ``PGPASSWORD``, ``clientsecret``.
_SECRET_COMPOUNDS = ("apikey", "accesskey", "secretkey", "privatekey", "accesstoken", "authtoken", "apitoken",
                     "refreshtoken", "sessiontoken", "clientsecret", "password", "passwd", "credential",
                     "authorization", "authentication")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_ENV_HINT = re.compile(r"TOKEN|SECRET|PASSW|COOKIE|SIGNATURE|CREDENTIAL|API_?KEY|AUTH(?!OR)")
# An environment value that is one lowercase word or a number is a setting (``AUTH_MODE=disabled``).
_PLAIN_VALUE = re.compile(r"[a-z]+|[\d.:/-]+")


def _words(name: str) -> list[str]:
    return [w for w in _NOT_ALNUM.split(_CAMEL.sub("_", name).lower()) if w]


def is_secret_key(key: str) -> bool:
    """Whether ``key`` names a credential: ``Authorization``, ``X-Custom-Auth``, ``X-Api-Key``,
    ``access_token``, ``Set-Cookie``, ``X-Signature``, ``db_password``, ``apiKey``... Whole words
    (``max_tokens``, ``tokenizer``, ``secretary`` and ``author`` are not credentials)."""
    words = _words(key)
    joined = "".join(words)
    return any(w in _SECRET_WORDS for w in words) or any(c in joined for c in _SECRET_COMPOUNDS)


def _env_secret(name: str, value: str) -> bool:
    if len(value) < MIN_SECRET_LENGTH or not (is_secret_key(name) or _ENV_HINT.search(name.upper())):
        return False
    words = _words(name)
    # OPENAI_API_KEY holds a credential; AUTH_MODE or TOKEN_TYPE may hold a plain setting.
    return (bool(words) and is_secret_key(words[-1])) or not _PLAIN_VALUE.fullmatch(value)


# --------------------------------------------------------------------------- shapes
# A regex scan costs CPython ~2.5 µs per KB, ``str.find`` a tenth of that: each shape is tried only
# where ``find`` saw a part it must hold, so a 10 KB result line is scrubbed in tens of microseconds.

_KEY_SHAPED = re.compile(  # provider keys are long: a short "pk-research-01" is a name, not a key
    r"\b(?:sk|tvly|gsk|xai|pk|rk)(?:-ant|-or|-proj)?[-_][A-Za-z0-9_\-]{20,}|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|\b[Bb](?i:earer)\s+(?=[A-Za-z0-9._\-]*\d)[A-Za-z0-9._\-]{8,}"  # "bearer instruments" is prose
)
_KEY_ANYWHERE = re.compile(r"(?:sk|tvly|xai|pk|rk)(?:-ant|-or|-proj)?[-_][A-Za-z0-9_\-]{20,}")  # no \b
_KEY_STARTS = ("sk-", "sk_", "tvly", "xai-", "xai_", "pk-", "pk_", "rk-", "rk_")  # one is in every provider key
_KEY_TAIL = re.compile(r"[-_][A-Za-z0-9_\-]{20,}")  # in every provider key, 2 to 4 characters from its start
_NAMES = r"(?:api[_-]?key|(?:access|auth|refresh)[_-]?token|client[_-]?secret|secret[_-]?key|authorization|passw(?:or)?d)"
_ASSIGNED = re.compile(  # api_key=..., "password": "...", also JSON-escaped; never a mask again
    rf"(?i)({_NAMES}(?:\\?[\"'])?\s*[:=]\s*(?P<quote>\\?[\"'])?(?:(?:bearer|basic|token)\s+)?)"
    r"(?!\*)(?!(?:null|true|false|none)(?![\w-]))(?P<value>[^\s\"'\\,;}\]&]+)"  # JSON literals stay valid JSON
)
# An assigned value is no credential when a placeholder (``...``, ``***``, ``<your key>``, ``$OPENAI_API_KEY``),
_PLACEHOLDER = re.compile(r"(?i)\.\.|\u2026|\*|^[<{\[($%]|^(.)\1+$|xxxx|your|example|placeholder|changeme|redacted")
_NUMBER = re.compile(r"[\d.,:+-]+")  # a number or plain words (``passwd: not valid JSON``, ``api_key=required``)
_PLAIN_WORDS = re.compile(r"(?:[A-Z]?[a-z]+|[A-Z]+)(?:[-_](?:[A-Z]?[a-z]+|[A-Z]+))*")
# For a first look at JSON text: escapes where a string holds quotes or whitespace; ``{"password": 4}`` is a key.
_ASSIGNED_NAME = re.compile(rf"(?i){_NAMES}(?:\\+\"|\\*')?(?:\s|\\[a-z]|\\u[0-9a-f]{{4}})*[:=]")
_ASSIGNED_PARTS = {  # each name holds one of these parts, at one of these distances from its start
    "key": (3, 4, 6, 7), "token": (4, 5, 6, 7, 8), "secret": (0, 6, 7), "authorization": (0,), "passw": (0,)}
_URL_USERINFO = re.compile(r"://([^\s/?#\"'<>\\]+)@")
_ESCAPED_USERINFO = re.compile(r"://[^\s/?#\"'<>]+@")  # as above, in JSON text: escapes allowed
_ESCAPED_PARAM = re.compile(r"(?:[?&]|\\u0026)([A-Za-z0-9_.\-\[\]]+)=")
_QUERY_PARAM = re.compile(r"([?&])([A-Za-z0-9_.\-\[\]]+)=([^&#\s\"'<>\\]*)")
_WHOLE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")

_Replace = Callable[[re.Match[str]], str]


def _finds(text: str, part: str) -> Iterator[int]:
    at = text.find(part)
    while at >= 0:
        yield at
        at = text.find(part, at + 1)


def _replace(text: str, matches: Iterable[re.Match[str]], repl: _Replace) -> str:
    """``text`` with ``matches`` (by start; a match overlapping an earlier one is skipped) replaced."""
    parts: list[str] = []
    done = 0
    for match in matches:
        if match.start() >= done:
            parts += (text[done : match.start()], repl(match))
            done = match.end()
    return "".join(parts) + text[done:] if parts else text


def _key_matches(text: str) -> list[re.Match[str]]:
    found = []
    for tail in _KEY_TAIL.finditer(text) if any(start in text for start in _KEY_STARTS) else ():
        start, end = max(0, tail.start() - 4), tail.end()
        while match := _KEY_SHAPED.search(text, start, end):
            found.append(match)
            start = match.end()
    for at in (*_finds(text, "AIza"), *(at - 1 for part in ("earer", "EARER") for at in _finds(text, part))):
        if match := _KEY_SHAPED.match(text, max(at, 0)):
            found.append(match)
    return sorted(found, key=lambda m: (m.start(), -m.end()))


def _assignment_matches(text: str, pattern: re.Pattern[str] = _ASSIGNED) -> Iterable[re.Match[str]]:
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lowercase is longer: positions would differ
        return pattern.finditer(text)
    starts = {at - back for part, backs in _ASSIGNED_PARTS.items() for at in _finds(lowered, part) for back in backs}
    return [match for s in sorted(starts) if s >= 0 and (match := pattern.match(text, s))]


def _credential_like(value: str, quoted: bool) -> bool:
    """Whether an assigned value is a credential, not a placeholder, a number or plain words (a whole
    quoted value, ``"api_key": "abcdefghij"``, counts even as one word)."""
    if len(value) < MIN_SECRET_LENGTH or _PLACEHOLDER.search(value) or _NUMBER.fullmatch(value):
        return False
    return quoted or not _PLAIN_WORDS.fullmatch(value)


def _mask_assignment(match: re.Match[str]) -> str:
    quote = match.group("quote")
    quoted = quote is not None and match.string.startswith(quote, match.end())  # the value is the whole string
    return f"{match.group(1)}***" if _credential_like(match.group("value"), quoted) else match.group(0)


def _mask_param(match: re.Match[str]) -> str:
    sep, name, value = match.groups()
    return f"{sep}{name}=***" if value and not value.startswith("*") and is_secret_key(name) else match.group(0)


def _mask_urls(text: str) -> str:
    """``scheme://user:password@host`` -> ``scheme://***@host``; ``?api_key=...`` -> ``?api_key=***``."""
    if "://" in text and "@" in text:
        text = _URL_USERINFO.sub("://***@", text)
    if "=" in text:
        starts = sorted((*_finds(text, "?"), *_finds(text, "&")))
        text = _replace(text, [m for s in starts if (m := _QUERY_PARAM.match(text, s))], _mask_param)
    return text


def _strip_url(text: str) -> str:
    """A URL without its user info and credential query parameters (what a saved preset keeps)."""
    if not _WHOLE_URL.fullmatch(text):
        return text
    try:
        parts = urlsplit(text)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return text
    kept = [(name, value) for name, value in pairs if not is_secret_key(name)]
    if "@" not in parts.netloc and len(kept) == len(pairs):
        return text
    query = parts.query if len(kept) == len(pairs) else urlencode(kept)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=query))


def _url_secrets(text: str) -> Iterator[str]:
    """The password (or, alone, the user) of every URL in ``text``, and its credential query values."""
    if "://" in text and "@" in text:
        for match in _URL_USERINFO.finditer(text):
            user, colon, password = match.group(1).partition(":")
            if colon or not _PLAIN_VALUE.fullmatch(user):  # a lone user is a token, unless a plain name
                secret = password if colon else user
                yield from (secret, unquote(secret))
    if "=" in text:
        for match in _QUERY_PARAM.finditer(text):
            if is_secret_key(match.group(2)):
                yield from (match.group(3), unquote(match.group(3)))


# --------------------------------------------------------------------------- the registry


class _Registry:
    """The secret values known to this process, and one compiled alternation that finds them all
    (longest first, with their JSON-escaped and URL-encoded forms), rebuilt when a value is added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: frozenset[str] = frozenset()
        # (every form, longest first; their alternation), replaced as one: readers need no lock
        self.compiled: tuple[tuple[str, ...], re.Pattern[str]] | None = None

    def add(self, values: Iterable[str]) -> None:
        found: set[str] = set()
        for value in values:
            if not isinstance(value, str):
                continue
            value = value.strip()
            # "Bearer <token>" and "Basic <token>": the token alone is echoed too
            for candidate in (value, value.rpartition(" ")[2]):
                if len(candidate) >= MIN_SECRET_LENGTH and candidate.strip("*"):
                    found.add(candidate)
        with self._lock:
            if not found <= self.values:
                self.values = self.values | found
                forms = {form for value in self.values for form in _forms(value)}
                ordered = tuple(sorted(forms, key=lambda f: (-len(f), f)))
                self.compiled = ordered, re.compile("|".join(map(re.escape, ordered)))

    def clear(self) -> None:
        with self._lock:
            self.values, self.compiled = frozenset(), None

    def mask(self, text: str) -> str:
        compiled = self.compiled
        if compiled is None:
            return text
        forms, pattern = compiled
        # ``in`` first: a scan for each form is far faster than one scan for their alternation
        return pattern.sub(MASK, text) if any(form in text for form in forms) else text


def _forms(value: str) -> set[str]:
    """``value`` as it appears in text, in a JSON string (also one made safe for HTML) and in a URL."""
    html = json.dumps(value, ensure_ascii=False)[1:-1].replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], html, quote(value, safe="")}


_REGISTRY = _Registry()


def register_secrets(values: Iterable[str]) -> None:
    """Mask these values wherever verify writes text, from now on (values under 8 characters are ignored)."""
    _REGISTRY.add(values)


def clear_secrets() -> None:
    """Forget every registered value (for tests)."""
    _REGISTRY.clear()


def register_env_secrets(environ: Mapping[str, str] | None = None) -> None:
    """Register the values of environment variables whose names suggest a credential (``*_API_KEY``,
    ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*AUTH*``, ``*COOKIE*``, ``*SIGNATURE*``,
    ``*CREDENTIAL*``...), 8 characters or more, and the passwords of URLs in any variable
    (``HTTPS_PROXY=http://user:password@proxy``). A variable whose name only *mentions* a
    credential (``AUTH_MODE``) is skipped when its value is one lowercase word or a number."""
    env = os.environ if environ is None else environ
    register_secrets(value for name, value in env.items() if _env_secret(name, value))
    register_secrets(secret for value in env.values() for secret in _url_secrets(value))


def register_config_secrets(config: BaseModel) -> None:
    """Register the secrets of a :class:`~verify.config.verification.VerificationConfig` (any model):
    ``SecretStr`` fields (``endpoint_api_key``, ``anthropic_api_key``), strings under credential
    names anywhere in :data:`FREE_FORM_FIELDS` (header dicts and ``[name, value]`` pairs too), and
    the passwords and credential query values of every URL."""
    register_secrets(_secrets_in(config))


def _secrets_in(value: Any, free: bool = False, named: bool = False) -> Iterator[str]:
    """The secrets in a config value; ``named``: it sits under a credential name; ``free``: it is
    free-form, so its keys and ``[name, value]`` pairs can name credentials."""
    if isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            if not field.exclude:  # manual_traces, replay_store: never dumped, and answers are not secrets
                yield from _secrets_in(getattr(value, name), free or name in FREE_FORM_FIELDS, is_secret_key(name))
    elif isinstance(value, str):
        if named:
            yield value
        yield from _url_secrets(value)
    elif isinstance(value, dict):
        entry = free and isinstance(value.get("name"), str) and is_secret_key(value["name"])
        for key, item in value.items():
            by_key = free and isinstance(key, str) and (is_secret_key(key) or (entry and key == "value"))
            yield from _secrets_in(item, free, named or by_key)
    elif isinstance(value, list | tuple):
        pair = free and len(value) == 2 and isinstance(value[0], str) and is_secret_key(value[0])
        for index, item in enumerate(value):
            yield from _secrets_in(item, free, named or (pair and index == 1))


# --------------------------------------------------------------------------- free text


def _mask_values(text: str) -> str:
    """Registered values, URL credentials and key-shaped strings masked (not the assignments)."""
    text = _mask_urls(_REGISTRY.mask(text))
    return _replace(text, _key_matches(text), lambda _: MASK)


def scrub(text: str) -> str:
    """``text`` (free text: a message, a traceback, an answer) with every credential masked: registered
    values (also JSON-escaped or URL-encoded), URL credentials, key-shaped strings and ``api_key=...``
    assignments whose value looks like a credential (not ``...``, ``<your key>`` or plain words).

    For data that is serialised (results, headers, manifests), use :func:`mask_data` or
    :func:`mask_json`: they mask values, never keys or structure."""
    text = _mask_values(text)
    return _replace(text, _assignment_matches(text), _mask_assignment)


def redact(text: str, limit: int = 500) -> str:
    """:func:`scrub`, whitespace collapsed, shortened to ``limit`` characters."""
    text = " ".join(scrub(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- data


def mask_data(value: Any) -> Any:
    """``value`` (what JSON holds) with every string, at any depth, :func:`scrub`-bed; keys only lose
    registered secrets. Nothing is masked for what it is called (a trait ``password``, a question
    ``api_key``), so what is serialised from the result has the same structure: valid JSON or CSV."""
    if isinstance(value, str):
        return scrub(value) if len(value) >= MIN_SECRET_LENGTH else value  # shorter holds no credential
    if isinstance(value, dict):
        return {_REGISTRY.mask(k) if isinstance(k, str) else k: mask_data(item) for k, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_data(item) for item in value]
    return value


def mask_json(text: str) -> str:
    """A JSON document with :func:`mask_data` applied; as it is when nothing in it can be a credential
    (one look at the text), so a result line costs a parse and a dump only when it may hold one."""
    if not may_hold_secret(text):
        return text
    return json.dumps(mask_data(json.loads(text)))


def may_hold_secret(text: str) -> bool:
    """Whether a string serialised in the JSON ``text`` (also HTML-safe: ``\\u0026``) may hold what :func:`scrub`
    masks: looser than it where escapes could hide a match (no word boundaries, escaped whitespace)."""
    compiled = _REGISTRY.compiled
    return bool(
        (compiled is not None and any(form in text for form in compiled[0]))
        or "AIza" in text or "earer" in text or "EARER" in text or ("://" in text and _ESCAPED_USERINFO.search(text))
        or ("=" in text and any(is_secret_key(match.group(1)) for part in ("?", "&", "\\u0026")
                                for s in _finds(text, part) if (match := _ESCAPED_PARAM.match(text, s))))
        or any(_KEY_ANYWHERE.match(text, at) for start in _KEY_STARTS for at in _finds(text, start))
        or any(True for _ in _assignment_matches(text, _ASSIGNED_NAME))
    )


# --------------------------------------------------------------------------- settings dumps


def mask_secrets(value: Any, *, drop: bool = False, by_name: bool = True) -> Any:
    """``value`` with credentials masked (or, with ``drop``, removed), recursively.

    Every string has its registered secrets, URL credentials and key-shaped parts masked; with
    ``drop`` a URL loses its user info and credential parameters instead, and any other string
    holding a credential is removed (a partly masked string would be sent to the provider as is).
    With ``by_name`` (free-form settings), strings under credential names are masked too. Only
    strings are secrets: a boolean under a key like ``secret_mode`` stays.
    """
    if isinstance(value, dict):
        named = value.get("name") if by_name and isinstance(value.get("value"), str) else None
        if isinstance(named, str) and is_secret_key(named):
            return None if drop else {**value, "value": MASK}
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if by_name and isinstance(key, str) and is_secret_key(key) and isinstance(item, str):
                if not drop:
                    out[key] = MASK
                continue
            masked = mask_secrets(item, drop=drop, by_name=by_name)
            if drop and masked is None and item is not None:
                continue
            out[key] = masked
        return out
    if isinstance(value, list | tuple):
        pair = len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str)
        if by_name and pair and is_secret_key(value[0]):
            return None if drop else [value[0], MASK]
        items = [mask_secrets(item, drop=drop, by_name=by_name) for item in value]
        return [m for m, item in zip(items, value, strict=True) if not (drop and m is None and item is not None)]
    if isinstance(value, str):
        if not drop:
            return _mask_values(value)
        stripped = _strip_url(value)
        return stripped if _mask_values(stripped) == stripped else None
    return value
