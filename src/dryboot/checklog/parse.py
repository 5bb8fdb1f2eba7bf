"""Read a vLLM server log: the facts a KV-cache prediction needs and every KV line vLLM printed.

A log is what ``vllm serve`` writes: lines formatted by vLLM's logging formatter
(``vllm/logging_utils/formatter.py``: ``LEVEL MM-DD HH:MM:SS [file.py:line] message``, with
ANSI colours under ``ColoredFormatter``), each prefixed by ``decorate_logs``
(``vllm/utils/system_utils.py``) with ``(EngineCore pid=N)``, ``(APIServer pid=N)``,
``(Worker_TP0 pid=N)``... and several processes' lines interleaved. Multi-line records repeat the
header on every line (``NewLineFormatter`` joins them with ``\\r\\n`` + header). The reader accepts
lines with or without any of these, and with foreign prefixes (container or journal timestamps)
in front: each message is searched for, never anchored at the start of the line.

The message patterns are vLLM 0.28.0's own templates (file and line named beside each).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import BinaryIO, cast

from dryboot.checklog.facts import ARCHITECTURE_LINE as _ARCHITECTURE
from dryboot.checklog.facts import TRIGGER_WORDS as FACT_WORDS
from dryboot.checklog.facts import Fact, read_facts
from dryboot.errors import InputError

#: Bytes read at a time.
CHUNK_BYTES = 1 << 20
#: A line is kept up to this many bytes (the rest of a longer line is dropped: no vLLM message
#: dryboot reads is longer than the args line, a few KiB).
MAX_LINE_BYTES = 256 << 10
#: More bytes than this without a line break: not a text log (``/dev/zero``, a binary file).
MAX_UNBROKEN_BYTES = 64 << 20
#: At most this many stated facts are kept per boot (a log repeating a fact line stays bounded).
MAX_FACTS = 256

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PROCESS = re.compile(r"\((?P<name>[A-Za-z][\w.\-]*) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)")
_HEADER = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<date>\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)? "
    r"\[?(?P<file>[\w.\-]+?\.py):(?P<lineno>\d+)\] ?"
)


@dataclass(frozen=True)
class LogLine:
    """One physical line of the log, its decorations removed.

    :param number: 1-based line number in the file.
    :param process: the ``decorate_logs`` process name (``EngineCore``, ``Worker_TP0``...) or ``None``.
    :param pid: that process's pid.
    :param level: the record's level when the line carries vLLM's header.
    :param source: ``file.py:line`` of the logging call when the line carries vLLM's header.
    :param message: the text after the header (or after the prefixes).
    """

    number: int
    process: str | None
    pid: int | None
    level: str | None
    source: str | None
    message: str

    @property
    def where(self) -> str:
        """``line N (Process)`` for reports."""
        who = f", {self.process}" if self.process else ""
        return f"line {self.number}{who}"


def iter_text_lines(stream: BinaryIO, source: str = "log") -> Iterator[str]:
    """The lines of a byte stream, read :data:`CHUNK_BYTES` at a time (memory stays bounded
    whatever the size): UTF-8 with undecodable bytes replaced, NUL bytes dropped, each line cut
    at :data:`MAX_LINE_BYTES`.

    :raises InputError: more than :data:`MAX_UNBROKEN_BYTES` without a line break (not a text log).
    """
    head = b""  # the kept start of the current line
    unbroken = 0  # bytes of the current line so far
    number = 1
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if len(head) < MAX_LINE_BYTES:
                head += piece[: MAX_LINE_BYTES - len(head)]
            unbroken += len(piece)
            if nl < 0:
                if unbroken > MAX_UNBROKEN_BYTES:
                    raise InputError(
                        source,
                        f"line {number}",
                        f"more than {MAX_UNBROKEN_BYTES >> 20} MiB without a line break: not a text log",
                    )
                break
            yield _decode(head)
            head, unbroken, number, start = b"", 0, number + 1, nl + 1
    if unbroken or head:
        yield _decode(head)


def iter_relevant_lines(stream: BinaryIO, source: str = "log") -> Iterator[tuple[int, str]]:
    """(line number, text) of the logical lines of a byte stream that can hold a fact or a KV
    line, a line a terminal or an editor wrapped rejoined (:func:`unwrap`).

    The first :data:`CHUNK_BYTES` are read first: a log that ends within them, or whose first
    chunk holds a wrapped line, is decoded line by line and unwrapped whole; a longer log
    whose start is not wrapped (what vLLM writes to a file) is read by the faster byte filter
    :func:`iter_trigger_lines`, which rejoins only the KV messages wrapped within three lines.

    :raises InputError: more than :data:`MAX_UNBROKEN_BYTES` without a line break.
    """
    first = stream.read(CHUNK_BYTES)
    whole = len(first) < CHUNK_BYTES
    rest = cast(BinaryIO, _Prepended(first, stream))
    if whole or _starts_wrapped(first):
        yield from _relevant(unwrap(enumerate(iter_text_lines(rest, source), start=1)))
    else:
        yield from iter_trigger_lines(rest, source)


class _Prepended:
    """A binary stream that yields ``head`` before the rest of ``stream`` (``read`` only)."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        return self._stream.read(size)


def _starts_wrapped(chunk: bytes) -> bool:
    """Whether the complete lines of ``chunk`` hold a line wrapped onto the next (:func:`unwrap`
    joins two of them)."""
    body = chunk[: chunk.rfind(b"\n") + 1]
    lines = [_decode(raw) for raw in body.split(b"\n")[:-1]]
    return any(n > 1 for n in _piece_counts(enumerate(lines, start=1)))


def _relevant(logical: Iterable[tuple[int, str, int]]) -> Iterator[tuple[int, str]]:
    """The logical lines :data:`_TRIGGER` selects, and the three after a KV message that
    a post may have wrapped with its spaces dropped (as :func:`iter_trigger_lines`)."""
    force = 0
    for number, text, _pieces in logical:
        if force or _TRIGGER.search(text):
            yield number, text
            force = 3 if ("To serve" in text or "GPU KV cache size:" in text) else max(force - 1, 0)


