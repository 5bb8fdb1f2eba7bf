"""dryboot's plain fp8 (``quant_method: fp8``, vLLM's ``Fp8Config``) weights on a named GPU against
what vLLM holds after ``process_weights_after_loading``.

vLLM's figures: ``data/weights/quant-recorded-fp8-<version>.json``, recorded by
``RECORD_SET=fp8 record_quant_weights.py`` (the model built by vLLM's loader on the meta device,
the post-load step run through the repack kernels' fake shapes, every storage still held counted
in 512-byte blocks; DeepGEMM present on SM 9.0 / 10.x as the CUDA wheel vendors it, its layout
functions answering DeepGEMM's layout as shapes: ``quant_fakes.deep_gemm_stand_in``) for the
configs of ``quant_cases_fp8.py``: the published Qwen3-32B-FP8 and Qwen3-30B-A3B-FP8 (``[128,
128]`` blocks) and two composed per-tensor Qwen3-8B configs, on the GPUs of that module at TP 1
and 2; the published MiniMax-M2.5 and DeepSeek-V3. Byte-exact where dryboot answers;
refused by name elsewhere.
GLM-4.5 under the same blocks is in ``test_quant_weights_moe.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import quant_cases_fp8 as fp8
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, plan_output, tp_of

from dryboot.vllm.model_executor.layers.quantization.scaled_mm import deep_gemm_ue8m0_scale_bytes
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-fp8-")
CASES = case_ids(RECORDED)
#: the published MLA checkpoints (deepseek_v2.py): dense MLA answered, sparse (an indexer) refused
DENSE_MLA = ("deepseek-ai--DeepSeek-V3", "moonshotai--Kimi-K2-Instruct")
SPARSE_MLA = ("deepseek-ai--DeepSeek-V3.2",)
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def _refusal(row: dict[str, Any], version: str) -> str | None:
    """What dryboot must name where it does not give vLLM's figure (``None``: byte-exact)."""
    cap = tuple(row["capability"])
    if row["config"] in DENSE_MLA + SPARSE_MLA and (10, 0) <= cap < (11, 0):
        return "cannot import vLLM's CUTLASS MLA backend"  # the oracle fails on B200 (every release)
    if row["config"] in SPARSE_MLA and cap < (9, 0):
        return "no sparse MLA backend below SM 9.0"  # vLLM's attention selector fails (recorded)
    if row["config"].startswith("MiniMaxAI--") and (10, 0) <= cap < (11, 0):
        return "in some runs and CUTLASS in others"  # the oracle's unstable linear-kernel choice on B200
    if "tensor" in row["config"]:
        # Marlin FP8 below SM 8.9 (0.27.1, 0.28.0, 0.31.0+; recorded with quant_fakes.meta_repeat_counts,
        # the oracle failed before; 0.29.0 / 0.30.0: CUTLASS's SM 8.9 layout, refused before); SM 10.x / 12.x
        # recorded on 0.29.0-0.33.0 (0.27.1 / 0.28.0's rows there: the oracle's failures; 0.33.0's
        # refused before: weights.FP8_TENSOR_BLACKWELL_RELEASES)
        unrecorded = cap >= (10, 0) and version in ("0.27.1", "0.28.0")
        return "one scale per tensor" if unrecorded else None
    if version == "0.33.0" and (10, 0) <= cap < (12, 0):
        return "are not recorded"  # 0.33.0's SM 10.x blocks (and its FlashInfer attention buffer)
    if version == "0.33.0" and cap >= (10, 0):
        return "not recorded"  # 0.33.0 on SM 12.x: the oracle fails (weights.FP8_BLOCK_SM12_RELEASES)
    return None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where vLLM's layout is modelled; the named refusal elsewhere."""
    row = RECORDED[version][cid]
    # a sparse MLA model's index groups (0.30.0+) are sized by max_num_seqs: the recorder's engine
    # took vLLM's default for an 80 GB GPU, 1,024 (recorded in the sparsemla set's rows)
    seqs = {"max_num_seqs": 1024} if row["config"] in SPARSE_MLA else {}
    report = dryboot_weights(fp8.CONFIGS, row, version, **seqs)
    why = _refusal(row, version)
    assert_weights(report, row, why)


