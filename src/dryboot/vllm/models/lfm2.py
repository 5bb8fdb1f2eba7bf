"""LFM2 and LFM2-MoE: ShortConv layers with some attention layers, by ``layer_types``.

Mirrors ``vllm/model_executor/models/lfm2.py`` (transformers' ``Lfm2Config``) and
``lfm2_moe.py`` (vLLM's own ``Lfm2MoeConfig``, ``transformers_utils/configs/lfm2_moe.py``):
layer ``i`` is attention (``model.layers.i.self_attn.attn``) when ``layer_types[i]`` is
``full_attention``, else a ``ShortConv`` (``model.layers.i.short_conv``). LFM2 without
``layer_types`` takes attention on the ``full_attn_idxs`` layers (absent: every layer); LFM2-MoE
has no such default (vLLM indexes ``layer_types``). Attention heads are
``hidden_size // num_attention_heads`` wide. A ShortConv keeps one convolution state
``(conv_L_cache - 1, width / TP)`` in the ``--mamba-cache-dtype`` (``short_conv_state_shape``,
``short_conv_state_dtype``: no SSM state, no speculative rows); the width is the config's
``conv_dim`` for LFM2 (a key of the checkpoint's config.json that the config class does not
define) and ``hidden_size`` for LFM2-MoE. A hybrid model class without mamba prefix caching
(``--mamba-cache-mode all`` falls back to ``align``). LFM2-VL (``lfm2_vl.py``) wraps either as
its ``text_config`` (layers under ``language_model.model.layers``) and sizes the hybrid block
with a ShortConv state ``hidden_size`` wide: a ``conv_dim`` other than that is refused (not
modelled).
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry, ShortConv
from dryboot.vllm.models.common import attention_heads, geometry, num_layers

_TYPES = {"full_attention": LayerKind.FULL, "conv": LayerKind.SHORT_CONV}


def _is_moe(f: ConfigFields) -> bool:
    return str(f.get("model_type") or "") == "lfm2_moe"


def defaults(f: ConfigFields) -> dict[str, Any]:
    if _is_moe(f):  # Lfm2MoeConfig.__init__
        return {
            "hidden_size": 2048,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "max_position_embeddings": 128_000,
            "conv_L_cache": 3,
            "num_experts": 32,
            "num_dense_layers": 2,
        }
    return {  # Lfm2Config
        "hidden_size": 2560,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 128_000,
        "conv_L_cache": 3,
    }


def _layer_types(f: ConfigFields, n: int) -> list[Any]:
    types = f.get("layer_types")
    if types is None:
        if _is_moe(f):
            raise InputError(f.source, f.where("layer_types"), "required: vLLM's LFM2-MoE reads one type per layer")
        idxs = f.get("full_attn_idxs")
        if idxs is None:
            idxs = list(range(n))
        if not isinstance(idxs, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in idxs):
            raise InputError(f.source, f.where("full_attn_idxs"), "must be a list of layer indices")
        return ["full_attention" if i in idxs else "conv" for i in range(n)]
    if not isinstance(types, list) or len(types) < n:
        raise InputError(f.source, f.where("layer_types"), f"must list one type per layer ({n})")
    return types[:n]


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    types = _layer_types(f, n)
    for i, t in enumerate(types):
        if t not in _TYPES:
            raise InputError(
                f.source, f"{f.where('layer_types')}[{i}]", f"{t!r} is not modelled (full_attention or conv)"
            )
    kinds = tuple(_TYPES[t] for t in types)
    width = f.integer("hidden_size") if _is_moe(f) else f.integer("conv_dim")
    vl = architecture == "Lfm2VlForConditionalGeneration"
    if vl and width != f.integer("hidden_size"):
        raise InputError(
            f.source,
            f.where("conv_dim"),
            f"{width} differs from hidden_size: LFM2-VL sizes the hybrid block with a ShortConv state as wide as "
            "hidden_size while the layers keep conv_dim; not modelled",
        )
    heads, kv, _ = attention_heads(f)
    return geometry(
        f,
        architecture,
        "lfm2",
        kinds,
        heads=(heads, kv, f.integer("hidden_size") // heads),
        short_conv=ShortConv(conv_dim=width, l_cache=f.integer("conv_L_cache")),
        hybrid_class=True,
        hf_layer_types=True,
        mamba_prefix_caching=False,
        num_experts=f.integer("num_experts") if _is_moe(f) else 0,
        first_moe_layer=f.integer("num_dense_layers", minimum=0) if _is_moe(f) else None,
        # Lfm2MoeForCausalLM's words (0.27.1-0.33.0) when a pipeline stage builds no sparse MoE block
        no_moe_layer="No Lfm2MoeSparseMoeBlock layer found in the model.layers." if _is_moe(f) else None,
        layer_prefix="language_model.model.layers" if vl else "model.layers",
        vision_num_heads=_vision_heads(f) if vl else None,
    )


def _vision_heads(f: ConfigFields) -> int:
    """The SigLIP2 vision tower's attention heads (``lfm2_siglip2.py``; ``Siglip2VisionConfig``
    defaults: 12 heads, 768 wide).

    :raises InputError: heads that do not tile the tower's width (vLLM's ValueError).
    """
    vision = f.root.get("vision_config")
    if vision is None:
        vision = {}
    if not isinstance(vision, dict):
        raise InputError(f.source, "vision_config", "must be an object")
    # Siglip2VisionConfig defaults where the file leaves them out
    v = ConfigFields(
        f.source, vision, "vision_config.", root=f.root, defaults={"hidden_size": 768, "num_attention_heads": 12}
    )
    heads, width = v.integer("num_attention_heads"), v.integer("hidden_size")
    if width % heads:
        raise InputError(
            f.source, v.where("num_attention_heads"), f"embed_dim must be divisible by num_heads ({width}, {heads})"
        )
    return heads


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """``Lfm2MoeSparseMoeBlock``: no more ranks than routed experts; LFM2-VL's vision tower:
    TP divides its heads.

    :raises InputError: ``--tensor-parallel-size`` above ``num_experts`` or not dividing the
        vision heads.
    """
    if model.parallel.vision_num_heads is not None and model.parallel.vision_num_heads % tensor_parallel_size:
        raise InputError(
            "--tensor-parallel-size",
            str(tensor_parallel_size),
            f"{model.source}: vision_config.num_attention_heads={model.parallel.vision_num_heads}: the SigLIP2 vision "
            "tower splits its heads over the TP ranks (vLLM asserts num_heads % tp_size == 0)",
        )
    if model.parallel.num_experts and tensor_parallel_size > model.parallel.num_experts:
        raise InputError(
            "--tensor-parallel-size",
            str(tensor_parallel_size),
            f"{model.source}: Tensor parallel size {tensor_parallel_size} is greater than the number of "
            f"experts {model.parallel.num_experts} (LFM2-MoE)",
        )