def iter_trigger_lines(stream: BinaryIO, source: str = "log") -> Iterator[tuple[int, str]]:
    """(line number, text) of the lines of a byte stream that can hold a fact or a KV line (one
    of :data:`_TRIGGER`'s words), and the three lines after a KV message that may be wrapped;
    every other line is skipped without being decoded. Read :data:`CHUNK_BYTES` at a time, so
    memory stays bounded (a chunk and the kept head of one line); lines are cut at
    :data:`MAX_LINE_BYTES` and decoded as :func:`iter_text_lines` does.

    :raises InputError: more than :data:`MAX_UNBROKEN_BYTES` without a line break.
    """
    carry = b""  # the kept head (at most MAX_LINE_BYTES) of the line the last chunk ended in
    unbroken = 0  # that line's length so far
    number = 1
    force = 0
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            if carry and (force or _TRIGGER_BYTES.search(carry)):
                yield number, _decode(carry[:MAX_LINE_BYTES])
            return
        cut = chunk.rfind(b"\n")
        if cut < 0:
            unbroken += len(chunk)
            if unbroken > MAX_UNBROKEN_BYTES:
                raise InputError(
                    source,
                    f"line {number}",
                    f"more than {MAX_UNBROKEN_BYTES >> 20} MiB without a line break: not a text log",
                )
            if len(carry) < MAX_LINE_BYTES:
                carry += chunk[: MAX_LINE_BYTES - len(carry)]
            continue
        tail = len(chunk) - cut - 1  # bytes after the chunk's last line break
        if carry:  # the first line of this chunk continues the kept head
            first = chunk.find(b"\n")
            if unbroken + first > MAX_UNBROKEN_BYTES:
                raise InputError(
                    source,
                    f"line {number}",
                    f"more than {MAX_UNBROKEN_BYTES >> 20} MiB without a line break: not a text log",
                )
            head = (carry + chunk[:first])[:MAX_LINE_BYTES]
            buf = head + chunk[first:]
            cut += len(head) - first
        else:
            buf = chunk
        unbroken = tail
        body, carry = buf[: cut + 1], buf[cut + 1 :][:MAX_LINE_BYTES]
        pos = 0  # the first byte not yet numbered
        while force and pos < len(body):  # continuations of a wrapped line at the last chunk's end
            end = body.find(b"\n", pos)
            yield number, _decode(body[pos:end][:MAX_LINE_BYTES])
            number, pos, force = number + 1, end + 1, force - 1
        for begin in _trigger_line_starts(body):
            if begin < pos:
                continue  # a line already yielded as a wrapped continuation
            number += body.count(b"\n", pos, begin)
            end = body.find(b"\n", begin)
            line = body[begin:end]
            yield number, _decode(line[:MAX_LINE_BYTES])
            number += 1
            pos = end + 1
            if b"To serve" in line or b"GPU KV cache size:" in line:
                force = 3  # the lines a terminal or a quote may have wrapped it onto
                while force and pos < len(body):
                    end = body.find(b"\n", pos)
                    yield number, _decode(body[pos:end][:MAX_LINE_BYTES])
                    number, pos, force = number + 1, end + 1, force - 1
        number += body.count(b"\n", pos)


#: Literal words, one of which every line :data:`_TRIGGER` matches holds (found with
#: ``bytes.find``, much faster than the regular expression over lines that hold none).
_TRIGGER_WORDS = tuple(
    w.encode()
    for w in (
        "KV cache size", "KV cache memory", "KV cache is needed", "KV Cache", "block size", "amba",
        "padding layers", "num_gpu_blocks", "uto-fit", "max seq len", "GPU blocks", "cuda blocks",
        "Maximum concurrency", "version", "LLM engine", "args", "Resolved architecture", "max model len",
        "Chunked prefill", "took", "No available memory", "graph memory", "Actual usage", "Free memory on device",
        "graph pool memory", "█", *FACT_WORDS,
    )
)  # fmt: skip


#: A line that begins a record of its own, never the continuation of a wrapped one: vLLM's
#: ``decorate_logs`` prefix or header, a timestamp (ISO, glog, syslog/journal), markdown fences,
#: quote bars and table rows, a traceback's first line.
_RECORD_START = re.compile(
    r"^`?(?:\x1b\[[0-9;?]*[A-Za-z])*(?:\([A-Za-z][\w.\-]* pid=\d"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d"
    r"|\d{4}-\d\d-\d\d[T ]\d|\[?\d{4}[-/]\d\d|[IWEF]\d{4} \d\d:"
    r"|\w{3}\.? +\d{1,2} \d\d:\d\d:\d\d"
    r"|```|~~~|\.\.\.|[▎│┃]|>(?![=>])|\|\s|#+\s|Traceback \(most recent call last\))"
)
#: Most pieces one wrapped message (other than the args line) is rejoined from.
MAX_PIECES = 8
#: Most pieces a wrapped ``non-default args`` line is rejoined from.
MAX_ARGS_PIECES = 4096


def _continues(text: str) -> bool:
    """Whether ``text`` can be the continuation of a wrapped line (not blank, not a record's start)."""
    return bool(text.strip()) and _RECORD_START.match(text) is None


def _crossing_patterns() -> tuple[re.Pattern[str], ...]:
    return (
        _HEADER,
        _PROCESS,
        re.compile(r"non-default args: \{|args: Namespace\("),
        *(p for _, p in _KV_PATTERNS),
        *_VERSION_PATTERNS,
        _ARCHITECTURE,
        _MAX_MODEL_LEN,
        _BATCHED,
        _AVAILABLE,
        _RESERVED,
        *(p for _, p in MEMORY_PATTERNS),
        re.compile(r"(?:GPU|cuda) blocks: \d+"),
    )


