"""bitsandbytes and GGUF: refused by name for the budget (docs/weights.md), as docs/plan.md's exit
codes say: a ``.gguf`` file given as ``--model`` is bad input for dryboot (one line, exit 2); a
bitsandbytes checkpoint plans its geometry and ends ``verdict: undetermined`` (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from dryboot.cli import cli

QWEN3_8B = Path(__file__).resolve().parent / "data" / "configs" / "public" / "Qwen--Qwen3-8B" / "config.json"


def _plan(model: Path) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["plan", "--model", str(model), "--gpu", "RTX 4090", "--max-model-len", "8192"])
    return res.exit_code, res.output


def test_a_gguf_file_is_one_line_exit_2(tmp_path: Path) -> None:
    gguf = tmp_path / "Qwen3-8B-Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(64))  # the GGUF magic and version 3
    code, out = _plan(gguf)
    assert code == 2
    line = out.strip()
    assert "\n" not in line and "GGUF checkpoints are not modelled" in line and "Traceback" not in line


def test_bitsandbytes_is_refused_by_name_undetermined(tmp_path: Path) -> None:
    config = json.loads(QWEN3_8B.read_text())
    config["quantization_config"] = {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_compute_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out = _plan(tmp_path)
    assert code == 3, out[-600:]
    assert "verdict: undetermined (exit 3)" in out and "bitsandbytes layouts are not modelled" in " ".join(out.split())
