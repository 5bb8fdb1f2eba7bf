"""MiniMax-M3 (``vllm/models/minimax_m3/nvidia/model.py``, ``MiniMaxM3SparseForCausalLM``; the
language model of ``MiniMaxM3SparseForConditionalGeneration``), unquantized, from ``text_config``
(the config itself when it has none):

* per layer two Gemma RMSNorms ``[H]`` (model dtype); attention: ``qkv_proj`` ``[(q + 2 kv) /
  rank, H]`` (key/value heads below TP replicated), on the sparse layers
  (``sparse_attention_config.sparse_attention_freq`` non-zero) fused with the indexer's
  ``index_q`` (one head of ``sparse_index_dim`` per local KV head) and its replicated ``index_k``
  (``MinimaxM3QKVParallelLinearWithIndexer``), ``o_proj`` ``[H, heads x head_dim / TP]``,
  ``q_norm`` / ``k_norm`` ``[head_dim]`` and on sparse layers ``index_q_norm`` / ``index_k_norm``
  ``[sparse_index_dim]``; the attention's scale buffers (``set_default_quant_scales``, the sparse
  layers' own too);
* a dense MLP (``gate_up_proj`` / ``down_proj`` of ``dense_intermediate_size``), or on the layers
  ``moe_layer_freq`` marks a MoE block: the float32 router ``[E, H]`` (``GateLinear``), float32
  ``e_score_correction_bias`` ``[E]`` under ``use_routing_bias``, a shared expert of
  ``intermediate_size x n_shared_experts`` and ``num_local_experts`` experts of
  ``intermediate_size``;

one rotary table ``[max_position_embeddings, head_dim x partial_rotary_factor]``; the embedding
on the first stage, the final norm and the untied head on the last; with sparse layers, the int32
top-k indices ``[max_num_batched_tokens rounded up to 4, max(1, sparse_num_index_heads / TP),
sparse_topk_blocks]`` (a plain attribute: allocated, neither parameter nor buffer; the scheduler's
``max_num_batched_tokens`` is required).

The conditional-generation class adds its vision tower (:func:`vision_tower`) on every TP
rank, dropped by ``--language-model-only`` or image and video limited to 0
(``_mark_tower_model``), on every pipeline stage (0.33: the first only).

MiniMax-M3-MXFP8 (``quant_method: mxfp8``) on vLLM 0.33.0 on SM 8.6 / 8.9 (:func:`mxfp8_on`): every
decoder linear layer (``qkv_proj`` with its indexer rows, ``o_proj``, the dense and shared-expert
MLPs) as :func:`~dryboot.vllm.model_executor.layers.quantization.modelopt.mxfp8_marlin_linear_bytes`,
the experts as :func:`~dryboot.vllm.model_executor.layers.quantization.modelopt.mxfp8_marlin_experts_bytes`;
the routers, head, embedding and vision tower unquantized (``ignored_layers``);
nvidia/MiniMax-M3-NVFP4 (ModelOpt ``MIXED_PRECISION``) there too, and on SM 9.0 through Humming
(``HummingMxfp8LinearKernel``:
:func:`~dryboot.vllm.model_executor.layers.quantization.modelopt.mxfp8_humming_linear_bytes`; the
Humming NVFP4 experts) (:func:`nvfp4_mixed_on`).

Refused by name: other quantized checkpoints and MXFP8 elsewhere (:data:`MODELOPT_REFUSAL`), a tied
head, TP above the experts (vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization import quant_rules
from dryboot.vllm.model_executor.layers.quantization.modelopt import (
    ModelOptQuant,
    modelopt_experts_bytes,
    mxfp8_humming_linear_bytes,
    mxfp8_marlin_experts_bytes,
    mxfp8_marlin_linear_bytes,
)
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, merged, towers_on_stage, unquantized
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block

#: the published quantized MiniMax-M3 checkpoints' methods (MiniMax-M3-MXFP8: ``mxfp8``, served by
#: ModelOpt's ``ModelOptMxFp8Config``; nvidia/MiniMax-M3-NVFP4: ``modelopt`` MIXED_PRECISION)
MODELOPT_METHODS = frozenset({"mxfp8", "modelopt", "modelopt_fp4", "modelopt_mxfp8"})
MODELOPT_REFUSAL = (
    "MiniMax-M3's {method} weights are not modelled: vLLM's layers/quantization/modelopt.py is not sized for "
    "its layers (linear and expert weights repacked after loading for the GPU's kernel: MXFP8 is modelled on vLLM "
    "0.28.0-0.33.0 on SM 8.6 / 8.9 (Marlin) only: on SM 9.0 the experts go through DeepGEMM or Humming; ModelOpt "
    "MIXED_PRECISION on 0.33.0 on SM 8.6 / 8.9 (Marlin) and 9.0 (Humming: kernels/linear/mxfp8/humming.py "
    "HummingMxfp8LinearKernel, Humming's NVFP4 experts), on 0.32.0 on SM 9.0 (Humming) and on 0.28.0 on "
    "SM 8.9 / 9.0 only; SM 10.0+: FlashInfer)"
)


def _sparse(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], set[int]]:
    cfg = config.get("sparse_attention_config") or {}
    if not isinstance(cfg, Mapping):
        raise InputError("config.json", "sparse_attention_config", "an object")
    freq = cfg.get("sparse_attention_freq") or []
    if not isinstance(freq, list):
        raise InputError("config.json", "sparse_attention_config.sparse_attention_freq", "a list per layer")
    return cfg, {i for i, f in enumerate(freq) if f != 0}


def _mlp(h: int, inter: int, tp: int, what: str) -> list[tuple[int, int]]:
    """A gated MLP's two linear layers per rank as (outputs, inputs): ``gate_up_proj``, ``down_proj``."""
    i_r = W._divide(inter, tp, what)
    return [(2 * i_r, h), (h, i_r)]


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    freq = config.get("moe_layer_freq")
    if freq is None:
        return True
    if not isinstance(freq, list) or li >= len(freq):
        raise InputError("config.json", "moe_layer_freq", "a list with one entry per layer")
    return bool(freq[li])