def _crossed(text: str, boundaries: list[int]) -> set[int]:
    """The ``boundaries`` (offsets in ``text``) a template dryboot reads matches across (it starts
    before and ends after the offset): where a line was cut and the next piece continues it."""
    found: set[int] = set()
    for pattern in _CROSSING:
        for m in pattern.finditer(text):
            found.update(b for b in boundaries if m.start() < b < m.end())
    return found


def _crosses(text: str, boundary: int) -> bool:
    """Whether a template dryboot reads matches ``text`` across offset ``boundary`` (it starts
    before and ends after it): the line was cut there and the next piece continues it."""
    for pattern in _CROSSING:
        for m in pattern.finditer(text, max(0, boundary - 700)):
            if m.start() >= boundary:
                break
            if m.end() > boundary:
                return True
    return False


def _bare_header(text: str) -> bool:
    """Whether ``text`` ends with vLLM's header or a ``decorate_logs`` prefix and holds no
    message after it (the message is on the next piece)."""
    tail = text.rstrip()
    if not tail.endswith(("]", ")")):
        return False
    header = _HEADER.search(tail[-120:]) if tail.endswith("]") else None
    if header is not None and header.end() >= len(tail[-120:]):
        return True
    process = _PROCESS.search(tail[-120:]) if tail.endswith(")") else None
    return process is not None and process.end() >= len(tail[-120:]) and not _HEADER.search(tail)


def _bracket_depth(text: str) -> int:
    """Brackets ``text`` opens and leaves open (quoted ones not counted)."""
    depth = 0
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
    return depth


def _args_open(text: str) -> bool:
    """Whether ``text`` holds the start of an args line whose brackets are not all closed yet."""
    i = text.find("non-default args: {")
    j = text.find("args: Namespace(") if i < 0 else -1
    if i < 0 and j < 0:
        return False
    return _bracket_depth(text[max(i, j) :]) > 0


def _config_open(text: str) -> bool:
    """Whether ``text`` holds the engine's ``... with config: ...`` line not yet ended: a bracket
    still open, or not ending with the ``}`` / ``)`` of its last key (a document re-wrapped it)."""
    i = text.find("LLM engine ")
    if i < 0 or "with config: " not in text:
        return False
    return _bracket_depth(text[i:]) > 0 or not text.rstrip().endswith(("}", ")"))


def unwrap(numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str, int]]:
    """(number of the first piece, logical line, pieces) of (line number, text) pairs: a line
    a terminal hard-wrapped at its width, or ``fold -s`` re-flowed at blanks, is rejoined
    exactly (the pieces concatenated: neither drops a character).

    A following line is a piece of the line before it when it can continue a line
    (:func:`_continues`) and a template dryboot reads (vLLM's header or ``decorate_logs``
    prefix, a KV line, a fact) matches across the join (:func:`_crosses`), or the line before
    holds an args dict whose brackets are still open, or the engine's config line not yet ended
    (:func:`_config_open`). Up to :data:`MAX_PIECES` following lines are looked at
    (:data:`MAX_ARGS_PIECES` for an args or config line); memory is that window.
    """
    it = iter(numbered)
    window: deque[tuple[int, str]] = deque()

    def fill(size: int) -> None:
        while len(window) < size:
            item = next(it, None)
            if item is None:
                return
            window.append(item)

    while True:
        fill(1)
        if not window:
            return
        number, text = window.popleft()
        pieces = 1
        while True:
            fill(MAX_PIECES)
            if not window or not _continues(window[0][1]):
                break
            if (_args_open(text) or _config_open(text)) and pieces < MAX_ARGS_PIECES and len(text) < MAX_LINE_BYTES:
                text += window.popleft()[1]
                pieces += 1
                continue
            if _joinable(text) or _bare_header(text):  # a message begun, or not yet begun
                text = _rejoin(text, window.popleft()[1])
                pieces += 1
                continue
            joined, boundaries, take = text, [], 0
            for _, piece in window:
                if not _continues(piece):
                    break
                boundaries.append(len(joined))
                joined += piece
            if _TRIGGER.search(joined) or "pid=" in joined or ".py:" in joined:
                crossed = _crossed(joined, boundaries)
                while take < len(boundaries) and boundaries[take] in crossed:
                    take += 1
            if take == 0:
                break
            for _ in range(take):
                text += window.popleft()[1]
            pieces += take
        yield number, text, pieces


def _rejoin(text: str, piece: str) -> str:
    """``text`` and the next ``piece`` of a KV message rejoined: exactly (a terminal and
    ``fold -s`` drop nothing), or with a blank where a post re-wrapped at a blank and dropped it
    (``(1048576),`` / ``22.5 GiB KV cache is needed``): the blank is put back only when the exact
    join reads no template and the join with it does."""
    exact = text + piece
    if text[-1:].isspace() or piece[:1].isspace() or _kv_match(exact) is not None:
        return exact
    spaced = text + " " + piece
    return spaced if _kv_match(spaced) is not None else exact


def _piece_counts(numbered: Iterable[tuple[int, str]]) -> Iterator[int]:
    return (pieces for _, _, pieces in unwrap(numbered))


def _trigger_line_starts(body: bytes) -> list[int]:
    """Sorted offsets of the lines of ``body`` (which ends with a line break) holding a trigger word."""
    starts: set[int] = set()
    for word in _TRIGGER_WORDS:
        i = body.find(word)
        while i >= 0:
            starts.add(body.rfind(b"\n", 0, i) + 1)
            i = body.find(word, body.find(b"\n", i) + 1)
    return sorted(starts)


def _decode(raw: bytes) -> str:
    return raw.replace(b"\x00", b"").decode("utf-8", errors="replace")


#: Quote bars and markdown quote marks people put in front of pasted lines.
_QUOTE = re.compile(r"^\s*(?:[▎│┃>|]\s?)+")
_QUOTE_CHARS = frozenset("▎│┃>|")


