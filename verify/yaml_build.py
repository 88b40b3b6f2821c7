"""YAML documents built in one pass over libyaml's event stream, with the safe loader's meaning.

PyYAML's ``CSafeLoader`` parses in C but builds every node, resolves every scalar and constructs every
value in Python, which makes a 10 MB suite load several times slower than the same data as JSON. Here the
events are turned into values directly: a quoted scalar is a string without a look at the resolvers, a
plain scalar is matched only against the implicit resolvers for its first character (the safe loader's
own table, so ``yes``, ``0o17``, ``1_000``, ``2024-01-01`` and ``~`` mean what they mean there), and only
the rare non-string scalars go through the safe constructor. Anchors, aliases (the same object, as PyYAML
gives) and merge keys (``<<``) are handled; nesting depth and alias expansion are limited in the same pass.

A document this builder does not cover (explicit tags other than the core ones, complex keys) raises
:class:`Unsupported`, and the caller falls back to PyYAML's loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Limit", "Unsupported", "build"]

_CORE = "tag:yaml.org,2002:"
_PLAIN_TAGS = {None, "!", _CORE + "str", _CORE + "map", _CORE + "seq"}
_SCALAR_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null", "timestamp")}
_MERGE = _CORE + "merge"


class Unsupported(Exception):
    """The document uses something this builder leaves to PyYAML's loader."""


class Limit(Exception):
    """Nesting deeper than allowed, or aliases that expand past the limit; ``line`` is 1-based."""

    def __init__(self, kind: str, line: int, column: int) -> None:
        super().__init__(kind)
        self.kind, self.line, self.column = kind, line, column


@dataclass
class _Open:
    """A mapping or sequence being filled: the value, its size so far (values it stands for), its anchor;
    for a mapping the key waiting for its value and the mappings merged into it."""

    value: Any
    anchor: str | None
    size: int = 0
    key: Any = None
    has_key: bool = False
    merges: list[dict[Any, Any]] = field(default_factory=list)
    merging: bool = False  # the key just read was ``<<``


class _Scalars:
    """The safe loader's scalar meaning: implicit resolvers by first character, safe constructors."""

    def __init__(self, yaml: Any) -> None:
        self.yaml = yaml
        table: dict[str | None, list[tuple[str, Any]]] = yaml.SafeLoader.yaml_implicit_resolvers
        self.resolvers = table
        self.wildcard = table.get(None, [])  # resolvers for any first character (none in the safe loader today)
        self.constructor = yaml.constructor.SafeConstructor()

    def plain(self, text: str) -> tuple[Any, bool]:
        """The value of a plain scalar, and whether it is the merge key ``<<``."""
        for tag, pattern in (*self.resolvers.get(text[:1], ()), *self.wildcard):
            if pattern.match(text):
                if tag == _MERGE:
                    return text, True
                return self.construct(tag, text), False
        return text, False

    def construct(self, tag: str, text: str) -> Any:
        if tag == _CORE + "str":
            return text
        if tag not in _SCALAR_TAGS:
            raise Unsupported(tag)
        node = self.yaml.ScalarNode(tag, text)
        return self.constructor.yaml_constructors[tag](self.constructor, node)


def build(yaml: Any, loader: Any, text: str, *, max_depth: int, max_values: int) -> Any:
    """The single document in ``text`` (None for an empty stream); raises :class:`Limit`,
    :class:`Unsupported` or PyYAML's own ``YAMLError`` for text that is not YAML."""
    parser = loader(text)
    try:
        return _Builder(yaml, max_depth, max_values).run(parser)
    finally:
        parser.dispose()


