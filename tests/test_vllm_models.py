"""Model families and the architecture registry (``dryboot.vllm.models``).

Expected values are facts of vLLM 0.28.0 and the config classes it reads with: the registry's
table sizes (``model_executor/models/registry.py``: 131 text-generation, 119 multimodal, 56
speculative-decoding architectures) and the config classes' defaults and layer rules, each
named where it is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind, ModelGeometry, extra_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.mimo_v2 import MiMoV2Extra
from dryboot.vllm.models.registry import ARCHITECTURES, LATER_ARCHITECTURES, architecture_table, family_of
from dryboot.vllm.transformers_utils.config import geometry_from_config


def test_table_covers_vllm_registry() -> None:
    rows = architecture_table()
    # registry.py's _TRANSFORMERS_SUPPORTED_MODELS: 6 text models and 2 multimodal ones served through
    # the Transformers modeling backend
    assert Counter(r.kind for r in rows) == {
        "text-generation": 131,
        "multimodal": 119,
        "speculative-decoding": 56,
        "transformers-backend": 8,
    }
    modelled = {r.architecture for r in rows if r.status == "verified"}
    # every family architecture is a real vLLM 0.28.0 name, but those of a later release's registry
    # (LATER_ARCHITECTURES also lists Kimi-K3, in 0.28.0's registry and recorded on 0.28.0 there)
    later = {a for a, releases in LATER_ARCHITECTURES.items() if "0.28.0" not in releases}
    assert modelled == set(ARCHITECTURES) - later


def test_table_per_release() -> None:
    """``--list-architectures --vllm-version X``: the release's own registry (its registry.py), and
    what dryboot does with each architecture on that release."""
    rows = {r.architecture: r for r in architecture_table("0.32.0")}
    assert len(rows) == 325
    # planned on another release, not verified on 0.32.0: Inkling (recorded on 0.33.0 only)
    assert rows["InklingForCausalLM"].status == "refused"
    assert "0.32.0" in rows["InklingForCausalLM"].reason
    # verified there with the published checkpoints' mla_scale_* fields (transformers' LongcatFlashConfig)
    assert rows["LongcatFlashForCausalLM"].status == "verified"
    # Kimi-Linear: verified there since its GEMM-AR module is stood in (was refused)
    assert rows["KimiLinearForCausalLM"].status == "verified"
    # its attention layers take the cache config from 0.32 (mimo_v2_cache_config): checked there
    assert rows["MiMoV2FlashForCausalLM"].status == "verified"
    assert rows["Gemma4ForCausalLM"].status == "verified"
    rows33 = {r.architecture: r for r in architecture_table("0.33.0")}
    assert "Kimi Delta Attention" in rows33["AliceAIForCausalLM"].reason
    assert len(architecture_table("0.27.1")) == 303
    r = subprocess.run(
        [sys.executable, "-m", "dryboot", "plan", "--list-architectures", "--vllm-version", "0.33.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout.rstrip().endswith("refused"), r.stderr
    assert r.stdout.splitlines()[-1].startswith("342 architectures")


def test_transformers_backend_architectures_read_as_it_builds_them() -> None:
    """The Transformers modeling backend (base.py create_attention_instances): a sliding_attention
    layer takes the config's window, the others are full; layers are named ``<i>.attn``."""
    cfg = {
        "architectures": ["VaultGemmaForCausalLM"],
        "model_type": "vaultgemma",
        "num_hidden_layers": 4,
        "hidden_size": 512,
        "num_attention_heads": 4,
        "sliding_window": 512,
    }
    model = geometry_from_config(cfg)
    # VaultGemmaConfig: layer i slides when (i + 1) is odd; head_dim 256 and 4 KV heads by default
    assert model.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL, LayerKind.SLIDING, LayerKind.FULL)
    assert (model.num_kv_heads, model.head_dim, model.sliding_window) == (4, 256, 512)
    assert model.layer_name(1) == "1.attn"
    big = {"architectures": ["GPTBigCodeForCausalLM"], "n_layer": 2, "n_embd": 512, "n_head": 8}
    # GPTBigCodeConfig: multi_query (default true) -> one KV head
    assert geometry_from_config(big).num_kv_heads == 1
    assert geometry_from_config({**big, "multi_query": False}).num_kv_heads == 8


def test_unknown_architecture_is_refused_by_name() -> None:
    with pytest.raises(InputError) as info:
        geometry_from_config({"architectures": ["DeepSeekV4MTPModel"], "num_hidden_layers": 4}, "dsv4.json")
    assert info.value.where == "architectures"
    assert "DeepSeekV4MTPModel is not modelled" in info.value.reason
    # what is planned instead is named: the target's own MTP layer
    assert "DeepseekV4ForCausalLM" in info.value.reason and "method mtp" in info.value.reason


