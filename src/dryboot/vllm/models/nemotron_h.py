"""Nemotron-H: Mamba2 layers with a few attention layers, by ``hybrid_override_pattern`` (or the
``layers_block_type`` list newer configs give instead: :func:`layers_block_pattern`).

Mirrors ``vllm/model_executor/models/nemotron_h.py`` fed by vLLM's ``NemotronHConfig``
(``transformers_utils/configs/nemotron_h.py``): ``M`` Mamba2, ``*`` attention, ``-``/``E``
MLP or MoE (no cache). The SSM state is float32 unless ``mamba_ssm_cache_dtype`` says otherwise
(``NemotronHForCausalLM``'s state dtype hook).
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, Mamba2, ModelGeometry, ssm_dtype
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import geometry, num_layers

_PATTERN = {"M": LayerKind.MAMBA2, "*": LayerKind.FULL, "-": LayerKind.NONE, "E": LayerKind.NONE}


#: ``layers_block_type`` entries (and their legacy names, transformers' ``remap_legacy_layer_types``)
#: as ``hybrid_override_pattern`` symbols (``NemotronHConfig._list_to_pattern``)
_BLOCK_SYMBOLS = {
    "linear_attention": "M",
    "mamba": "M",
    "full_attention": "*",
    "attention": "*",
    "mlp": "-",
    "moe": "E",
}


def layers_block_pattern(f: ConfigFields) -> str | None:
    """The ``hybrid_override_pattern`` transformers' ``NemotronHConfig`` derives from a config's
    ``layers_block_type`` list (which then also gives ``num_hidden_layers``, its length), or
    ``None`` without one.

    :raises InputError: not a list of the known layer types.
    """
    types = f.data.get("layers_block_type")
    if types is None:
        return None
    if not isinstance(types, list) or not types:
        raise InputError(f.source, f.where("layers_block_type"), "must be a non-empty list of layer types")
    for i, t in enumerate(types):
        if not isinstance(t, str) or t not in _BLOCK_SYMBOLS:
            raise InputError(
                f.source,
                f"{f.where('layers_block_type')}[{i}]",
                f"unknown layer type {t!r} (one of {', '.join(sorted(_BLOCK_SYMBOLS))})",
            )
    return "".join(_BLOCK_SYMBOLS[t] for t in types)


def defaults(f: ConfigFields) -> dict[str, Any]:
    """NemotronHConfig's defaults of the keys read here: vLLM 0.27.1-0.31.0's own class and 0.32.0-0.33.0's
    transformers class both default 8 KV heads, a 4,096-token context and 8 SSM groups (``n_groups``, which
    either class also takes as ``mamba_n_groups``)."""
    groups = f.data.get("mamba_n_groups", 8)
    out: dict[str, Any] = {"num_key_value_heads": 8, "max_position_embeddings": 4096, "n_groups": groups}
    pattern = layers_block_pattern(f)
    if pattern is not None:
        # NemotronHConfig: num_hidden_layers and hybrid_override_pattern are properties of the list
        out |= {"num_hidden_layers": len(pattern), "hybrid_override_pattern": pattern}
    return out


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    derived = layers_block_pattern(f)
    if derived is not None and (f.given("num_hidden_layers") or f.given("hybrid_override_pattern")):
        # the list wins over both (NemotronHConfig ignores them when it is given)
        f = ConfigFields(
            f.source,
            {**f.data, "num_hidden_layers": len(derived), "hybrid_override_pattern": derived},
            f.prefix,
            root=f.root,
            defaults=f.defaults,
        )
    n = num_layers(f)
    pattern = f.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != n:
        raise InputError(
            f.source, f.where("hybrid_override_pattern"), f"must be a string of {n} characters (M, *, -, E)"
        )
    bad = sorted(set(pattern) - set(_PATTERN))
    if bad:
        raise InputError(f.source, f.where("hybrid_override_pattern"), f"unknown layer symbols {bad}")
    kinds = tuple(_PATTERN[c] for c in pattern)
    num_heads = f.integer("num_attention_heads")
    head_dim = f.integer("head_dim") if f.given("head_dim") else f.integer("attention_head_dim", default=128)
    kv = f.integer("num_key_value_heads")
    if f.given("n_groups") and "mamba_n_groups" in f.data and f.data["mamba_n_groups"] != f.get("n_groups"):
        # vLLM's own NemotronHConfig (0.27.1-0.31.0) keeps n_groups, transformers' (0.32+) mamba_n_groups
        raise InputError(
            f.source,
            f.where("mamba_n_groups"),
            f"{f.data['mamba_n_groups']!r} differs from n_groups {f.get('n_groups')!r}: vLLM 0.27.1-0.31.0 read "
            "n_groups, 0.32+ mamba_n_groups; not modelled",
        )
    mamba2 = Mamba2(
        num_heads=f.integer("mamba_num_heads"),
        head_dim=f.integer("mamba_head_dim"),
        n_groups=f.integer("n_groups"),
        state_size=f.integer("ssm_state_size"),
        conv_kernel=f.integer("conv_kernel"),
        chunk_size=f.opt_int("chunk_size"),
    )
    hf_ssm = ssm_dtype(f, "mamba_ssm_cache_dtype") if f.has("mamba_ssm_cache_dtype") else "float32"
    return geometry(
        f,
        architecture,
        "nemotron_h",
        kinds,
        heads=(num_heads, kv, head_dim),
        mamba2=mamba2,
        hf_ssm_dtype=hf_ssm,
        hybrid_class=True,
        hf_layer_types=True,
        hf_legacy_attention_name=True,
        **_mtp(f),
    )


def _mtp(f: ConfigFields) -> dict[str, Any]:
    """The MTP module vLLM builds under ``"method": "mtp"`` (``nemotron_h_mtp.py``'s
    ``NemotronHMultiTokenPredictor``): one step of ``mtp_hybrid_override_pattern`` sublayers
    (``*`` attention, ``E`` MoE; from ``mtp_layers_block_type`` when the config lists them;
    ``"*E"`` by default), named ``mtp.layers.<i>``; each attention sublayer keeps a full-attention
    cache of the target's heads (``mtp.layers.<i>.mixer.attn``). Empty without
    ``num_nextn_predict_layers``.

    :raises InputError: more than one MTP step, or a pattern symbol vLLM does not build (its
        ``AssertionError`` / ``NotImplementedError``).
    """
    steps = f.integer("num_nextn_predict_layers", minimum=0) if f.given("num_nextn_predict_layers") else 0
    if not steps:
        return {}
    listed = f.data.get("mtp_layers_block_type")
    if isinstance(listed, list) and all(isinstance(t, str) and t in _BLOCK_SYMBOLS for t in listed) and listed:
        pattern = "".join(_BLOCK_SYMBOLS[t] for t in listed)
        where = f.where("mtp_layers_block_type")
    else:
        raw = f.get("mtp_hybrid_override_pattern")
        pattern = raw if isinstance(raw, str) else "*E"
        where = f.where("mtp_hybrid_override_pattern")
    if steps != 1:
        # vLLM asserts one step ("Only one MTP layer is supported for NemotronH-MTP"): not modelled
        return {"num_mtp_layers": steps, "mtp_kind": None}
    if not pattern or set(pattern) - {"*", "E"}:
        raise InputError(
            f.source, where, f"MTP pattern {pattern!r}: vLLM's NemotronH MTP builds only '*' and 'E' sublayers"
        )
    names = tuple(f"mtp.layers.{i}.mixer.attn" for i, c in enumerate(pattern) if c == "*")
    return {"num_mtp_layers": len(names), "mtp_kind": LayerKind.FULL, "mtp_layer_names": names}


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """vLLM's ``MambaMixer2`` (built only for mamba layers): the groups split across ranks unless
    there is one group.

    :raises InputError: ``n_groups`` neither 1 nor divisible by the TP size.
    """
    m = model.mamba.mamba2
    if m is not None and LayerKind.MAMBA2 in model.kinds and m.n_groups != 1 and m.n_groups % tensor_parallel_size:
        raise InputError(
            "--tensor-parallel-size",
            str(tensor_parallel_size),
            f"{model.source}: n_groups={m.n_groups}: If tensor parallel world size does not divide "
            "num_groups, then num_groups must equal 1.",
        )


def verify_after_attention(model: ModelGeometry, args: EngineArgs, backend: str) -> None:
    """:func:`verify` as a ``verify_built`` hook: for a model class that builds attention before its
    first mamba mixer (Zamba2's shared attention blocks; each Falcon-H1 layer's attention branch
    before its SSM branch), so vLLM refuses a KV cache dtype no backend takes, or a named backend
    that is not valid, before the group split (recorded: ``test_releases`` ``zamba2-g2-*``,
    ``falconh1-g2-*``).

    :raises InputError: ``n_groups`` neither 1 nor divisible by the TP size."""
    verify(model, args.tensor_parallel_size)
