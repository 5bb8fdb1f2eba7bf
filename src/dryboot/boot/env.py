"""The boot environment: a venv with CPU torch and vLLM's Python dependencies, no GPU stack.

``build_env("0.28.0", DIR)`` makes DIR a venv holding CPU ``torch``, ``vllm==X`` installed
without its dependencies, the light packages importing vLLM's engine-start modules needs (at
versions inside that release's metadata ranges), and, without their own dependencies, the few
packages whose dependency trees are GPU stacks vLLM only imports (xgrammar, flashinfer-python,
torchvision, mistral_common). A stamp file records the requirement set: a venv whose stamp
matches and whose smoke test passes is reused as it is. The smoke test is one engine start
(``engine_start.py``, a 2-layer Llama with a 13,107,200-byte budget: 100 blocks).

Pins by release come from each wheel's ``Requires-Dist`` (only those that differ from 0.28.0).
0.33.0 pins torch 2.14.0, which PyPI serves as a CUDA build (several GB; it only needs to import).

``build_env(X, extras=True)`` builds ``<X>-mm`` instead: the same environment plus the optional
packages vLLM's multimodal model files import that are not vLLM dependencies (:data:`EXTRAS`:
timm, installed without its dependencies; what it imports -- torch, torchvision, huggingface_hub,
safetensors, pyyaml -- is there already). The shared environments stay as they are. torchaudio
is not installed: PyPI's newest (2.11.1) ships a kernel library built against torch 2.11, which
fails to load next to torch 2.13 (``OSError: Could not load this library: _torchaudio.so``) and
no torchaudio exists for 2.13/2.14; the engine start provides its own stand-in (see
``engine_start.py``: the two model files that import torchaudio use it for audio preprocessing
and one non-persistent buffer's shape only).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dryboot.boot.session import BootSession, resolve_tree
from dryboot.errors import InputError

#: The releases a boot environment can be built for.
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")

_LIGHT = (
    "numpy==2.4.6",
    "packaging==26.4",
    "regex==2026.11.19",
    "pydantic==2.14.4",  # vllm: >=2.12.0
    "cbor2==6.3.0",
    "psutil==7.2.2",
    "pyzmq==27.3.0",  # vllm: >=25.0.0
    "{transformers}",  # (brings tokenizers, huggingface_hub, safetensors)
    "aiohttp==3.14.5",  # vllm: >=3.13.3
    "requests==2.34.2",  # vllm: >=2.26.0
    "openai==3.57.0",  # vllm: >=2.0.0
    "openai-harmony==0.0.8",  # vllm: >=0.0.3
    "pillow==13.0.0",
    "pybase64==1.5.1",
    "cachetools==8.0.2",
    "msgspec==0.23.0",
    "cloudpickle==3.1.3",
    "uvloop==0.23.0",
    "py-cpuinfo==9.0.0",
    "prometheus_client==0.26.0",  # vllm: >=0.18.0
    "llguidance==1.7.6",  # vllm: >=1.7.0,<1.8.0
    "einops==0.8.2",
    "compressed-tensors==0.17.0",  # vllm: ==0.17.0 (vLLM's model classes import it)
    "loguru==0.7.3",
    "nvidia-ml-py==13.615.71",  # flashinfer imports pynvml
    "apache-tvm-ffi==0.1.11",  # vllm: ==0.1.11 (xgrammar and flashinfer import tvm_ffi)
    # mistral_common's import-time dependencies (installed --no-deps below)
    "jsonschema==4.26.0",
    "pydantic-extra-types[pycountry]==2.11.1",
    "tiktoken==0.14.0",
)


@dataclass(frozen=True)
class Requirements:
    """The requirement set of one release's boot environment."""

    release: str
    torch: str
    vllm: str
    light: tuple[str, ...]
    nodeps: tuple[str, ...]
    extras: tuple[str, ...] = ()

    def stamp(self) -> str:
        """The stamp file's text (the same as ``scripts/fidelity-env.sh`` wrote, so venvs built
        by the script are reused)."""
        return "\n".join(("v2", self.torch, self.vllm, *self.light, *self.nodeps, *self.extras))


