"""``dryboot.vllm.versions``: version lookup and ``--vllm-version auto``."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm import versions
from dryboot.vllm.config.resolve import create_engine_config
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import load_model


def test_table_entries_and_in_between_versions() -> None:
    assert versions.rules_for("0.27.1").version == "0.27.1"
    assert versions.rules_for("0.31.0").version == "0.31.0"
    assert versions.rules_for("0.31.4").version == "0.31.0"
    assert versions.rules_for("0.30.9").version == "0.30.0"
    with pytest.raises(InputError):
        versions.rules_for("0.26.0")


def test_auto_reads_the_installed_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: "0.29.0+cu129" if name == "vllm" else "0")
    versions.rules_for.cache_clear()
    try:
        assert versions.resolve_version("auto") == "0.29.0"
        assert versions.rules_for("auto").version == "0.29.0"
    finally:
        versions.rules_for.cache_clear()


def test_auto_without_vllm_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(InputError, match="no vLLM is installed"):
        versions.resolve_version("auto")


def test_every_switch_is_read() -> None:
    """A switch declared in VersionRules must be read somewhere under src/dryboot."""
    import dataclasses
    from pathlib import Path

    src = Path(versions.__file__).resolve().parents[1]
    text = "".join(p.read_text() for p in src.rglob("*.py") if p.name != "versions.py")
    for f in dataclasses.fields(versions.VersionRules):
        if f.name != "version":
            assert f"rules.{f.name}" in text, f"{f.name} is declared but never read"


def test_compare_version_shows_what_the_upgrade_changes() -> None:
    """gdn64 (tests/fidelity/data/releases): vLLM 0.28.0 printed block 784, 311 blocks, 149,865
    tokens; vLLM 0.33.0 block 832, 293 blocks, 126,329 tokens (test_releases.RECORDED)."""
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from dryboot.cli import cli

    model = Path(__file__).resolve().parent / "fidelity" / "data" / "releases" / "gdn64"
    argv = [
        "plan",
        "--model",
        str(model),
        "--max-model-len",
        "8192",
        "--max-num-batched-tokens",
        "8192",
        "--kv-cache-memory-bytes",
        "2000000000",
        "--vllm-version",
        "0.28.0",
        "--compare-version",
        "0.33.0",
    ]
    res = CliRunner().invoke(cli, [*argv, "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["figure"]: r for r in json.loads(res.output)["changes"]}
    assert (rows["block size"]["a"], rows["block size"]["b"]) == (784, 832)
    assert (rows["num_blocks"]["a"], rows["num_blocks"]["b"]) == (311, 293)
    assert (rows["KV cache tokens"]["a"], rows["KV cache tokens"]["b"]) == (149865, 126329)
    assert not rows["max_model_len"]["changed"]
    text = CliRunner().invoke(cli, argv).output
    assert "vLLM 0.28.0 -> 0.33.0" in text


def test_reference_deployment_main_arm_on_0_27_1(tmp_path: Path) -> None:
    """The reference deployment (examples/reference-deployment.toml) on vLLM 0.27.1, its main arm,
    on its 24 GB GPU: the three 7-token profiles give the rows the deployment logged on 0.28.0
    (docs/kv-geometry-rules.md section 7: 448 / 3.23% / 68,605; 864 / 1.09% / 136,429;
    2176 / 2.82% / 268,169). CTX=fast DFLASH_TOKENS=15 does not start: 0.27.1 takes the
    drafter's slots per sequence off the scheduler budget (2048 - 14 x 256 = -1536), as its own
    engine start refuses (test_releases.RECORDED ("0.27.1", "ref-fast15")); 0.28.0 logged 480 /
    1.27% / 57,669."""
    from dryboot.planner.profiles import load_profiles, plan_profile
    from dryboot.planner.report import summary

    repo = Path(__file__).resolve().parents[1]
    text = (repo / "examples" / "reference-deployment.toml").read_text()
    text = text.replace('"models/', f'"{repo}/examples/models/').replace('"0.28.0"', '"0.27.1"')
    text = text.replace("max-num-batched-tokens = 2048\n", 'max-num-batched-tokens = 2048\ngpu-memory = "24G"\n', 1)
    path = tmp_path / "ref271.toml"
    path.write_text(text)
    ps = load_profiles(path)
    main = next(a for a in ps.arms if a.name == "main")
    assert main.vllm_version == "0.27.1"
    rows = {}
    for profile in ps.profiles:
        if profile.name == "CTX=fast DFLASH_TOKENS=15":
            with pytest.raises(InputError, match="max_num_scheduled_tokens is set to -1536"):
                plan_profile(profile, main)
            continue
        s = summary(plan_profile(profile, main))
        rows[profile.name] = (s["attention_block_size"], s["mamba_padding_pct"], s["kv_cache_size_tokens"])
    assert rows == {
        "CTX=fast": (448, 3.23, 68605),
        "CTX=long": (864, 1.09, 136429),
        "CTX=huge": (2176, 2.82, 268169),
    }


_DSV32_MODELOPT = Path(__file__).resolve().parent / "data" / "configs" / "public" / "nvidia--DeepSeek-V3.2-NVFP4"


@pytest.mark.parametrize("version", ["0.28.0", "0.29.0", "0.30.0", "0.32.0"])
def test_modelopt_fp8_kv_on_sparse_mla_per_release(version: str) -> None:
    """A ModelOpt FP8 KV cache (``auto`` -> fp8_e4m3, from the ``hf_quant_config.json`` beside the
    config) on SM 9.0: no sparse MLA backend takes it before 0.30 (vLLM refuses: exit 2, never a bf16
    plan); from 0.30 vLLM serves it with FLASHINFER_MLA_SPARSE_SM90 (recorded:
    ``tests/fidelity/data/sm90-sparse-mla/``), the fp8 rows one byte a value."""
    model = load_model(_DSV32_MODELOPT)
    assert model.quant.quant_kv_cache_dtype == "fp8_e4m3"
    args = EngineArgs(kv_cache_memory_bytes=20_000_000_000, vllm_version=version)
    sm90 = versions.rules_for(version).sparse_mla_fp8_e4m3_sm90
    assert sm90 == (version >= "0.30.0")
    if not sm90:
        with pytest.raises(InputError) as exc:
            create_engine_config(model, args, None)
        assert "No valid attention backend" in str(exc.value), str(exc.value)
        return
    cfg = create_engine_config(model, args, None)
    assert (cfg.backend.name, cfg.kv_cache_dtype) == ("FLASHINFER_MLA_SPARSE_SM90", "fp8_e4m3")


def test_known_model_types_per_release() -> None:
    """transformers' config classes plus vLLM's own, per release: ``deepseek_ref`` (the sgl-project
    DeepSeek-V4 FP8 configs) is neither, so vLLM needs remote code for it."""
    for version in sorted(versions.VERIFIED_VERSIONS):
        known = versions.known_model_types(version)
        assert {"llama", "qwen3", "deepseek_v3", "nemotron_h"} <= known, version
        assert "deepseek_ref" not in known
    assert versions.known_model_types("9.9.9") == frozenset()


def test_remote_code_model_type_refused_by_name() -> None:
    model = load_model(
        Path(__file__).resolve().parent / "data" / "configs" / "public" / "sgl-project--DeepSeek-V4-Flash-FP8"
    )
    with pytest.raises(InputError) as exc:
        create_engine_config(model, EngineArgs(kv_cache_memory_bytes=20_000_000_000), None)
    assert "model type `deepseek_ref` but Transformers does not recognize this architecture" in str(exc.value)
    assert "model_type" in str(exc.value)


def test_compare_version_refusal_and_unverified_name_compare_version() -> None:
    """Issue 28: `--compare-version abc` named --vllm-version; `--compare-version 1.0.0` compared
    with 0.33.0's rules without saying so. As for --vllm-version 1.0.0: planned with the newest
    table, stated as unverified, naming the flag given."""
    from pathlib import Path

    from click.testing import CliRunner

    from dryboot.cli import cli

    model = str(Path(__file__).resolve().parent / "fidelity" / "data" / "releases" / "gdn64")
    bad = CliRunner().invoke(cli, ["plan", "--model", model, "--compare-version", "abc"])
    assert bad.exit_code == 2
    assert "--compare-version: abc: expected a version" in bad.output and "--vllm-version" not in bad.output
    newer = CliRunner().invoke(cli, ["plan", "--model", model, "--compare-version", "1.0.0"])
    assert newer.exit_code in (0, 1), newer.output
    text = " ".join(newer.output.split())
    assert "unverified --compare-version 1.0.0: no rule table for vLLM 1.0.0: planned with those of 0.33.0" in text
