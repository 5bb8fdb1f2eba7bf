"""UnlimitedOCR (``unlimited_ocr.py``): DeepSeek-OCR's wrapper whose attention layers are
``RSWAAttention``, planned as one ``RSWA`` group sized as full attention, on the backend its
config hook picks per GPU, prefix caching off. The figures themselves are checked against vLLM's
engine start in ``tests/fidelity`` (``test_architectures``, ``test_gpus``,
``test_release_architectures``); here, the hook's choices and refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.cli import cli

ARCHS = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
ARCH = "UnlimitedOCRForCausalLM"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("unlimited-ocr")
    shutil.copy(ARCHS / f"{ARCH}.json", d / "config.json")
    for f in (ARCHS / "files" / ARCH).iterdir():
        shutil.copy(f, d / f.name)
    return str(d)


def plan(model: str, *flags: str) -> tuple[int, dict[str, Any] | str]:
    argv = ["plan", "--model", model, "--max-model-len", "4096", "--kv-cache-memory-bytes", "1G", *flags]
    res = CliRunner().invoke(cli, [*argv, "--json"])
    if res.exit_code != 0:
        return res.exit_code, res.output
    doc: dict[str, Any] = json.loads(res.output)
    return 0, doc


@pytest.mark.parametrize(
    ("gpu", "backend"),
    [("H100", "FLASH_ATTN"), ("H200", "FLASH_ATTN"), ("B200", "FLASH_ATTN"), ("A100-80GB", "TRITON_ATTN")],
)
def test_the_config_hook_picks_fa4_where_it_runs_else_triton(model: str, gpu: str, backend: str) -> None:
    rc, doc = plan(model, "--gpu", gpu)
    assert rc == 0 and isinstance(doc, dict)
    assert doc["attention_backend"] == backend
    # one RSWA group of both layers, sized as full attention: 16 tokens x 4 KV heads x 128 B x 2
    groups = [
        (g["kind"], g["block_size"], g["page_size_bytes"], len(g["layer_names"])) for g in doc["grouping"]["groups"]
    ]
    assert groups == [("rswa", 16, 16384, 2)]
    assert doc["capacity"]["num_blocks"] == 32768


def test_without_gpu_the_default_gpu_decides(model: str) -> None:
    rc, doc = plan(model)
    assert rc == 0 and isinstance(doc, dict)
    assert doc["attention_backend"] == "FLASH_ATTN"


def test_prefix_caching_is_turned_off(model: str) -> None:
    rc, doc = plan(model, "--gpu", "A100-80GB", "--enable-prefix-caching")
    assert rc == 0 and isinstance(doc, dict)
    assert any("prefix caching disabled" in n for n in doc["notes"])


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        # vLLM's RuntimeError: the R-SWA mask needs FlashAttention 4
        (("--gpu", "A100-80GB", "--attention-backend", "FLASH_ATTN"), "requires FA4"),
        (("--gpu", "H100", "--attention-backend", "FLEX_ATTENTION"), "not modelled"),
        # FlashAttention 4 forced on SM 9.0 stores no fp8 (vLLM: "FP8 KV cache requires FA3 on SM90")
        (("--gpu", "H100", "--kv-cache-dtype", "fp8"), "FP8 KV cache requires FA3 on SM90"),
        # Triton below SM 8.9 stores no fp8
        (("--gpu", "A100-80GB", "--kv-cache-dtype", "fp8"), "requires SM89+"),
    ],
)
def test_refusals_name_the_reason(model: str, flags: tuple[str, ...], words: str) -> None:
    rc, out = plan(model, *flags)
    assert rc == 2 and isinstance(out, str)
    assert words in out and "Traceback" not in out