#: The optional packages of a ``-mm`` environment (installed ``--no-deps``): timm, which
#: ``deepseek_vl2.py``, ``kanana_v.py``, ``openvla.py``, ``hyperclovax_vision.py`` and (through
#: transformers' ``TimmWrapperModel``) ``gemma3n_mm.py`` import to build their vision towers. timm
#: 1.0.29 declares ``torch`` without an upper bound and imports on torch 2.13 and 2.14.
EXTRAS = ("timm==1.0.29",)


def requirements(release: str, extras: bool = False) -> Requirements:
    """The pins of ``release`` (see the module docstring); with ``extras``, also :data:`EXTRAS`.

    :raises InputError: a release with no pin table.
    """
    if release not in RELEASES:
        raise InputError("--vllm-version", release, f"no pin table for this release (known: {', '.join(RELEASES)})")
    torch, transformers = "torch==2.13.0", "transformers==5.24.0"  # 0.28.0: >=5.5.3
    xgrammar, flashinfer, torchvision = "xgrammar==0.2.9", "flashinfer-python==0.6.16.post3", "torchvision==0.28.0"
    extra: tuple[str, ...] = ()
    if release == "0.27.1":
        # 0.27.1 reads Gemma-4's global head_dim, which transformers >= 5.16 refuses
        transformers = "transformers==5.10.4"
    elif release == "0.29.0":
        flashinfer = "flashinfer-python==0.6.18"
    elif release == "0.30.0":
        flashinfer = "flashinfer-python==0.6.18.post1"
    elif release == "0.31.0":
        flashinfer, transformers, xgrammar = "flashinfer-python==0.7.0.post1", "transformers==5.17.0", "xgrammar==0.2.7"
    elif release == "0.32.0":
        flashinfer, transformers, xgrammar = "flashinfer-python==0.7.0.post1", "transformers==5.19.0", "xgrammar==0.2.8"
    elif release == "0.33.0":
        flashinfer, transformers, xgrammar = "flashinfer-python==0.7.2.post1", "transformers==5.20.2", "xgrammar==0.2.8"
        torch, torchvision = "torch==2.14.0", "torchvision==0.29.0"
    if release in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        # imported from 0.29.0 on by modules the model classes import (the entrypoints protocol,
        # through vllm/tokenizers/mistral.py: Pixtral, and with it LLaVA and Mistral-3, on 0.29.0)
        extra = ("fastapi==0.136.1", "partial-json-parser==0.2.1.1.post7")
    light = tuple(transformers if r == "{transformers}" else r for r in _LIGHT) + extra
    # mistral_common: vllm wants mistral_common[image]>=1.11.6; its numpy cap is below vLLM's pin
    nodeps = (xgrammar, flashinfer, torchvision, "mistral_common==1.13.1")
    return Requirements(release, torch, f"vllm=={release}", light, nodeps, EXTRAS if extras else ())


def default_env_dir(release: str, extras: bool = False) -> Path:
    """``$DRYBOOT_BOOT_ENV_ROOT/<release>``, default ``~/.cache/dryboot/boot-env/<release>``;
    with ``extras``, ``<release>-mm`` beside it."""
    root = os.environ.get("DRYBOOT_BOOT_ENV_ROOT") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dryboot", "boot-env"
    )
    return Path(root) / (f"{release}-mm" if extras else release)


def installed_vllm(python: str) -> Path:
    """The ``vllm`` package installed in the venv of ``python`` (its ``site-packages/vllm``).

    :raises InputError: the venv has none.
    """
    venv = Path(python).parent.parent
    found = sorted(venv.glob("lib/python*/site-packages/vllm/__init__.py"))
    if not found:
        raise InputError("--python", python, "this environment has no installed vllm package")
    return found[-1].parent


STAMP = ".dryboot-fidelity-stamp"
_SMOKE_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 1024,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}


