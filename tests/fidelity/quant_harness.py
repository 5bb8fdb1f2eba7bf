"""What the quantized-weights fidelity tests share: vLLM's recorded files, a recorded case put to
dryboot's ``model_weights``, ``plan --gpu`` on a checkpoint, and the opt-in live check.

Every set of cases (``quant-recorded-<version>*.json`` with ``data/weights/quant-configs/``, and
the ``extra``, ``modelopt`` and ``moe`` sets of ``quant_cases_<set>.py``) is recorded by
``record_quant_weights.py`` in a boot environment; each row holds the case's ``config`` (a folder
of its set's configs), ``argv`` (vLLM's flags, ``--tensor-parallel-size`` among them),
``capability``, ``sm_count``, ``ok`` and vLLM's ``allocated_bytes`` or ``error``. The test
modules keep their own cases and assertions; this module reads and runs, it asserts nothing of
dryboot's answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from dryboot.cli import cli
from dryboot.vllm.model_executor.model_loader.loader import model_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
#: the prefixes of the recorded files of the sets after the first
OTHER_SETS = (
    "quant-recorded-extra-",
    "quant-recorded-modelopt-",
    "quant-recorded-moe-",
    "quant-recorded-humming-",
    "quant-recorded-humfp8-",
    "quant-recorded-mxfp8-",
    "quant-recorded-dsv4-",
    "quant-recorded-fp8-",
    "quant-recorded-kvfp8-",
    "quant-recorded-fp8gdn-",
    "quant-recorded-llama4-",
    "quant-recorded-gemma4-",
    "quant-recorded-qwen4exp-",
    "quant-recorded-kimik3-",
    "quant-recorded-nemlatent-",
    "quant-recorded-nvfp4moe-",
    "quant-recorded-ficounter-",
    "quant-recorded-ficounterfam-",
    "quant-recorded-qwen3vl-",
    "quant-recorded-mlaws-",
    "quant-recorded-mlapf-",
    "quant-recorded-fp8rest-",
    "quant-recorded-sparsemla-",
    "quant-recorded-fp8ignore-",
    "quant-recorded-mm3hum-",
    "quant-recorded-nvfp4smla-",
    "quant-recorded-gptqempty-",
    "quant-recorded-bw33-",
    "quant-recorded-ossbf16-",
    "quant-recorded-sinksfam-",
    "quant-recorded-trtllm-",
    "quant-recorded-ctnvfp4a16-",
    "quant-recorded-remotefam-",
)


def load_recorded(prefix: str = "quant-recorded-") -> dict[str, dict[str, Any]]:
    """Release (each file's ``vllm``) -> case id -> vLLM's row, over every recorded file of the set
    whose names start with ``prefix`` (the first set's ``quant-recorded-``, several files a
    release: the other sets' files left out; else one file a release)."""
    recorded: dict[str, dict[str, Any]] = {}
    for p in sorted(DATA.glob(f"{prefix}*.json")):
        if prefix == "quant-recorded-" and p.stem.startswith(OTHER_SETS):
            continue
        doc = json.loads(p.read_text())
        recorded.setdefault(doc["vllm"], {}).update(doc["cases"])
    return recorded


def case_ids(recorded: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """``(release, case id)`` of every recorded case: the parameters of a case-by-case test."""
    return [(v, cid) for v, cases in recorded.items() for cid in cases]


def tp_of(row: dict[str, Any]) -> int:
    """The row's ``--tensor-parallel-size``."""
    argv = row["argv"]
    return int(argv[argv.index("--tensor-parallel-size") + 1])


def dryboot_weights(configs: Path, row: dict[str, Any], version: str, **flags: Any) -> Any:
    """dryboot's ``model_weights`` report for a recorded row (its config under ``configs``, its
    TP, GPU capability and SM count, and the scheduler's ``max_num_batched_tokens`` where the
    row records it, and ``flashinfer-cubin`` where the row says whether it was installed) on release
    ``version``; ``flags``: more of ``model_weights``' arguments (a set's recorded
    ``--attention-backend``, ``--kv-cache-dtype``)."""
    return model_weights(
        configs / row["config"],
        tp=tp_of(row),
        compute_capability=tuple(row["capability"]),
        sm_count=row["sm_count"],
        vllm_version=version,
        max_num_batched_tokens=row.get("max_num_batched_tokens"),
        flashinfer_cubin=row.get("flashinfer_cubin", True),
        **flags,
    )


def no_token_count(version: str, row: dict[str, Any]) -> bool:
    """A 0.33.0 row on SM 10.0+ recorded without the scheduler's ``max_num_batched_tokens``, by the
    recorder before it dropped FlashInfer's shared multi-CTA KV counter before each case (the
    counter is in a process's first such case only). Where vLLM builds FlashInfer attention (SM
    10.x; SM 12.x for a ModelOpt fp8 KV cache) dryboot needs the count, which sizes the counter,
    and refuses by name without it; elsewhere its figure is the row's. The ``bw33`` set
    (``quant_cases_bw33.py``) re-records these checkpoints with the count, each case fresh."""
    return version == "0.33.0" and row["capability"][0] >= 10 and row.get("max_num_batched_tokens") is None


#: dryboot's refusal where the counter is built and ``max_num_batched_tokens`` is not given
NO_TOKEN_COUNT = "give max_num_batched_tokens"


def recorded_without_humming(row: dict[str, Any]) -> bool:
    """A compressed-tensors fp8 row below SM 8.9 recorded in a boot environment without humming-kernels:
    every release 0.27.1-0.33.0 lists Humming's W8A16 fp8 kernel ahead of Marlin's and every CUDA wheel
    requires the package, so the row holds Marlin's figure (0.28.0+: ``MarlinFP8ScaledMMLinearKernel``)
    or the import error (0.27.1, whose Humming kernel does not check for the package), which a CUDA
    install does not take. dryboot answers Humming's layout there (``test_quant_humfp8.py``: recorded with
    the package each release pins)."""
    if row.get("humming") or tuple(row["capability"]) >= (8, 9):
        return False
    kernels = row.get("kernels") or {}
    compressed = any(k.startswith("CompressedTensors") for k in kernels) or "+CT-" in row["config"]
    marlin = "MarlinFP8ScaledMMLinearKernel" in kernels
    return compressed and (marlin or "No module named 'humming'" in str(row.get("error")))


def assert_weights(report: Any, row: dict[str, Any], why: str | None) -> None:
    """dryboot's ``report`` against vLLM's recorded ``row``: where vLLM (or the oracle) failed,
    dryboot refuses (naming ``why`` when given); where ``why`` names a refusal, dryboot's names it;
    a compressed-tensors fp8 row below SM 8.9 recorded without humming-kernels
    (:func:`recorded_without_humming`) holds no figure a CUDA install takes (only ``why`` is checked);
    else it answers, byte-exact with vLLM's ``allocated_bytes`` on the first stage."""
    if recorded_without_humming(row):
        assert why is None or why in (report.refused or ""), report.refused
        return
    if not row["ok"]:
        assert report.refused, f"vLLM or the oracle fails ({str(row.get('error'))[:200]}); dryboot answered"
        if why is not None:
            assert why in report.refused, report.refused
        return
    if why is not None:
        assert why in (report.refused or ""), report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], (row, report.stages[0].allocated_bytes)


def plan_output(model: Path, gpu: str, *extra: str, max_model_len: str = "8192") -> tuple[int, str]:
    """``dryboot plan --model MODEL --gpu GPU --max-model-len N EXTRA...``: exit code and output."""
    argv = ["plan", "--model", str(model), "--gpu", gpu, "--max-model-len", max_model_len, *extra]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, res.output


def record_live(tmp_path: Path, names: list[str], **record_env: str) -> dict[str, Any]:
    """Re-record the configs ``names`` with ``record_quant_weights.py`` under
    ``DRYBOOT_VLLM_PYTHON`` (``record_env``: its ``RECORD_*`` variables) and return the document
    it writes (``{"vllm", "cases"}``)."""
    out = tmp_path / "live.json"
    subprocess.run(
        [os.environ["DRYBOOT_VLLM_PYTHON"], str(HERE / "record_quant_weights.py"), *names],
        check=True,
        env={**os.environ, **record_env, "RECORD_OUT": str(out)},
        stdout=subprocess.DEVNULL,
        stderr=sys.stderr,
        timeout=1800,
    )
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def check_live_wna16(tmp_path: Path, name: str, record_set: str, configs: Path) -> None:
    """Re-record ``name`` of ``record_set`` (RTX 3090, TP 2, fast) with the boot environment's vLLM
    and check dryboot against it: byte-exact, or refused by name where the release's layouts are
    not checked ("... only")."""
    doc = record_live(tmp_path, [name], RECORD_SET=record_set, RECORD_GPUS="RTX 3090", RECORD_TPS="2", RECORD_FAST="1")
    for row in doc["cases"].values():
        report = dryboot_weights(configs, row, doc["vllm"])
        if report.refused:
            assert "only" in report.refused, report.refused
            continue
        assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]
