"""``--gpu``: the GPU table, name matching, and dryboot's per-GPU rules against what vLLM 0.28.0
itself selected and defaulted on each GPU (``tests/data/gpus/backend-matrix/vllm-0.28.0.json``,
recorded with vLLM's own selection code by ``tests/data/gpus/record_backend_matrix.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.backends import BACKENDS, AttentionSelectorConfig, backend_table, default_backend
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import closest_gpu_names, gdn_prefill_alignment, gpu_table, parse_gpu

REPO = Path(__file__).resolve().parents[1]
MATRIX = REPO / "tests" / "data" / "gpus" / "backend-matrix" / "vllm-0.28.0.json"


#: where dryboot's table (src/dryboot/data/gpus.toml) differs from the oracle's, recorded from the
#: sources (tests/data/gpus/gpus.toml): (GPU, figure) -> why. Strict: a listed figure that agrees fails.
KNOWN_TABLE_DIFFERENCES = {
    ("A10G", "cuda_total_bytes"): "dryboot takes the NVML total; torch posts 22587 MiB",
}


def test_the_package_table_agrees_with_the_sourced_one() -> None:
    """Every GPU the oracle's table records from its sources (``tests/data/gpus/gpus.toml``) is in
    dryboot's table with the same device name, capability and totals, but for the listed differences."""
    import tomllib

    def rows(path: Path) -> dict[str, dict[str, object]]:
        return {r["name"]: r for r in tomllib.loads(path.read_text(encoding="utf-8"))["gpu"]}

    shipped = rows(REPO / "src" / "dryboot" / "data" / "gpus.toml")
    sourced = rows(REPO / "tests" / "data" / "gpus" / "gpus.toml")
    assert set(sourced) <= set(shipped), sorted(set(sourced) - set(shipped))
    differs = set()
    for name, row in sourced.items():
        for figure in ("device_name", "compute_capability", "nvml_total_bytes", "cuda_total_bytes"):
            if shipped[name][figure] != row[figure]:
                differs.add((name, figure))
    assert differs == set(KNOWN_TABLE_DIFFERENCES), (
        sorted(differs - set(KNOWN_TABLE_DIFFERENCES)),
        sorted(set(KNOWN_TABLE_DIFFERENCES) - differs),
    )


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("RTX 3090", "RTX 3090"),
        ("rtx3090", "RTX 3090"),
        ("rtx-3090", "RTX 3090"),
        ("RTX_3090", "RTX 3090"),
        ("NVIDIA GeForce RTX 3090", "RTX 3090"),
        ("h100", "H100"),
        ("H100 PCIe", "H100 PCIe"),
        ("a100", "A100-80GB"),
        ("a100-40gb", "A100-40GB"),
        ("b200", "B200"),
        ("L40S", "L40S"),
    ],
)
def test_names_match_case_and_separator_insensitively(text: str, name: str) -> None:
    assert parse_gpu(text).name == name


def test_capability_and_memory_form() -> None:
    gpu = parse_gpu("sm86:24G")
    assert gpu.capability == (8, 6) and gpu.nvml_total_bytes == gpu.cuda_total_bytes == 24 << 30
    assert parse_gpu("sm100:180G").capability == (10, 0)
    for bad in ("rtx 9999", "sm86", "sm86:lots", "sm61:8G", ""):
        with pytest.raises(InputError):
            parse_gpu(bad)