def llama(**extra: object) -> dict[str, object]:
    return {"num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 1024, **extra}


def test_llama_config_class_defaults() -> None:
    m = geometry_from_config({"architectures": ["LlamaForCausalLM"], "model_type": "llama", **llama()})
    assert m.max_len.max_position_embeddings == 2048  # LlamaConfig
    assert (m.num_kv_heads, m.head_dim) == (8, 128)  # KV heads = heads, head_dim = hidden // heads


def test_mistral_default_window_makes_every_layer_sliding() -> None:
    m = geometry_from_config({"architectures": ["MistralForCausalLM"], "model_type": "mistral", **llama()})
    assert m.layer_kinds == (LayerKind.SLIDING,) * 4 and m.sliding_window == 4096  # MistralConfig
    explicit_none = geometry_from_config(
        {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": None, **llama()}
    )
    assert explicit_none.layer_kinds == (LayerKind.FULL,) * 4


@pytest.mark.parametrize(
    ("extra", "kinds"),
    [
        ({}, (LayerKind.FULL,) * 4),  # use_sliding_window defaults to False: window dropped
        ({"sliding_window": 1024}, (LayerKind.FULL,) * 4),
        ({"sliding_window": 1024, "use_sliding_window": True, "max_window_layers": 0}, (LayerKind.SLIDING,) * 4),
        # all layers below max_window_layers: layer_types all full, no model-level window
        ({"sliding_window": 1024, "use_sliding_window": True}, (LayerKind.FULL,) * 4),
    ],
)
def test_qwen3_window_rules(extra: dict[str, object], kinds: tuple[LayerKind, ...]) -> None:
    # Qwen3Config's own 32 KV heads would not divide the 8 heads: given
    cfg = llama(**{**extra, "hidden_size": 4096, "num_key_value_heads": 8})
    m = geometry_from_config({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **cfg})
    assert m.layer_kinds == kinds
    assert m.head_dim == 128  # Qwen3Config's head_dim default, not hidden_size // heads (512)


def test_qwen3_partial_window_is_refused_as_vllm_does() -> None:
    """Read, then refused where Qwen2Model asserts: while the model is built (verify_layers)."""
    cfg = llama(sliding_window=1024, use_sliding_window=True, max_window_layers=2, num_key_value_heads=8)
    m = geometry_from_config({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **cfg})
    with pytest.raises(InputError, match="Sliding window for some but all layers is not supported"):
        family_of(m).verify_layers(m, EngineArgs())


def test_gemma3_pattern_and_gemma2_alternation() -> None:
    g3 = geometry_from_config(
        {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", **llama(num_hidden_layers=12)}
    )
    # Gemma3TextConfig: sliding_window_pattern 6 -> layers 6 and 12 are global
    assert [i for i, k in enumerate(g3.layer_kinds) if k is LayerKind.FULL] == [5, 11]
    g2 = geometry_from_config({"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", **llama()})
    assert g2.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL) * 2


def test_gpt_oss_parity_ignores_layer_types() -> None:
    m = geometry_from_config(
        {
            "architectures": ["GptOssForCausalLM"],
            "model_type": "gpt_oss",
            **llama(layer_types=["full_attention"] * 4),
        }
    )
    assert m.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL) * 2  # gpt_oss.py: layer_idx % 2 == 0


def test_qwen3_next_every_fourth_layer_whatever_the_interval() -> None:
    base = {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "full_attention_interval": 2,
        **llama(num_hidden_layers=8),
    }
    m = geometry_from_config(base)
    assert [i for i, k in enumerate(m.layer_kinds) if k is LayerKind.FULL] == [3, 7]
    assert m.mtp.num_mtp_layers == 1  # qwen3_next_mtp.py: num_nextn_predict_layers default 1


def test_yarn_scaling_extends_the_derived_length() -> None:
    from dryboot.planner.plan import plan
    from dryboot.vllm.engine_args import EngineArgs

    # _get_and_verify_max_len: yarn -> original_max_position_embeddings x factor
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 262144}
    cfg = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        **llama(max_position_embeddings=262144, rope_scaling=rope, num_key_value_heads=8),
    }
    m = geometry_from_config(cfg)
    assert m.max_len.max_position_embeddings == 1_048_576
    assert plan(m, EngineArgs(max_model_len=1_048_576)).max_model_len == 1_048_576
    with pytest.raises(InputError, match=r"max_position_embeddings=1048576"):
        plan(m, EngineArgs(max_model_len=1_048_577))
    # llama3-type scaling does not extend it
    cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0}
    assert geometry_from_config(cfg).max_len.max_position_embeddings == 262144


def test_longrope_defaults_to_the_original_length() -> None:
    from dryboot.planner.plan import plan

    rope = {"rope_type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **llama(max_position_embeddings=131072, original_max_position_embeddings=4096, rope_scaling=rope),
    }
    assert plan(geometry_from_config(cfg)).max_model_len == 4096


def test_hf_overrides_apply_before_reading() -> None:
    from pathlib import Path

    from dryboot.planner.plan import plan
    from dryboot.planner.runner import build_engine_args

    qwen3_next = str(Path(__file__).resolve().parents[1] / "examples/models/Qwen3-Next-80B-A3B-Thinking.config.json")
    rope = '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 262144}}'
    flags = {"max-model-len": "1048576", "kv-cache-memory-bytes": "40G"}
    with pytest.raises(InputError, match="max_position_embeddings=262144"):
        model, args = build_engine_args(qwen3_next, flags, [])
        plan(model, args)
    model, args = build_engine_args(qwen3_next, flags, [], rope)
    assert plan(model, args).max_model_len == 1_048_576  # 262,144 x yarn factor 4
    with pytest.raises(InputError, match="--hf-overrides"):
        build_engine_args(qwen3_next, flags, [], "[1]")


def test_eagle_drafter_architecture_must_exist_in_vllm() -> None:
    from dryboot.vllm.models.registry import drafter_architecture

    # transformers_utils/configs/eagle.py names the drafter Eagle<arch> / Eagle3<arch> / DFlash<arch>
    assert drafter_architecture("eagle", "LlamaForCausalLM", "d.json", "0.28.0") == "EagleLlamaForCausalLM"
    assert drafter_architecture("eagle3", "Qwen3ForCausalLM", "d.json", "0.28.0") == "Eagle3Qwen3ForCausalLM"
    assert drafter_architecture("dflash", "DFlashDraftModel", "d.json", "0.28.0") == "DFlashDraftModel"
    with pytest.raises(InputError, match=r"\['EagleDFlashDraftModel'\] are not supported"):
        drafter_architecture("eagle", "DFlashDraftModel", "d.json", "0.28.0")