def test_corpus_size() -> None:
    """Both published block checkpoints are answered and matched on SM 8.6 (RTX 3090: Marlin FP8
    experts, the dense block layers as loaded), SM 8.9 (RTX 4090) and SM 9.0 (H100: DeepGEMM
    present, as the CUDA wheel vendors it) at TP 1 and 2 on every release recorded, and on SM 12.0
    / 12.1 (RTX 5090, GB10) on every release but 0.33.0; both on SM 10.0 (B200: DeepGEMM's UE8M0
    scales, FlashInfer TRT-LLM's shuffled experts) likewise; both per-tensor configs on SM 8.9 and
    9.0 on every release, and on SM 10.0 / 12.x on 0.29.0 to 0.33.0; MiniMax-M2.5 at TP 1 on every GPU and release the
    block checkpoints are but B200; DeepSeek-V3 on SM 8.6 (Marlin FP8 experts), 8.9 and 9.0 at TP 1
    and 2 on every release (and TP 8 on SM 9.0 on 0.28.0 / 0.33.0), on SM 12.0 on every release but 0.33.0;
    Kimi-K2-Instruct on SM 9.0 at TP 2 on every release. vLLM's own classes served them
    (``Fp8LinearMethod`` on every decoder linear layer; DeepGEMM's kernel on Hopper and
    Blackwell; ``TrtLlmFp8ExpertsMonolithic`` on B200)."""
    assert set(RECORDED) == {"0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}
    for version, cases in RECORDED.items():
        exact = {
            (row["config"], row["gpu"], tp_of(row))
            for row in cases.values()
            if row["ok"] and _refusal(row, version) is None and not dryboot_weights(fp8.CONFIGS, row, version).refused
        }
        block = ("Qwen--Qwen3-32B-FP8", "Qwen--Qwen3-30B-A3B-FP8")
        want = {(c, g, t) for c in block for g in ("RTX 3090", "RTX 4090", "H100") for t in (1, 2)}
        if version != "0.33.0":  # SM 12.x too (0.33.0's FlashInfer attention buffer: refused there)
            want |= {(c, g, t) for c in block for g in ("RTX 5090", "GB10") for t in (1, 2)}
        if version != "0.33.0":  # B200: DeepGEMM's UE8M0 dense layers, FlashInfer TRT-LLM's experts
            want |= {(c, "B200", t) for c in block for t in (1, 2)}
        tensor = ("Qwen--Qwen3-8B+FP8-tensor-dynamic", "Qwen--Qwen3-8B+FP8-tensor-static")
        want |= {(c, g, t) for c in tensor for g in ("RTX 4090", "H100") for t in (1, 2)}
        if version != "0.33.0":  # per tensor on SM 8.6 (not recorded on 0.33.0; 0.29.0 / 0.30.0 refused before)
            want |= {(c, "RTX 3090", t) for c in tensor for t in (1, 2)}
        if version not in ("0.27.1", "0.28.0"):  # per tensor on SM 10.0 / 12.x
            want |= {(c, g, t) for c in tensor for g in ("B200", "RTX 5090", "GB10") for t in (1, 2)}
        # MiniMax-M2.5 at TP 1, and at TP 2 / 4 on SM 8.9 and 9.0 (the layout without P2P: no Lamport workspace)
        minimax = ("RTX 3090", "RTX 4090", "H100") + (("RTX 5090", "GB10") if version != "0.33.0" else ())
        want |= {("MiniMaxAI--MiniMax-M2.5", g, 1) for g in minimax}
        want |= {("MiniMaxAI--MiniMax-M2.5", g, t) for g in ("RTX 4090", "H100") for t in (2, 4)}
        # DeepSeek-V3's MLA with its dequantized kv_b_proj copies
        mla_gpus = ("RTX 3090", "RTX 4090", "H100") + (("RTX 5090",) if version != "0.33.0" else ())
        want |= {("deepseek-ai--DeepSeek-V3", g, t) for g in mla_gpus for t in (1, 2)}
        if version in ("0.28.0", "0.33.0"):
            want.add(("deepseek-ai--DeepSeek-V3", "H100", 8))
        want.add(("moonshotai--Kimi-K2-Instruct", "H100", 2))
        assert want <= exact, (version, want - exact)
    row = RECORDED["0.33.0"]["Qwen--Qwen3-32B-FP8 RTX 3090 --tensor-parallel-size 1"]
    assert row["kernels"]["Fp8LinearMethod"] == 64 * 4
    for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"):
        row = RECORDED[version]["Qwen--Qwen3-32B-FP8 B200 --tensor-parallel-size 2"]
        assert row["linear_kernels"] == {"DeepGemmFp8BlockScaledMMKernel": 64 * 4}
        row = RECORDED[version]["Qwen--Qwen3-30B-A3B-FP8 B200 --tensor-parallel-size 1"]
        assert row["linear_kernels"]["FusedMoEKernel/TrtLlmFp8ExpertsMonolithic"] == 48


def test_ue8m0_scales_cost_what_vllm_holds() -> None:
    """On SM 10.x DeepGEMM's per-row packed scales cost more than the loaded block scales: the B200
    and H100 rows of Qwen3-32B-FP8 at TP 2 differ by exactly the scale bytes dryboot derives
    (64 layers; qkv, o, gate_up, down per rank)."""

    def blocks(n: int) -> int:
        return -(-n // 512) * 512

    layers = ((5120, 5120), (5120, 4096), (25600, 5120), (5120, 12800))  # (n, k) per rank at TP 2
    loaded = sum(blocks(4 * -(-n // 128) * -(-k // 128)) for n, k in layers)
    packed = sum(blocks(deep_gemm_ue8m0_scale_bytes(n, k, (128, 128))) for n, k in layers)
    for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"):
        cases = RECORDED[version]
        b200 = cases["Qwen--Qwen3-32B-FP8 B200 --tensor-parallel-size 2"]["allocated_bytes"]
        h100 = cases["Qwen--Qwen3-32B-FP8 H100 --tensor-parallel-size 2"]["allocated_bytes"]
        assert b200 - h100 == 64 * (packed - loaded)


def test_other_families_and_releases_refused() -> None:
    """A family or release whose fp8 layout after loading is not recorded is refused by name:
    GLM-4.5's block layers on 0.29.0 / 0.31.0 / 0.32.0 (recorded on 0.30.0 and 0.33.0)."""
    glm = fp8.CONFIGS / "zai-org--GLM-4.5+FP8-block"
    for version in ("0.29.0", "0.31.0", "0.32.0"):
        report = model_weights(glm, tp=2, compute_capability=(9, 0), sm_count=132, vllm_version=version)
        assert report.refused and "fp8 weights after loading" in report.refused, version
    assert model_weights(glm, tp=2, compute_capability=(9, 0), sm_count=132, vllm_version="0.30.0").refused is None


@pytest.mark.parametrize(
    ("name", "capability", "version"),
    [
        ("deepseek-ai--DeepSeek-V3", (10, 0), "0.30.0"),
        ("deepseek-ai--DeepSeek-V3", (8, 0), "0.33.0"),
        ("deepseek-ai--DeepSeek-V3", (12, 1), "0.28.0"),
        ("moonshotai--Kimi-K2-Instruct", (10, 0), "0.27.1"),
    ],
)
def test_other_published_fp8_families_refused_on_a_gpu(name: str, capability: tuple[int, int], version: str) -> None:
    """Published fp8 checkpoints whose layout after loading is not recorded there are refused by
    name on a named GPU, not answered with the layout vLLM creates (MiniMax-M2's composed walk gave
    that before): DeepSeek-V3 / Kimi-K2 on a GPU not recorded (SM 8.0, 12.1) or where the oracle's
    engine start fails (SM 10.x), since its MLA dequantizes ``kv_b_proj`` per attention backend."""
    report = model_weights(fp8.CONFIGS / name, tp=2, compute_capability=capability, sm_count=128, vllm_version=version)
    assert report.refused and "fp8 weights after loading" in report.refused
    assert not model_weights(fp8.CONFIGS / name, tp=2).refused  # without a GPU: the layout vLLM creates


def test_minimax_at_tp_above_1_names_the_lamport_workspace() -> None:
    """MiniMax-M2.5 at TP 2 is the layout vLLM builds without P2P between the GPUs (recorded: the
    workspace's CUDA runtime bindings raise in the oracle, as where they find no driver); with P2P
    vLLM adds one Lamport workspace per rank, which the note sizes (three 512-byte blocks in torch's
    allocator, 6 MiB by cudaMalloc outside it)."""
    report = model_weights(fp8.CONFIGS / "MiniMaxAI--MiniMax-M2.5", tp=2, compute_capability=(9, 0), sm_count=132)
    assert not report.refused
    assert any("Lamport workspace adds 1,536 B here and 6 MiB by cudaMalloc" in n for n in report.stages[0].notes)
    one = model_weights(fp8.CONFIGS / "MiniMaxAI--MiniMax-M2.5", tp=1, compute_capability=(9, 0), sm_count=132)
    assert not any("Lamport" in n for n in one.stages[0].notes)


def test_deepseek_v3_keeps_dequantized_kv_b_proj_copies() -> None:
    """DeepSeek-V3 after loading (every release, RTX 4090 and H100) holds, per MLA layer, ``kv_b_proj``
    dequantized to bfloat16 (``W_UK_T`` / ``W_UV``: heads / TP x (128 + 128) x 512 x 2 bytes) on top
    of what vLLM builds, less the two blocks of the layer's CPU scale scalars (0.27.1: three more
    blocks a layer built and freed by the post-load step). The figure after loading is the same on
    every release and on both GPUs: the releases differ in how ``MLAAttention`` gets there
    (``weights.FP8_MLA_RELEASES``), not in what it keeps."""
    for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        for tp, heads in ((1, 128), (2, 64)):
            rows = [
                RECORDED[version][f"deepseek-ai--DeepSeek-V3 {g} --tensor-parallel-size {tp}"]
                for g in ("RTX 4090", "H100")
            ]
            freed = 3 * 512 if version == "0.27.1" else 0
            for row in rows:
                grown = row["allocated_bytes"] - row["built_allocated_bytes"]
                assert grown == 61 * (heads * 256 * 512 * 2 - 2 * 512 - freed), (version, row["gpu"], tp)
                assert (
                    row["allocated_bytes"]
                    == RECORDED["0.30.0"][f"deepseek-ai--DeepSeek-V3 H100 --tensor-parallel-size {tp}"][
                        "allocated_bytes"
                    ]
                )


def test_sparse_mla_gap_was_the_index_groups() -> None:
    """DeepSeek-V3.2's sparse MLA under fp8 at TP 2 on SM 9.0 (0.30.0): the 512,735,744 bytes vLLM held
    beyond the walk before index groups were modelled (8,405,504 a layer over its 61 layers) are
    the layers' ``SparseMLAIndexGroup`` workspaces: byte-exact now at vLLM's 1,024 sequences (0.27.1 to
    0.30.0; from 0.31.0 with each layer's FLASH_ATTN_MLA_SPARSE buffer, ``test_weights_sparsemla.py``);
    on SM 8.9 vLLM has no sparse MLA backend (the recorded error), refused by name."""
    rows = RECORDED["0.30.0"]
    h100 = rows["deepseek-ai--DeepSeek-V3.2 H100 --tensor-parallel-size 2"]
    assert h100["ok"] and h100["allocated_bytes"] == 339767632384
    assert "No valid attention backend" in rows["deepseek-ai--DeepSeek-V3.2 RTX 4090 --tensor-parallel-size 2"]["error"]
    for version in RELEASES:
        report = model_weights(
            fp8.CONFIGS / "deepseek-ai--DeepSeek-V3.2",
            tp=2,
            compute_capability=(9, 0),
            sm_count=132,
            vllm_version=version,
            max_num_batched_tokens=8192,
            max_num_seqs=1024,
        )
        assert not report.refused, (version, report.refused)
        if version in ("0.31.0", "0.32.0", "0.33.0"):
            # each layer's FLASH_ATTN_MLA_SPARSE cu_seqlens_q int32 [8193] (33,280 bytes in blocks)
            # joins; the index groups' [1024] request ids (4,096) leave (recorded at TP 8 and 4 in
            # the sparsemla set)
            assert report.stages[0].allocated_bytes == h100["allocated_bytes"] + 61 * (33_280 - 4_096)
        if version == "0.30.0":
            assert report.stages[0].allocated_bytes == h100["allocated_bytes"]
        if version == "0.29.0":  # no index groups before 0.30.0
            assert report.stages[0].allocated_bytes == h100["allocated_bytes"] - 61 * 8_405_504


PUBLIC = Path(__file__).resolve().parents[1] / "data" / "configs" / "public"


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
@pytest.mark.parametrize(
    "name",
    [
        "deepseek-ai--DeepSeek-V3",
        "deepseek-ai--DeepSeek-R1",
        "deepseek-ai--DeepSeek-V3.1",
        "moonshotai--Kimi-K2-Instruct",
    ],
)
def test_plan_gives_the_published_mla_checkpoints_weights(name: str, version: str) -> None:
    """``plan --gpu H200 --tensor-parallel-size 8`` on the published dense-MLA fp8 checkpoints (vLLM's
    ``deepseek_v2.py``) prints the weights after loading on the default release and on 0.33.0;
    DeepSeek-V3's (R1's, V3.1's: the same shapes) is the recorded H100 figure at TP 8 (SM 9.0 both)."""
    code, out = plan_output(PUBLIC / name, "H200", "--tensor-parallel-size", "8", "--vllm-version", version)
    assert "Weights: not given" not in out and "Weights per rank" in out, out[-1500:]
    if name != "moonshotai--Kimi-K2-Instruct":
        want = RECORDED[version]["deepseek-ai--DeepSeek-V3 H100 --tensor-parallel-size 8"]["allocated_bytes"]
        assert f"{want:,} bytes" in out, out[-1500:]
    assert code in (0, 1, 4), out[-800:]  # a verdict from the budget (not undetermined, exit 3)


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
def test_plan_names_why_sparse_mla_weights_are_not_given(name: str) -> None:
    """The published sparse-MLA fp8 checkpoints (an indexer: DeepSeek-V3.2, GLM-5.x) are refused by name
    on an SM 8.9 GPU (``plan --gpu L40S``, TP 8, 0.33.0), where vLLM has no sparse MLA backend (the
    plan fails as vLLM's selector does; the weights walk refuses too); on SM 9.0 they are given
    (``test_weights_sparsemla.py``)."""
    code, out = plan_output(PUBLIC / name, "L40S", "--tensor-parallel-size", "8", "--vllm-version", "0.33.0")
    assert code == 2 and "No valid attention backend found on SM89" in out, out[-1500:]  # as vLLM fails
    report = model_weights(
        PUBLIC / name, tp=8, compute_capability=(8, 9), sm_count=142, vllm_version="0.33.0", max_num_batched_tokens=8192
    )
    assert "no sparse MLA backend below SM 9.0" in (report.refused or ""), report.refused


def test_per_tensor_below_sm89_on_0290_0300_is_cutlass() -> None:
    """0.29.0 / 0.30.0's ``Fp8LinearMethod`` picks ``CutlassFP8ScaledMMLinearKernel`` below SM 8.9 (their
    ``_POSSIBLE_FP8_KERNELS`` list it ahead of Marlin's, its ``is_supported`` asks for CUDA only): the layout
    is SM 8.9's, fp8 weights transposed, one float32 scale per layer (the static checkpoint's input scale one
    more, 512 bytes a layer). Qwen3-8B on the RTX 3090 (SM 8.6) and the A100 (SM 8.0) at TP 1: 9,446,391,808
    (dynamic) / 9,446,465,536 (static) bytes, 2,801,664 fewer than Marlin's on 0.28.0; dryboot refused them by
    name before ("Marlin FP8's weight-only repack on 0.27.1, 0.28.0 and 0.31.0+ only")."""
    cases = [(v, k, w, g) for v in ("0.29.0", "0.30.0") for g in ("RTX 3090", "A100-80GB")
             for k, w in (("dynamic", 9_446_391_808), ("static", 9_446_465_536))]  # fmt: skip
    for version, kind, want, gpu in cases:
        row = RECORDED[version][f"Qwen--Qwen3-8B+FP8-tensor-{kind} {gpu} --tensor-parallel-size 1"]
        assert row["kernels"]["CutlassFP8ScaledMMLinearKernel"] == 144
        assert row["allocated_bytes"] == want
        assert dryboot_weights(fp8.CONFIGS, row, version).stages[0].allocated_bytes == want
    marlin = RECORDED["0.28.0"]["Qwen--Qwen3-8B+FP8-tensor-dynamic RTX 3090 --tensor-parallel-size 1"]
    assert marlin["allocated_bytes"] - 9_446_391_808 == 2_801_664
