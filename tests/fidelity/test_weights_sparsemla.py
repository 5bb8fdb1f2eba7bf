"""dryboot's sparse-MLA fp8 weights (DeepSeek Sparse Attention: an indexer per layer,
``index_topk``; ``quant_method: fp8`` ``[128, 128]`` blocks) on a named GPU against what vLLM holds
after ``process_weights_after_loading``.

vLLM's figures: ``data/weights/quant-recorded-sparsemla-<version>.json``, recorded by
``RECORD_SET=sparsemla record_quant_weights.py`` (each config in a process of its own) for the
published configs of ``quant_cases_sparsemla.py`` (DeepSeek-V3.2, GLM-5-FP8, GLM-5.1-FP8) on SM
8.9, 9.0 and 12.0 at TP 8. From 0.30.0 each layer that builds an indexer opens a
``SparseMLAIndexGroup`` whose top-k workspace (``[rows + 1, index_topk]`` int32 and more, rows =
min(max_num_batched_tokens, max_num_seqs x query length)) is allocated with the model: the
8,405,504 bytes a layer vLLM 0.30.0 held beyond the walk at 1,024 sequences. With an fp8 cache on
SM 9.x FLASHMLA_SPARSE reserves the worker's workspace while the model is built (rows recorded with
``RECORD_WORKSPACE=1``, marked ``workspace``). vLLM's SM 9.x sparse backend choice: the tiny stand-ins'
``--attention-backend`` / ``--kv-cache-dtype`` / ``--dtype`` rows (H100, TP 1, 0.27.1-0.33.0). Byte-exact
where dryboot answers; refused by name where vLLM fails (no sparse MLA backend on SM 8.9, none for
index_topk 256 on SM 12.0, a named backend that does not take the model, ``fp8_e4m3`` before 0.30.0).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_sparsemla as sm
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, plan_output, record_live

from dryboot.vllm.model_executor.model_loader.weights import index_groups, sparse_mla_index_group_bytes

RECORDED = load_recorded("quant-recorded-sparsemla-")
#: the recorder's ``--max-model-len`` (record_quant_weights.py; a row's ``RECORD_ARGV`` may give
#: another, which vLLM's parser takes last), which sizes FLASHMLA_SPARSE's prefill workspace
MAX_MODEL_LEN = 4096
CASES = case_ids(RECORDED)
#: the unquantized stand-ins (a float16 model, a 512 MLA head of kv_lora_rank 448)
UNQUANTIZED = ("tiny-DeepseekV32-BF16", "tiny-DeepseekV32-H512")
PUBLIC = Path(__file__).resolve().parents[1] / "data" / "configs" / "public"


def _weights(row: dict[str, Any], version: str) -> Any:
    """dryboot's report for a recorded row, at the row's recorded ``max_num_seqs`` and its
    ``--kv-cache-dtype`` / ``--max-model-len`` / ``--attention-backend`` / ``--dtype`` where the
    row's flags name one."""
    argv = row["argv"]

    def flag(name: str, default: Any) -> Any:
        return argv[argv.index(name) + 1] if name in argv else default

    if not row["ok"]:  # a failed row records no scheduler: vLLM's default for these cases, 8,192
        row = {**row, "max_num_batched_tokens": 8192, "max_num_seqs": 1024}
    return dryboot_weights(
        sm.CONFIGS,
        row,
        version,
        max_num_seqs=row.get("max_num_seqs"),
        kv_cache_dtype=flag("--kv-cache-dtype", "auto"),
        max_model_len=int(flag("--max-model-len", MAX_MODEL_LEN)),
        attention_backend=flag("--attention-backend", None),
        dtype=flag("--dtype", "auto"),
    )


