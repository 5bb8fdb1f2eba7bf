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
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PROCESS = re.compile(r"\((?P<name>[A-Za-z][\w.\-]*) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)")
_HEADER = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<date>\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)? "
    r"\[(?P<file>[^\]\s]+?):(?P<lineno>\d+)\] ?"
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


def read_lines(text: str) -> list[LogLine]:
    """Split ``text`` into :class:`LogLine` s: ANSI colours, ``\\r``, process prefixes and vLLM's
    header removed."""
    out: list[LogLine] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = _ANSI.sub("", raw).replace("\r", "")
        if not line.strip():
            continue
        header = _HEADER.search(line)
        before, message = (line[: header.start()], line[header.end() :]) if header else (line, "")
        processes = list(_PROCESS.finditer(before))
        if header is None:
            # no vLLM header: the message is what follows the last process prefix (a traceback
            # line printed by multiprocessing, the logo, a foreign line)
            message = line[processes[-1].end() :] if processes else line
            message = message[1:] if message.startswith(" ") else message
        process = processes[-1] if processes else None
        out.append(
            LogLine(
                number=number,
                process=process["name"] if process else None,
                pid=int(process["pid"]) if process else None,
                level=header["level"] if header else None,
                source=f"{header['file']}:{header['lineno']}" if header else None,
                message=message.rstrip(),
            )
        )
    return out


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

    @property
    def budget_dependent(self) -> bool:
        """Whether the line's figures depend on the KV budget."""
        return self in (Kind.OVERRIDE, Kind.AUTO_FIT, Kind.CAPACITY, Kind.NOT_ENOUGH_MEMORY)


# vLLM 0.28.0's templates, as regular expressions over the formatted message.
_KV_PATTERNS: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    # platforms/interface.py:636
    (Kind.BACKEND_BLOCK, re.compile(r"Setting kv cache block size to (?P<block>\d+) for (?P<backend>\S+) backend\.")),
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
            r"GPU KV cache size: (?P<tokens>[\d,]+) tokens, Maximum concurrency for (?P<max_model_len>[\d,]+) "
            r"tokens per request: (?P<concurrency>[\d.]+)x"
        ),
    ),
    # vLLM 0.27.1: the size and the concurrency are two lines
    (Kind.CAPACITY, re.compile(r"GPU KV cache size: (?P<tokens>[\d,]+) tokens(?!,)")),
    (
        Kind.CAPACITY,
        re.compile(r"Maximum concurrency for (?P<max_model_len>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x"),
    ),
    # v1/core/kv_cache_utils.py:760 (_check_enough_kv_cache_memory), :741
    (
        Kind.NOT_ENOUGH_MEMORY,
        re.compile(
            r"To serve at least one request with the model's max seq len \((?P<max_model_len>\d+)\), "
            r"\((?P<needed_gib>[\d.]+) GiB KV cache is needed, which is larger than the available KV cache "
            r"memory \((?P<available_gib>[\d.]+) GiB\)\. (?:Based on the available memory, the estimated maximum "
            r"model length is (?P<estimated>\d+)\. )?Try increasing"
            r"|(?P<no_memory>No available memory for the cache blocks\.)"
        ),
    ),
)

