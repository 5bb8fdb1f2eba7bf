"""gpt-oss (``gpt_oss.py``, ``GptOssForCausalLM``), its unquantized layout; the embedding, the
final norm and the LM head (untied) on every pipeline stage, then per layer:

* two RMSNorms ``[H]``;
* attention: ``sinks`` ``[heads / TP]`` (model dtype), ``qkv_proj`` (QKVParallelLinear) and
  ``o_proj`` (RowParallelLinear, bias whole), both with biases; the four float32 scale buffers;
* the MoE block: ``router`` (ReplicatedLinear ``[E, H]`` + bias ``[E]``, never quantized) and the
  experts (``FusedMoE`` with ``has_bias``): ``w13`` ``[E_local, 2 I_local, H]`` + ``w13_bias``
  ``[E_local, 2 I_local]``, ``w2`` ``[E_local, H, I_local]`` + ``w2_bias`` ``[E_local, H]``
  (``I / TP``, or under ``--enable-expert-parallel`` ``ceil(E / (TP x DP))`` whole experts and
  the int32 expert map ``[E]``);
* one YaRN rotary table per stage, in float32 (``get_rope(dtype=torch.float32)``),
  ``original_max_position_embeddings x factor`` positions of ``head_dim``;
* where vLLM builds FlashInfer attention for the layers (sinks: SM 10.x, and SM 12.x from vLLM
  0.28.0, with ``flashinfer-cubin``,
  :func:`~dryboot.vllm.model_executor.model_loader.weights.flashinfer_sinks`): on vLLM 0.33.0 one
  multi-CTA KV counter per rank (``weights.flashinfer_counter_layers``; unquantized too, recorded
  on B200); for MXFP4 checkpoints (a figure after the post-load step) each layer's float32 copy of
  its sinks ``[heads / TP]`` (``FlashInferImpl.process_weights_after_loading``, every release).

The experts' weights are the quantization method's (``weights.experts_bytes``). The published
checkpoints' MXFP4 (``GptOssMxfp4Config``: every linear layer, the attention and the router stay
unquantized) is served by the MoE backend vLLM picks per GPU and release (:func:`mxfp4_backend`;
layouts in :mod:`dryboot.vllm.model_executor.layers.quantization.mxfp4`); after its post-load step
each attention layer's two CPU scale scalars sit on the host (two blocks fewer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization import quant_rules
from dryboot.vllm.model_executor.layers.quantization.mxfp4 import (
    check_modelled,
    gpt_oss_mxfp4_backend,
    mxfp4_experts_bytes,
)
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, moe_decoder_dims


def expert_biases(quant: W.Quant, e: int, h: int, i: int, ab: int) -> list[tuple[str, int]]:
    """The experts' biases a ``FusedMoE`` with ``has_bias`` allocates on a rank: ``w13_bias``
    ``[e, 2 i]`` and ``w2_bias`` ``[e, h]`` in the model dtype (unquantized).

    :raises InputError: a quantization method (its biases' layout is the method's, not
        modelled here)."""
    if quant.method is not None:
        raise InputError("quantization_config", "quant_method", f"gpt-oss experts under {quant.method}: not modelled")
    return [("experts", e * 2 * i * ab), ("experts", e * h * ab)]


def mxfp4_backend(config: Mapping[str, Any], par: W.Parallel) -> str | None:
    """The MoE backend vLLM serves an MXFP4 gpt-oss checkpoint's experts with on this rank's GPU
    (``GptOssMxfp4Config``), or ``None`` for another ``quant_method``.

    :raises InputError: no GPU named, a release whose MXFP4 layout is not checked, a GPU below
        SM 8.0 (``Mxfp4Config.get_min_capability``: vLLM refuses), a backend not modelled."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or str(qc.get("quant_method")).lower() != "mxfp4":
        return None
    if par.capability is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            "mxfp4 experts are converted for the MoE backend vLLM picks per GPU: name the GPU (--gpu)",
        )
    rules = quant_rules(par.vllm_version)
    sm = par.capability[0] * 10 + par.capability[1]
    if sm < 80:
        raise InputError("--gpu", None, f"vLLM serves mxfp4 from SM 8.0 (this GPU: SM {sm // 10}.{sm % 10})")
    if par.expert_parallel:
        raise InputError("--enable-expert-parallel", None, "MXFP4 experts under expert parallelism are not modelled")
    backend = gpt_oss_mxfp4_backend(sm, rules.oai_triton_below, rules.oai_triton_after_marlin)
    check_modelled(backend, sm, par.vllm_version)
    return backend


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: heads, KV heads or the intermediate size TP does not divide, a
        quantization method, checkpoint headers (not mapped)."""
    backend = mxfp4_backend(config, par)
    # MXFP4: the linear layers, the attention and the router stay unquantized (``Mxfp4Config``)
    d = moe_decoder_dims(config, par, args, quant=W.Quant() if backend else None)
    quant, ab, h, e, hd = d.quant, d.ab, d.h, d.e, d.hd
    w = W._Walk(None, par.vllm_version)
    for _ in range(2):  # embedding and the untied LM head, on every stage
        w.own("embedding", d.vocab_r * h * ab)
    w.own("norm", h * ab)
    nq_r, e_r, i_r, layers = d.nq_r, d.e_r, d.i_r, d.layers
    qkv = (nq_r + 2 * d.nkv_r) * hd
    # FlashInfer's float32 sinks copies are made by the post-load step: in the MXFP4 figure (after
    # it), not in the unquantized one (as built, as for every unquantized family), which holds the
    # KV counter only (recorded: quant-recorded-ossbf16-0.33.0.json; after the post-load step vLLM
    # holds 512 B a layer less: the two CPU scale scalars leave, the sinks copy's block joins)
    flashinfer = bool(backend) and W.flashinfer_sinks(par, hd)
    for _ in layers:
        for n in (h, h, nq_r, qkv * h, qkv, h * nq_r * hd, h, e * h, e):  # norms, sinks, qkv, o_proj, router
            w.own("attention", n * ab)
        experts = (
            mxfp4_experts_bytes(backend, e_r, h, i_r, ab)
            if backend
            else [*W.experts_bytes(quant, e_r, h, i_r, ab), *expert_biases(quant, e_r, h, i_r, ab)]
        )
        for kind, nbytes in experts:
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
        w.own("attention scales", 16, buffer=True)
        # after the post-load step (MXFP4: the attention has no KV-scale method) the two CPU scale
        # scalars (and 0.27.1's q/k/v_range) move to the host, as for GPTQ / AWQ
        # (``weights._post_load_host_blocks``)
        w.ref.allocated_bytes += (w.attention_blocks - (2 + w.range_blocks if backend else 0)) * W.ALLOC_ROUND
        if flashinfer:  # FlashInfer's float32 sinks, beside the model's
            w.own("attention", nq_r * 4, buffer=True)
    if layers:
        w.own("rotary", W._rotary_bytes(config, hd, 4), buffer=True)  # float32
    rank = w.result()
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, [(nq_r, hd, True) for _ in layers])
    return rank


FAMILIES: dict[str, Family] = {"GptOssForCausalLM": Family(walk)}