class _Builder:
    """One document's values, built event by event (the loop is the hot path: scalars are handled inline)."""

    def __init__(self, yaml: Any, max_depth: int, max_values: int) -> None:
        self.yaml, self.max_depth, self.max_values = yaml, max_depth, max_values
        self.scalars = _Scalars(yaml)
        self.anchors: dict[str, tuple[Any, int]] = {}  # anchor -> (value, values it stands for)
        self.stack: list[_Open] = [_Open(value=None, anchor=None)]  # the bottom one holds the document
        self.plain_cache: dict[str, tuple[Any, bool]] = {}  # short plain scalars repeat (keys above all)

    def run(self, parser: Any) -> Any:
        yaml = self.yaml
        scalar_event, end_event = yaml.ScalarEvent, yaml.StreamEndEvent
        documents = 0
        while True:
            event = parser.get_event()
            kind = type(event)
            if kind is scalar_event:
                self.scalar(event)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                self.open(event, kind is yaml.MappingStartEvent)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                self.close(event)
            elif kind is yaml.AliasEvent:
                if event.anchor not in self.anchors:
                    raise yaml.composer.ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                                                      event.start_mark)
                value, size = self.anchors[event.anchor]
                _add(self.stack, value, size, event, False, self.max_values)
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise yaml.composer.ComposerError("expected a single document in the stream", None,
                                                      "but found another document", event.start_mark)
            elif kind is end_event:
                return self.stack[0].value

    def scalar(self, event: Any) -> None:
        tag, text, merge = event.tag, event.value, False
        if tag is not None and tag != "!":
            value = self.scalars.construct(tag, text)
        elif not event.implicit[0]:
            value = text  # quoted, or '!' forced: a string
        elif not text:
            value = None  # an empty plain scalar is null, as in the safe loader
        elif len(text) <= 40:
            cached = self.plain_cache.get(text)
            if cached is None:
                cached = self.plain_cache[text] = self.scalars.plain(text)
            value, merge = cached
        else:
            value, merge = self.scalars.plain(text)
        top = self.stack[-1]
        if type(top.value) is list and top.size < self.max_values:  # the common cases, inline
            top.size += 1
            top.value.append(value)
        elif top.has_key and not top.merging and top.size < self.max_values:
            top.size += 1
            top.value[top.key] = value
            top.has_key = False
        else:
            _add(self.stack, value, 1, event, merge, self.max_values)
        if event.anchor:
            self.anchors[event.anchor] = (value, 1)

    def open(self, event: Any, mapping: bool) -> None:
        if event.tag not in _PLAIN_TAGS:
            raise Unsupported(event.tag)
        if len(self.stack) > self.max_depth:
            raise Limit("depth", event.start_mark.line + 1, event.start_mark.column + 1)
        opened = _Open(value={} if mapping else [], anchor=event.anchor)
        if event.anchor:  # an alias inside the collection refers to the same object
            self.anchors[event.anchor] = (opened.value, 1)
        self.stack.append(opened)

    def close(self, event: Any) -> None:
        done = self.stack.pop()
        if done.merges:
            _merge(done)
        size = done.size + 1
        if done.anchor:
            self.anchors[done.anchor] = (done.value, size)
        _add(self.stack, done.value, size, event, False, self.max_values)


def _add(stack: list[_Open], value: Any, size: int, event: Any, merge: bool, max_values: int) -> None:
    """Put ``value`` (standing for ``size`` values) into the innermost open collection."""
    top = stack[-1]
    top.size += size
    if top.size > max_values:
        raise Limit("values", event.start_mark.line + 1, event.start_mark.column + 1)
    if len(stack) == 1:
        top.value = value
    elif isinstance(top.value, list):
        top.value.append(value)
    elif not top.has_key:
        try:
            hash(value)
        except TypeError:
            raise Unsupported("complex key") from None
        top.key, top.has_key, top.merging = value, True, merge
    else:
        if top.merging:
            top.merges.extend(_merge_sources(value))
        else:
            top.value[top.key] = value
        top.has_key = top.merging = False


def _merge_sources(value: Any) -> list[dict[Any, Any]]:
    """What ``<<: value`` merges, in the order written (the first mapping to give a key wins)."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return list(value)
    raise Unsupported("merge of a non-mapping")


def _merge(done: _Open) -> None:
    """The mapping's own keys over the merged ones, of which the first to give a key wins (each ``<<``
    and each mapping of a merged list in the order written), in place, so aliases to it see the result."""
    merged: dict[Any, Any] = {}
    for source in done.merges:
        for key, value in source.items():
            merged.setdefault(key, value)
    merged.update(done.value)
    done.value.clear()
    done.value.update(merged)