def smoke(python: str, release: str, extras: tuple[str, ...] = ()) -> str | None:
    """One engine start in the environment; ``None`` when it answers 100 blocks under
    ``release`` (and each package of ``extras`` is installed at its pin), else what went wrong (one line)."""
    for pin in extras:  # installed at its pin (it imports only beside the engine start's stand-ins:
        # timm imports torchvision, whose CUDA build needs the two op schemas engine_start.py declares)
        name, version = pin.split("==")
        code = f"import importlib.metadata as m; print(m.version({name!r}))"
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
        if proc.stdout.strip() != version:
            return f"{name} {version} is not installed ({(proc.stdout + proc.stderr).strip()[-200:]})"
    try:
        tree = resolve_tree(str(installed_vllm(python).parent))
        with tempfile.TemporaryDirectory(prefix="dryboot-smoke-") as tmp:
            (Path(tmp) / "config.json").write_text(json.dumps(_SMOKE_CONFIG))
            with BootSession(python, tree) as s:
                if s.vllm_version != release:
                    return f"the environment has vLLM {s.vllm_version}"
                r = s.boot(tmp, ["--max-model-len", "1024", "--kv-cache-memory-bytes", "13107200"])
    except InputError as exc:
        return exc.line()
    if r.get("num_blocks") != 100:
        return f"engine start answered {r.get('error') or r.get('num_blocks')}"
    return None


@dataclass(frozen=True)
class EnvInfo:
    """A built (or reused) environment: its python, whether it was reused, seconds taken,
    size on disk (bytes)."""

    python: str
    reused: bool
    seconds: float
    size_bytes: int


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


_PIP_NOISE = ("requires", "dependency conflicts", "WARNING: Location 'file:")


def _pip(python: str, args: list[str], log: Callable[[str], None]) -> None:
    cmd = [python, "-m", "pip", "--disable-pip-version-check", "install", "-q", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.strip() and not any(n in line for n in _PIP_NOISE):
            log(line)
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise InputError("pip", " ".join(args[:3]), f"failed ({proc.returncode}): {tail[0]}")


def build_env(
    release: str,
    target: Path | None = None,
    log: Callable[[str], None] | None = None,
    base_python: str | None = None,
    extras: bool = False,
) -> EnvInfo:
    """Build (or reuse) the boot environment of ``release`` at ``target`` (default
    :func:`default_env_dir`). A vLLM wheel is taken from ``$DRYBOOT_VLLM_WHEEL_DIR`` when set.
    With ``extras``, :data:`EXTRAS` too (default directory ``<release>-mm``).

    :raises InputError: an unknown release, a failing pip step, or a smoke test that fails.
    """
    say = log or (lambda text: None)
    req = requirements(release, extras)
    venv = target or default_env_dir(release, extras)
    py = venv / "bin" / "python"
    stamp = venv / STAMP
    t0 = time.perf_counter()
    if py.is_file() and stamp.is_file() and stamp.read_text().rstrip("\n") == req.stamp():
        say(f"reusing {venv}")
        problem = None if os.environ.get("DRYBOOT_SKIP_SMOKE") else smoke(str(py), release, req.extras)
        if problem is None:
            return EnvInfo(str(py), True, round(time.perf_counter() - t0, 1), _size(venv))
        say(f"the existing environment failed its smoke test ({problem}): rebuilding")
    say(f"building {venv}")
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([base_python or sys.executable, "-m", "venv", str(venv)], check=True)
    say(f"installing {req.torch} (CPU wheel)")
    _pip(str(py), [req.torch], say)
    say(f"installing {req.vllm} --no-deps")
    wheels = os.environ.get("DRYBOOT_VLLM_WHEEL_DIR")
    _pip(str(py), ["--no-deps", *(["--find-links", wheels] if wheels else []), req.vllm], say)
    say("installing the light import-time dependencies")
    _pip(str(py), [req.torch, *req.light], say)
    _pip(str(py), ["--no-deps", *req.nodeps], say)
    if req.extras:
        say(f"installing {' '.join(req.extras)} --no-deps (the multimodal model files' optional imports)")
        _pip(str(py), ["--no-deps", *req.extras], say)
    problem = None if os.environ.get("DRYBOOT_SKIP_SMOKE") else smoke(str(py), release, req.extras)
    if problem is not None:
        raise InputError(str(venv), None, f"smoke test failed: {problem}")
    stamp.write_text(req.stamp() + "\n")
    return EnvInfo(str(py), False, round(time.perf_counter() - t0, 1), _size(venv))