def test_memory_form_takes_decimals_within_bounds() -> None:
    """Issue 28: decimals (a GiB figure vLLM printed), the 1 PiB bound, capabilities that exist,
    and a size below any GPU's is bad input naming ``--gpu``, not "No available memory"."""
    assert parse_gpu("sm120:31.38G").cuda_total_bytes == round(31.38 * (1 << 30))
    assert parse_gpu("sm121:121.69G").cuda_total_bytes == gpu_table()["GB10"].cuda_total_bytes
    assert parse_gpu("sm86:1024T").cuda_total_bytes == 1 << 50
    assert parse_gpu("sm86:24g").cuda_total_bytes == 24 * 10**9  # vLLM's units: lower case decimal
    spark = parse_gpu("sm121:128G")
    assert spark.unified_memory and spark.nvml_total_bytes == 0
    cases = {
        "sm86:1025T": "above 1 PiB",
        "sm99:8G": "sm70, sm72, sm75, sm80, sm86, sm87, sm89, sm90, sm100, sm103, sm110, sm120, sm121",
        "sm123:8G": "no CUDA GPU has compute capability 12.3",
        "sm86:24": "24 bytes, below any GPU's (1G at least) (did you mean 24G?)",
        "sm86:0.5G": "below any GPU's",
        "sm86:1e3G": "is not a size",
    }
    for text, why in cases.items():
        with pytest.raises(InputError) as info:
            parse_gpu(text)
        line = info.value.line()
        assert line.startswith(f"--gpu: {text}:") and why in line and "\n" not in line, line


def test_gpu_memory_form_is_bad_input_on_the_cli() -> None:
    rc, out = _plan("--model", GPT_OSS, "--gpu", "sm86:24", "--gpu-memory-utilization", "0.9")
    assert rc == 2 and "--gpu" in str(out) and "below any GPU" in str(out)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["sm", "SM", "sm_"]),
    st.integers(0, 200),
    st.text(alphabet="0123456789.KMGTkmgtxe-: ", max_size=12),
)
def test_memory_form_property(prefix: str, sm: int, size: str) -> None:
    """Any ``smXY:SIZE`` is a GPU within the bounds, of a capability that exists, or one line
    naming ``--gpu``; never an exception of another kind."""
    from dryboot.vllm.gpus import CAPABILITIES, MAX_MEMORY_BYTES, MIN_MEMORY_BYTES

    text = f"{prefix}{sm}:{size}"
    try:
        gpu = parse_gpu(text)
    except InputError as exc:
        line = exc.line()
        assert line.startswith("--gpu: ") and "\n" not in line
        return
    assert gpu.capability in CAPABILITIES
    assert MIN_MEMORY_BYTES <= gpu.cuda_total_bytes <= MAX_MEMORY_BYTES


def test_new_gpus_of_issue_27() -> None:
    table = gpu_table()
    gb10 = table["GB10"]
    assert (gb10.capability, gb10.unified_memory, gb10.nvml_total_bytes) == ((12, 1), True, 0)
    assert round(gb10.cuda_total_bytes / (1 << 30), 2) == 121.69
    assert parse_gpu("dgx spark") is gb10
    assert parse_gpu("RTX PRO 6000").capability == (12, 0)
    assert parse_gpu("rtx pro 4500 blackwell").device_name == "NVIDIA RTX PRO 4500 Blackwell"
    printed = {name: round(table[name].cuda_total_bytes / (1 << 30), 2) for name in table}
    expected = {"RTX 3090": 23.56, "H100": 79.19, "A100-80GB": 79.25, "L40S": 44.42, "RTX 5090": 31.4, "B200": 178.35}
    assert {k: printed[k] for k in expected} == expected
    # GB10's NVML reports no total: vLLM's batch defaults stay on the small tier in every release
    for version in ("0.28.0", "0.33.0"):
        args = EngineArgs(gpu=gb10, vllm_version=version)
        assert (args.resolved_max_num_batched_tokens(), args.resolved_max_num_seqs()) == (2048, 256)


def _matrix() -> list[dict[str, Any]]:
    """Every (GPU, FlashInfer arm) row; an arm stored as ``same_as`` another gets its answers."""
    rows: list[dict[str, Any]] = json.loads(MATRIX.read_text())["rows"]
    full = {(r["gpu"], r["arm"]): r for r in rows if "same_as" not in r}
    return [{**full[(r["gpu"], r["same_as"])], "arm": r["arm"]} if "same_as" in r else r for r in rows]