def read_lines(text: str) -> list[LogLine]:
    """:func:`iter_log_lines` of a whole text, as a list."""
    return list(iter_log_lines(text))


def iter_log_lines(text: str | Iterable[str]) -> Iterator[LogLine]:
    """:class:`LogLine` s of ``text`` (a string, or its lines): ANSI colours, ``\\r``, NUL bytes,
    quote bars, process prefixes and vLLM's header removed; blank lines skipped."""
    raws = text.split("\n") if isinstance(text, str) else text
    return iter_numbered_log_lines(enumerate(raws, start=1))


def iter_numbered_log_lines(numbered: Iterable[tuple[int, str]]) -> Iterator[LogLine]:
    """:func:`iter_log_lines` of (line number, text) pairs (:func:`iter_relevant_lines`)."""
    for number, raw in numbered:
        line = _ANSI.sub("", raw) if "\x1b" in raw else raw
        if "\r" in line or "\x00" in line:
            line = line.replace("\r", "").replace("\x00", "")
        if not line.strip():
            continue
        if line.lstrip()[:1] in _QUOTE_CHARS:
            line = _QUOTE.sub("", line)
        header = _HEADER.search(line)
        before, message = (line[: header.start()], line[header.end() :]) if header else (line, "")
        processes = list(_PROCESS.finditer(before)) if "pid=" in before else []
        if header is None:
            # no vLLM header: the message is what follows the last process prefix (a traceback
            # line printed by multiprocessing, the logo, a foreign line)
            message = line[processes[-1].end() :] if processes else line
            message = message[1:] if message.startswith(" ") else message
        process = processes[-1] if processes else None
        yield LogLine(
            number=number,
            process=process["name"] if process else None,
            pid=int(process["pid"]) if process else None,
            level=header["level"] if header else None,
            source=f"{header['file']}:{header['lineno']}" if header else None,
            message=message.rstrip(),
        )


class Kind(Enum):
    """The KV-cache lines dryboot predicts, by vLLM's template."""

    BACKEND_BLOCK = "backend block size"
    HYBRID_BLOCK = "attention block size"
    MAMBA_PADDING = "mamba padding"
    MAMBA_MODE = "mamba cache mode"
    PADDING_LAYERS = "padding layers"
    OVERRIDE = "num_gpu_blocks override"
    AUTO_FIT = "auto-fit max_model_len"
    CAPACITY = "GPU KV cache size"
    NOT_ENOUGH_MEMORY = "not enough KV cache memory"
    GPU_BLOCKS = "GPU blocks (before 0.8)"
    V0_NOT_ENOUGH = "max seq len larger than the KV cache (V0 engine)"

    @property
    def budget_dependent(self) -> bool:
        """Whether the line's figures depend on the KV budget."""
        return self in (
            Kind.OVERRIDE,
            Kind.AUTO_FIT,
            Kind.CAPACITY,
            Kind.NOT_ENOUGH_MEMORY,
            Kind.GPU_BLOCKS,
            Kind.V0_NOT_ENOUGH,
        )

    @property
    def unmodelled(self) -> str | None:
        """Why no release dryboot models prints this line (it is reported, never checked)."""
        if self is Kind.GPU_BLOCKS:
            return "'# GPU blocks: N' is the wording of vLLM before 0.8 (the V0 engine and early V1)"
        if self is Kind.V0_NOT_ENOUGH:
            return "this error is the V0 engine's (vLLM before 0.10), which dryboot does not model"
        return None