@pytest.mark.parametrize(
    ("version", "release"), [("0.27.1", "0.27.1"), ("0.31.2", "0.31.0"), ("0.33.0", "0.33.0"), ("0.34.1", "0.33.0")]
)
def test_drafter_architecture_is_checked_against_the_plans_release(version: str, release: str) -> None:
    """The refusal names the release planned (its table entry) and reads that release's registry:
    DFlash2DraftModel came in 0.28.0, DFlash2BeamDraftModel in 0.33.0."""
    from dryboot.vllm.models.registry import drafter_architecture

    with pytest.raises(InputError, match=rf"\(vLLM {release} builds an? eagle drafter of DFlashDraftModel as"):
        drafter_architecture("eagle", "DFlashDraftModel", "d.json", version)
    for arch, first in (("DFlash2DraftModel", "0.28.0"), ("DFlash2BeamDraftModel", "0.33.0")):
        if release >= first:
            assert drafter_architecture("dflash", arch, "d.json", version) == arch
        else:
            with pytest.raises(InputError, match=rf"\['{arch}'\] are not supported for now \(vLLM {release} "):
                drafter_architecture("dflash", arch, "d.json", version)


def test_granite4_layer_types_and_mixer_width() -> None:
    """``GraniteMoeHybridForCausalLM``: ``layer_types`` in either transformers spelling; absent,
    every layer is Mamba2 (``GraniteMoeHybridConfig``); the mixer is ``mamba_expand * hidden``
    wide and a ``"auto"`` head dim is that width over the heads."""
    base = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 768}
    old = geometry_from_config({**base, "num_hidden_layers": 2, "layer_types": ["mamba", "attention"]})
    new = geometry_from_config({**base, "num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"]})
    assert old.layer_kinds == new.layer_kinds == (LayerKind.MAMBA2, LayerKind.FULL)
    every = geometry_from_config({**base, "num_hidden_layers": 3, "mamba_n_heads": 24})
    assert every.layer_kinds == (LayerKind.MAMBA2,) * 3
    assert every.mamba.mamba2 is not None and (every.mamba.mamba2.head_dim, every.mamba.mamba2.d_inner) == (64, 1536)


def test_granite4_heads_that_miss_the_width_are_refused() -> None:
    """transformers' ``validate_architecture``: heads x head dim must equal the mixer width."""
    with pytest.raises(InputError) as info:
        geometry_from_config(
            {
                "architectures": ["GraniteMoeHybridForCausalLM"],
                "model_type": "granitemoehybrid",
                "num_hidden_layers": 2,
                "hidden_size": 768,
                "mamba_n_heads": 24,
                "mamba_d_head": 32,
            }
        )
    assert info.value.where == "mamba_d_head"


