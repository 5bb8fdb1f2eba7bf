"""DeepSeek-V4.1 on SM 10.x (``vllm/models/deepseek_v41/attention.py``, ``nvidia/model.py``): the
MXFP8 record and FlashMLA's mega attention's topology rule. The served cases are checked against
vLLM's engine start in ``tests/fidelity/test_deepseek_v41.py`` (``b200``, ``b200-tp2``,
``b200-c2x2``, ``b300`` on 0.30.0-0.33.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dryboot.vllm.models.deepseek_v4 import v41_mega_topology, v41_record

TINY = Path(__file__).parent / "fidelity" / "data" / "architectures" / "DeepseekV41ForCausalLM.json"


def test_record_by_generation() -> None:
    assert v41_record((10, 0)) == (528, 512)
    assert v41_record((10, 3)) == (528, 512)
    assert v41_record((9, 0)) == (584, 576)
    assert v41_record((12, 0)) == (584, 576)


@pytest.mark.parametrize(
    ("heads", "groups", "tp", "takes"),
    [
        (16, 4, 1, False),  # 4 heads a group
        (32, 4, 1, True),
        (32, 4, 2, True),
        (32, 4, 8, False),  # no local group... 4 % 8
        (64, 8, 16, False),  # 4 local heads
        (24, 3, 2, False),  # 3 groups over 2 ranks
    ],
)
def test_mega_topology(heads: int, groups: int, tp: int, takes: bool) -> None:
    assert v41_mega_topology(heads, groups, tp) is takes


def _plan(tmp_path: Path, heads: int, groups: int, release: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    cfg = json.loads(TINY.read_text())
    text = cfg.get("text_config", cfg)
    text["num_attention_heads"], text["o_groups"] = heads, groups
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    argv = ["plan", "--model", str(tmp_path), "--gpu", "B200", "--vllm-version", release]
    res = CliRunner().invoke(cli, [*argv, "--kv-cache-memory-bytes", "1000000000", "--json"])
    return res.exit_code, res.output


@pytest.mark.parametrize("release", ["0.31.0", "0.33.0"])
def test_mega_attention_is_refused_by_name(tmp_path: Path, release: str) -> None:
    code, out = _plan(tmp_path, 32, 4, release)
    assert code == 2 and "mega attention" in out, out


def test_no_mega_attention_on_0_30(tmp_path: Path) -> None:
    code, out = _plan(tmp_path, 32, 4, "0.30.0")
    assert code != 2 and json.loads(out)["block_size"] == 128, out