@pytest.mark.parametrize("row", _matrix(), ids=lambda r: f"{r['gpu']}/{r['arm']}")
def test_batch_defaults_follow_the_device(row: dict[str, Any]) -> None:
    """``vllm serve``'s defaults from NVML's total and the device name (the "a100" rule)."""
    gpu = gpu_table()[row["gpu"]]
    args = EngineArgs(gpu=gpu)
    want = row["batch_defaults"]["OPENAI_API_SERVER"]
    assert (args.resolved_max_num_batched_tokens(), args.resolved_max_num_seqs()) == (
        want["max_num_batched_tokens"],
        want["max_num_seqs"],
    )


def _layer(case: dict[str, Any], capability: tuple[int, int], cubin: bool) -> tuple[AttentionSelectorConfig, bool]:
    kind = case["kind"]
    mla = kind in ("mla", "sparse_mla")
    head = 576 if mla else case["head_size"]
    layer = AttentionSelectorConfig(
        head,
        case["kv_cache_dtype"],
        has_sinks=bool(case.get("has_sink")),
        use_sparse=kind == "sparse_mla",
        model_dtype="bfloat16",
        mm_prefix=bool(case.get("use_mm_prefix")),
        capability=capability,
        cubin=cubin,
        qk_nope_head_dim=case["mla_dims"][0] if "mla_dims" in case else (128 if kind == "sparse_mla" else None),
        num_heads=case.get("num_heads", 0),
    )
    return layer, mla


#: Matrix cases dryboot does not model, by kind: non-causal (DFlash) layers take SM 8/9's list
#: on SM 10.x, which dryboot does not distinguish; SM 12.x sparse MLA needs the model's
#: index_topk, refused by name instead.
def _modelled(case: dict[str, Any], capability: tuple[int, int]) -> bool:
    if case.get("use_non_causal"):
        return False
    if case["kind"] == "sparse_mla" and capability[0] == 12:
        return False
    return not case["kv_cache_dtype"].startswith("nvfp4_4over6")


@pytest.mark.parametrize(
    "row", [r for r in _matrix() if r["arm"] in ("cubin", "bare")], ids=lambda r: f"{r['gpu']}/{r['arm']}"
)
def test_backend_selection_follows_vllm_per_gpu(row: dict[str, Any]) -> None:
    """The backend vLLM 0.28.0 selects and its preferred block, for every recorded case."""
    capability = (row["compute_capability"][0], row["compute_capability"][1])
    problems = []
    for case in row["cases"]:
        if not _modelled(case, capability):
            continue
        layer, mla = _layer(case, capability, row["arm"] == "cubin")
        table = backend_table(trtllm_nvfp4=capability[0] == 10 and row["arm"] == "cubin")
        try:
            got: str | None = default_backend(layer, mla, table)
        except ValueError:
            got = None
        want = case["selected"]
        if got != want:
            problems.append(f"{case}: dryboot {got}")
        elif got is not None and BACKENDS[got].preferred_block_size(16) != case["preferred_block_size"]:
            problems.append(f"{case}: block {BACKENDS[got].preferred_block_size(16)}")
    assert not problems, "\n".join(problems)


def test_gdn_alignment_follows_the_gpu() -> None:
    """0.33's FlashInfer GDN prefill: SM 9.0; SM 10.x / 12.x with head_k_dim 128; never SM 8.x."""
    t = gpu_table()
    assert gdn_prefill_alignment(64, t["H200"], 128) == 64
    assert gdn_prefill_alignment(64, t["B200"], 128) == 64
    assert gdn_prefill_alignment(64, t["B200"], 64) is None
    assert gdn_prefill_alignment(64, t["RTX 5090"], 128) == 64
    assert gdn_prefill_alignment(64, t["RTX 3090"], 128) is None
    assert gdn_prefill_alignment(None, t["H200"], 128) is None


# --------------------------------------------------------------------------- the CLI surfaces

EXAMPLES = REPO / "examples"
GPT_OSS = str(EXAMPLES / "models" / "gpt-oss-20b.config.json")


