"""Where a boot's vLLM tree and interpreter come from.

* A tree the user names (``--vllm TREE``, an arm's ``tree = "..."``): used as it is.
* A patch series on a pristine release (an arm's ``series = "patches/"`` + ``base = "0.28.0"``):
  the boot environment's installed ``vllm`` of that release is copied into a scratch directory
  (``.py`` files copied, everything else -- compiled extensions, data -- linked) and the series is
  applied there with dryboot's own patch engine; the environment itself is never written.
* The interpreter: ``--python``, else ``$DRYBOOT_BOOT_PYTHON`` (for a series on a pristine
  release, only when that release is the one installed there: the installed ``vllm`` is the code
  patched, so profiles whose arms sit on two releases take each release's own environment; a
  named tree is imported first and only needs the environment's dependencies), else the venv a
  tree lies in (``.../lib/pythonX.Y/site-packages``), else the default boot environment of the
  release (``~/.cache/dryboot/boot-env/<release>``, see :mod:`dryboot.boot.env`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from dryboot.boot.env import default_env_dir, installed_vllm
from dryboot.boot.session import Tree, resolve_tree
from dryboot.errors import InputError
from dryboot.patching.census import outcome_lines
from dryboot.patching.stack import apply_series as apply_patch_series

PYTHON_ENV_VAR = "DRYBOOT_BOOT_PYTHON"


def venv_python_of(tree: Tree) -> str | None:
    """The python of the venv whose ``site-packages`` holds ``tree``, if it lies in one."""
    root = Path(tree.import_root)
    if root.name == "site-packages" and root.parent.name.startswith("python") and root.parent.parent.name == "lib":
        candidate = root.parent.parent.parent / "bin" / "python"
        if candidate.is_file():
            return str(candidate)
    return None


def choose_python(explicit: str | None, release: str | None, tree: Tree | None = None) -> str:
    """The boot environment's interpreter (see the module docstring for the order).

    :raises InputError: none found (naming the command that builds one).
    """
    if explicit:
        return explicit
    env = os.environ.get(PYTHON_ENV_VAR)
    if env and (tree is not None or release is None or _release_installed(env) in (None, _release(release))):
        return env
    if tree is not None:
        own = venv_python_of(tree)
        if own is not None:
            return own
    if release is not None:
        default = default_env_dir(release) / "bin" / "python"
        if default.is_file():
            return str(default)
        raise InputError(
            "--python",
            None,
            f"no boot environment for vLLM {release} (build it: dryboot boot-env --vllm-version {release}, "
            f"or give --python / ${PYTHON_ENV_VAR})",
        )
    raise InputError("--python", None, f"give the boot environment's python (--python or ${PYTHON_ENV_VAR})")


def _release(version: str) -> str:
    return version.split("+")[0]


def _release_installed(python: str) -> str | None:
    """The vLLM release installed in the venv of ``python`` (its ``vllm/_version.py``), or
    ``None`` when that cannot be read (the choice is then left to the caller's check)."""
    try:
        package = installed_vllm(python)
    except InputError:
        return None
    version = resolve_tree(str(package.parent), PYTHON_ENV_VAR).version
    return None if version is None else _release(version)


def scratch_copy(package: Path, root: Path) -> None:
    """Lay ``package`` (a ``vllm`` directory) out as ``root/vllm``: Python sources copied (a
    patch may change them), every other file a symbolic link to the original (compiled
    extensions and data are read, never patched: a patch writes a new file over the link,
    leaving the original untouched)."""
    dest = root / "vllm"
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = Path(dirpath).relative_to(package)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for fn in filenames:
            src = Path(dirpath) / fn
            if fn.endswith(".py"):
                shutil.copyfile(src, dest / rel / fn)
            else:
                os.symlink(src, dest / rel / fn)


def apply_series(series_dir: str, root: Path, source: str) -> list[str]:
    """Apply the patch series in ``series_dir`` to the tree at ``root`` with dryboot's own patch
    engine (:func:`dryboot.patching.stack.apply_series`: one transaction, nothing written on
    failure).

    The one call site of the patching package's API.

    :returns: one line per patch (``== NAME``, ``(already applied)`` when it was), then the
        engine's warnings.
    :raises InputError: the series does not apply (the failing patch and its first failed hunks),
        or is malformed.
    """
    res = apply_patch_series(series_dir, str(root))
    lines = [f"== {s.entry.name}" + (" (already applied)" if s.state == "already" else "") for s in res.run.steps]
    if not res.ok:
        last = res.run.steps[-1]
        failed = [
            f"== {last.entry.name}: FAILED",
            *(ln.strip() for ln in outcome_lines(last.outcome) if "FAILED" in ln),
        ]
        raise InputError(source, series_dir, "does not apply: " + "; ".join(failed[:2]))
    return lines + res.notes


def tree_from_series(series_dir: str, base: str, python: str, workdir: Path, source: str) -> tuple[Tree, list[str]]:
    """The scratch tree of ``series_dir`` applied to the pristine vLLM ``base`` installed in the
    environment of ``python``, laid out under ``workdir``.

    :returns: the tree and the patch engine's report.
    :raises InputError: the environment's vllm is not release ``base``, or the series fails.
    """
    package = installed_vllm(python)
    pristine = resolve_tree(str(package.parent), "--python")
    if pristine.version is not None and _release(pristine.version) != base:
        raise InputError(source, f"base = {base!r}", f"the environment {python} has vLLM {pristine.version}")
    workdir.mkdir(parents=True, exist_ok=True)
    scratch_copy(package, workdir)
    report = apply_series(series_dir, workdir, source)
    return resolve_tree(str(workdir), source), report