# vLLM 0.28.0's templates, as regular expressions over the formatted message.
_KV_PATTERNS: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    # platforms/interface.py:636
    # 0.31+ name every backend, in layer order ("for A/B/C backend(s).")
    (
        Kind.BACKEND_BLOCK,
        re.compile(r"Setting kv cache block size to (?P<block>\d+) for (?P<backend>\S+) backend(?:\(s\))?\."),
    ),
    # platforms/interface.py:912
    (
        Kind.HYBRID_BLOCK,
        re.compile(
            r"Setting attention block size to (?P<block>\d+) tokens to ensure that attention page size is "
            r">= mamba page size\."
        ),
    ),
    # platforms/interface.py:936
    (
        Kind.MAMBA_PADDING,
        re.compile(
            r"Padding mamba page size by (?P<pct>[\d.]+)% to ensure that mamba page size and attention page "
            r"size are exactly equal\."
        ),
    ),
    # model_executor/models/config.py:606, :616, :634
    (
        Kind.MAMBA_MODE,
        re.compile(
            r"Mamba cache mode is set to '(?P<mode>\w+)' for (?P<arch>\S+) by default when prefix caching is enabled"
            r"|Mamba cache mode is set to '(?P<mode_off>none)' when prefix caching is disabled"
            r"|Hybrid or mamba-based model detected without support for prefix caching with Mamba cache 'all' "
            r"mode: falling back to '(?P<mode_fallback>align)' mode\."
        ),
    ),
    # v1/core/kv_cache_utils.py:1228
    (
        Kind.PADDING_LAYERS,
        re.compile(r"Add (?P<layers>\d+) padding layers, may waste at most (?P<pct>[\d.]+)% KV cache memory"),
    ),
    # v1/core/kv_cache_utils.py:2177
    (
        Kind.OVERRIDE,
        re.compile(r"Overriding num_gpu_blocks=(?P<computed>\d+) with num_gpu_blocks_override=(?P<override>\d+)"),
    ),
    # v1/core/kv_cache_utils.py:2017, :2024, :2032
    (
        Kind.AUTO_FIT,
        re.compile(
            r"Auto-fit max_model_len: reduced from (?P<original>\d+) to (?P<fitted>\d+) to fit in available GPU "
            r"memory \((?P<gib>[\d.]+) GiB available for KV cache\)"
            r"|Auto-fit max_model_len: full model context length (?P<full>\d+) fits in available GPU memory"
            r"|(?P<cannot>Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single "
            r"token\.)"
        ),
    ),
    # vLLM 0.32+: the auto-fit line names the KV cache memory
    (
        Kind.AUTO_FIT,
        re.compile(
            r"Auto-fit max_model_len: reduced from (?P<original>\d+) to (?P<fitted>\d+) to fit in available KV cache "
            r"memory \((?P<gib>[\d.]+) GiB GPU\)"
            r"|Auto-fit max_model_len: full model context length (?P<full>\d+) fits in available KV cache memory "
            r"\((?P<full_gib>[\d.]+) GiB GPU\)"
        ),
    ),
    # v1/core/kv_cache_utils.py:1870
    (
        Kind.CAPACITY,
        re.compile(
            r"GPU KV cache size:\s+(?P<tokens>[\d,]+) tokens, Maximum concurrency for (?P<max_model_len>[\d,]+) "
            r"tokens per request: (?P<concurrency>[\d.]+)x"
        ),
    ),
    # vLLM 0.27.1: the size and the concurrency are two lines
    (Kind.CAPACITY, re.compile(r"GPU KV cache size:\s+(?P<tokens>[\d,]+) tokens(?!,)")),
    (
        Kind.CAPACITY,
        re.compile(r"Maximum concurrency for (?P<max_model_len>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x"),
    ),
    # v1/core/kv_cache_utils.py:760 (_check_enough_kv_cache_memory), :741; older releases say
    # "the models's max seq len"; a pasted excerpt may end anywhere after the available figure.
    (
        Kind.NOT_ENOUGH_MEMORY,
        re.compile(
            r"To serve at least one request with the models?'s? max seq len \((?P<max_model_len>\d+)\), "
            r"\(?(?P<needed_gib>[\d.]+) GiB KV cache is needed, which is larger than the available KV cache "
            r"memory \((?P<available_gib>-?[\d.]+) GiB\)\.(?: Based on the available memory, the estimated maximum "
            r"model length is (?P<estimated>\d+)\.)?"
            r"|(?P<no_memory>No available memory for the cache blocks\.)"
        ),
    ),
    # vLLM before 0.8 (V0 and early V1): reported, never checked
    (Kind.GPU_BLOCKS, re.compile(r"#? ?(?:GPU|cuda) blocks: (?P<blocks>\d+)")),
    (
        Kind.V0_NOT_ENOUGH,
        re.compile(
            r"The model's max seq len \((?P<max_model_len>\d+)\) is larger than the maximum number of tokens "
            r"that can be stored in KV cache \((?P<tokens>\d+)\)"
        ),
    ),
)

# The facts around the KV lines.
_VERSION_PATTERNS = (
    # entrypoints/serve/utils/api_utils.py:313 (0.2x), logo form below
    re.compile(r"vLLM server version (?P<version>\S+), serving model (?P<model>\S+)"),
    # entrypoints/openai/api_server.py before the logo (<= 0.1x)
    re.compile(r"vLLM API server version (?P<version>\S+)"),
    # v1/engine/core.py:123 (the model may be cut off)
    re.compile(r"Initializing a V1 LLM engine \(v(?P<version>[^)\s]+)\)(?: with config: model='(?P<model>[^']*)')?"),
    # V0 (<= 0.10): "Initializing an LLM engine (v0.5.4) with config"
    re.compile(r"Initializing an LLM engine \(v(?P<version>[^)\s]+)\)"),
    # the logo (log_version_and_model with a formatter): "█ ... version X" / "... model M"
    re.compile(r"█.*\bversion\s+(?P<version>\d+\.\d+\S*)"),
)
_LOGO_MODEL = re.compile(r"█.*\bmodel\s+(?P<model>\S+)")
_ARGS = re.compile(r"(?:^|\s)non-default args: (?P<args>\{.*?)\s*$")
_NAMESPACE_ARGS = re.compile(r"(?:^|\s)args: (?P<args>Namespace\(.*\))\s*$")
_MAX_MODEL_LEN = re.compile(r"Using max model len (?P<n>\d+)")
_BATCHED = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(?P<n>\d+)\.")
_AVAILABLE = re.compile(r"Available KV cache memory: (?P<gib>-?[\d.]+) GiB")
#: Memory lines a boot logs besides the KV budget (read figure by figure and checked by
#: :mod:`dryboot.checklog.memory`):
#: name -> pattern with a ``gib`` group, in GiB unless the name says GB (``v1/worker/gpu_model_runner.py``,
#: ``gpu_worker.py``; V0's ``Loading model weights took X GB``).
MEMORY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("model loading", re.compile(r"Model loading took (?P<gib>[\d.]+) GiB(?: memory)?")),
    ("model loading (GB)", re.compile(r"Model loading took (?P<gib>[\d.]+) GB")),
    ("model weights (V0, GB)", re.compile(r"Loading model weights took (?P<gib>[\d.]+) GB")),
    ("estimated CUDA graph memory", re.compile(r"Estimated CUDA graph memory: (?P<gib>-?[\d.]+) GiB")),
    ("actual usage", re.compile(r"Actual usage is (?P<gib>[\d.]+) GiB for consumed memory")),
    ("free memory on device", re.compile(r"Free memory on device \((?P<gib>[\d.]+)/(?P<total>[\d.]+) GiB\)")),
    ("CUDA graph pool", re.compile(r"CUDA graph pool memory: (?P<gib>-?[\d.]+) GiB \(actual\)")),
    ("graph capturing", re.compile(r"Graph capturing finished in [\d.]+ secs?, took (?P<gib>-?[\d.]+) GiB")),
)
_RESERVED = re.compile(r"reserved (?P<gib>[\d.]+) GiB memory for KV Cache as specified by kv_cache_memory_bytes config")