def _plan(*argv: str) -> tuple[int, dict[str, Any] | str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, ["plan", *argv, "--json"])
    if res.exit_code in (3, 4) and isinstance(res.exception, SystemExit):  # undetermined, tight: a plan
        return res.exit_code, json.loads(res.output)
    if res.exit_code != 0 or res.exception is not None:
        exc = res.exception
        return 2, exc.line() if isinstance(exc, InputError) else res.output
    doc: dict[str, Any] = json.loads(res.output)
    return 0, doc


def test_reference_deployment_on_its_rtx_3090() -> None:
    """The reference deployment names its GPU and reproduces its four seed rows on it (every
    profile pins its backend and KV budget, none stores fp8; FA2's blocks are FA3's)."""
    from dryboot.planner.profiles import load_profiles, plan_profile
    from dryboot.planner.report import summary

    ps = load_profiles(EXAMPLES / "reference-deployment.toml")
    assert {p.args.gpu.name if p.args.gpu else None for p in ps.profiles} == {"RTX 3090"}
    main = ps.arm("main")
    rows = {}
    for profile in ps.profiles:
        s = summary(plan_profile(profile, main))
        rows[profile.name] = (s["attention_block_size"], s["mamba_padding_pct"], s["kv_cache_size_tokens"])
    assert rows == {
        "CTX=fast": (448, 3.23, 68605),
        "CTX=long": (864, 1.09, 136429),
        "CTX=huge": (2176, 2.82, 268169),
        "CTX=fast DFLASH_TOKENS=15": (480, 1.27, 57669),
    }


def test_fp8_on_triton_is_refused_below_sm89_in_vllms_words() -> None:
    base = ("--model", GPT_OSS, "--max-model-len", "4096", "--kv-cache-memory", "4G", "--kv-cache-dtype", "fp8")
    rc, out = _plan(*base, "--gpu", "rtx-3090")
    assert (
        rc == 2
        and "FP8 KV cache is not supported by the Triton attention backend on NVIDIA GeForce RTX 3090" in str(out)
    )
    # SM 8.9: Triton stores fp8; exit 0, not 2: gpt-oss's MXFP4 weights on vLLM's Marlin backend
    # (13.70 GiB) and the pinned 4 GiB pool fit the named GPU
    assert _plan(*base, "--gpu", "RTX 4090")[0] == 0
    assert _plan(*base, "--gpu", "sm80:40G")[0] == 2


def test_gpu_defaults_and_assumptions() -> None:
    base = ("--model", GPT_OSS, "--max-model-len", "65536", "--kv-cache-memory", "20G")
    rc, doc = _plan(*base, "--gpu", "A100-80GB")
    assert rc == 0 and isinstance(doc, dict)  # gpt-oss's MXFP4 weights on an A100: Marlin, modelled
    a = {x["flag"]: x for x in doc["assumptions"]}
    assert a["--max-num-batched-tokens"]["value"] == 2048  # "a100" in the name: below the 70 GiB tier
    assert "--gpu" not in a
    rc, doc = _plan(*base)
    assert isinstance(doc, dict) and any(x["flag"] == "--gpu" and x["value"] == "H200" for x in doc["assumptions"])
    rc, doc = _plan(*base, "--gpu", "B200")
    assert isinstance(doc, dict)
    assert {x["flag"]: x["value"] for x in doc["assumptions"]}["--max-num-batched-tokens"] == 16384


