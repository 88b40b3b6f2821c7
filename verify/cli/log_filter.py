"""Every log record of this process scrubbed of credentials (:func:`verify.secrets.scrub`), and verify's
warnings on stderr once each (:func:`warn_once`)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["Once", "SecretFilter", "install_log_filter", "warn_once"]

_SCRUBBED = "verify_secrets_scrubbed"


class SecretFilter(logging.Filter):
    """Scrubs a record's message (arguments merged in), exception text and stack; never rejects one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _SCRUBBED, False):
            return True
        from verify.secrets import scrub  # its patterns load with the first record, not with --help

        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format; a log call must not raise: show both
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        setattr(record, _SCRUBBED, True)
        return True


class _ScrubbingFactory:
    """Wraps the log record factory: every record is scrubbed when made, whichever logger makes it
    (a filter on ``verify`` alone misses records of ``verify.llm...`` propagated to its handlers)."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner
        self.filter = SecretFilter()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        self.filter.filter(record)
        return record


def install_log_filter() -> None:
    """Scrub every log record of this process: a :class:`SecretFilter` on the ``verify`` logger, and
    on the record factory for its child loggers and libraries (httpx logs URLs). Idempotent."""
    logger = logging.getLogger("verify")
    if not any(isinstance(f, SecretFilter) for f in logger.filters):
        logger.addFilter(SecretFilter())
    if not isinstance(logging.getLogRecordFactory(), _ScrubbingFactory):
        logging.setLogRecordFactory(_ScrubbingFactory(logging.getLogRecordFactory()))


class Once(logging.Filter):
    """verify's warnings on stderr, each distinct message once; repeats are counted for the end."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        self.counts[message] += 1
        return self.counts[message] == 1


def warn_once() -> Once:
    logger = logging.getLogger("verify")
    for handler in [h for h in logger.handlers if getattr(h, "verify_cli", False)]:
        logger.removeHandler(handler)  # one handler per invocation (tests invoke the CLI many times)
    handler = logging.StreamHandler()
    handler.verify_cli = True  # type: ignore[attr-defined]
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    once = Once()
    handler.addFilter(once)
    logger.addHandler(handler)
    return once