@dataclass(frozen=True)
class KVLine:
    """A KV line vLLM logged: its kind, text (the message from the template on) and figures."""

    kind: Kind
    text: str
    figures: dict[str, str]
    lines: tuple[LogLine, ...]

    @property
    def where(self) -> str:
        first = self.lines[0].where
        return first if len(self.lines) == 1 else f"{first} (+{len(self.lines) - 1} identical)"


@dataclass(frozen=True)
class Available:
    """One ``Available KV cache memory: X GiB`` line (per worker)."""

    gib: str
    line: LogLine


@dataclass(frozen=True)
class VersionEvidence:
    """A vLLM version a line states (or implies), and how."""

    version: str
    how: str
    line: LogLine


#: ``file.py:line`` of known logging calls, per modelled release, read from the release's logs
#: (vLLM's own logging writes the line of the ``logger`` call): a log line whose header names
#: one of these is evidence for that release.
SOURCE_LINES: dict[str, dict[str, str]] = {
    "0.28.0": {
        "api_utils.py:272": "non-default args:",
        "core.py:122": "Initializing a V1 LLM engine",
        "gpu_worker.py:578": "Available KV cache memory:",
        "interface.py:911": "Setting attention block size",
        "interface.py:935": "Padding mamba page size",
        "kv_cache_utils.py:1227": "Add ",
        "kv_cache_utils.py:1869": "GPU KV cache size:",
        "config.py:605": "Mamba cache mode",
        "model.py:1965": "Using max model len",
        "scheduler.py:242": "Chunked prefill is enabled",
    },
}


@dataclass(frozen=True)
class LogFacts:
    """Everything one boot of the log says that a prediction needs, and its KV lines in order."""

    version: str | None = None
    served_model: str | None = None
    args_text: str | None = None
    args_line: LogLine | None = None
    args_namespace: bool = False
    architecture: str | None = None
    architecture_line: LogLine | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    available: tuple[Available, ...] = ()
    reserved_gib: str | None = None
    memory: tuple[tuple[str, str, LogLine], ...] = ()  # (what, figure with its unit, line)
    kv_lines: tuple[KVLine, ...] = field(default=())
    num_lines: int = 0
    versions: tuple[VersionEvidence, ...] = ()
    boot: int = 1
    first_line: int = 0
    last_line: int = 0
    tp_ranks: int | None = None
    joined: tuple[int, ...] = ()
    unread: tuple[LogLine, ...] = ()
    stated: tuple[Fact, ...] = ()  # every fact a line states (dryboot.checklog.facts)

    @property
    def is_vllm_log(self) -> bool:
        """Whether anything vLLM-specific was found at all."""
        return bool(
            self.version
            or self.args_text
            or self.architecture
            or self.available
            or self.kv_lines
            or self.memory
            or self.unread
            or any(f.name != "failure" for f in self.stated)  # torch's OOM alone is not vLLM's
        )

    @property
    def args_complete(self) -> bool:
        """Whether the args line was read whole (a pasted one is often cut mid-dict)."""
        return self.args_text is not None and (self.args_namespace or self.args_text.rstrip().endswith("}"))