# The facts around the KV lines.
_VERSION_PATTERNS = (
    # entrypoints/serve/utils/api_utils.py:313 (0.2x), logo form below
    re.compile(r"vLLM server version (?P<version>\S+), serving model (?P<model>\S+)"),
    # entrypoints/openai/api_server.py before the logo (<= 0.1x)
    re.compile(r"vLLM API server version (?P<version>\S+)"),
    # v1/engine/core.py:123
    re.compile(r"Initializing a V1 LLM engine \(v(?P<version>[^)\s]+)\) with config: model='(?P<model>[^']*)'"),
    # the logo (log_version_and_model with a formatter): "█ ... version X" / "... model M"
    re.compile(r"█.*\bversion\s+(?P<version>\d+\.\d+\S*)"),
)
_LOGO_MODEL = re.compile(r"█.*\bmodel\s+(?P<model>\S+)")
_ARGS = re.compile(r"(?:^|\s)non-default args: (?P<args>\{.*\})\s*$")
_NAMESPACE_ARGS = re.compile(r"(?:^|\s)args: (?P<args>Namespace\(.*\))\s*$")
_ARCHITECTURE = re.compile(r"Resolved architecture: (?P<arch>\S+)")
_MAX_MODEL_LEN = re.compile(r"Using max model len (?P<n>\d+)")
_BATCHED = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(?P<n>\d+)\.")
_AVAILABLE = re.compile(r"Available KV cache memory: (?P<gib>-?[\d.]+) GiB")
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
class LogFacts:
    """Everything the log says that a prediction needs, and its KV lines in order."""

    version: str | None = None
    served_model: str | None = None
    args_text: str | None = None
    args_line: LogLine | None = None
    args_namespace: bool = False
    architecture: str | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    available: tuple[Available, ...] = ()
    reserved_gib: str | None = None
    kv_lines: tuple[KVLine, ...] = field(default=())
    num_lines: int = 0

    @property
    def is_vllm_log(self) -> bool:
        """Whether anything vLLM-specific was found at all."""
        return bool(self.version or self.args_text or self.architecture or self.available or self.kv_lines)


def _kv_match(message: str) -> tuple[Kind, re.Match[str]] | None:
    for kind, pattern in _KV_PATTERNS:
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


def extract(lines: Iterable[LogLine]) -> LogFacts:
    """The facts and KV lines of a log (first occurrence of each fact; identical KV lines logged
    by several processes, or again in a traceback, are one :class:`KVLine`)."""
    version: str | None = None
    served_model: str | None = None
    args_text: str | None = None
    args_line: LogLine | None = None
    args_namespace = False
    architecture: str | None = None
    max_model_len: int | None = None
    batched: int | None = None
    reserved: str | None = None
    available: list[Available] = []
    kv: dict[tuple[Kind, str], list[LogLine]] = {}
    kv_figures_of: dict[tuple[Kind, str], dict[str, str]] = {}
    count = 0
    logo = False
    for line in lines:
        count += 1
        msg = line.message
        if version is None and "version" in msg:
            for pattern in _VERSION_PATTERNS:
                if m := pattern.search(msg):
                    version = m["version"]
                    if m.groupdict().get("model"):
                        served_model = served_model or m["model"]
                    logo = "█" in msg
                    break
        if logo and served_model is None and (m := _LOGO_MODEL.search(msg)):
            served_model = m["model"]
        if args_text is None and "args:" in msg and (m := _ARGS.search(msg) or _NAMESPACE_ARGS.search(msg)):
            args_text, args_line, args_namespace = m["args"], line, m.re is _NAMESPACE_ARGS
        if architecture is None and (m := _ARCHITECTURE.search(msg)):
            architecture = m["arch"]
        if max_model_len is None and (m := _MAX_MODEL_LEN.search(msg)):
            max_model_len = int(m["n"])
        if batched is None and (m := _BATCHED.search(msg)):
            batched = int(m["n"])
        if reserved is None and (m := _RESERVED.search(msg)):
            reserved = m["gib"]
        if m := _AVAILABLE.search(msg):
            available.append(Available(m["gib"], line))
        found = _kv_match(msg)
        if found is not None:
            kind, km = found
            key = (kind, _kv_text(kind, km, msg))
            kv.setdefault(key, []).append(line)
            kv_figures_of[key] = {k: v for k, v in km.groupdict().items() if v is not None}
    return LogFacts(
        version=version,
        served_model=served_model,
        args_text=args_text,
        args_line=args_line,
        args_namespace=args_namespace,
        architecture=architecture,
        max_model_len=max_model_len,
        max_num_batched_tokens=batched,
        available=tuple(available),
        reserved_gib=reserved,
        kv_lines=tuple(KVLine(k, t, kv_figures_of[(k, t)], tuple(ls)) for (k, t), ls in kv.items()),
        num_lines=count,
    )


def read_log(text: str) -> LogFacts:
    """:func:`extract` over :func:`read_lines`."""
    return extract(read_lines(text))