def _mxfp8_linear(n: int, k: int, sms: int, nvfp4_experts: ModelOptQuant | None) -> list[tuple[str, int]]:
    """One MXFP8 decoder linear layer per rank (``n`` outputs, ``k`` inputs): through Humming where
    the MIXED_PRECISION checkpoint's quant config says the GPU ranks it ahead of Marlin (0.33.0 on
    SM 9.0, :func:`nvfp4_mixed_on`), else through Marlin with ``sms`` int32 of per-layer workspace
    (``0``: none)."""
    if nvfp4_experts is not None and nvfp4_experts.humming:
        assert nvfp4_experts.sm_count is not None  # nvfp4_mixed_on requires it
        return mxfp8_humming_linear_bytes(n, k, sm_count=nvfp4_experts.sm_count)
    return [*mxfp8_marlin_linear_bytes(n, k), *[("workspace", 4 * sms)] * bool(sms)]


def text_walk(
    config: Mapping[str, Any],
    par: W.Parallel,
    args: WalkArgs,
    *,
    mxfp8: bool = False,
    nvfp4_experts: ModelOptQuant | None = None,
) -> W.RankWeights:
    """One rank of one stage of the language model (module docstring); ``mxfp8``: the decoder's
    linear layers and experts in MXFP8 through Marlin (:func:`mxfp8_on`); ``nvfp4_experts``: the
    experts in NVFP4 instead (:func:`nvfp4_mixed_on`).

    :raises InputError: what the module docstring refuses, sizes TP does not divide, no
        ``max_num_batched_tokens`` for a model with sparse layers."""
    if mxfp8:
        config = {k: v for k, v in config.items() if k != "quantization_config"}
        args = replace(args, hf_quant=None)
    config, ab = unquantized(config, args, untied="MiniMax-M3")
    tp = par.tp
    h, hd = W._int(config, "hidden_size"), W._int(config, "head_dim")
    nq_r = W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    nkv_r = W.kv_heads_per_rank(W._int(config, "num_key_value_heads"), tp)
    sparse_cfg, sparse = _sparse(config)
    idx = W._int(sparse_cfg, "sparse_index_dim") if sparse else 0
    w = W._Walk(None, par.vllm_version)
    # the per-layer Marlin workspaces of the releases that have them (one int32 per SM per linear
    # layer, four per MoE layer)
    sms = (par.sm_count or 0) if mxfp8 and quant_rules(par.vllm_version).marlin_layer_workspace else 0
    w.ends(par, W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp), h, ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for li in layers:
        qkv = (nq_r + 2 * nkv_r) * hd + ((nkv_r + 1) * idx if li in sparse else 0)
        sizes = [h, h, hd, hd, *([idx, idx] if li in sparse else [])]
        linears = [(qkv, h), (h, nq_r * hd)]
        if _moe_layer(config, li):
            e, inter = W._int(config, "num_local_experts"), W._int(config, "intermediate_size")
            W.refuse_tp_above_experts(tp, e)
            w.own("router", 4 * e * h)  # GateLinear in float32
            if config.get("use_routing_bias"):
                w.own("router", 4 * e)
            shared = W._int({"n": config.get("n_shared_experts") or 0}, "n")
            if shared:
                linears += _mlp(h, inter * shared, tp, "intermediate_size x n_shared_experts")
            if mxfp8:
                e_r, i_r = W.experts_per_rank(e, inter, tp, par, "intermediate_size")
                experts = (
                    [*mxfp8_marlin_experts_bytes(e_r, h, i_r), *[("workspace", 16 * sms)] * bool(sms)]
                    if nvfp4_experts is None
                    else modelopt_experts_bytes(nvfp4_experts, f"model.layers.{li}.experts", e_r, h, i_r)
                )
                for kind, nbytes in experts:
                    w.own(kind, nbytes)
                if par.expert_parallel:
                    w.own("expert map", 4 * e, buffer=True)
            else:
                w.experts(e, h, inter, par, ab, "intermediate_size")
        else:
            linears += _mlp(h, W._int(config, "dense_intermediate_size"), tp, "dense_intermediate_size")
        for n, k in linears:
            if mxfp8:
                for kind, nbytes in _mxfp8_linear(n, k, sms, nvfp4_experts):
                    w.own(kind, nbytes)
            else:
                sizes.append(n * k)
        w.attention_layer(sizes, ab)
        if nvfp4_experts is not None and not nvfp4_experts.kv_cache and li not in sparse:
            # MIXED_PRECISION without a KV-cache algorithm gives the full-attention layers no
            # method: their default scales move to the host after loading (recorded)
            w.ref.allocated_bytes -= (2 + w.range_blocks) * W.ALLOC_ROUND
    if layers:
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    out = w.result()
    if sparse:
        if args.max_num_batched_tokens is None:
            raise InputError("--max-num-batched-tokens", None, "MiniMax-M3's top-k index buffer needs it")
        rows = -(-args.max_num_batched_tokens // 4) * 4
        heads = max(1, W._int(sparse_cfg, "sparse_num_index_heads") // tp)
        nbytes = 4 * rows * heads * W._int(sparse_cfg, "sparse_topk_blocks")
        out.allocated_bytes += -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return out


def vision_tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``MiniMaxVLVisionModel`` on one rank (``common/vision_tower.py``), from ``vision_config``
    (read as a plain ``PretrainedConfig``: no defaults but the class's own ``getattr`` ones): the
    Conv3d patch embedding ``[D, C, T, P, P]`` (no bias; ``T``: the vision config's
    ``img_token_compression_config.temporal_patch_size``, 2), ``pre_layrnorm``, CLIP-style blocks
    sharded by TP (:func:`.towers.vit_block`), no post norm; three float32 inverse-frequency
    buffers ``[t / 2]`` (``t = 2 x ((2 x (head_dim // 2) // 3) // 2)``); the projector
    (``linear_1`` ``[M / TP, D]``, ``linear_2`` ``[H_text, M / TP]``, biased under the vision
    config's ``multimodal_projector_bias``, true by default; ``M``: the top-level
    ``projector_hidden_size``, else ``H_text``) and the patch merger (``linear_1`` ``[M / TP,
    H_text x merge^2]``, ``linear_2`` ``[H_text, M / TP]``, biased under ``patch_merge_bias``,
    true by default; ``merge``: ``spatial_merge_size``, 2).

    :raises InputError: a width missing or bad, heads or widths TP does not divide."""
    v = config.get("vision_config")
    if not isinstance(v, Mapping):
        raise InputError("config.json", "vision_config", "MiniMax-M3's vision tower needs a vision_config object")
    compression = v.get("img_token_compression_config") or {}
    if not isinstance(compression, Mapping):
        raise InputError("config.json", "vision_config.img_token_compression_config", "an object")
    d, p, heads = (W._int(v, k) for k in ("hidden_size", "patch_size", "num_attention_heads"))
    t = W._int({"temporal_patch_size": 2, **compression}, "temporal_patch_size")
    merge = W._int({"spatial_merge_size": 2, **compression}, "spatial_merge_size")
    W._divide(heads, tp, "the vision tower's num_attention_heads")
    if heads == 0:
        raise InputError("config.json", "vision_config.num_attention_heads", "must be positive")
    h = W._int(text, "hidden_size")
    mid = W._int(config, "projector_hidden_size") if config.get("projector_hidden_size") else h
    mid_r = W._divide(mid, tp, "projector_hidden_size")
    counts = [d * W._int(v, "num_channels") * t * p * p, d, d]
    counts += vit_block(d, W._int(v, "intermediate_size"), tp, whose="the vision tower's") * W._int(
        v, "num_hidden_layers"
    )
    proj_bias, merge_bias = bool(v.get("multimodal_projector_bias", True)), bool(v.get("patch_merge_bias", True))
    counts += [*linear(mid_r, d, proj_bias), *linear(h, mid_r, proj_bias)]
    counts += [*linear(mid_r, h * merge * merge, merge_bias), *linear(h, mid_r, merge_bias)]
    rope = 2 * ((2 * ((d // heads) // 2) // 3) // 2)
    return tensors("vision", counts, ab, buffers=[4 * len(range(0, rope, 2))] * 3)


#: the releases whose MXFP8 MiniMax-M3 is checked against the oracle (0.28.0 and 0.30.0 on SM 8.9
#: at TP 1 only, 0.29.0 / 0.31.0 / 0.32.0 on SM 8.6 and 8.9 at TP 1; 0.28.0-0.30.0's Marlin layers
#: hold a workspace each, 0.31.0-0.33.0's do not)
MXFP8_RELEASES = frozenset({"0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})

#: ``ignored_layers`` entries MXFP8 may name: layers this walk keeps unquantized anyway (the
#: head, the embedding, the vision tower and projectors, the MoE routers)
_MXFP8_IGNORABLE = ("lm_head", "model.embed_tokens", "vision_tower", "multi_modal_projector", "patch_merge_mlp")


def mxfp8_on(quant: Mapping[str, Any], par: W.Parallel) -> bool:
    """Whether the MXFP8 checkpoint (``quant_method: mxfp8``, vLLM's ``ModelOptMxFp8Config``) is
    modelled on this rank: vLLM 0.33.0 (and 0.28.0-0.32.0, :data:`MXFP8_RELEASES`) on SM 8.6 / 8.9,
    where ``MarlinMxfp8LinearKernel`` serves
    every decoder linear layer and Marlin the experts (recorded). Elsewhere the refusal of
    :data:`MODELOPT_REFUSAL` stands: SM 9.0 (DeepGEMM or Humming experts ahead of Marlin), SM 10.0 (FlashInfer
    CuTe-DSL / CUTLASS linear layers, FlashInfer TRT-LLM experts), SM 12.0 (FlashInfer CUTLASS or
    b12x linear layers), an unknown GPU, other releases.

    :raises InputError: ``ignored_layers`` naming a decoder layer other than a router (its
        linear layers would stay unquantized: not modelled), a scale block other than ``[1, 32]``."""
    if par.vllm_version not in MXFP8_RELEASES or par.capability not in ((8, 6), (8, 9)):
        return False
    if quant_rules(par.vllm_version).marlin_layer_workspace and par.sm_count is None:
        return False
    block = quant.get("weight_block_size", [1, 32])
    if block != [1, 32]:
        raise InputError("quantization_config", "weight_block_size", f"{block!r}: MXFP8 blocks of [1, 32] only")
    ignored = quant.get("ignored_layers") or []
    if not isinstance(ignored, list):
        raise InputError("quantization_config", "ignored_layers", "a list of layer names")
    for name in ignored:
        text = str(name).removeprefix("language_model.")
        if not (text.startswith(_MXFP8_IGNORABLE) or text.endswith(".block_sparse_moe.gate")):
            raise InputError(
                "quantization_config",
                "ignored_layers",
                f"{str(name)[:80]!r}: an unquantized decoder layer is not modelled",
            )
    return True


#: the releases and GPUs (capability) on which nvidia/MiniMax-M3-NVFP4 is recorded: through Marlin
#: (MXFP8 linear layers, NVFP4 experts) 0.33.0 on SM 8.6 / 8.9 (quant_cases_mxfp8.py) and 0.28.0 on
#: SM 8.9 / 9.0 (quant_cases_fp8rest.py: Humming after Marlin there; each Marlin layer's workspace);
#: through Humming 0.32.0 and 0.33.0 on SM 9.0 (quant_cases_mm3hum.py: ``prioritize_humming`` ranks
#: ``HummingMxfp8LinearKernel`` and the ``HUMMING`` NVFP4 experts ahead of Marlin's; 0.32.0 with
#: humming-kernels 0.1.17, the same layouts)
NVFP4_MIXED_CHECKED: dict[str, tuple[tuple[int, int], ...]] = {
    "0.33.0": ((8, 6), (8, 9), (9, 0)),
    "0.32.0": ((9, 0),),
    "0.28.0": ((8, 9), (9, 0)),
}


def nvfp4_mixed_on(quant: Mapping[str, Any], par: W.Parallel, config: Mapping[str, Any]) -> ModelOptQuant | None:
    """nvidia/MiniMax-M3-NVFP4 (ModelOpt ``MIXED_PRECISION``: every decoder linear layer ``MXFP8``,
    the routed experts ``NVFP4``) on the releases and GPUs of :data:`NVFP4_MIXED_CHECKED`: the
    linear layers as under :func:`mxfp8_on` (on 0.33.0 SM 9.0 through Humming, the returned
    config's ``humming``), the experts as ModelOpt's NVFP4 experts
    (:func:`~dryboot.vllm.model_executor.layers.quantization.modelopt.modelopt_experts_bytes`:
    Marlin, or Humming there); the quant config of the experts, or ``None`` (not modelled here,
    an unknown GPU's multiprocessors included: the caller refuses)."""
    if par.capability not in NVFP4_MIXED_CHECKED.get(par.vllm_version, ()):
        return None
    rules = quant_rules(par.vllm_version)
    sm = par.capability[0] * 10 + par.capability[1]
    workspace, humming = rules.marlin_layer_workspace, sm in rules.humming_before_marlin
    if (workspace or humming) and par.sm_count is None:
        return None  # the per-layer workspaces or Humming's locks need the GPU's multiprocessors
    if str(quant.get("quant_algo", "")).upper() != "MIXED_PRECISION":
        return None
    table = quant.get("quantized_layers")
    if not isinstance(table, Mapping):
        return None
    inner = config.get("text_config")
    text = inner if isinstance(inner, Mapping) else config
    _, sparse = _sparse(text)
    algos: dict[bool, set[str]] = {True: set(), False: set()}
    for name, info in table.items():
        algo = info.get("quant_algo") if isinstance(info, Mapping) else None
        algos[".experts." in str(name)].add(str(algo).upper())
    if algos[True] != {"NVFP4"} or algos[False] != {"MXFP8"}:
        return None
    for li in range(W._int(text, "num_hidden_layers")):
        parts = ["q_proj", "k_proj", "v_proj", "o_proj", *(["index_q_proj", "index_k_proj"] if li in sparse else [])]
        mlp = "block_sparse_moe.shared_experts" if _moe_layer(text, li) else "mlp"
        names = [f"self_attn.{p}" for p in parts] + [f"{mlp}.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
        if any(f"language_model.model.layers.{li}.{n}" not in table for n in names):
            return None  # a decoder linear layer left unquantized: not modelled (refused by the caller)
    return ModelOptQuant(
        (),
        algo="NVFP4",
        capability=sm,
        sm_count=par.sm_count,
        layer_workspace=workspace,
        humming=humming,
        kv_cache=bool(quant.get("kv_cache_quant_algo")),
    )


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The architecture's model on one rank of one stage: the language model of ``text_config``
    and, for the conditional-generation class, its vision tower on every stage unless dropped.

    :raises InputError: what :func:`text_walk` and :func:`vision_tower` refuse."""
    arch = str((config.get("architectures") or ["?"])[0])
    quant = config.get("quantization_config") or args.hf_quant or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, Mapping) else ""
    nvfp4 = nvfp4_mixed_on(quant, par, config) if method == "modelopt" else None
    mxfp8 = nvfp4 is not None or (method == "mxfp8" and mxfp8_on(quant, par))
    if method in MODELOPT_METHODS and not mxfp8:
        name = "MXFP8" if method == "mxfp8" else f"ModelOpt {quant.get('quant_algo') or method}"
        raise InputError("quantization_config", "quant_method", MODELOPT_REFUSAL.format(method=name))
    text = config.get("text_config")
    outer = {k: config[k] for k in ("torch_dtype", "quantization_config") if k in config}
    text = {**outer, **text} if isinstance(text, Mapping) else config
    weights = text_walk(text, par, args, mxfp8=mxfp8, nvfp4_experts=nvfp4)
    if arch != "MiniMaxM3SparseForConditionalGeneration" or args.no_tower or not towers_on_stage(arch, par):
        return weights
    return merged(weights, vision_tower(config, text, par.tp, W.model_dtype_bytes(text, args.dtype)))


FAMILIES: dict[str, Family] = {
    "MiniMaxM3SparseForCausalLM": Family(walk),
    "MiniMaxM3SparseForConditionalGeneration": Family(walk, ("image", "video")),
}
