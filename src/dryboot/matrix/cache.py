"""Task results cached by the sha256 of every input.

A task's key (:func:`task_key`) hashes: the arm's code (the sha256 of the tree's ``.py`` files,
:func:`tree_digest`, once per tree per run, with the boot environment's python path; or the
modelled policies and release), the model's ``config.json`` bytes (and a drafter's, named in
``--speculative-config``), the vLLM flags, the GPU as faked (name, capability, memory), and
dryboot's version with the engine-start script's own digest. Only ``"ok"`` and ``"refused"``
results are stored: an error, a timeout, a crash is never cached, so a re-run retries it.
Files: ``<dir>/<key[:2]>/<key>.json``, written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from dryboot import __version__
from dryboot.boot.compare import Figures
from dryboot.boot.session import ENGINE_START, parse_gpu
from dryboot.matrix.model import TaskResult

#: Bumped when a cached result's meaning changes.
FORMAT = 1


def default_cache_dir() -> Path:
    """``$DRYBOOT_CACHE/matrix`` or ``~/.cache/dryboot/matrix``."""
    base = os.environ.get("DRYBOOT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "dryboot")
    return Path(base) / "matrix"


def tree_digest(import_root: str) -> str:
    """sha256 over every ``vllm/**/*.py`` file of the tree (relative path and content, sorted):
    what an engine start imports from the tree (compiled extensions are never called)."""
    return tree_digest_of(Path(import_root) / "vllm", (".py",))


def tree_digest_of(root: Path, suffixes: tuple[str, ...]) -> str:
    """sha256 over the files under ``root`` ending in ``suffixes`` (relative path and content, sorted)."""
    h = hashlib.sha256()
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        files += [os.path.join(dirpath, f) for f in filenames if f.endswith(suffixes)]
    for f in sorted(files):
        h.update(os.path.relpath(f, root).encode())
        h.update(b"\0")
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


@lru_cache(maxsize=1)
def dryboot_digest() -> str:
    """sha256 of dryboot's own code and data (every file of the installed package, the
    engine-start script included): a changed rule or a development checkout's edit is a new
    version for the cache, whatever ``__version__`` says."""
    return tree_digest_of(ENGINE_START.parent.parent, (".py", ".json", ".toml"))


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "absent"


def _config_digest(model: str) -> str:
    p = Path(model)
    return _file_digest(p / "config.json" if p.is_dir() else p)


def _argv_files(argv: tuple[str, ...]) -> list[str]:
    """Digests of the configs a flag names (a speculative config's drafter model)."""
    out = []
    for i, a in enumerate(argv):
        if a in ("--speculative-config", "-sc") and i + 1 < len(argv):
            try:
                spec = json.loads(argv[i + 1])
            except ValueError:
                continue
            if isinstance(spec, dict) and isinstance(spec.get("model"), str):
                out.append(_config_digest(spec["model"]))
    return out


def task_key(code: str, model: str, argv: tuple[str, ...], gpu: str) -> str:
    """sha256 (hex) of one task's inputs; ``code`` names the arm's code (``"tree:<python>:<digest>"``
    or ``"dryboot:<version>:<grouping>:<unification>"``)."""
    g = parse_gpu(gpu)
    doc = {
        "format": FORMAT,
        "dryboot": __version__,
        "code_of_dryboot": dryboot_digest(),
        "code": code,
        "config": _config_digest(model),
        "more_configs": _argv_files(argv),
        "argv": list(argv),
        "gpu": [g.name, list(g.capability), g.total_memory, g.sm_count],
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _figures(doc: dict[str, Any] | None) -> Figures | None:
    if doc is None:
        return None
    return Figures(
        refusal=doc.get("refusal"),
        block_size=doc.get("block_size"),
        groups=tuple(tuple(g) for g in doc.get("groups") or ()),
        num_blocks=doc.get("num_blocks"),
        tokens=doc.get("tokens"),
        concurrency=doc.get("concurrency"),
        max_model_len=doc.get("max_model_len"),
        mamba_padding_pct=doc.get("mamba_padding_pct"),
        kv_log=tuple(doc.get("kv_log") or ()),
        weights_gib=doc.get("weights_gib"),
        available_gib=doc.get("available_gib"),
        available_bytes=doc.get("available_bytes"),
    )


def result_from_json(doc: dict[str, Any]) -> TaskResult:
    """A :class:`TaskResult` from :meth:`TaskResult.as_json`'s document."""
    return TaskResult(
        cell_id=str(doc["cell_id"]),
        arm=str(doc["arm"]),
        status=str(doc["status"]),
        tokens=doc.get("tokens"),
        block_size=doc.get("block_size"),
        num_blocks=doc.get("num_blocks"),
        max_model_len=doc.get("max_model_len"),
        lines=tuple(doc.get("lines") or ()),
        reason=doc.get("reason"),
        seconds=float(doc.get("seconds") or 0.0),
        cached=bool(doc.get("cached")),
        worker=str(doc.get("worker") or ""),
        figures=_figures(doc.get("figures")),
    )


class Cache:
    """Results on disk under ``directory`` (``None``: no cache, every lookup misses)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, cell_id: str, arm: str) -> TaskResult | None:
        """The stored result of ``key`` (renamed to this cell and arm, ``cached`` set), or ``None``."""
        if self.directory is None:
            return None
        try:
            doc = json.loads(self._path(key).read_text(encoding="utf-8"))
            res = result_from_json(doc)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return replace(res, cell_id=cell_id, arm=arm, cached=True)

    def put(self, key: str, result: TaskResult) -> None:
        """Store ``result`` unless it is an error (never cached)."""
        if self.directory is None or result.status not in ("ok", "refused"):
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(result.as_json(), fh)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