def test_budget_from_utilization_uses_cudas_total() -> None:
    args = EngineArgs(gpu=gpu_table()["RTX 3090"], gpu_memory_utilization=0.9, non_kv_memory_bytes=10 << 30)
    assert args.available_kv_bytes() == -(-25297357373 * 9 // 10) - (10 << 30)
    rc, doc = _plan("--model", GPT_OSS, "--gpu", "A10G", "--non-kv-memory", "16G", "--max-model-len", "4096")
    assert rc == 0 and isinstance(doc, dict)
    assert any("approximate" in x["reason"] for x in doc["assumptions"] if x["flag"] == "--gpu")


def test_unknown_gpu_is_one_line() -> None:
    rc, out = _plan("--model", GPT_OSS, "--gpu", "rtx 9999")
    assert rc == 2 and "unknown GPU" in str(out)


def _posted_on_3090() -> list[str]:
    public = REPO / "tests" / "data" / "checklog" / "public"
    index = json.loads((public / "INDEX.json").read_text())
    out = []
    for name in sorted(index):
        citation = (public / name).read_bytes().split(b"\n", 1)[0].decode("utf-8", "replace")
        if "RTX 3090" in citation:
            out.append(name)
    return out


@pytest.mark.parametrize("name", _posted_on_3090())
def test_check_log_on_logs_posted_from_rtx_3090s(name: str) -> None:
    """Every public log whose post names RTX 3090s reads the same with ``--gpu "RTX 3090"`` as
    its recorded verdict (vLLM prints no device name on the lines check-log reads, so the GPU is
    the flag's)."""
    import io

    from dryboot.checklog.check import LogReport, check_lines
    from dryboot.checklog.parse import iter_relevant_lines

    public = REPO / "tests" / "data" / "checklog" / "public"
    entry = json.loads((public / "INDEX.json").read_text())[name]
    config = entry["config"]
    stream = io.BytesIO((public / name).read_bytes().split(b"\n", 1)[1])
    boots = tuple(
        check_lines(
            iter_relevant_lines(stream, name),
            source=name,
            model_path=str(REPO / config) if config else None,
            gpu=gpu_table()["RTX 3090"],
        )
    )
    assert (LogReport(name, boots).exit_code if boots else 2) == entry["exit"]
    assert [b.status for b in boots] == entry["boots"]


def test_sweep_takes_gpus_as_a_value_of_the_space() -> None:
    from click.testing import CliRunner

    from dryboot.cli import cli
    from dryboot.planner.sweep import Geometry, planner_inputs

    assert planner_inputs(Geometry(gpu="RTX 3090"))[1].device.capability == (8, 6)
    res = CliRunner().invoke(
        cli, ["sweep", "--limit", "20", "--gpu", "rtx3090", "--gpu", "b200", "--jobs", "1", "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)
    bad = CliRunner().invoke(cli, ["sweep", "--limit", "5", "--gpu", "rtx 9999"])
    assert bad.exit_code == 2


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("A100-PCIe", ("A100-40GB-PCIe", "A100-80GB-PCIe")),
        ("H100-80GB", ("H100", "H100 PCIe")),
        ("rtx3080", ("RTX 3090",)),
    ],
)
def test_an_unknown_gpu_name_says_which_it_may_mean(text: str, first: tuple[str, ...]) -> None:
    """newuser-report item 13: `--gpu A100-PCIe` / `--gpu H100-80GB` were refused with the list only."""
    with pytest.raises(InputError) as exc:
        parse_gpu(text)
    assert exc.value.source == "--gpu"
    assert f"did you mean {' or '.join(closest_gpu_names(text))}?" in exc.value.reason
    assert closest_gpu_names(text)[: len(first)] == first


def test_nothing_close_gives_no_guess() -> None:
    assert closest_gpu_names("MI300X") == ()
    with pytest.raises(InputError, match=r"unknown GPU \(known: "):
        parse_gpu("MI300X")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_name_is_a_gpu_or_one_line_with_at_most_three_guesses(text: str) -> None:
    """An unknown name's refusal is one line naming ``--gpu``; its guesses are table names."""
    try:
        parse_gpu(text)
    except InputError as exc:
        assert exc.line().startswith("--gpu: ")
        guesses = closest_gpu_names(text)
        assert len(guesses) <= 3 and all(g in gpu_table() for g in guesses)


# --------------------------------------------------------------------------- issue 33: host variants


def test_host_variants_carry_the_totals_people_post() -> None:
    from dryboot.vllm.gpus import parse_gpu_memory

    t = gpu_table()
    printed = {n: round(t[n].cuda_total_bytes / (1 << 30), 2) for n in t}
    assert printed["RTX 4090"] == 23.68
    assert printed["RTX 4090 (WSL2)"] == 23.99 and printed["RTX 4090 (cloud VM)"] == 23.52
    assert printed["RTX PRO 6000 Blackwell Server Edition"] == 95.01 and printed["RTX PRO 6000 Blackwell"] == 95.59
    assert parse_gpu("rtx 4090 wsl2") is t["RTX 4090 (WSL2)"]
    assert parse_gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition").device_name.endswith("Server Edition")
    assert parse_gpu("RTX PRO 6000") is t["RTX PRO 6000 Blackwell"]  # the Workstation Edition stays the default
    line = "(Worker_TP1 pid=771) INFO 08-21 18:22:06 [gpu_worker.py:789] Free memory on device (94.05/95.01 GiB) on"
    assert parse_gpu_memory(line) == t["RTX PRO 6000 Blackwell Server Edition"].cuda_total_bytes
    gate = "ValueError: Free memory on device cuda:0 (22.04/23.52 GiB) on startup is less than desired"
    assert parse_gpu_memory(gate) == t["RTX 4090 (cloud VM)"].cuda_total_bytes
    assert parse_gpu_memory("24G") == 24 << 30


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_gpu_memory_parser_gives_bytes_or_one_value_error(text: str) -> None:
    from dryboot.vllm.gpus import parse_gpu_memory

    try:
        n = parse_gpu_memory(text)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(n, int) and n >= 0


@settings(max_examples=200, deadline=None)
@given(st.floats(0.5, 2000, allow_nan=False).map(lambda x: round(x, 2)), st.sampled_from(["", " cuda:0"]))
def test_a_logged_total_is_read_back_to_the_byte(total: float, device: str) -> None:
    from dryboot.vllm.gpus import parse_gpu_memory

    line = f"Free memory on device{device} (0.5/{total} GiB) on startup."
    assert parse_gpu_memory(line) == round(total * (1 << 30))


def test_a_logged_total_beside_the_named_card_is_taken_and_said() -> None:
    qwen3_8b = str(REPO / "tests/data/configs/public/Qwen--Qwen3-8B/config.json")
    line = "Free memory on device (22.45/23.99 GiB) on startup"
    rc, doc = _plan("--model", qwen3_8b, "--gpu", "RTX 4090", "--max-model-len", "8192", "--gpu-memory", line)
    assert rc == 0 and isinstance(doc, dict)
    assert doc["budget"]["gpu_total_bytes"] == round(23.99 * (1 << 30))
    assert doc["budget"]["gpu_total_source"].startswith("--gpu-memory")


def test_sm90_sparse_mla_priorities_per_release() -> None:
    """SM 9.x sparse MLA (``_get_backend_priorities``): FLASH_ATTN_MLA_SPARSE, FLASHMLA_SPARSE; from 0.30
    FLASHINFER_MLA_SPARSE_SM90 too, last for a 576 head (so it serves only the fp8_e4m3 cache the other two
    refuse), first for a 512 one unless its ``kv_lora_rank`` is not 512 (recorded:
    ``tests/fidelity/data/sm90-sparse-mla/``)."""

    def pick(kv: str, head: int = 576, rope: int = 64, sm90: bool = True, dtype: str = "bfloat16") -> str:
        layer = AttentionSelectorConfig(
            head, kv, use_sparse=True, model_dtype=dtype, capability=(9, 0), sparse_sm90=sm90, qk_rope_head_dim=rope
        )
        return default_backend(layer, True, backend_table(sparse_sm90=sm90))

    assert pick("auto") == "FLASH_ATTN_MLA_SPARSE"
    assert pick("fp8") == "FLASHMLA_SPARSE"
    assert pick("fp8_e4m3") == "FLASHINFER_MLA_SPARSE_SM90"
    assert pick("auto", head=512, rope=0) == "FLASHINFER_MLA_SPARSE_SM90"
    assert pick("auto", head=512, rope=64) == "FLASH_ATTN_MLA_SPARSE"  # kv_lora_rank 448
    for refused in (lambda: pick("fp8_e4m3", sm90=False), lambda: pick("fp8_e4m3", dtype="float16")):
        with pytest.raises(ValueError, match="No valid attention backend"):
            refused()
    assert "FLASHINFER_MLA_SPARSE_SM90" not in backend_table()
