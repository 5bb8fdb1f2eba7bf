"""A vLLM release's Python tree, fetched by package name: what ``series port --from-version`` /
``--to-version`` port between.

``release_tree("0.28.0")`` downloads the release's wheel (``pip download --no-deps vllm==X``,
from whatever index pip is configured for) once into ``~/.cache/dryboot/releases/X/`` and lays
out its ``vllm/`` package there without the compiled extensions (a patch stack patches Python
sources and data files, never a ``.so``): the returned directory holds ``vllm/``, as the
directory ``series apply`` patches does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from dryboot.boot.env import RELEASES
from dryboot.errors import InputError

#: Members of the wheel left out of the tree: compiled code a patch never touches.
_SKIPPED = (".so", ".pyd", ".dll", ".dylib", ".cubin", ".fatbin")
_STAMP = ".dryboot-release"


def releases_dir() -> Path:
    """Where fetched release trees live (``$DRYBOOT_CACHE`` or ``~/.cache/dryboot``)."""
    base = os.environ.get("DRYBOOT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "dryboot")
    return Path(base) / "releases"


def release_tree(version: str, flag: str = "--to-version") -> Path:
    """The tree of vLLM ``version`` (a directory holding ``vllm/``), fetched on first use.

    :raises InputError: a version outside 0.27.1-0.33.0, or pip cannot fetch the wheel.
    """
    if version not in RELEASES:
        raise InputError(flag, version, f"not a release dryboot knows (known: {', '.join(RELEASES)})")
    root = releases_dir() / version
    if (root / _STAMP).is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=root.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check"]
        cmd += ["--only-binary", ":all:", "-d", tmp, f"vllm=={version}"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(Path(tmp).glob("vllm-*.whl"))
        if done.returncode != 0 or not wheels:
            tail = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no wheel"]
            raise InputError(flag, version, f"cannot fetch vllm=={version} by package name: {tail[0]}")
        stage = Path(tmp) / "tree"
        with zipfile.ZipFile(wheels[0]) as whl:
            for info in whl.infolist():
                name = info.filename
                if not name.startswith("vllm/") or name.endswith("/") or name.endswith(_SKIPPED):
                    continue
                dest = stage / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                with whl.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
        (stage / _STAMP).write_text(f"vllm=={version} from {wheels[0].name}\n")
        if root.exists():
            shutil.rmtree(root)
        os.rename(stage, root)
    return root
