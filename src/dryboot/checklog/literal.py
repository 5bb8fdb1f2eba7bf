"""Read the arguments a vLLM log prints, safely (nothing is ever evaluated).

``non-default args: {...}`` (``log_non_default_args``, vLLM >= 0.10) is the ``repr`` of a dict
of the parsed CLI namespace; older servers print ``args: Namespace(k=v, ...)``. Most values are
Python literals, read with :func:`ast.literal_eval`. Some are reprs that are not literals
(``CompilationConfig(...)``, ``<AttentionBackendEnum.FLASHINFER: ...>``): such a value is kept as
its source text (:class:`Opaque`) so that a key dryboot does not need never blocks the rest.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from dryboot.errors import InputError


@dataclass(frozen=True)
class Opaque:
    """A value whose repr is not a Python literal, kept as its text."""

    text: str

    def __str__(self) -> str:
        return self.text


def _literal(node: ast.expr, source: str) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        segment = ast.get_source_segment(source, node)
        return Opaque(segment if segment is not None else ast.unparse(node))


def parse_args_text(text: str, source: str = "log") -> dict[str, object]:
    """The key -> value mapping of a ``{...}`` or ``Namespace(...)`` text.

    :raises InputError: the text is neither (naming the position).
    """
    stripped = text.strip()
    if len(stripped) > MAX_ARGS_CHARS:
        raise InputError(source, "non-default args", f"longer than {MAX_ARGS_CHARS:,} characters")
    try:
        with warnings.catch_warnings():  # an invalid escape in a logged string is not the user's to fix
            warnings.simplefilter("ignore")
            tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError):  # ValueError: NUL bytes
        return _split_entries(stripped, source)
    except (MemoryError, RecursionError):  # nesting deeper than CPython's parser takes
        raise InputError(source, "non-default args", "nested too deeply to read") from None
    body = tree.body
    out: dict[str, object] = {}
    if isinstance(body, ast.Dict):
        for key_node, value_node in zip(body.keys, body.values, strict=True):
            if key_node is None:
                raise InputError(source, "non-default args", "'**' entries are not a logged dict")
            key = _literal(key_node, stripped)
            if not isinstance(key, str):
                raise InputError(source, "non-default args", f"key {key!r} is not a string")
            out[key] = _literal(value_node, stripped)
        return out
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "Namespace":
        if body.args:
            raise InputError(source, "args", "Namespace(...) with positional values")
        for kw in body.keywords:
            if kw.arg is None:
                raise InputError(source, "args", "'**' entries are not a logged Namespace")
            out[kw.arg] = _literal(kw.value, stripped)
        return out
    raise InputError(source, "non-default args", "expected a {...} dict or Namespace(...)")


#: An args line longer than this is not one vLLM printed.
MAX_ARGS_CHARS = 200_000
#: Brackets nested deeper than this are not a logged value.
MAX_DEPTH = 100


def parse_args_prefix(text: str, source: str = "log") -> tuple[dict[str, object], str | None]:
    """The entries of an args dict cut short (a pasted line ends mid-dict): every complete
    top-level entry before the cut, and the key the cut falls in (``None`` when nothing was cut).

    :raises InputError: not the start of a ``{...}`` dict.
    """
    stripped = text.strip()
    if stripped.endswith("}") or stripped.startswith("Namespace("):
        return parse_args_text(stripped, source), None
    if not stripped.startswith("{"):
        raise InputError(source, "non-default args", "expected a {...} dict or Namespace(...)")
    entries = _top_level_split(stripped[1:], ",")
    complete, cut = entries[:-1], entries[-1]
    out = _split_entries("{" + ",".join(complete) + "}", source) if complete else {}
    head = _top_level_split(cut, ":", maxsplit=1)[0].strip().strip("'\"")
    return out, head or "?"


_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_entries(text: str, source: str) -> dict[str, object]:
    """A dict or Namespace whose text is not Python syntax (a repr such as ``<X at 0x..>``
    inside): split its top-level entries by hand and read each value on its own."""
    if text.startswith("{") and text.endswith("}"):
        inner, sep = text[1:-1], ":"
    elif text.startswith("Namespace(") and text.endswith(")"):
        inner, sep = text[len("Namespace(") : -1], "="
    else:
        raise InputError(source, "non-default args", "expected a {...} dict or Namespace(...)")
    out: dict[str, object] = {}
    for entry in _top_level_split(inner, ","):
        if not entry.strip():
            continue
        parts = _top_level_split(entry, sep, maxsplit=1)
        if len(parts) != 2:
            raise InputError(source, "non-default args", f"cannot read the entry {entry.strip()[:60]!r}")
        raw_key, raw_value = parts[0].strip(), parts[1].strip()
        if sep == ":":
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    key = ast.literal_eval(raw_key)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise InputError(source, "non-default args", f"key {raw_key[:60]!r} is not a string") from None
        else:
            key = raw_key
        if not isinstance(key, str) or not key:
            raise InputError(source, "non-default args", f"key {raw_key[:60]!r} is not a string")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[key] = ast.literal_eval(raw_value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            out[key] = Opaque(raw_value)
    return out


def _top_level_split(text: str, sep: str, maxsplit: int = -1) -> list[str]:
    """Split at ``sep`` outside brackets, quotes and ``<...>`` reprs."""
    parts: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    start = 0
    i = 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in ("'", '"'):
            quote = c
        elif c in _OPEN:
            stack.append(_OPEN[c])
            if len(stack) > MAX_DEPTH:
                raise InputError("log", "non-default args", "nested too deeply to read")
        elif c == "<" and _looks_like_repr(text, i):
            stack.append(">")
        elif stack and c == stack[-1]:
            stack.pop()
        elif c == sep and not stack and (maxsplit < 0 or len(parts) < maxsplit):
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _looks_like_repr(text: str, i: int) -> bool:
    """``<Name...`` opens a repr (``<AttentionBackendEnum.X: 1>``, ``<function f at 0x..>``);
    a bare ``<`` compares."""
    return i + 1 < len(text) and (text[i + 1].isalpha() or text[i + 1] == "_")
