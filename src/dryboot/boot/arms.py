"""Launcher-profile arms evaluated on their own code.

An arm names a tree (``tree = "..."``) or a patch series on a pristine release (``series =
"patches/"``, ``base = "0.28.0"``). :class:`ArmBooter` prepares that tree once, starts one
boot process for it, and runs every profile's engine start in that process (the import is the
cost: several profiles of one arm reuse it). A profile's flags are turned into the ``vllm serve``
command line its launcher would pass (:func:`vllm_argv`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dryboot.boot.compare import Figures, boot_figures
from dryboot.boot.session import GPU, H200, BootSession, Tree, resolve_tree
from dryboot.boot.trees import choose_python, tree_from_series
from dryboot.errors import InputError

#: Profile keys that are dryboot's, not ``vllm serve``'s (never passed to the tree).
DRYBOOT_ONLY = frozenset({"gpu", "gpu-memory", "non-kv-memory", "flashinfer-cubin"})


def model_dir(path: str | Path, workdir: Path) -> str:
    """A directory holding ``path`` as ``config.json`` (vLLM takes model directories; dryboot
    also takes a config file). A directory is returned as it is."""
    p = Path(path)
    if p.is_dir():
        return str(p.resolve())
    text = p.read_bytes()
    d = workdir / "models" / f"{p.name.removesuffix('.json')}-{hashlib.sha256(text).hexdigest()[:10]}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_bytes(text)
    return str(d)


def vllm_argv(
    flags: Mapping[str, object],
    drafter: Mapping[str, object] | None,
    base: Path,
    workdir: Path,
) -> list[str]:
    """The ``vllm serve`` flags of a profile (dryboot's own keys, :data:`DRYBOOT_ONLY`, left
    out): ``key = value`` -> ``--key value``, ``true`` ->
    ``--key``, ``false`` -> ``--no-key``; the drafter table (vLLM's speculative-config keys,
    paths relative to ``base``) with the profile's ``num-speculative-tokens`` becomes
    ``--speculative-config JSON`` (its model as a directory)."""
    argv: list[str] = []
    k = flags.get("num-speculative-tokens")
    for key, value in flags.items():
        if key in ("model", "drafter", "num-speculative-tokens") or key in DRYBOOT_ONLY:
            continue
        if value is True:
            argv.append(f"--{key}")
        elif value is False:
            argv.append(f"--no-{key}")
        else:
            argv += [f"--{key}", str(value)]
    if drafter:
        spec: dict[str, Any] = dict(drafter)
        if isinstance(spec.get("model"), str):
            spec["model"] = model_dir(base / str(spec["model"]), workdir)
        if k is not None:
            spec["num_speculative_tokens"] = k
        argv += ["--speculative-config", json.dumps(spec)]
    elif k is not None:
        argv += ["--spec-tokens", str(k)]
    return argv


class ArmBooter:
    """The code of one arm, booted: a tree (as named, or a scratch tree built from a series)
    and one boot process that answers each profile.

    :param tree: a tree path (``tree = ...``), or ``None`` with ``series``/``base``.
    :param python: the boot environment's interpreter (``None``: see :func:`choose_python`).
    :raises InputError: no interpreter, a tree that does not exist or import, a series that does
        not apply, a release outside 0.27.1-0.33.0.
    """

    def __init__(
        self,
        name: str,
        *,
        tree: str | None = None,
        series: str | None = None,
        base: str | None = None,
        python: str | None = None,
        gpu: GPU = H200,
        source: str = "<profiles>",
    ) -> None:
        self.name = name
        self._scratch = Path(tempfile.mkdtemp(prefix=f"dryboot-arm-{name}-"))
        self.report: list[str] = []
        try:
            where = f"arms.{name}"
            if tree is not None:
                self.tree: Tree = resolve_tree(tree, f"{source}: {where}.tree")
                py = choose_python(python, self.tree.version, self.tree)
            elif series is not None and base is not None:
                py = choose_python(python, base)
                self.tree, self.report = tree_from_series(
                    series, base, py, self._scratch / "tree", f"{source}: {where}.series"
                )
            else:
                raise InputError(source, where, "needs tree = ..., or series = ... with base = ...")
            self.session = BootSession(py, self.tree, gpu)
        except BaseException:
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise

    def boot(
        self, model: str | Path, argv: list[str], budget: dict[str, Any] | None = None
    ) -> tuple[Figures, dict[str, Any]]:
        """One engine start in this arm's process: its figures and the raw answer (``budget``:
        the KV budget's other terms when ``argv`` pins none, :class:`dryboot.boot.budget.BootBudget`)."""
        answer = self.session.boot(model_dir(model, self._scratch), argv, budget=budget)
        return boot_figures(answer), answer

    def close(self) -> None:
        """End the boot process and remove the scratch tree."""
        try:
            self.session.close()
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> ArmBooter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
