"""DeepSeek-V4.1 on SM 10.x (``vllm/models/deepseek_v41/attention.py``, ``nvidia/model.py``): the
MXFP8 record, FlashMLA's mega attention's topology rule and the named backends
(``_select_dsv4_attn_cls``). The served cases are checked against
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


def _plan(tmp_path: Path, heads: int, groups: int, release: str, *flags: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    cfg = json.loads(TINY.read_text())
    text = cfg.get("text_config", cfg)
    text["num_attention_heads"], text["o_groups"] = heads, groups
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    argv = ["plan", "--model", str(tmp_path), "--gpu", "B200", "--vllm-version", release]
    res = CliRunner().invoke(cli, [*argv, *flags, "--kv-cache-memory-bytes", "1000000000", "--json"])
    return res.exit_code, res.output


@pytest.mark.parametrize("release", ["0.31.0", "0.33.0"])
def test_mega_attention_is_refused_by_name(tmp_path: Path, release: str) -> None:
    code, out = _plan(tmp_path, 32, 4, release)
    assert code == 2 and "mega attention" in out, out


def test_no_mega_attention_on_0_30(tmp_path: Path) -> None:
    code, out = _plan(tmp_path, 32, 4, "0.30.0")
    assert code != 2 and json.loads(out)["block_size"] == 128, out


def test_named_flashmla_takes_no_mega_attention(tmp_path: Path) -> None:
    """FlashMLA named: its layers, whatever the topology mega attention would take by default."""
    code, out = _plan(tmp_path, 32, 4, "0.33.0", "--attention-backend", "FLASHMLA_SPARSE_DSV41")
    assert code != 2 and json.loads(out)["block_size"] == 128, out
    code, out = _plan(tmp_path, 32, 4, "0.33.0", "--attention-backend", "FLASH_ATTN")  # passed over: the default
    assert code == 2 and "mega attention" in out, out


@pytest.mark.parametrize(
    ("heads", "groups", "release", "flag", "words"),
    [
        (16, 4, "0.33.0", "FLASHINFER_MLA_SPARSE", "is not a DeepSeek V4.1 attention backend"),
        (16, 4, "0.33.0", "FLASHMLA_MEGA_ATTN_DSV41", "mega attention needs 8 heads per wo_a group"),
        (12, 3, "0.33.0", "FLASHMLA_MEGA_ATTN_DSV41", "mega attention needs the local head count (12)"),
        (32, 4, "0.33.0", "FLASHMLA_MEGA_ATTN_DSV41", "is not modelled"),
        (16, 4, "0.30.0", "FLASHMLA_MEGA_ATTN_DSV41", "Unknown attention backend"),
        (16, 4, "0.33.0", "ROCM_FLASHMLA_SPARSE_DSV41", "another platform's backend"),
    ],
)
def test_named_backend_refusals(tmp_path: Path, heads: int, groups: int, release: str, flag: str, words: str) -> None:
    code, out = _plan(tmp_path, heads, groups, release, "--attention-backend", flag)
    assert code == 2 and words in out, out


def test_named_flashinfer_stores_the_plain_row(tmp_path: Path) -> None:
    """FlashInfer's DeepSeek-V4 layers named on SM 10.x: 1,024-byte bfloat16 rows (recorded: ``b200-fi-dsv41``)."""
    code, out = _plan(tmp_path, 16, 4, "0.33.0", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV41")
    assert code != 2 and json.loads(out)["kv_cache_dtype"] == "auto", out
    code, out = _plan(
        tmp_path, 16, 4, "0.33.0", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV41", "--kv-cache-dtype", "fp8"
    )
    assert code == 2 and "plain bfloat16 row" in out, out
