"""The answer as a tree of text and marks, one mark per excerpt, that nests even when excerpts overlap.

HTML marks must nest, and excerpts overlap: several traits quote the same sentence, or one quote
starts inside another and ends after it. So the answer is cut at every excerpt boundary and walked
piece by piece; a mark that must close while a mark opened inside it still goes on closes that one
too and reopens it right after (a continuation). Read in order, an excerpt's pieces are exactly the
answer's text at its offsets, and only its first piece carries its number as an id (``"id": 1``).

A node is a string (text) or ``{"n": <excerpt number>, "c": [<nodes>]}``. The page renders the tree
with text nodes only, so nothing in the answer is ever parsed as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Node", "highlight", "mark_text", "plain_text", "slice_tree"]

Node = str | dict[str, Any]
_Span = tuple[int, int, int, int]  # start, end, excerpt number, position in the input (tells twins apart)


def highlight(text: str, ranges: Sequence[tuple[int, int, int]]) -> list[Node]:
    """``text`` with a mark for each ``(excerpt number, start, end)``; an excerpt quoted in parts
    ('A ... B') gives one range per part under the same number. Empty or out-of-range ranges are left
    out (the caller lists those excerpts as not located)."""
    spans: list[_Span] = [(s, e, n, i) for i, (n, s, e) in enumerate(ranges) if 0 <= s < e <= len(text)]
    cuts = sorted({0, len(text), *(s[0] for s in spans), *(s[1] for s in spans)})
    root: list[Node] = []
    stack: list[tuple[_Span, list[Node]]] = []
    opened: set[int] = set()
    for a, b in zip(cuts, cuts[1:], strict=False):
        covering = {s for s in spans if s[0] <= a and b <= s[1]}
        # close from the first open mark that ends here: everything opened inside it closes too
        depth = next((i for i, (s, _) in enumerate(stack) if s not in covering), len(stack))
        del stack[depth:]
        still_open = {s for s, _ in stack}
        # open the longest first, so a mark that ends later sits outside and is split less often
        for span in sorted(covering - still_open, key=lambda s: (-s[1], s[0], s[2], s[3])):
            node: dict[str, Any] = {"n": span[2], "c": []}
            if span[2] not in opened:
                node["id"] = 1
                opened.add(span[2])
            (stack[-1][1] if stack else root).append(node)
            stack.append((span, node["c"]))
        _append_text(stack[-1][1] if stack else root, text[a:b])
    return root


def _append_text(children: list[Node], piece: str) -> None:
    if children and isinstance(children[-1], str):
        children[-1] += piece
    else:
        children.append(piece)


def plain_text(nodes: Sequence[Node]) -> str:
    """The text of a tree, marks dropped: the answer again."""
    return "".join(n if isinstance(n, str) else plain_text(n["c"]) for n in nodes)


def mark_text(nodes: Sequence[Node], number: int) -> list[str]:
    """The text of each piece of excerpt ``number``, in order (one piece unless it was split)."""
    pieces: list[str] = []
    for node in nodes:
        if isinstance(node, str):
            continue
        if node["n"] == number:
            pieces.append(plain_text(node["c"]))
        else:
            pieces.extend(mark_text(node["c"], number))
    return pieces


def _length(node: Node) -> int:
    return len(node) if isinstance(node, str) else sum(_length(c) for c in node["c"])


def slice_tree(nodes: Sequence[Node], start: int, end: int) -> list[Node]:
    """The part of a tree covering ``text[start:end]``: a mark cut at ``start`` goes on as a
    continuation (no ``id``), so a block of a transcript can be drawn on its own from the whole tree."""
    out: list[Node] = []
    at = 0
    for node in nodes:
        size = _length(node)
        a, b = max(start, at), min(end, at + size)
        if a < b:
            if isinstance(node, str):
                _append_text(out, node[a - at:b - at])
            else:
                piece: dict[str, Any] = {"n": node["n"], "c": slice_tree(node["c"], a - at, b - at)}
                if node.get("id") and a == at:
                    piece["id"] = 1
                out.append(piece)
        at += size
        if at >= end:
            break
    return out