def _anchors(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Literal words every alternative of ``pattern`` starts with (checked before the regex)."""
    words = []
    for alt in re.split(r"(?<!\\)\|", pattern.pattern):
        lit = re.match(r"(?:\(\?P<\w+>)?([A-Za-z' \-]{5,})", alt.lstrip("#? "))
        if lit is None:
            return ()
        words.append(lit[1][:12])
    return tuple(words)


_KV_ANCHORED = tuple((kind, pattern, _anchors(pattern)) for kind, pattern in _KV_PATTERNS)


def _kv_match(message: str) -> tuple[Kind, re.Match[str]] | None:
    for kind, pattern, anchors in _KV_ANCHORED:
        if anchors and not any(a in message for a in anchors):
            continue
        m = pattern.search(message)
        if m is not None:
            return kind, m
    return None


def _kv_text(kind: Kind, m: re.Match[str], message: str) -> str:
    """The part of the message to compare: from the template's start; the not-enough-memory
    error to its end (vLLM's text after the estimate is fixed)."""
    if kind is Kind.NOT_ENOUGH_MEMORY:
        return message[m.start() :]
    return m.group(0)


def kv_match_text(message: str) -> tuple[Kind, str] | None:
    """(kind, the part of ``message`` compared) for a KV line, else ``None``."""
    found = _kv_match(message)
    if found is None:
        return None
    kind, m = found
    return kind, _kv_text(kind, m, message)


def kv_figures(kind: Kind, text: str) -> dict[str, str]:
    """The named figures of a KV line of ``kind`` (empty when it is not one)."""
    for k, pattern in _KV_PATTERNS:
        if k is kind and (m := pattern.search(text)):
            return {name: v for name, v in m.groupdict().items() if v is not None}
    return {}


_TP_RANK = re.compile(r"^Worker_TP(\d+)")
_WRAPPABLE = ("To serve at least one request", "GPU KV cache size:")
#: Every fact and KV line read holds one of these words: other lines are only counted.
_TRIGGER = re.compile(
    r"KV [Cc]ache|block size|[Mm]amba|padding layers|num_gpu_blocks|[Aa]uto-fit|max seq len|GPU blocks|cuda blocks"
    r"|Maximum concurrency|█|version|LLM engine|args|Resolved architecture|max model len|Chunked prefill|took"
    r"|No available memory|graph memory|Actual usage|Free memory on device|graph pool memory|"
    + "|".join(re.escape(w) for w in FACT_WORDS)
)

#: The start of every KV message dryboot reads (and of the KV budget line): a line holding one
#: that matches no template is a KV line dryboot could not read (a cut, ``NaN``...), reported
#: as unread, never passed over.
_KV_FRAGMENT = re.compile(
    r"GPU KV cache size|Maximum concurrency for|To serve at least one request|Setting (?:kv cache|attention) block size"
    r"|Padding mamba page size|padding layers, may waste|Overriding num_gpu_blocks|Auto-fit max_model_len"
    r"|Available KV cache memory"
)
_TRIGGER_BYTES = re.compile(_TRIGGER.pattern.encode("utf-8"))
_CROSSING = _crossing_patterns()

#: Lines a boot prints once, by what they mark: seen again after KV lines, a new boot starts.
_BOOT_MARKERS = (
    ("version", re.compile(r"vLLM (?:API )?server version|Initializing an? (?:V1 )?LLM engine")),
    ("args", re.compile(r"non-default args:|\bargs: Namespace\(")),
    ("load", re.compile(r"Loading model weights took|Model loading took")),
)


class _Boot:
    """The facts of one boot while its lines are read."""

    def __init__(self, boot: int) -> None:
        self.boot = boot
        self.version: str | None = None
        self.versions: list[VersionEvidence] = []
        self.served_model: str | None = None
        self.args_text: str | None = None
        self.args_line: LogLine | None = None
        self.args_namespace = False
        self.architecture: str | None = None
        self.architecture_line: LogLine | None = None
        self.max_model_len: int | None = None
        self.batched: int | None = None
        self.reserved: str | None = None
        self.available: list[Available] = []
        self.memory: list[tuple[str, str, LogLine]] = []
        self.kv: dict[tuple[Kind, str], list[LogLine]] = {}
        self.kv_figures: dict[tuple[Kind, str], dict[str, str]] = {}
        self.kv_by_process: dict[tuple[Kind, frozenset[str], str | None], str] = {}
        self.count = 0
        self.first = 0
        self.last = 0
        self.tp_ranks: int | None = None
        self.logo = False
        self.markers: set[str] = set()
        self.joined: list[int] = []
        self.unread: list[LogLine] = []
        self.stated: list[Fact] = []

    def facts(self) -> LogFacts:
        version = self.version
        if version is None and self.versions:
            version = self.versions[0].version
        return LogFacts(
            version=version,
            served_model=self.served_model,
            args_text=self.args_text,
            args_line=self.args_line,
            args_namespace=self.args_namespace,
            architecture=self.architecture,
            architecture_line=self.architecture_line,
            max_model_len=self.max_model_len,
            max_num_batched_tokens=self.batched,
            available=tuple(self.available),
            reserved_gib=self.reserved,
            memory=tuple(self.memory),
            kv_lines=tuple(KVLine(k, t, self.kv_figures[(k, t)], tuple(ls)) for (k, t), ls in self.kv.items()),
            num_lines=self.count,
            versions=tuple(self.versions),
            boot=self.boot,
            first_line=self.first,
            last_line=self.last,
            tp_ranks=self.tp_ranks,
            joined=tuple(self.joined),
            unread=tuple(self.unread),
            stated=tuple(self.stated),
        )

    def add(self, line: LogLine, msg: str, found: tuple[Kind, re.Match[str]] | None, marker: str | None) -> None:
        self.count += 1
        self.first = self.first or line.number
        self.last = line.number
        if line.process and line.process.startswith("Worker_TP") and (m := _TP_RANK.match(line.process)):
            self.tp_ranks = max(self.tp_ranks or 0, int(m[1]) + 1)
        if found is None and not _TRIGGER.search(msg):
            return
        if marker is not None:
            self.markers.add(marker)
        if line.source:
            for release, known in SOURCE_LINES.items():
                if msg.startswith(known.get(line.source, "\x00")):
                    self.versions.append(VersionEvidence(release, f"the source line {line.source}", line))
        if "version" in msg or "LLM engine (v" in msg:
            for pattern in _VERSION_PATTERNS:
                if m := pattern.search(msg):
                    if self.version is None:
                        self.version = m["version"]
                    self.versions.append(VersionEvidence(m["version"], "stated", line))
                    if m.groupdict().get("model"):
                        self.served_model = self.served_model or m["model"]
                    self.logo = self.logo or "█" in msg
                    break
        if self.logo and self.served_model is None and (m := _LOGO_MODEL.search(msg)):
            self.served_model = m["model"]
        if self.args_text is None and "args:" in msg and (m := _ARGS.search(msg) or _NAMESPACE_ARGS.search(msg)):
            self.args_text, self.args_line, self.args_namespace = m["args"], line, m.re is _NAMESPACE_ARGS
        if len(self.stated) < MAX_FACTS:
            self.stated.extend(read_facts(msg, line)[: MAX_FACTS - len(self.stated)])
        if self.architecture is None and (m := _ARCHITECTURE.search(msg)):
            self.architecture, self.architecture_line = m["arch"], line
        if self.max_model_len is None and (m := _MAX_MODEL_LEN.search(msg)):
            self.max_model_len = int(m["n"])
        if self.batched is None and (m := _BATCHED.search(msg)):
            self.batched = int(m["n"])
        if self.reserved is None and (m := _RESERVED.search(msg)):
            self.reserved = m["gib"]
        if m := _AVAILABLE.search(msg):
            self.available.append(Available(m["gib"], line))
            workers = {(a.line.process, a.line.pid) for a in self.available if _is_worker(a.line.process)}
            if len(workers) > 1:  # each worker of one engine logs its own budget: at least that many ranks
                self.tp_ranks = max(self.tp_ranks or 0, len(workers))
        if "took" in msg or "memory" in msg or "usage" in msg:
            found_memory = []
            for name, pattern in MEMORY_PATTERNS:
                if mm := pattern.search(msg):
                    unit = "GB" if name.endswith("GB)") else "GiB"
                    found_memory.append((mm.start(), name, f"{mm['gib']} {unit}"))
            for _, name, figure in sorted(found_memory):  # in the order the line states them
                self.memory.append((name, figure, line))
        if (m := _KV_FRAGMENT.search(msg)) and not _AVAILABLE.search(msg):
            # a KV message begun before what the templates read (or where none matches)
            end = found[1].start() if found is not None else len(msg)
            if m.start() < end:
                self.unread.append(replace(line, message=msg[m.start() : end].rstrip(" ,")))
        if found is not None:
            kind, km = found
            key = (kind, _kv_text(kind, km, msg))
            self.kv.setdefault(key, []).append(line)
            self.kv_figures[key] = {k: v for k, v in km.groupdict().items() if v is not None}
            self.kv_by_process[_signature(kind, km, line)] = key[1]

    def starts_another(
        self, line: LogLine, msg: str, found: tuple[Kind, re.Match[str]] | None, marker: str | None
    ) -> bool:
        """Whether ``line`` belongs to a new boot: a start marker after this boot's KV lines, or
        the same KV line again with other figures from the same process."""
        if not self.kv:
            return False
        if marker is not None and marker in self.markers:
            return True
        if found is None:
            return False
        kind, km = found
        signature = _signature(kind, km, line)
        if kind is Kind.CAPACITY and signature[1] == {"tokens"}:
            # a two-line report starts with its tokens: after a concurrency line, another boot
            concurrency = (Kind.CAPACITY, frozenset({"max_model_len", "concurrency"}), line.process)
            if concurrency in self.kv_by_process:
                return True
        seen = self.kv_by_process.get(signature)
        return seen is not None and seen != _kv_text(kind, km, msg)


def _is_worker(process: str | None) -> bool:
    """Whether a ``decorate_logs`` process name is a worker of the engine (``Worker``,
    ``Worker_TP3``, ``VllmWorker``...), not an engine core or the API server."""
    return process is not None and _TP_WORKER.match(process) is not None


#: A worker process of one tensor-parallel group (``Worker``, ``Worker_TP3``, ``VllmWorker-2``):
#: not a pipeline stage's (``Worker_PP1_TP0``) nor another engine's.
_TP_WORKER = re.compile(r"^(?:Vllm)?Worker(?:_TP\d+|-\d+)?$")


def _signature(kind: Kind, m: re.Match[str], line: LogLine) -> tuple[Kind, frozenset[str], str | None]:
    """A KV line's kind, which figures it has (0.27.1's two capacity lines differ) and process."""
    return kind, frozenset(k for k, v in m.groupdict().items() if v is not None), line.process


def _joinable(msg: str) -> bool:
    """A KV message a terminal or a quote wrapped: its template starts but does not match."""
    return (
        ("To serve" in msg or "GPU KV cache size:" in msg)
        and any(w in msg for w in _WRAPPABLE)
        and (_kv_match(msg) is None)
    )


def _join(a: str, b: str) -> str:
    """Rejoin a wrapped line: a word cut by the terminal's width joins without a space."""
    b = b.lstrip()
    if a[-1:].isspace():  # re-flowed at a blank, which stayed on the first piece
        return a + b
    if a and b and a[-1].isalnum() and b[0].isalnum():
        return a + b
    return a + " " + b


def _join_variants(texts: list[str], b: str) -> list[str]:
    """Each of ``texts`` joined to the next line ``b`` (:func:`_join`), and with a blank where
    both sides are word characters (a line re-flowed at a blank loses that blank when its end is
    stripped, a line cut mid-word has none): at most 16 variants."""
    out: list[str] = []
    for a in texts:
        out.append(_join(a, b))
        tail = b.lstrip()
        if a[-1:].isalnum() and tail[:1].isalnum():
            out.append(a + " " + tail)
    return list(dict.fromkeys(out))[:16]


def _classify(msg: str) -> tuple[tuple[Kind, re.Match[str]] | None, str | None]:
    """(the KV template ``msg`` matches, the boot marker it is): ``None`` for most lines, found
    by one keyword search."""
    if not _TRIGGER.search(msg):
        return None, None
    return _kv_match(msg), next((name for name, p in _BOOT_MARKERS if p.search(msg)), None)


def iter_boots(lines: Iterable[LogLine]) -> Iterator[LogFacts]:
    """The facts of each boot in ``lines``, in order, one boot at a time (nothing but the current
    boot is held). A boot ends where another starts (:meth:`_Boot.starts_another`). A KV message
    wrapped over up to three more lines is rejoined (:func:`_join_variants`); when no join
    completes it, the lines are read one by one."""
    boot = _Boot(1)
    pending: tuple[LogLine, list[str], list[LogLine]] | None = None

    def take(line: LogLine, msg: str) -> Iterator[LogFacts]:
        nonlocal boot
        found, marker = _classify(msg)
        if boot.starts_another(line, msg, found, marker):
            yield boot.facts()
            boot = _Boot(boot.boot + 1)
        boot.add(line, msg, found, marker)

    for line in lines:
        if pending is not None:
            first, texts, held = pending
            texts = _join_variants(texts, line.message)
            joined = next((t for t in texts if _kv_match(t) is not None), None)
            if joined is not None:
                pending = None
                boot.joined.append(first.number)
                yield from take(first, joined)
            elif len(held) >= 2:
                pending = None
                for one in (first, *held, line):
                    yield from take(one, one.message)
            else:
                pending = (first, texts, [*held, line])
            continue
        if _joinable(line.message):
            pending = (line, [line.message], [])
            continue
        yield from take(line, line.message)
    if pending is not None:
        for one in (pending[0], *pending[2]):
            yield from take(one, one.message)
    yield boot.facts()


def extract(lines: Iterable[LogLine]) -> LogFacts:
    """The facts and KV lines of a log read as one boot (first occurrence of each fact;
    identical KV lines logged by several processes, or again in a traceback, are one
    :class:`KVLine`)."""
    boot = _Boot(1)
    for line in lines:
        boot.add(line, line.message, *_classify(line.message))
    return boot.facts()


def read_log(text: str) -> LogFacts:
    """:func:`extract` over :func:`read_lines`."""
    return extract(read_lines(text))
