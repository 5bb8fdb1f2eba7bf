"""The drafter's need of the target's input embedding under pipeline parallelism (vLLM 0.30+,
``maybe_share_target_embed``): recorded against vLLM in ``fidelity/test_releases.py`` (``ppembed-*``)."""

from __future__ import annotations

import json
from pathlib import Path

from dryboot.vllm.spec_decode_embed import drafter_embedding_refusal, last_stage_embedding

SAYS = "needs the target input embedding, but it is unavailable on this PP stage"


def _config(tmp_path: Path, name: str, **fields: object) -> str:
    path = tmp_path / name
    path.mkdir()
    (path / "config.json").write_text(json.dumps(fields), encoding="utf-8")
    return str(path / "config.json")


def test_first_stage_target_refused_with_vllms_words_and_the_condition(tmp_path: Path) -> None:
    target = _config(tmp_path, "t", vocab_size=1024)
    why = drafter_embedding_refusal("FalconH1ForCausalLM", target, "DFlashDraftModel", target, "dflash", None)
    assert why is not None and why.startswith(f"DFlashQwen3ForCausalLM {SAYS}")
    assert "carries its own embed_tokens" in why
    names = ["model.layers.0.mlp.down_proj.weight"]
    why = drafter_embedding_refusal("FalconH1ForCausalLM", target, "DFlashDraftModel", target, "dflash", names)
    assert why is not None and "has no embed_tokens weight" in why


def test_drafter_with_its_own_embedding_loads(tmp_path: Path) -> None:
    target = _config(tmp_path, "t")
    names = ["model.embed_tokens.weight", "model.layers.0.mlp.down_proj.weight"]
    assert drafter_embedding_refusal("FalconH1ForCausalLM", target, "DFlashDraftModel", target, "dflash", names) is None


def test_placement_per_class(tmp_path: Path) -> None:
    tied = _config(tmp_path, "tied", tie_word_embeddings=True)
    untied = _config(tmp_path, "untied")
    assert last_stage_embedding("Qwen3ForCausalLM", untied) is True
    assert last_stage_embedding("Qwen3MoeForCausalLM", untied) is True
    assert last_stage_embedding("GraniteForCausalLM", tied) is True
    assert last_stage_embedding("GraniteForCausalLM", untied) is False
    assert last_stage_embedding("DeepseekV3ForCausalLM", untied) is False
    assert last_stage_embedding("OPTForCausalLM", untied) is None


def test_unknown_placement_refused_by_name(tmp_path: Path) -> None:
    target = _config(tmp_path, "t")
    why = drafter_embedding_refusal("OPTForCausalLM", target, "LlamaForCausalLMEagle3", target, "eagle3", None)
    assert why is not None and why.startswith("OPTForCausalLM with a eagle3 drafter (Eagle3LlamaForCausalLM)")
    assert "not modelled" in why


def test_methods_without_sharing_and_dspark_vocabulary(tmp_path: Path) -> None:
    target = _config(tmp_path, "t", vocab_size=1024)
    assert drafter_embedding_refusal("FalconH1ForCausalLM", target, "DeepSeekMTPModel", target, "mtp", None) is None
    small = _config(tmp_path, "small", vocab_size=512)
    large = _config(tmp_path, "large", vocab_size=4096)
    assert drafter_embedding_refusal("FalconH1ForCausalLM", target, "Qwen3DSparkModel", large, "dspark", None) is None
    why = drafter_embedding_refusal("FalconH1ForCausalLM", target, "Qwen3DSparkModel", small, "dspark", None)
    assert why is not None and why.startswith(f"Qwen3DSparkForCausalLM {SAYS}")


REL = Path(__file__).resolve().parent / "fidelity" / "data" / "releases"


def _write_header(path: Path, names: dict[str, list[int]]) -> None:
    """A safetensors file whose header names these bfloat16 tensors (the data left sparse)."""
    offset, header = 0, {}
    for name, shape in names.items():
        size = 2 * shape[0] * shape[1]
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with path.open("wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        f.truncate(8 + len(text) + offset)


def test_drafter_checkpoint_with_embed_tokens_plans(tmp_path: Path) -> None:
    """The audit's Falcon-H1 + DFlash at PP 2 (refused: ``ppembed-falconh1-dflash``) plans once the
    drafter directory's safetensors carry ``embed_tokens`` (vLLM's ``process_eagle_weight``)."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_bytes((REL / "dflash-falconh1" / "config.json").read_bytes())
    flags = ["plan", "--model", str(REL / "falconh1-pp"), "--max-model-len", "2048"]
    flags += ["--kv-cache-memory-bytes", "2000000000", "-pp", "2", "--mamba-cache-mode", "align"]
    flags += ["--no-async-scheduling", "--vllm-version", "0.30.0", "--speculative-config"]
    spec = json.dumps({"method": "dflash", "num_speculative_tokens": 2, "model": str(drafter)})
    out = CliRunner().invoke(cli, [*flags, spec])
    assert out.exit_code == 2 and SAYS in out.output, out.output
    _write_header(drafter / "model.safetensors", {"fc.weight": [2048, 8192]})
    out = CliRunner().invoke(cli, [*flags, spec])
    assert out.exit_code == 2 and "has no embed_tokens weight" in out.output, out.output
    _write_header(drafter / "model.safetensors", {"embed_tokens.weight": [4096, 2048], "fc.weight": [2048, 8192]})
    out = CliRunner().invoke(cli, [*flags, spec])
    assert out.exit_code == 0, out.output