def test_falcon_h1_layers_keep_attention_and_mamba() -> None:
    """``FalconH1ParallelHybrid``: attention at ``model.layers.i.attn``, the Mamba2 branch at
    ``model.layers.<n + i>.mixer``."""
    m = geometry_from_config(
        {"architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "num_hidden_layers": 2}
    )
    assert [name for name, _ in m.layer_table()] == [
        "model.layers.0.attn",
        "model.layers.1.attn",
        "model.layers.2.mixer",
        "model.layers.3.mixer",
    ]
    assert m.mamba.mamba2 is not None and m.mamba.mamba2.d_inner == 1024  # FalconH1Config: mamba_d_ssm 1024


def test_lfm2_layers_from_full_attn_idxs_and_moe_needs_layer_types() -> None:
    """``Lfm2Config`` derives ``layer_types`` from ``full_attn_idxs``; vLLM's ``Lfm2MoeConfig``
    does not, and ``lfm2_moe.py`` indexes ``layer_types``."""
    m = geometry_from_config(
        {
            "architectures": ["Lfm2ForCausalLM"],
            "model_type": "lfm2",
            "num_hidden_layers": 3,
            "conv_dim": 2048,
            "full_attn_idxs": [1],
        }
    )
    assert m.layer_kinds == (LayerKind.SHORT_CONV, LayerKind.FULL, LayerKind.SHORT_CONV)
    assert m.layer_name(0) == "model.layers.0.short_conv"
    with pytest.raises(InputError) as info:
        geometry_from_config(
            {"architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe", "num_hidden_layers": 2}
        )
    assert info.value.where == "layer_types"
    with pytest.raises(InputError) as info:  # conv_dim is a checkpoint key, not a class default
        geometry_from_config({"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "num_hidden_layers": 2})
    assert info.value.where == "conv_dim"


def test_zamba2_one_attention_cache_per_hybrid_layer() -> None:
    """``Zamba2Model``: shared attention weights, but one ``Attention`` (``model.attn.<j>``) per
    ``hybrid`` layer; every layer keeps a Mamba2 state at ``<H + i>.mixer``."""
    m = geometry_from_config(
        {
            "architectures": ["Zamba2ForCausalLM"],
            "model_type": "zamba2",
            "num_hidden_layers": 3,
            "layers_block_type": ["hybrid", "mamba", "hybrid"],
            "hidden_size": 512,
            "num_attention_heads": 8,
        }
    )
    assert [name for name, _ in m.layer_table()] == ["model.attn.0", "model.attn.1", "2.mixer", "3.mixer", "4.mixer"]
    assert (m.num_kv_heads, m.head_dim) == (8, 128)  # Zamba2Config: attention_head_dim = 2 * hidden / heads


def test_kimi_linear_kda_layers_and_state() -> None:
    """``KimiLinearConfig.is_kda_layer``: layer ``i`` is KDA when ``i + 1`` is in ``kda_layers``,
    else MLA; every layer is ``model.layers.i.self_attn``."""
    m = geometry_from_config(
        {
            "architectures": ["KimiLinearForCausalLM"],
            "model_type": "kimi_linear",
            "num_hidden_layers": 3,
            "num_attention_heads": 16,
            "kv_lora_rank": 512,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
            "mla_use_nope": True,
            "linear_attn_config": {
                "head_dim": 128,
                "num_heads": 16,
                "short_conv_kernel_size": 4,
                "kda_layers": [1, 3],
                "full_attn_layers": [2],
            },
        }
    )
    assert m.layer_kinds == (LayerKind.KDA, LayerKind.MLA, LayerKind.KDA)
    assert m.layer_name(1) == "model.layers.1.self_attn"
    assert m.head_dim == 576  # kv_lora_rank + qk_rope_head_dim


def test_kimi_linear_without_linear_attn_config_is_refused() -> None:
    """vLLM's ``get_mamba_state_shape_from_config`` subscripts ``linear_attn_config``
    (TypeError at engine start)."""
    with pytest.raises(InputError) as info:
        geometry_from_config(
            {"architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear", "num_hidden_layers": 2}
        )
    assert info.value.where == "linear_attn_config"


def test_mamba2_width_from_the_file_or_expand() -> None:
    """``Mamba2DecoderLayer``: the mixer spans the file's ``intermediate_size`` when given, else
    ``expand * hidden_size``; ``Mamba2Config`` refuses heads that do not tile ``expand * hidden``."""
    base = {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "num_hidden_layers": 2}
    m = geometry_from_config({**base, "hidden_size": 1024, "num_heads": 32, "head_dim": 64})
    assert m.mamba.attention_free and m.mamba.mamba2 is not None and m.mamba.mamba2.d_inner == 2048
    assert m.layer_kinds == (LayerKind.MAMBA2,) * 2
    with pytest.raises(InputError) as info:
        geometry_from_config({**base, "hidden_size": 1024, "num_heads": 16, "head_dim": 64})
    assert info.value.where == "num_heads"


def test_lfm2_vl_reads_its_text_config() -> None:
    """``Lfm2VLForConditionalGeneration`` builds the LFM2 language model of its ``text_config``
    under ``language_model.model.layers``; its hybrid block takes a ShortConv state as wide as
    ``hidden_size`` (``get_mamba_state_shape_from_config``), so another ``conv_dim`` is refused."""
    text = {
        "architectures": ["Lfm2ForCausalLM"],
        "model_type": "lfm2",
        "num_hidden_layers": 2,
        "hidden_size": 1024,
        "conv_dim": 1024,
        "full_attn_idxs": [1],
    }
    wrapper = {"architectures": ["Lfm2VlForConditionalGeneration"], "model_type": "lfm2_vl", "text_config": text}
    m = geometry_from_config(wrapper)
    assert m.layer_kinds == (LayerKind.SHORT_CONV, LayerKind.FULL)
    assert m.layer_name(0) == "language_model.model.layers.0.short_conv"
    assert m.parallel.vision_num_heads == 12  # Siglip2VisionConfig, the default vision_config
    with pytest.raises(InputError) as info:
        geometry_from_config({**wrapper, "text_config": {**text, "conv_dim": 512}})
    assert info.value.where == "text_config.conv_dim"


def gemma3n(**extra: object) -> dict[str, object]:
    return {"architectures": ["Gemma3nForCausalLM"], "model_type": "gemma3n_text", "num_hidden_layers": 10, **extra}


def test_gemma3n_shared_layers_name_fixed_offsets() -> None:
    # Gemma3nTextConfig: every 5th layer global; Gemma3nAttention: a shared sliding layer names
    # first - 2, a shared global one first - 1, whatever those layers are
    m = geometry_from_config(gemma3n(num_kv_shared_layers=5), "g3n.json")
    S, F, N = LayerKind.SLIDING, LayerKind.FULL, LayerKind.NONE
    assert m.layer_kinds == (S, S, S, S, F, N, N, N, N, N)
    assert m.kv_sharing == ((5, 3), (6, 3), (7, 3), (8, 3), (9, 4))
    early = geometry_from_config(gemma3n(num_hidden_layers=4, num_kv_shared_layers=3), "g3n.json")
    assert early.layer_kinds == (S, S, S, S) and early.kv_sharing == ()  # targets at index -1


def test_gemma3n_per_layer_lists_must_match_the_layers() -> None:
    with pytest.raises(InputError) as info:
        geometry_from_config(gemma3n(intermediate_size=[512] * 9), "g3n.json")
    assert info.value.where == "intermediate_size"


def hunyuan(architecture: str = "HunYuanDenseV1ForCausalLM", **extra: object) -> dict[str, object]:
    return {"architectures": [architecture], "num_hidden_layers": 4, "num_attention_heads": 16, **extra}


def test_hunyuan_head_size_and_cla() -> None:
    # hunyuan_v1.py HunYuanAttention: head_dim if set and non-zero, else attention_head_dim,
    # else hidden_size // heads (HunYuanDenseV1Config: hidden_size 4096)
    assert geometry_from_config(hunyuan(head_dim=0, attention_head_dim=96), "h.json").head_dim == 96
    assert geometry_from_config(hunyuan(), "h.json").head_dim == 256
    # _get_cla_factor: the factor counts only with use_cla, and 1 keeps every layer a decoder
    assert geometry_from_config(hunyuan(cla_share_factor=2), "h.json").num_layers == 4
    assert geometry_from_config(hunyuan(use_cla=True, cla_share_factor=1), "h.json").num_layers == 4
    with pytest.raises(InputError) as info:
        geometry_from_config(hunyuan(use_cla=True, cla_share_factor=2), "h.json")
    assert info.value.where == "use_cla" and "AssertionError" in info.value.reason


def test_hunyuan_moe_needs_experts_and_the_block_keys() -> None:
    moe = {"moe_topk": 2, "moe_intermediate_size": 256, "use_mixed_mlp_moe": False, "num_shared_expert": 1}
    arch = "HunYuanMoEV1ForCausalLM"
    assert geometry_from_config(hunyuan(arch, num_experts=4, **moe), "h.json").parallel.moe_experts == (
        "num_experts",
        4,
    )
    with pytest.raises(InputError, match="No HunYuanMoE layer"):
        geometry_from_config(hunyuan(arch, **moe), "h.json")  # HunYuanMoEV1Config: num_experts 1
    with pytest.raises(InputError) as info:
        geometry_from_config(hunyuan(arch, num_experts=4), "h.json")
    assert info.value.where == "moe_topk"


def test_gemma4_assistant_shares_the_targets_caches() -> None:
    import json
    from pathlib import Path

    from dryboot.vllm.models.gemma import assistant_overrides, share_with_target
    from dryboot.vllm.transformers_utils.config import apply_hf_overrides

    data = json.loads((Path(__file__).parent / "fidelity/data/architectures/Gemma4MTPModel.json").read_text())
    # SpeculativeConfig.hf_config_override: Gemma4MTPModel, the assistant's own sharing off
    over = assistant_overrides(data, "mtp", "a.json")
    assert over == {"architectures": ["Gemma4MTPModel"], "text_config": {"num_kv_shared_layers": 0}}
    with pytest.raises(InputError):
        assistant_overrides(data, "draft_model", "a.json")
    assert over is not None
    drafter = geometry_from_config(apply_hf_overrides(data, over), "a.json")
    assert drafter.layer_kinds == (LayerKind.SLIDING,) * 3 + (LayerKind.FULL,)
    target = geometry_from_config(
        json.loads((Path(__file__).parent / "fidelity/data/architectures/Gemma4ForCausalLM.json").read_text()), "t.json"
    )
    # Gemma4Proposer._setup_gemma4_kv_sharing: every draft layer reads a target layer's cache
    assert share_with_target(drafter, target).layer_kinds == (LayerKind.NONE,) * 4
    with pytest.raises(InputError, match="not verified"):
        share_with_target(drafter, geometry_from_config({"architectures": ["Qwen3ForCausalLM"], **llama()}, "q.json"))


def test_is_causal_false_builds_encoder_only_attention_where_the_model_file_reads_it() -> None:
    # qwen3.py / llama.py: getattr(config, "is_causal", True) false -> EncoderOnlyAttention (no KV
    # cache); qwen3_moe.py ignores the key
    qwen3 = geometry_from_config({"architectures": ["Qwen3ForCausalLM"], **llama(is_causal=False)}, "q.json")
    assert qwen3.attn.encoder_only_attention and qwen3.layer_table() == ()
    moe = {"architectures": ["Qwen3MoeForCausalLM"], **llama(is_causal=False)}
    assert not geometry_from_config(moe, "m.json").attn.encoder_only_attention
    # a wrapper's language model reads its own text_config, not the wrapper's keys
    text = {"model_type": "qwen2", "num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512}
    wrapper = {"architectures": ["Qwen2VLForConditionalGeneration"], "is_causal": False, "text_config": text}
    assert not geometry_from_config(wrapper, "w.json").attn.encoder_only_attention
    wrapper["text_config"] = {**text, "is_causal": False}
    assert geometry_from_config(wrapper, "w.json").attn.encoder_only_attention


def _geo(architecture: str, model_type: str, **cfg: object) -> ModelGeometry:
    return geometry_from_config({"architectures": [architecture], "model_type": model_type, **cfg}, "c.json")


def _refused(architecture: str, model_type: str, **cfg: object) -> InputError:
    with pytest.raises(InputError) as info:
        _geo(architecture, model_type, **cfg)
    return info.value


_MLA = {"num_attention_heads": 8, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128}


def test_longcat_flash_two_mla_caches_per_decoder_layer() -> None:
    # longcat_flash.py FlashDecoderLayer: self_attn is a ModuleList of two DeepseekV2MLAAttention
    m = _geo(
        "LongcatFlashForCausalLM", "longcat_flash", num_layers=3, zero_expert_type="identity", v_head_dim=128, **_MLA
    )
    assert m.layer_kinds == (LayerKind.MLA,) * 6 and m.num_decoder_layers == 3
    assert (m.num_kv_heads, m.head_dim) == (1, 576)  # kv_lora_rank + qk_rope_head_dim
    assert m.layer_name(1) == "model.layers.0.self_attn.1.attn"
    # LongcatMoe asserts zero_expert_type; LongcatFlashConfig keeps num_hidden_layers = 2 * num_layers
    assert _refused("LongcatFlashForCausalLM", "longcat_flash", num_layers=3, **_MLA).where == "zero_expert_type"
    bad = _refused(
        "LongcatFlashForCausalLM", "longcat_flash", num_layers=3, num_hidden_layers=3, zero_expert_type="identity"
    )
    assert bad.where == "num_hidden_layers"


def test_param2moe_reads_its_own_config_class_and_splits_kv_heads_over_tp() -> None:
    # Param2MoEConfig (remote code) defaults: 20 layers, 16 heads, 4 KV heads of 128, first_k_dense_replace 1
    m = _geo("Param2MoEForCausalLM", "param2moe")
    assert m.layer_kinds == (LayerKind.FULL,) * 20 and (m.num_kv_heads, m.head_dim) == (4, 128)
    assert m.parallel.first_moe_layer == 1
    # head_dim null: hidden_size // num_attention_heads, as the config class and param2moe.py write it
    narrow = _geo("Param2MoEForCausalLM", "param2moe", head_dim=None, hidden_size=512, num_attention_heads=8)
    assert narrow.head_dim == 64
    # Param2MoEAttention asserts TP divides the KV heads (no replication below TP)
    family_of(m).verify(m, 4)
    with pytest.raises(InputError, match=r"num_key_value_heads \(4\) must be divisible by tensor-parallel world size"):
        family_of(m).verify(m, 8)
    assert _refused("Param2MoEForCausalLM", "param2moe", num_experts=None).where == "num_experts"


def test_glm4_moe_lite_is_deepseek_mla_with_its_own_refusals() -> None:
    cfg = {"num_hidden_layers": 3, "first_k_dense_replace": 1}
    m = _geo("Glm4MoeLiteForCausalLM", "glm4_moe_lite", **cfg)
    # Glm4MoeLiteConfig defaults: kv_lora_rank 512, qk_rope_head_dim 64, (192, 64, 256) head dims
    assert m.layer_kinds == (LayerKind.MLA,) * 3 and m.head_dim == 576
    assert m.parallel.first_moe_layer == 1
    # the attribute_map writes head_dim over qk_rope_head_dim
    assert _refused("Glm4MoeLiteForCausalLM", "glm4_moe_lite", head_dim=128, **cfg).where == "head_dim"
    missing = _refused("Glm4MoeLiteForCausalLM", "glm4_moe_lite", num_hidden_layers=3)
    assert missing.where == "first_k_dense_replace"


def test_exaone_moe_windows_from_sliding_windows() -> None:
    cfg = {**llama(num_key_value_heads=2), "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    cfg["sliding_window"] = 512
    m = _geo("ExaoneMoeForCausalLM", "exaone_moe", sliding_windows=[256, 256, None, None], **cfg)
    # ExaoneMoeAttention: a null entry leaves the layer to the model-level window, none here
    assert m.layer_kinds == (LayerKind.SLIDING, LayerKind.SLIDING, LayerKind.FULL, LayerKind.FULL)
    assert m.sliding_window == 256
    different = _refused("ExaoneMoeForCausalLM", "exaone_moe", sliding_windows=[256, 128, 512, None], **cfg)
    assert different.where == "sliding_windows"
    assert _refused("ExaoneMoeForCausalLM", "exaone_moe", **cfg).where == "sliding_windows"


def test_minicpm3_and_step3_text_heads() -> None:
    m = _geo("MiniCPM3ForCausalLM", "minicpm3", **llama(num_key_value_heads=2))
    assert (m.num_kv_heads, m.head_dim) == (8, 96)  # MHA, qk_nope 64 + qk_rope 32 (MiniCPM3Config)
    s = _geo("Step3TextForCausalLM", "step3_text", **llama(num_key_value_heads=8), moe_layers_enum="1,2,3")
    assert (s.num_kv_heads, s.head_dim) == (1, 256)  # Step3TextAttention: one KV head; head_dim 256
    assert _refused("Step3TextForCausalLM", "step3_text", **llama()).where == "moe_layers_enum"


def test_step3p5_heads_by_layer_type() -> None:
    cfg = {
        **llama(num_attention_groups=2, head_dim=64, max_position_embeddings=4096),
        "sliding_window": 512,
        "layer_types": ["full_attention"] + ["sliding_attention"] * 3 + ["full_attention"],  # cut to 4
        "attention_other_setting": {
            "attention_type": "full_attention",
            "num_attention_heads": 16,
            "num_attention_groups": 4,
            "head_dim": 128,
        },
    }
    m = _geo("Step3p5ForCausalLM", "step3p5", **cfg)
    assert m.layer_kinds == (LayerKind.FULL,) + (LayerKind.SLIDING,) * 3
    assert (m.num_kv_heads, m.head_dim) == (2, 64)
    assert m.full_attention is not None and (m.full_attention.num_kv_heads, m.full_attention.head_dim) == (4, 128)
    assert m.parallel.extra_attention_heads == (16,) and m.parallel.first_moe_layer == 1
    # Step3p5Config defaults max_position_embeddings to None, which the rotary embedding cannot take
    no_len = {k: v for k, v in cfg.items() if k != "max_position_embeddings"}
    assert _refused("Step3p5ForCausalLM", "step3p5", **no_len).where == "max_position_embeddings"


def test_falcon_kv_heads_and_cache_config() -> None:
    m = _geo("FalconForCausalLM", "falcon", num_hidden_layers=2, hidden_size=512, num_attention_heads=8)
    # FalconConfig: multi_query (one KV head); FalconAttention builds Attention without cache_config
    assert (m.num_kv_heads, m.head_dim) == (1, 64) and family_of(m).kv_cache_dtype(m, "fp8") == "auto"
    new = _geo(
        "FalconForCausalLM",
        "falcon",
        num_hidden_layers=2,
        hidden_size=512,
        num_attention_heads=8,
        num_kv_heads=2,
        new_decoder_architecture=True,
        sliding_window=128,
    )
    assert new.num_kv_heads == 2 and new.layer_kinds == (LayerKind.FULL,) * 2
    assert _refused("FalconForCausalLM", "falcon", alibi=True).where == "alibi"
    assert _refused("RWForCausalLM", "RefinedWebModel", n_layer=2).where == "rope_parameters"


def test_hrm_text_one_cache_per_step_and_layer() -> None:
    m = _geo("HrmTextForCausalLM", "hrm_text", num_hidden_layers=2, H_cycles=2, L_cycles=3)
    assert m.layer_kinds == (LayerKind.FULL,) * 16  # 2 per stack x 2 H cycles x (3 L cycles + 1)
    assert (m.num_kv_heads, m.head_dim) == (12, 128) and m.parallel.pp_refusal is not None
    assert _geo("HrmTextForCausalLM", "hrm_text", num_hidden_layers=16, num_layers_per_stack=2).num_layers == 16


def test_mimo_v2_flash_diffkv_layers() -> None:
    cfg = {
        "num_hidden_layers": 2,
        "layernorm_epsilon": 1e-5,
        "hybrid_layer_pattern": [0, 1],
        "swa_num_attention_heads": 64,
        "swa_num_key_value_heads": 8,
        "swa_head_dim": 192,
        "swa_v_head_dim": 128,
        "sliding_window_size": 128,
        "add_swa_attention_sink_bias": True,
    }
    m = _geo("MiMoV2FlashForCausalLM", "mimo_v2_flash", **cfg)
    assert m.layer_kinds == (LayerKind.FULL, LayerKind.SLIDING) and m.sliding_window == 128
    assert (m.num_kv_heads, m.head_dim, m.head_dim_v) == (8, 192, 128) and m.attn.attention_sinks
    assert m.full_attention is not None and m.full_attention.num_kv_heads == 4  # MiMoV2FlashConfig defaults
    extra = extra_of(m, MiMoV2Extra)
    assert extra is not None and extra.diffkv and family_of(m).kv_cache_dtype(m, "fp8") == "auto"
    no_swa = {k: v for k, v in cfg.items() if k != "swa_head_dim"}
    assert _refused("MiMoV2FlashForCausalLM", "mimo_v2_flash", **no_swa).where == "swa_head_dim"


def test_dflash_null_mask_token_id_fails_on_the_v2_runner_only() -> None:
    """``dflash_config.mask_token_id: null`` (SpecForge's Qwen3.5-27B DFlash drafter): vLLM's V2
    model runner reads the key as ``int()`` and fails (0.29+, where DFlash always runs on V2); the
    0.28 V1 proposer serves it."""

    public = Path(__file__).resolve().parent / "data" / "configs" / "public"
    spec = json.dumps(
        {"method": "dflash", "model": str(public / "specforge--qwen3.5-27b-dflash"), "num_speculative_tokens": 1}
    )
    for version, rc in (("0.28.0", 0), ("0.32.0", 2)):
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "dryboot",
                "plan",
                "--model",
                str(public / "Qwen--Qwen3.5-27B"),
                "--max-model-len",
                "8192",
                "--kv-cache-memory-bytes",
                "20000000000",
                "--speculative-config",
                spec,
                "--vllm-version",
                version,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == rc, (version, r.stderr[-500:])
        if rc == 2:
            assert "mask_token_id is null" in r.stderr and "TypeError" in r.stderr
            assert len(r.stderr.strip().splitlines()) == 1


def test_nemotron_h_layers_block_type_gives_pattern_and_layer_count() -> None:
    """transformers' ``NemotronHConfig`` derives ``hybrid_override_pattern`` and
    ``num_hidden_layers`` from ``layers_block_type`` (legacy names remapped); the list wins."""
    base = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "hidden_size": 1024,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "mamba_num_heads": 16,
        "mamba_head_dim": 64,
        "n_groups": 1,
        "ssm_state_size": 128,
        "conv_kernel": 4,
        "vocab_size": 1000,
    }
    types = ["mamba", "moe", "attention", "mlp", "linear_attention", "full_attention"]
    model = geometry_from_config({**base, "layers_block_type": types})
    expected = (LayerKind.MAMBA2, LayerKind.NONE, LayerKind.FULL, LayerKind.NONE, LayerKind.MAMBA2, LayerKind.FULL)
    assert model.layer_kinds == expected
    stale = {**base, "layers_block_type": types, "num_hidden_layers": 52, "hybrid_override_pattern": "M" * 52}
    assert geometry_from_config(stale).layer_kinds == expected
    with pytest.raises(InputError, match=r"layers_block_type\[1\]: unknown layer type 'ssm'"):
        geometry_from_config({**base, "layers_block_type": ["mamba", "ssm"]})
    with pytest.raises(InputError, match="layers_block_type: must be a non-empty list"):
        geometry_from_config({**base, "layers_block_type": "M*"})


#: DeepSeek-OCR's published language_config, trimmed to what the attention layers read
_DSOCR_TEXT = {
    "architectures": ["DeepseekV2ForCausalLM"],
    "hidden_size": 1280,
    "num_attention_heads": 10,
    "num_key_value_heads": 10,
    "num_hidden_layers": 12,
    "kv_lora_rank": None,
    "q_lora_rank": None,
    "qk_nope_head_dim": 0,
    "qk_rope_head_dim": 0,
    "v_head_dim": 0,
    "max_position_embeddings": 8192,
}


def _dsocr(**text: object) -> ModelGeometry:
    return geometry_from_config(
        {
            "architectures": ["DeepseekOCRForCausalLM"],
            "model_type": "deepseek_vl_v2",
            "language_config": {**_DSOCR_TEXT, **text},
        }
    )


def test_deepseek_without_mla_is_plain_attention() -> None:
    """qk_nope = qk_rope = 0: ``DeepseekAttention``, num_key_value_heads heads of hidden / heads
    (DeepSeek-OCR: 12 layers of 10 KV heads of 128, as vLLM serves it)."""
    m = _dsocr()
    assert m.layer_kinds == (LayerKind.FULL,) * 12
    assert (m.num_kv_heads, m.head_dim, m.head_dim_v) == (10, 128, 128)
    assert not m.use_mla
    gqa = _dsocr(num_key_value_heads=2)  # the KV heads are num_key_value_heads, not the query heads
    assert (gqa.num_kv_heads, gqa.head_dim) == (2, 128)


@pytest.mark.parametrize(
    ("text", "field", "says"),
    [
        # the model config would say MLA (kv_lora_rank set) under plain attention layers
        ({"kv_lora_rank": 512}, "kv_lora_rank", "not modelled"),
        # DeepseekV2Attention adds the null rank to qk_rope_head_dim: vLLM fails (TypeError)
        ({"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}, "kv_lora_rank", "TypeError"),
    ],
)
def test_deepseek_without_mla_refusals(text: dict[str, object], field: str, says: str) -> None:
    with pytest.raises(InputError) as info:
        _dsocr(**text)
    assert field in info.value.line() and says in info.value.line()


def test_deepseek_ocr_without_kv_lora_rank_is_refused() -> None:
    """Absent, kv_lora_rank is null in vLLM 0.28.0's DeepseekVLV2TextConfig and 512 from 0.29.0."""
    text = {k: v for k, v in _DSOCR_TEXT.items() if k != "kv_lora_rank"}
    with pytest.raises(InputError) as info:
        geometry_from_config(
            {"architectures": ["DeepseekOCRForCausalLM"], "model_type": "deepseek_vl_v2", "language_config": text}
        )
    assert "kv_lora_rank" in info.value.line() and "differs by release" in info.value.line()


def test_deepseek_v2_with_null_kv_lora_rank_is_refused() -> None:
    """transformers' DeepseekV2Config types kv_lora_rank int: vLLM 0.28.0 and 0.33.0 refuse a
    standalone config with null (recorded, ``test_releases.py`` dsv2-mha); only DeepSeek-OCR's
    text config class takes it."""
    cfg = {**_DSOCR_TEXT, "model_type": "deepseek_v2"}
    with pytest.raises(InputError) as info:
        geometry_from_config(cfg)
    assert "kv_lora_rank" in info.value.line() and "Validation error for field" in info.value.line()


def _tiny(architecture: str, **changes: object) -> dict[str, object]:
    path = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures" / f"{architecture}.json"
    config: dict[str, object] = json.loads(path.read_text())
    return {k: v for k, v in {**config, **changes}.items() if v is not None}


def test_apertus_sliding_layer_without_a_window_fails_as_vllm_fails() -> None:
    # apertus.py reads config.sliding_window for a sliding_attention layer; ApertusConfig has no such
    # attribute (recorded on 0.28.0 and 0.33.0: AttributeError at the model's build)
    with pytest.raises(InputError, match="'ApertusConfig' object has no attribute 'sliding_window'"):
        geometry_from_config(_tiny("ApertusForCausalLM", sliding_window=None))
    plain = geometry_from_config(_tiny("ApertusForCausalLM", sliding_window=None, layer_types=None))
    assert plain.layer_kinds == (LayerKind.FULL,) * 3


def test_apertus_is_causal_false_builds_encoder_only_attention() -> None:
    # apertus.py: getattr(config, "is_causal", True) false -> EncoderOnlyAttention (0.28.0 and
    # 0.33.0 start it with no KV cache group); dryboot refuses that start by name, as for Llama
    m = geometry_from_config(_tiny("ApertusForCausalLM", is_causal=False))
    assert m.attn.encoder_only_attention


def test_rnj1_chunked_layers_slide_and_need_their_rope_entry() -> None:
    m = geometry_from_config(_tiny("Rnj1ForCausalLM"))
    assert m.layer_kinds == (LayerKind.SLIDING, LayerKind.SLIDING, LayerKind.FULL) and m.sliding_window == 256
    # a chunked layer whose rope_parameters has no chunked_attention entry: get_rope gets the whole
    # mapping (recorded on 0.33.0: TypeError: unhashable type: 'dict')
    with pytest.raises(InputError, match="unhashable type: 'dict'"):
        geometry_from_config(_tiny("Rnj1ForCausalLM", rope_parameters=None))
    # Gemma3TextConfig's own layer_types (every 6th full): all three sliding_attention, so the
    # model-level window (CacheConfig.sliding_window) reaches every layer
    m = geometry_from_config(_tiny("Rnj1ForCausalLM", layer_types=None, rope_parameters=None))
    assert m.layer_kinds == (LayerKind.SLIDING,) * 3 and m.sliding_window == 256


def test_rnj1_layers_refuse_every_backend_but_triton() -> None:
    from dryboot.vllm.models.rnj1 import verify_backend

    m = geometry_from_config(_tiny("Rnj1ForCausalLM"))
    verify_backend(m, "TRITON_ATTN", "--attention-backend")
    with pytest.raises(
        InputError, match="Chunked attention with lookback requires the Triton backend, but got FLASH_ATTN"
    ):
        verify_backend(m, "FLASH_ATTN", "--attention-backend")
    # no chunked layer: chunk_lookback=-1 still reaches the impl (recorded on 0.33.0)
    m = geometry_from_config(_tiny("Rnj1ForCausalLM", layer_types=None, rope_parameters=None))
    with pytest.raises(InputError, match=r"FlashAttentionImpl\.__init__\(\) got an unexpected keyword argument"):
        verify_backend(m, "FLASH_ATTN", "--attention-backend")


def test_nemotron_h_groups_read_two_ways_are_refused() -> None:
    """A Nemotron-H config giving ``n_groups`` and ``mamba_n_groups`` apart: vLLM's own NemotronHConfig
    (0.27.1-0.31.0) keeps ``n_groups``, transformers' (0.32+) ``mamba_n_groups``; refused by name, the
    same value twice is read as usual."""
    path = Path(__file__).parent / "fidelity" / "data" / "architectures" / "NemotronHForCausalLM.json"
    cfg = json.loads(path.read_text())
    same = geometry_from_config({**cfg, "mamba_n_groups": cfg["n_groups"]}).mamba.mamba2
    assert same is not None and same.n_groups == cfg["n_groups"]
    with pytest.raises(InputError, match=r"differs from n_groups 8: vLLM 0\.27\.1-0\.31\.0 read n_groups"):
        geometry_from_config({**cfg, "mamba_n_groups": 4})
