"""Kimi-Linear: Kimi Delta Attention (KDA) layers with some MLA layers.

Mirrors ``KimiLinearForCausalLM`` (``vllm/models/kimi_k3/nvidia/model.py``) fed by vLLM's own
``KimiLinearConfig`` (``transformers_utils/configs/kimi_linear.py``): layer ``i`` is KDA when
``i + 1`` is in ``linear_attn_config["kda_layers"]`` (``KimiLinearConfig.is_kda_layer``), else
multi-head latent attention (one latent head of ``kv_lora_rank + qk_rope_head_dim``, as
DeepSeek's); both are ``model.layers.i.self_attn``. A KDA layer
(``kimi_gdn_linear_attn.py``) with ``num_heads`` heads of ``head_dim`` and a conv kernel of
``short_conv_kernel_size`` keeps a convolution state ``(kernel - 1 + spec, 3 * heads * head_dim
/ TP)`` in the ``--mamba-cache-dtype`` and a recurrent state ``(heads / TP, head_dim,
head_dim)`` in float32 (``kda_state_shape``, ``kda_state_dtype``). From 0.30.0 the model class sizes
the hybrid attention block from a recurrent state in ``--mamba-ssm-cache-dtype`` (bfloat16 halves it)
while the layer keeps float32: its page is padded to that attention page where it fits, else vLLM
asserts (:func:`kda_recurrent_dtype`, :func:`kda_layer_recurrent_dtype`, :func:`outgrown_page`). A
hybrid model class without mamba prefix caching.

With ``use_full_rank_gate`` (Kimi-K3's KDA, ``kimi_k3/nvidia/kda.py`` ``KimiK3DeltaAttention``)
the state is the same; from 0.29.0 its MambaSpec adds a prefill checkpoint block where the layer's
prefill backend is FlashKDA (:func:`kda_prefill_checkpoint_blocks`,
``VersionRules.kda_prefill_checkpoints``; 0.27.1 and 0.28.0 add none). Planned on every release
0.27.1-0.33.0 (recorded; ``VersionRules.kda_full_rank_gate``).

Refused by name: MLA layers without ``mla_use_nope`` (vLLM asserts it), and MLA head dims the SM90
prefill backend does not serve.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, GatedDeltaNet, LayerKind, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.deepseek import check_mla_prefill
from dryboot.vllm.versions import VersionRules


def defaults(f: ConfigFields) -> dict[str, Any]:
    return {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096}


def _kda(f: ConfigFields, n: int) -> tuple[tuple[int, ...], GatedDeltaNet]:
    """(the KDA layer indices, the KDA state parameters) from ``linear_attn_config``."""
    cfg = f.get("linear_attn_config")
    where = f.where("linear_attn_config")
    if cfg is None:
        raise InputError(f.source, where, "required: vLLM's KimiLinearForCausalLM sizes the hybrid block from it")
    where = f.where("linear_attn_config")
    if not isinstance(cfg, dict):
        raise InputError(f.source, where, "must be an object")
    full_rank = _full_rank_gate(f, cfg, where)
    # only KimiK3DeltaAttention reads the bound (and asserts its range)
    bound = _gate_lower_bound(f, cfg, where) if full_rank else None
    layers = cfg.get("kda_layers")
    if not isinstance(layers, list) or cfg.get("full_attn_layers") is None:
        raise InputError(
            f.source, f"{where}.kda_layers", "kda_layers and full_attn_layers must be given (vLLM asserts)"
        )
    sub = ConfigFields(f.source, cfg, f"{where}.", root=f.root)
    kda = tuple(i for i in range(n) if i + 1 in layers)
    # the state sizes the hybrid block even where no layer is KDA (get_mamba_state_shape_from_config)
    heads, dim = sub.integer("num_heads"), sub.integer("head_dim")
    return kda, GatedDeltaNet(heads, heads, dim, dim, sub.integer("short_conv_kernel_size"), full_rank, bound)


def _full_rank_gate(f: ConfigFields, cfg: dict[str, Any], where: str) -> bool:
    """``linear_attn_config.use_full_rank_gate`` (default false): vLLM 0.33.0 builds each KDA layer
    as ``KimiK3DeltaAttention`` (Kimi-K3's full-rank gate) when true.

    :raises InputError: not a JSON boolean."""
    value = cfg.get("use_full_rank_gate", False)
    if not isinstance(value, bool):
        raise InputError(f.source, f"{where}.use_full_rank_gate", f"must be true or false, got {value!r}")
    return value


def _gate_lower_bound(f: ConfigFields, cfg: dict[str, Any], where: str) -> float | None:
    """``linear_attn_config.gate_lower_bound`` (default none): the KDA gate's log lower bound, which
    ``KimiK3DeltaAttention`` asserts lies in [-5, 0) (``_KDA_GATE_LOGBOUND_MIN``) and whose presence
    lets it pick the FlashKDA prefill backend.

    :raises InputError: not a number, or outside [-5, 0) (vLLM's AssertionError)."""
    value = cfg.get("gate_lower_bound")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f.source, f"{where}.gate_lower_bound", f"must be a number, got {value!r}")
    if not -5 <= value < 0:
        raise InputError(
            f.source,
            f"{where}.gate_lower_bound",
            f"must lie in [-5, 0) (KimiK3DeltaAttention asserts it), got {value!r}",
        )
    return float(value)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    kda_layers, kda = _kda(f, n)
    kinds = tuple(LayerKind.KDA if i in kda_layers else LayerKind.MLA for i in range(n))
    heads = f.integer("num_attention_heads")
    dims = (0, 0, 0)
    latent = 0
    if LayerKind.MLA in kinds:
        for key in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank"):
            if f.get(key) is None:
                raise InputError(f.source, f.where(key), "required for the MLA layers (vLLM asserts it)")
        if f.get("mla_use_nope") is not True:
            raise InputError(f.source, f.where("mla_use_nope"), "Kimi-K3 MLA (MultiHeadLatentAttention) is NoPE-only")
        dims = (
            f.integer("qk_nope_head_dim", minimum=0),
            f.integer("qk_rope_head_dim", minimum=0),
            f.integer("v_head_dim"),
        )
        latent = f.integer("kv_lora_rank") + dims[1]
    elif f.get("kv_lora_rank") is not None:
        # no MLA layer, but vLLM's ModelConfig.use_mla still holds: the hybrid alignment sizes
        # the attention block by the latent page (kv_lora_rank + qk_rope_head_dim)
        latent = f.integer("kv_lora_rank") + (f.opt_int("qk_rope_head_dim") or 0)
    return geometry(
        f,
        architecture,
        "kimi_linear",
        kinds,
        heads=(heads, 1, latent),
        head_dim_v=0,
        mla_dims=dims if LayerKind.MLA in kinds else None,
        mla_config=f.get("kv_lora_rank") is not None,
        kda=kda,
        hybrid_class=True,
        mamba_prefix_caching=False,
        layer_names=tuple(f"model.layers.{i}.self_attn" for i in range(n)),
    )


#: the ``--mamba-ssm-cache-dtype`` values ``MambaStateDtypeCalculator.kda_state_dtype`` takes
KDA_SSM_DTYPES = ("auto", "float32", "bfloat16")


def kda_recurrent_dtype(kda: GatedDeltaNet, ssm_flag: str, model: ModelGeometry, rules: VersionRules) -> str:
    """The torch dtype of the KDA recurrent state the model class sizes the hybrid attention block from
    (``get_mamba_state_dtype_from_config``, ``MambaStateDtypeCalculator.kda_state_dtype``): float32 for
    ``auto``, else ``--mamba-ssm-cache-dtype`` (float32 or bfloat16) from 0.30.0 (``kda_ssm_dtype_flag``;
    before, float32 whatever the flag), unless the model class passes none (``GatedDeltaNet.ssm_dtype_flag``).
    A layer's own state may differ: :func:`kda_layer_recurrent_dtype`.

    :raises InputError: another flag value (vLLM's ValueError); a full-rank gate on a release that did
        not verify it (``kda_full_rank_gate``)."""
    if kda.full_rank_gate and not rules.kda_full_rank_gate:
        raise InputError(
            "--vllm-version",
            rules.version,
            f"{model.source}: linear_attn_config.use_full_rank_gate (Kimi-K3's KDA, KimiK3DeltaAttention) is "
            f"not verified against vLLM {rules.version}'s engine start",
        )
    if not rules.kda_ssm_dtype_flag or not kda.ssm_dtype_flag:
        # GLM-5.3-Flash on 0.30.0 / 0.31.0: Glm5NextForCausalLM.get_mamba_state_dtype_from_config passes
        # the conv dtype alone (recorded: glm5-flash8-ssmbf16 aligns to the float32 state)
        return "float32"
    if ssm_flag not in KDA_SSM_DTYPES:
        raise InputError(
            "--mamba-ssm-cache-dtype",
            ssm_flag,
            "vLLM's KDA recurrent state supports only auto, float32 and bfloat16 (ValueError)",
        )
    return "float32" if ssm_flag == "auto" else ssm_flag


def kda_layer_recurrent_dtype(kda: GatedDeltaNet, sizing_dtype: str) -> str:
    """The torch dtype of a KDA layer's own recurrent state (its ``get_state_dtype``, which its MambaSpec
    keeps), given the one the model class sizes the hybrid block from (:func:`kda_recurrent_dtype`):
    Kimi-Linear's plain KDA layer (``KimiGatedDeltaNetAttention``, ``kimi_gdn_linear_attn.py``) passes
    ``kda_state_dtype`` no ``--mamba-ssm-cache-dtype`` on every release 0.27.1-0.33.0, so float32 whatever
    the flag; a full-rank-gate layer (``KimiK3DeltaAttention``, GLM-5.3-Flash's) keeps the sizing dtype.
    Under ``--mamba-ssm-cache-dtype bfloat16`` the plain layer's float32 state is padded to an attention
    page sized for a bfloat16 one, which it may outgrow (:func:`outgrown_page`)."""
    return sizing_dtype if kda.full_rank_gate else "float32"


def outgrown_page(model: ModelGeometry, ssm_flag: str, state_bytes: int, page_padded: int) -> InputError:
    """The refusal where a KDA layer's own state (``state_bytes``, per rank) outgrows the padded mamba
    page (``page_padded``: the attention page sized for the model class's state,
    :func:`kda_recurrent_dtype`): vLLM's ``MambaSpec.page_size_bytes`` asserts ``page_size_padded >=``
    the state's bytes (a bare AssertionError planning the KV cache)."""
    return InputError(
        "--mamba-ssm-cache-dtype",
        ssm_flag,
        f"{model.source}: vLLM sizes the hybrid attention block from a {ssm_flag} KDA recurrent state "
        f"(kda_state_dtype) but {model.architecture}'s KDA layer keeps it in float32, so the layer's state "
        f"({state_bytes:,} B) exceeds the padded mamba page ({page_padded:,} B): vLLM's MambaSpec asserts "
        "page_size_padded >= the state size (AssertionError) and the engine does not start",
    )


#: compute-capability majors FlashKDA serves (``kimi_k3/nvidia/kda.py`` ``is_flashkda_supported``)
FLASHKDA_MAJORS = (9, 10, 12)


def kda_prefill_checkpoint_blocks(
    kda: GatedDeltaNet | None, capability_major: int, model_dtype: str, recurrent_dtype: str
) -> int:
    """Prefill checkpoint blocks of a KDA layer's MambaSpec (``KimiK3DeltaAttention.get_kv_cache_spec``,
    vLLM 0.33.0): 1 where its prefill backend is FlashKDA (``resolve_kda_prefill_backend``'s ``auto``:
    a full-rank gate, SM 9.x/10.x/12.x, bfloat16 activations, ``head_dim`` 128, a bfloat16 or
    float32 recurrent state and a gate lower bound), else 0 (Triton; Kimi-Linear's plain KDA layer)."""
    if kda is None or not kda.full_rank_gate:
        return 0
    flashkda = (
        capability_major in FLASHKDA_MAJORS
        and kda.head_k_dim == 128
        and model_dtype == "bfloat16"
        and recurrent_dtype in ("bfloat16", "float32")
        and kda.gate_lower_bound is not None
    )
    return int(flashkda)


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """The MLA layers' prefill backend, selected as they are built, after their decode attention
    backend (:func:`dryboot.vllm.models.deepseek.check_mla_prefill`).

    :raises InputError: MLA head dims no SM90 prefill backend serves."""
    check_mla_prefill(model)
