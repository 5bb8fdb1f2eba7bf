"""One child interpreter running a vLLM tree's own engine start (``engine_start.py``).

A :class:`BootSession` starts the boot environment's python on ``engine_start.py`` with the
tree first on ``sys.path``, waits for vLLM to import (seconds: the cost of a boot), checks that
the ``vllm`` that imported is the tree's own, then answers any number of engine starts (one
JSON line each) from that one process. Several launcher profiles of one arm reuse it.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.gpus import parse_gpu as table_gpu
from dryboot.vllm.versions import rules_for

#: The child script, run by path inside the boot environment (it never imports dryboot).
ENGINE_START = Path(__file__).resolve().parent / "engine_start.py"

#: Seconds allowed for vLLM's import in the child, and for one engine start.
IMPORT_TIMEOUT = 300.0
CASE_TIMEOUT = 300.0

#: What the child fakes, as the report and ``--help`` list it.
FAKED = (
    "GPU: a stand-in CUDA platform (vLLM's own NonNvmlCudaPlatform) answering the --gpu name, "
    "compute capability, total memory and SM count; the current device is the meta device",
    "kernels: vLLM's compiled extensions are empty modules and every torch.ops kernel a placeholder "
    "that raises if called (none is called); CUTLASS capability probes answer as an SM90 build",
    "weights: none read; the model class is built by vLLM's initialize_model on the meta device "
    "(process_weights_after_loading is not run)",
    "workers: no process group, no GPUModelRunner object; the worker/engine-core steps that decide "
    "the KV cache run in their order in one process, with parallel groups of the configured sizes",
    "memory: no profile run; the KV budget is --kv-cache-memory-bytes exactly, or without it the requested "
    "memory less the tree's own weights per rank (parameters and buffers on the meta device) and dryboot's "
    "estimate of the other terms (activation, CUDA-graph estimate, non-torch)",
    "Triton counts as installed; torchvision's two op schemas are declared (CPU torch)",
)


@dataclass(frozen=True)
class GPU:
    """The GPU the child's platform answers as.

    :param capability: (major, minor) CUDA compute capability.
    :param total_memory: bytes.
    """

    name: str
    capability: tuple[int, int]
    total_memory: int
    sm_count: int

    def as_json(self) -> str:
        return json.dumps(asdict(self))


#: dryboot's default GPU, faked with its table row's CUDA total (143156 MiB, torch's
#: ``total_memory=143156MB`` on an H200: ``tests/data/gpus/SOURCES.md`` h200-torch).
H200 = GPU("NVIDIA H200", (9, 0), table_gpu("H200").cuda_total_bytes, 132)


def parse_gpu(text: str | None, source: str = "--gpu") -> GPU:
    """``--gpu``: ``H200`` (the default), a name of dryboot's GPU table (``RTX 3090``,
    ``a100-80gb``, ``B200``...: :func:`dryboot.vllm.gpus.parse_gpu`), faked with the table's
    device name, capability and CUDA total, or ``smXY:SIZE`` (capability X.Y, SIZE as
    :func:`dryboot.vllm.gpus.parse_memory_size`; name ``NVIDIA smXY``). 132 SMs are faked
    for every GPU (the SM count changes no KV figure).

    :raises InputError: a name the table does not know (the known ones listed), or an
        ``smXY:SIZE`` that is malformed or out of bounds.
    """
    if text is None or text.strip().upper() in ("H200", "NVIDIA H200"):
        return H200
    row = table_gpu(text, source)
    if ":" in row.name:  # the smXY:SIZE form (no table name holds a colon)
        major, minor = row.capability
        return GPU(f"NVIDIA sm{major}{minor}", row.capability, row.cuda_total_bytes, 132)
    return GPU(row.device_name, row.capability, row.cuda_total_bytes, 132)


@dataclass(frozen=True)
class Tree:
    """A vLLM tree: ``path`` as the user gave it, ``import_root`` the directory put first on
    the child's ``sys.path`` (it holds ``vllm/``), ``version`` from ``vllm/_version.py``
    (``None`` when the tree has none, as a source checkout before its build)."""

    path: str
    import_root: str
    version: str | None


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.MULTILINE)


def resolve_tree(path: str, source: str = "--vllm") -> Tree:
    """The tree at ``path``: a directory holding ``vllm/__init__.py`` (a source checkout, a
    ``site-packages``, a scratch tree) or the ``vllm`` package directory itself.

    :raises InputError: no such directory, or no ``vllm`` package in it.
    """
    p = Path(path)
    if not p.is_dir():
        raise InputError(source, path, "no such directory")
    if (p / "vllm" / "__init__.py").is_file():
        root = p
    elif p.name == "vllm" and (p / "__init__.py").is_file():
        root = p.parent
    else:
        raise InputError(source, path, "holds no vllm package (expected vllm/__init__.py in it, or the vllm directory)")
    version = None
    vfile = root / "vllm" / "_version.py"
    if vfile.is_file():
        m = _VERSION_LINE.search(vfile.read_text(encoding="utf-8", errors="replace"))
        version = m.group(1) if m else None
    return Tree(path, str(root.resolve()), version)


def release_of(version: str, source: str) -> str:
    """``version`` as the release dryboot models (``0.28.0``; local/dev suffixes dropped).

    :raises InputError: a release outside 0.27.1-0.33.0.
    """
    release = re.split(r"[+]|\.dev|rc", version)[0]
    try:
        key = tuple(int(x) for x in release.split(".")[:3])
    except ValueError:
        raise InputError(source, version, "not a vLLM release number") from None
    if not (0, 27, 1) <= key < (0, 34, 0):
        raise InputError(source, version, "dryboot boot runs vLLM 0.27.1 to 0.33.x (its engine-start steps)")
    rules_for(release, source)
    return release


#: What only a missing CUDA runtime (or a called kernel placeholder) raises; vLLM's own refusals
#: ("No valid attention backend found for cuda ...") are answers, not limits.
_NEEDS_CUDA = re.compile(
    r"Torch not compiled with CUDA|Found no NVIDIA driver|libcuda|NVML|CUDA driver|no CUDA GPUs|"
    r"kernel \S+ is absent \(CPU oracle\)|Cannot re-initialize CUDA"
)


def limitation(answer: dict[str, Any]) -> str | None:
    """What the boot cannot do for this engine start (the answer is then not vLLM's), or
    ``None``: a model class that needs CUDA (or calls a kernel) at construction, a process that
    died or hung."""
    if answer.get("ok"):
        return None
    stage, error = answer.get("stage"), str(answer.get("error"))
    if stage == "crash":
        return f"the boot process failed: {error}"
    if stage == "model" and _NEEDS_CUDA.search(error):
        return f"the model class needs CUDA at construction, which the boot does not fake ({error[:300]})"
    return None


def _read(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


class BootSession:
    """One child interpreter serving engine starts of one tree (a context manager).

    :raises InputError: the environment's python is missing, the tree does not import (the
        error vLLM raised, with its file and line), the ``vllm`` that imported is not the
        tree's, or the tree's release is outside 0.27.1-0.33.0.
    """

    def __init__(self, python: str, tree: Tree, gpu: GPU = H200) -> None:
        if tree.version is not None:
            release_of(tree.version, f"{tree.path}: vllm/_version.py")
        if not Path(python).is_file():
            raise InputError("--python", python, "no such interpreter (build one: dryboot boot-env --vllm-version X)")
        self.tree = tree
        self.gpu = gpu
        self.python = python
        t0 = time.perf_counter()
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # the tree, and nothing else, comes before the environment
        # what the child prints (vLLM's warnings); its last line names a crash before the import
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in close())
        self._proc = subprocess.Popen(
            [python, str(ENGINE_START), "--tree", tree.import_root, "--gpu", gpu.as_json()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_read, args=(self._proc, self._lines), daemon=True).start()
        self.cases = 0
        try:
            ready = self._meta(IMPORT_TIMEOUT)
        except BaseException:
            self.close()
            raise
        self.import_seconds = round(time.perf_counter() - t0, 3)
        self.vllm_version = str(ready["vllm_version"])
        vllm_file = str(ready.get("vllm_file") or "")
        if not Path(vllm_file).resolve().is_relative_to(Path(tree.import_root)):
            self.close()
            raise InputError(tree.path, None, f"the vllm that imported is not this tree's ({vllm_file})")
        try:
            self.release = release_of(self.vllm_version, f"{tree.path}: vllm.__version__")
        except InputError:
            self.close()
            raise

    def _meta(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise InputError(self.tree.path, None, f"vLLM did not import within {timeout:.0f} s") from None
        if line is None:
            code = self._proc.wait()
            self._stderr.seek(0)
            last = [ln.strip() for ln in self._stderr.read().splitlines() if ln.strip()][-1:]
            said = f": {last[0][:300]}" if last else ""
            raise InputError(self.tree.path, None, f"the boot environment exited ({code}) before vLLM imported{said}")
        doc = json.loads(line)
        meta: dict[str, Any] = doc.get("meta") or {}
        if meta.get("stage") == "import":
            raise InputError(self.tree.path, None, f"the tree does not import: {meta.get('error')}")
        if meta.get("stage") != "ready":
            raise InputError(self.tree.path, None, f"unexpected first line from the boot environment: {line[:200]}")
        return meta

    def boot(
        self,
        model: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        budget: dict[str, Any] | None = None,
        gpu: GPU | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One engine start of ``model`` (a directory holding config.json) under vLLM ``argv``;
        without ``--kv-cache-memory-bytes``, ``budget`` (:meth:`dryboot.boot.budget.BootBudget.case`)
        gives the KV budget's terms other than the tree's weights. ``gpu``: this engine start's
        faked GPU (``None``: the session's); the child clears vLLM's per-process caches before
        each start, so one session serves several GPUs. ``timeout``: seconds (default
        :data:`CASE_TIMEOUT`) before the start counts as hung.

        :returns: the child's answer (see ``engine_start.py``): ``ok``, ``stage``, ``error``,
            ``block_size``, ``groups``, ``num_blocks``, ``tokens``, ``concurrency``,
            ``max_model_len``, ``kv_log``, ``seconds``. A crash or timeout is an answer with
            ``stage`` ``"crash"`` (the session is then closed).
        """
        self.cases += 1
        case: dict[str, Any] = {"id": f"boot-{self.cases}", "model": model, "argv": list(argv)}
        if env:
            case["env"] = env
        if budget:
            case["budget"] = budget
        if gpu is not None and gpu != self.gpu:
            case["gpu"] = asdict(gpu)
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(case) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return {"id": case["id"], "ok": False, "stage": "crash", "error": "the boot process has exited"}
        try:
            line = self._lines.get(timeout=CASE_TIMEOUT if timeout is None else timeout)
        except queue.Empty:
            line = None
        if line is None:
            self.close()
            return {"id": case["id"], "ok": False, "stage": "crash", "error": "the boot process died or hung"}
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        """End the child (closing its stdin ends it; killed if it lingers)."""
        if self._proc.poll() is None:
            try:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()

    def __enter__(self) -> BootSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