def _refusal(row: dict[str, Any], version: str) -> str | None:
    """What dryboot must name where it does not give vLLM's figure (``None``: byte-exact)."""
    cap = tuple(row["capability"])
    if cap < (9, 0):
        return "no sparse MLA backend below SM 9.0"
    if cap[0] == 12 and row["config"].startswith("tiny"):  # index_topk 256: FLASHINFER_MLA_SPARSE_SM120 takes 2048
        return "requires index_topk=2048; got 256"
    error = str(row.get("error"))
    if cap[0] == 9 and not row["ok"] and ("backend" in error or "float32" in error):
        # a named backend that does not take the model, one unknown to the release, no backend at all
        return "Selected backend" if "--attention-backend" in row["argv"] else "vLLM refuses it"
    if version == "0.33.0" and cap >= (12, 0):
        return "are not recorded"  # 0.33.0's fp8 blocks on SM 12.x (the oracle fails: weights.FP8_BLOCK_SM12_RELEASES)
    if cap[0] == 10 and "FLASHMLA_SPARSE" in row["argv"]:
        return "take FLASHMLA_SPARSE"  # its own reservation from the worker's workspace on SM 10.x: not modelled
    return None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where vLLM loads the model; the named refusal where it fails. An unquantized
    stand-in (``tiny-DeepseekV32-BF16`` / ``-H512``) is checked as ``initialize_model`` builds it
    (``built_allocated_bytes``), dryboot's figure for unquantized layers (the post-load step moves
    each attention layer's two CPU scale scalars to the host: ``_post_load_host_blocks``)."""
    row = RECORDED[version][cid]
    if row["ok"] and row["config"] in UNQUANTIZED:
        row = {**row, "allocated_bytes": row["built_allocated_bytes"]}
    assert_weights(_weights(row, version), row, _refusal(row, version))


def test_vllm_fails_below_sm90() -> None:
    """vLLM's attention selector has no sparse MLA backend on SM 8.9 (every recorded release)."""
    for cases in RECORDED.values():
        for row in cases.values():
            if tuple(row["capability"]) < (9, 0):
                assert not row["ok"] and "No valid attention backend" in row["error"], row


