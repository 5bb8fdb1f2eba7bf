"""Find a model's ``config.json`` for a logged boot, offline.

In order: ``--model`` (given by the user), ``hf_config_path`` of the logged args, the logged
model when it is a local path, then the Hugging Face cache for a hub id: the snapshot of the
logged revision (``main`` unless the args name one) under ``HF_HUB_CACHE`` (else ``HF_HOME/hub``,
else ``~/.cache/huggingface/hub``), read through ``huggingface_hub``'s own cache helpers
(``try_to_load_from_cache``, ``scan_cache_dir``). Nothing is downloaded. ``huggingface_hub`` is
imported only here, when a hub id must be looked up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dryboot.errors import InputError
from dryboot.inputs import check_regular


@dataclass(frozen=True)
class Located:
    """A config found: its path and how (for reports)."""

    path: Path
    how: str


def hub_cache_dir() -> tuple[Path, str]:
    """The Hugging Face hub cache as ``huggingface_hub.constants`` derives it, read from the
    environment now (not at import): (directory, the variable that chose it)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser(), var
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub", "HF_HOME"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path("~/.cache").expanduser()
    return base / "huggingface" / "hub", "default"


def _local(path: str, source: str | None = None) -> Path | None:
    p = Path(path).expanduser()
    check_regular(p, source or path, allow_dir=True)
    if p.is_file():
        return p
    if p.is_dir() and (p / "config.json").is_file():
        return p / "config.json"
    return None


def find_config(
    explicit: str | None,
    model: str | None,
    *,
    revision: str | None = None,
    hf_config_path: str | None = None,
    what: str = "model",
    source: str = "log",
) -> Located:
    """The ``config.json`` to plan with.

    :param explicit: ``--model`` (must exist).
    :param model: the model the log names (args ``model``/``model_tag``, or the version line).
    :raises InputError: nothing found; the message says what was looked at and what is needed.
    """
    if explicit is not None:
        found = _local(explicit)
        if found is None:
            raise InputError(explicit, None, "no config.json there (a config.json or a directory holding one)")
        return Located(found, "--model")
    if hf_config_path:
        found = _local(hf_config_path)
        if found is not None:
            return Located(found, "hf_config_path in the logged args")
    if not model:
        raise InputError(
            source, what, "the log names no model (no non-default args, no version line); pass --model PATH"
        )
    found = _local(model)
    if found is not None:
        return Located(found, f"the logged {what} path")
    if model.startswith(("/", "./", "../", "~")):
        raise InputError(
            source, what, f"{model!r} is a local path that does not exist here; pass --model PATH (its config.json)"
        )
    return _from_hub_cache(hf_config_path or model, revision, what, source)


def _from_hub_cache(repo_id: str, revision: str | None, what: str, source: str) -> Located:
    import huggingface_hub as hub  # at call: only a hub id needs it (its import takes ~0.3 s)

    cache, var = hub_cache_dir()
    rev = revision or "main"
    where = f"the Hugging Face cache {cache}" + ("" if var == "default" else f" ({var})")
    need = f"pass --model PATH, or fetch it: hf download {repo_id} config.json" + (
        f" --revision {revision}" if revision else ""
    )
    try:
        found = hub.try_to_load_from_cache(repo_id, "config.json", cache_dir=cache, revision=rev)
    except Exception as exc:  # an id the hub library refuses (HFValidationError ...)
        raise InputError(source, what, f"{repo_id!r} is neither a local path nor a hub id ({exc}); {need}") from None
    if isinstance(found, str):
        return Located(Path(found), f"{where}, revision {rev}")
    if found is not None:  # huggingface_hub's _CACHED_NO_EXIST: the hub said there is no such file
        raise InputError(source, what, f"{where} records that {repo_id} revision {rev} has no config.json; {need}")
    raise InputError(source, what, f"{_describe_cached(hub, cache, repo_id, rev, where)}; {need}")


def _describe_cached(hub: object, cache: Path, repo_id: str, rev: str, where: str) -> str:
    """Why the lookup failed, from ``scan_cache_dir``: no cache, repo absent, or which
    revisions and refs it holds."""
    if not cache.is_dir():
        return f"{repo_id}: {where} does not exist"
    try:
        info = hub.scan_cache_dir(cache)  # type: ignore[attr-defined]
    except Exception as exc:
        return f"{repo_id}: cannot read {where}: {exc}"
    for repo in info.repos:
        if repo.repo_id == repo_id and repo.repo_type == "model":
            revisions = sorted(repo.revisions, key=lambda r: r.commit_hash)
            held = ", ".join(
                r.commit_hash[:12]
                + (f" ({', '.join(sorted(r.refs))})" if r.refs else "")
                + ("" if any(f.file_name == "config.json" for f in r.files) else " without config.json")
                for r in revisions
            )
            return f"{repo_id}: {where} has no config.json for revision {rev} (it holds {held or 'no snapshot'})"
    return f"{repo_id} is not in {where}"