def test_the_unexplained_gap_is_the_index_groups() -> None:
    """vLLM 0.30.0 held 8,405,504 bytes a layer more than the walk for DeepSeek-V3.2 (fp8 set, TP 2,
    H100, 1,024 sequences, 8,192 batched tokens): one index group per layer, [1025, 2048] + [1025]
    + [1024] int32 in 512-byte blocks; 0.31.0+ drop the [1024] request ids; none before 0.30.0."""
    assert sum(-(-n // 512) * 512 for n in sparse_mla_index_group_bytes(1024, 2048, "0.30.0")) == 8_405_504
    assert sparse_mla_index_group_bytes(1024, 2048, "0.33.0") == (4 * 1025 * 2048, 4 * 1025)
    assert sparse_mla_index_group_bytes(1024, 2048, "0.29.0") == ()


def test_flash_attn_sparse_layers_hold_their_cu_seqlens() -> None:
    """From vLLM 0.31.0 each sparse MLA layer FLASH_ATTN_MLA_SPARSE serves (SM 9.x, a 16-bit cache)
    holds an int32 ``[max_num_batched_tokens + 1]``: the 33,280 bytes a layer (in 512-byte blocks)
    the 0.31.0+ H100 records held beyond the walk at 8,192 batched tokens (found by naming the
    unheld storages' holder: ``FlashAttnMLASparseImpl.cu_seqlens_q_buffer``, 78 on GLM-5.2-FP8 at TP 8,
    one per layer, indexer or not); none on 0.30.0, SM 10.x / 12.x or under FLASHMLA_SPARSE; another
    backend on SM 9.x from 0.31.0 (a quantized cache) is refused by name."""
    import pytest as _pytest

    from dryboot.errors import InputError
    from dryboot.vllm.model_executor.model_loader.weights import Parallel, flash_attn_mla_sparse_cu_seqlens_bytes

    def nbytes(version: str, cap: tuple[int, int], **kw: Any) -> int:
        return flash_attn_mla_sparse_cu_seqlens_bytes(
            8192, Parallel(capability=cap, vllm_version=version, **kw), 576, 2
        )

    assert -(-nbytes("0.31.0", (9, 0)) // 512) * 512 == 33_280
    assert nbytes("0.33.0", (9, 0), kv_cache_dtype="bfloat16") == 4 * 8193
    assert nbytes("0.30.0", (9, 0)) == 0
    with _pytest.raises(InputError, match="No valid attention backend found"):
        nbytes("0.28.0", (9, 0), kv_cache_dtype="fp8_e4m3")
    assert nbytes("0.33.0", (12, 0)) == nbytes("0.33.0", (10, 0)) == 0
    assert nbytes("0.31.0", (9, 0), kv_cache_dtype="fp8") == 0  # FLASHMLA_SPARSE's: its workspace
    # FLASHINFER_MLA_SPARSE_SM90 (an fp8_e4m3 cache, or named) and a named FLASHMLA_SPARSE hold none
    assert nbytes("0.33.0", (9, 0), kv_cache_dtype="fp8_e4m3") == 0
    assert nbytes("0.33.0", (9, 0), attention_backend="FLASHINFER_MLA_SPARSE_SM90") == 0
    assert nbytes("0.33.0", (9, 0), attention_backend="FLASHMLA_SPARSE") == 0
    with _pytest.raises(InputError, match="--attention-backend FLASHMLA_SPARSE: its sparse MLA backend choice"):
        nbytes("0.34.0", (9, 0), attention_backend="FLASHMLA_SPARSE")  # a release not recorded


def test_sm90_sparse_backend_choice() -> None:
    """vLLM's SM 9.x sparse MLA choice (``platforms/cuda.py``; recorded on the tiny stand-in, H100,
    TP 1: the ``--attention-backend`` / ``fp8_e4m3`` rows): FLASH_ATTN_MLA_SPARSE for a 16-bit
    cache, FLASHMLA_SPARSE for ``fp8``, FLASHINFER_MLA_SPARSE_SM90 (0.30.0+) for ``fp8_e4m3``, which
    before 0.30.0 finds none; a named backend where it takes the model, else vLLM's refusal (an
    SM 10.x backend, a dense MLA one, one the release lacks)."""
    import pytest as _pytest

    from dryboot.errors import InputError
    from dryboot.vllm.model_executor.model_loader.weights import Parallel, sm90_sparse_mla_backend

    def pick(version: str, **kw: Any) -> str | None:
        return sm90_sparse_mla_backend(Parallel(capability=(9, 0), vllm_version=version, **kw), 576, 2)

    assert pick("0.33.0") == pick("0.28.0") == "FLASH_ATTN_MLA_SPARSE"
    assert pick("0.33.0", kv_cache_dtype="fp8") == "FLASHMLA_SPARSE"
    assert pick("0.33.0", kv_cache_dtype="fp8_e4m3") == pick("0.30.0", kv_cache_dtype="fp8_e4m3")
    assert pick("0.30.0", kv_cache_dtype="fp8_e4m3") == "FLASHINFER_MLA_SPARSE_SM90"
    assert pick("0.28.0", attention_backend="FLASHMLA_SPARSE") == "FLASHMLA_SPARSE"
    assert sm90_sparse_mla_backend(Parallel(capability=(10, 0)), 576, 2) is None
    for version, kw, why in (
        ("0.28.0", {"kv_cache_dtype": "fp8_e4m3"}, "No valid attention backend found"),
        ("0.28.0", {"attention_backend": "FLASHINFER_MLA_SPARSE_SM90"}, "has no FLASHINFER_MLA_SPARSE_SM90"),
        ("0.33.0", {"attention_backend": "FLASHINFER_MLA_SPARSE"}, "compute capability not supported"),
        ("0.33.0", {"attention_backend": "TRITON_MLA"}, "sparse not supported"),
        ("0.33.0", {"attention_backend": "FLASH_ATTN_MLA_SPARSE", "kv_cache_dtype": "fp8"}, "not fp8"),
        ("0.34.0", {"kv_cache_dtype": "fp8_e4m3"}, "recorded on vLLM"),
    ):
        with _pytest.raises(InputError, match=why):
            pick(version, **kw)
    with _pytest.raises(InputError, match="No valid attention backend found"):
        sm90_sparse_mla_backend(Parallel(capability=(9, 0), vllm_version="0.33.0"), 576, 4)
    # a 512 head: FLASHINFER_MLA_SPARSE_SM90 first from 0.30.0, which takes kv_lora_rank 512 only
    # (tiny-DeepseekV32-H512, 448 + 64: FLASH_ATTN_MLA_SPARSE; with fp8 none); a NoPE one not recorded
    h100 = Parallel(capability=(9, 0), vllm_version="0.33.0")
    assert sm90_sparse_mla_backend(h100, 512, 2, kv_lora_rank=448) == "FLASH_ATTN_MLA_SPARSE"
    with _pytest.raises(InputError, match="No valid attention backend found"):
        sm90_sparse_mla_backend(Parallel(capability=(9, 0), kv_cache_dtype="fp8"), 512, 2, kv_lora_rank=448)
    with _pytest.raises(InputError, match="512 NoPE MLA head"):
        sm90_sparse_mla_backend(h100, 512, 2, kv_lora_rank=512)


def test_named_backends_recorded() -> None:
    """The named-backend rows vLLM loaded (tiny stand-in, H100, TP 1, 8,192 batched tokens): on 0.33.0
    FLASHINFER_MLA_SPARSE_SM90 (named, or for ``fp8_e4m3``) holds the default's figure less the four
    layers' ``cu_seqlens_q`` (4 x 33,280 bytes); a named FLASHMLA_SPARSE with a bfloat16 cache
    reserves ``q_concat`` in the worker's workspace, ``[8192, 16, 576]`` bf16 on 0.28.0 and
    ``[8192, 64, 576]`` (heads padded to 64) on 0.33.0."""
    tiny = "tiny-DeepseekV32-FP8 H100 --tensor-parallel-size 1"
    v33, v28 = RECORDED["0.33.0"], RECORDED["0.28.0"]
    default = v33[f"{tiny} --attention-backend FLASH_ATTN_MLA_SPARSE"]["allocated_bytes"]
    for flags in ("--attention-backend FLASHINFER_MLA_SPARSE_SM90", "--kv-cache-dtype fp8_e4m3"):
        assert v33[f"{tiny} {flags}"]["allocated_bytes"] == default - 4 * 33_280
    sm90 = v33[f"{tiny} --attention-backend FLASHINFER_MLA_SPARSE_SM90"]["allocated_bytes"]
    assert v33[f"{tiny} --attention-backend FLASHMLA_SPARSE"]["allocated_bytes"] - sm90 == 2 * 8192 * 64 * 576
    base28 = v28[f"{tiny} --attention-backend FLASH_ATTN_MLA_SPARSE"]["allocated_bytes"]
    assert v28[f"{tiny} --attention-backend FLASHMLA_SPARSE"]["allocated_bytes"] - base28 == 2 * 8192 * 16 * 576


def test_b200_sparse_layers_keep_flash_attn_prefill() -> None:
    """The tiny stand-in on the B200 (TP 1, 16 heads, a bfloat16 cache; refused by name before: "which
    prefill backend a model of MLA, MLA_INDEXER layers builds is not modelled"): FLASHINFER_MLA_SPARSE,
    which reserves nothing while the model is built, and FLASH_ATTN's prefill for its (128, 64, 128)
    dims, so vLLM holds the H100's figure + CUTLASS MLA's 128 MiB on 0.28.0 (354,627,072 bytes built).
    FLASHMLA_SPARSE named reserves more from the worker's workspace (refused by name)."""
    tiny = "tiny-DeepseekV32-BF16 {gpu} --tensor-parallel-size 1"
    v28 = RECORDED["0.28.0"]
    b200 = v28[tiny.format(gpu="B200")]["built_allocated_bytes"]
    assert b200 == 354_627_072
    assert b200 - v28[tiny.format(gpu="H100")]["built_allocated_bytes"] == 128 * 1024 * 1024
    for version in ("0.28.0", "0.33.0"):
        row = RECORDED[version][tiny.format(gpu="B200")]
        assert _weights(row, version).stages[0].allocated_bytes == row["built_allocated_bytes"]
        named = RECORDED[version][tiny.format(gpu="B200") + " --attention-backend FLASHMLA_SPARSE"]
        assert named["ok"] and named["allocated_bytes"] > row["allocated_bytes"]
        assert "take FLASHMLA_SPARSE" in (_weights(named, version).refused or "")


def test_index_cache_opens_fewer_groups() -> None:
    """GLM-5.2's IndexCache (``index_skip_topk_offset`` 3, ``index_topk_freq`` 4): only the layers that
    build an indexer open a group (layers 0-2, then every fourth from 6: 21); GLM-5's (and GLM-5.1's:
    the same config) 78 layers open one each."""
    import json

    glm5 = json.loads((sm.CONFIGS / "zai-org--GLM-5-FP8" / "config.json").read_text())
    glm52 = json.loads((sm.CONFIGS / "zai-org--GLM-5.2-FP8" / "config.json").read_text())
    assert index_groups(glm5, range(78)) == 78
    assert index_groups(glm52, range(78)) == 3 + len(range(6, 78, 4))


@pytest.mark.parametrize("version", ["0.28.0", "0.30.0", "0.33.0"])
@pytest.mark.parametrize(
    "name",
    [
        "deepseek-ai--DeepSeek-V3.2",
        "zai-org--GLM-5-FP8",
        "zai-org--GLM-5.1-FP8",
        "zai-org--GLM-5.2-FP8",
        "zai-org--GLM-5.3-FP8",
    ],
)
def test_plan_gives_the_published_sparse_mla_checkpoints_weights(name: str, version: str) -> None:
    """``plan --gpu H200 --tensor-parallel-size 8`` on the published sparse-MLA fp8 checkpoints prints
    the weights after loading (where recorded: the H100 figure at TP 8, the same SM 9.0 layout and
    1,024 sequences; from 0.31.0 with each layer's FlashAttention sparse MLA ``cu_seqlens_q``
    buffer)."""
    _, out = plan_output(PUBLIC / name, "H200", "--tensor-parallel-size", "8", "--vllm-version", version)
    assert "Weights: not given" not in out and "Weights per rank" in out, out[-1500:]
    row = RECORDED.get(version, {}).get(f"{name} H100 --tensor-parallel-size 8")
    if row is not None and row["ok"]:
        assert f"{row['allocated_bytes']:,} bytes" in out, out[-1500:]


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs a boot environment (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record GLM-5.2-FP8 (IndexCache) on H100 at TP 8 with the boot environment's vLLM and check
    dryboot against it."""
    doc = record_live(
        tmp_path, ["zai-org--GLM-5.2-FP8"], RECORD_SET="sparsemla", RECORD_GPUS="H100", RECORD_TPS="8", RECORD_FAST="1"
    )
    for row in doc["cases"].values():
        assert_weights(_weights(row, doc["vllm"]), row, _refusal(row, doc["vllm"]))


def test_flashmla_sparse_reserves_the_worker_workspace() -> None:
    """With an fp8 cache on SM 9.x vLLM serves sparse MLA with FLASHMLA_SPARSE, whose layers reserve
    the worker's workspace while the model is built (one buffer, the largest request, parts in
    256-byte steps): the 174,587,904 bytes beyond the walk vLLM 0.30.0 held for the tiny stand-in
    (TP 1, 16 heads, 8,192 batched tokens, max_model_len 4,096: [8192, 16, 576] + [20480, 576]
    bf16); 0.31.0 adds the prefill buffers [8192, 64, 576], [8192, 64, 512], [8192, 16, 512]
    (1,449,656,320 in all); from 0.32.0 the prefill rows are 2 x max_model_len past 262,144."""
    from dryboot.vllm.model_executor.model_loader.weights import (
        Parallel,
        flashmla_sparse_serves,
        flashmla_sparse_workspace_bytes,
    )

    assert flashmla_sparse_workspace_bytes(8192, 4096, 16, 512, 64, "0.30.0") == 174_587_904
    assert flashmla_sparse_workspace_bytes(8192, 4096, 16, 512, 64, "0.28.0") == 174_587_904
    assert flashmla_sparse_workspace_bytes(8192, 4096, 16, 512, 64, "0.31.0") == 1_449_656_320
    # a named FLASHMLA_SPARSE with a bfloat16 cache: q_concat alone, its heads padded to 64 from 0.29.0
    assert flashmla_sparse_workspace_bytes(8192, 4096, 16, 512, 64, "0.28.0", quantized=False) == 150_994_944
    assert flashmla_sparse_workspace_bytes(8192, 4096, 16, 512, 64, "0.29.0", quantized=False) == 603_979_776
    long_ctx = 163_840 * 2
    assert (
        flashmla_sparse_workspace_bytes(8192, long_ctx, 16, 512, 64, "0.33.0")
        - flashmla_sparse_workspace_bytes(8192, long_ctx, 16, 512, 64, "0.31.0")
        == (2 - 5) * long_ctx * 576 * 2
    )
    h100 = Parallel(capability=(9, 0), kv_cache_dtype="fp8")
    assert flashmla_sparse_serves(h100, 576, 2)
    assert not flashmla_sparse_serves(h100, 512, 2)  # FLASHINFER_MLA_SPARSE_SM90 first
    assert not flashmla_sparse_serves(Parallel(capability=(9, 0), kv_cache_dtype="fp8_e4m3"), 576, 2)
    assert not flashmla_sparse_serves(Parallel(capability=(10, 0), kv_cache_dtype="fp8"), 576, 2)
    assert flashmla_sparse_serves(Parallel(capability=(9, 0), attention_backend="FLASHMLA_SPARSE"), 576, 2)
    assert not flashmla_sparse_serves(Parallel(capability=(9, 0)), 576, 2)  # FLASH_ATTN_MLA_SPARSE's


def test_sm120_takes_index_topk_2048_only() -> None:
    """On SM 12.x vLLM's only sparse MLA backend (FLASHINFER_MLA_SPARSE_SM120) takes index_topk 2,048
    only: the tiny stand-in (256) finds no backend ("No valid attention backend", recorded on RTX
    5090), so its weights are refused by name, not printed; the published configs (2,048) answer."""
    from dryboot.vllm.model_executor.model_loader.loader import model_weights

    def refused(name: str) -> str | None:
        return model_weights(
            sm.CONFIGS / name,
            tp=1 if name.startswith("tiny") else 8,
            compute_capability=(12, 0),
            sm_count=170,
            vllm_version="0.30.0",
            max_num_batched_tokens=8192,
            max_num_seqs=1024,
        ).refused

    assert "index_topk=2048; got 256" in (refused("tiny-DeepseekV32-FP8") or "")
    assert refused("zai-org--GLM-5.2-FP8") is None


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_plan_gives_the_fp8_cache_workspace(version: str) -> None:
    """``plan`` on DeepSeek-V3.2 with ``--kv-cache-dtype fp8`` on H200 at TP 8 (FLASHMLA_SPARSE) prints
    vLLM's recorded weights figure, the worker's workspace included (4,096 batched tokens and
    max_model_len 4,096, as recorded)."""
    row = RECORDED[version][
        "deepseek-ai--DeepSeek-V3.2 H200 --tensor-parallel-size 8 --kv-cache-dtype fp8 --max-num-batched-tokens 4096"
    ]
    argv = ["--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8", "--max-num-batched-tokens", "4096"]
    _, out = plan_output(
        PUBLIC / "deepseek-ai--DeepSeek-V3.2", "H200", *argv, "--vllm-version", version, max_model_len="4096"
    )
    assert f"{row['allocated_bytes']:,} bytes" in out, out[-1500:]
