"""The model directory a user serves, read as vLLM's loader reads it for the weights'
footprint: ``config.json`` (+ ``hf_quant_config.json``) and, with ``--load-format auto`` or
``safetensors``, the safetensors headers (``model.safetensors.index.json`` or every
``*.safetensors``). The I/O edge of :mod:`.weights`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dryboot.vllm.model_executor.models  # noqa: F401  (registers its families: weights.register_families)
from dryboot.errors import InputError
from dryboot.vllm.config.hf import modelopt_mixed_refusal, nested_modelopt_mixed_algo
from dryboot.vllm.config.mm_encoder_tp import FALLBACK_WARNING, SIZED_DATA_TOWERS, support
from dryboot.vllm.cutlass_mla import CUTLASS_MLA_WORKSPACE_BYTES, imports_cutlass_mla
from dryboot.vllm.lora.model_manager import LoRAConfig, lora_tensors
from dryboot.vllm.mla_prefill import (
    FLASHINFER_MLA_SPARSE,
    flashinfer_mla_sparse_takes,
    mla_prefill_backend,
    prefill_workspace_bytes,
    sm100_sparse_priorities,
)
from dryboot.vllm.model_executor.layers.quantization import QUANT_RULES, WNA16_METHODS
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import NO_QUANTIZED_TENSOR, WHY_NO_QUANTIZED_TENSOR
from dryboot.vllm.model_executor.model_loader.safetensors import checkpoint_tensor_names, has_shards, read_checkpoint
from dryboot.vllm.model_executor.model_loader.weights import (
    MissingTensor,
    Parallel,
    RankWeights,
    checkpoint_rank_weights,
    model_dtype_bytes,
    model_dtype_name,
    modelopt_fp8_kv_cache,
    rank_weights,
    unmodelled_flashinfer_counter,
)
from dryboot.vllm.versions import rules_for

#: ``--load-format`` values dryboot reads (vLLM's names): ``auto`` takes the headers when the
#: directory has safetensors files, else the config alone; ``safetensors`` requires them;
#: ``dummy`` (random weights, same shapes) is the config alone.
LOAD_FORMATS = ("auto", "safetensors", "dummy")


@dataclass
class WeightsReport:
    """The weights of each pipeline stage's rank (``stages[i]`` for stage ``i``; every TP rank
    of a stage allocates the same), how they were obtained and what the figure leaves out.
    ``refused``: why no figure is given (an architecture or quantization not modelled)."""

    stages: list[RankWeights] = field(default_factory=list)
    source: str = ""
    notes: list[str] = field(default_factory=list)
    refused: str | None = None
    index_total_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "refused": self.refused,
            "notes": self.notes,
            "index_total_size": self.index_total_size,
            "stages": [
                {
                    "pp_rank": i,
                    "param_bytes": w.param_bytes,
                    "buffer_bytes": w.buffer_bytes,
                    "allocated_bytes": w.allocated_bytes,
                    "loaded_bytes": w.loaded_bytes,
                    "model_loading_gib": round(w.gib, 2),
                    "log_line": w.log_line(),
                    "lora_bytes": w.lora_bytes,
                    "by_kind": w.by_kind,
                }
                for i, w in enumerate(self.stages)
            ],
        }


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(str(path), None, f"cannot read ({e.strerror or type(e).__name__})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise InputError(str(path), None, f"not JSON ({type(e).__name__})") from None


def serving_gpu(gpu: Any, vllm_version: str) -> dict[str, Any]:
    """:func:`model_weights`' GPU arguments for a :class:`dryboot.vllm.gpus.GPU` (its capability
    and the table's SM count) and a release."""
    from dryboot.vllm.gpus import sm_count  # at call: the GPU table is read only when a GPU is named

    return {"compute_capability": gpu.capability, "sm_count": sm_count(gpu.name), "vllm_version": vllm_version}


def _repacked(config: Mapping[str, Any], hf_quant: Any) -> bool:
    """A checkpoint whose layers vLLM repacks for a weight-only integer kernel (GPTQ, AWQ,
    AutoRound): its own tensors are not what stays allocated."""
    qc = config.get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, Mapping) else None
    return str(method).lower() in WNA16_METHODS


#: safetensors dtypes vLLM counts as unquantized (``AutoGPTQConfig.maybe_update_config``)
FLOAT_DTYPES = ("F16", "BF16", "F32")


def _gptq_modules_from_headers(config: dict[str, Any], directory: Path) -> dict[str, Any]:
    """A GPTQ config without ``modules_in_block_to_quantize`` (absent or empty: ``if modules``)
    gets the modules holding a non-float tensor in the checkpoint's headers, as vLLM's
    ``AutoGPTQConfig.maybe_update_config`` reads them (``get_safetensors_params_metadata``), or
    :data:`~dryboot.vllm.model_executor.layers.quantization.auto_gptq.NO_QUANTIZED_TENSOR` where
    none does."""
    qc = config.get("quantization_config")
    if not isinstance(qc, Mapping) or str(qc.get("quant_method", "")).lower() not in ("gptq", "gptq_marlin"):
        return config
    if qc.get("modules_in_block_to_quantize"):
        return config
    tensors, _ = read_checkpoint(directory)
    quantized = sorted({name.rsplit(".", 1)[0] for name, t in tensors.items() if t.dtype not in FLOAT_DTYPES})
    # no quantized tensor at all: vLLM's list stays empty, which each release reads its own way
    # (auto_gptq.gptq_empty_read)
    found = quantized or [NO_QUANTIZED_TENSOR]
    return {**config, "quantization_config": {**qc, "modules_in_block_to_quantize": found}}


def _repacked_note(config: Mapping[str, Any], vllm_version: str) -> str:
    """The note of a GPTQ / AWQ / AutoRound checkpoint whose layers vLLM repacks: which layers are
    quantized (the config's, a GPTQ list read from the headers by :func:`_gptq_modules_from_headers`),
    and that the repacked layout, not the checkpoint's tensors, is counted. A GPTQ checkpoint holding
    no quantized tensor: release ``vllm_version``'s reading of the empty list (``QuantRules.gptq_empty_read``:
    no layer quantized, or every one, which vLLM then fails loading)."""
    qc = config.get("quantization_config")
    rules = QUANT_RULES.get(vllm_version)  # a release without rules is refused with the weights
    if (
        isinstance(qc, Mapping)
        and qc.get("modules_in_block_to_quantize") == [NO_QUANTIZED_TENSOR]
        and rules is not None
    ):
        if rules.gptq_empty_read == "unquantized":
            return (
                f"GPTQ: {WHY_NO_QUANTIZED_TENSOR}: vLLM {vllm_version} quantizes no layer (every linear layer "
                "in the model dtype, as the checkpoint stores it)"
            )
        return (
            f"GPTQ: {WHY_NO_QUANTIZED_TENSOR}: vLLM {vllm_version} reads the empty module list as every linear "
            "layer quantized"
        )
    return (
        "GPTQ/AWQ/AutoRound: from the config (the layers it quantizes; GPTQ without modules_in_block_to_quantize: "
        "those holding a non-float tensor, as vLLM reads the checkpoint's dtypes); the repacked layout is the "
        "kernel's, not the checkpoint's tensors"
    )


def _processor_json(directory: Path, name: str) -> dict[str, Any]:
    path = directory / name
    found = _json(path) if path.is_file() else None
    return found if isinstance(found, dict) else {}


def image_norm_channels(directory: Path) -> int:
    """The channels of the device-side image normalization vLLM builds for a checkpoint whose tower
    takes one (``layers/fusion/mm_input_norm.py`` ``build_mm_input_norm`` / ``_load_norm_params``,
    0.32+): the first of ``processor_config.json``, ``preprocessor_config.json`` and
    ``tokenizer_config.json`` naming a ``processor_class`` (its ``image_processor`` part), else
    ``preprocessor_config.json`` (the image processor config), read through ``media_proc_cfg``;
    ``do_normalize`` / ``do_rescale`` default to both ``image_mean`` and ``image_std`` being given,
    the rescale factor to 1/255. 0 where the affine map ``rescale / std``, ``-mean / std`` is the
    identity (``NormParams.is_identity``'s tolerances) or no such file exists: vLLM builds
    ``IdentityInputNorm`` (no buffers); else the number of ``image_mean`` entries."""
    cfg: Mapping[str, Any] = {}
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        found = _processor_json(directory, name)
        if found and "processor_class" in found:
            cfg = found
            break
    part = cfg.get("image_processor", cfg)
    cfg = part if isinstance(part, Mapping) else {}
    if not any(k in cfg for k in ("do_normalize", "do_rescale", "image_mean", "image_std")):
        cfg = _processor_json(directory, "preprocessor_config.json")
    media = cfg.get("media_proc_cfg", cfg)
    cfg = media if isinstance(media, Mapping) else {}
    try:
        return _norm_channels(cfg)
    except (TypeError, ValueError, ZeroDivisionError, KeyError) as e:
        raise InputError(str(directory), "image_mean", f"the processor's normalization is unreadable ({e})") from None


def _norm_channels(cfg: Mapping[str, Any]) -> int:
    given = "image_mean" in cfg and "image_std" in cfg
    rescale = float(cfg.get("rescale_factor", 1 / 255)) if cfg.get("do_rescale", given) else 1.0
    mean = [float(x) for x in cfg["image_mean"]] if cfg.get("do_normalize", given) else [0.0] * 3
    std = [float(x) for x in cfg["image_std"]] if cfg.get("do_normalize", given) else [1.0] * 3
    identity = all(
        math.isclose(rescale / s, 1.0, rel_tol=1e-5, abs_tol=1e-8) and math.isclose(m / s, 0.0, abs_tol=1e-8)
        for m, s in zip(mean, std, strict=False)
    )
    return 0 if identity else len(mean)


def model_weights(
    model: Path,
    *,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    pp_partition: tuple[int, ...] | None = None,
    expert_parallel: bool = False,
    dtype: str = "auto",
    load_format: str = "auto",
    language_model_only: bool = False,
    limit_mm_per_prompt: Mapping[str, int] | None = None,
    max_num_batched_tokens: int | None = None,
    compute_capability: tuple[int, int] | None = None,
    sm_count: int | None = None,
    vllm_version: str = "0.28.0",
    lora: LoRAConfig | None = None,
    max_num_seqs: int | None = None,
    kv_cache_dtype: str = "auto",
    attention_backend: str | None = None,
    max_model_len: int | None = None,
    mm_encoder_tp_mode: str = "weights",
    engram_cpu_offload: bool = True,
    num_speculative_tokens: int = 0,
    flashinfer_cubin: bool = True,
) -> WeightsReport:
    """Per-rank weights of the model in ``model`` (a directory, or its ``config.json``).
    ``language_model_only`` / ``limit_mm_per_prompt``: vLLM's ``--language-model-only`` and
    ``--limit-mm-per-prompt`` (0 for every modality of a vision tower: no tower);
    ``max_num_batched_tokens``: the scheduler's, for a model that allocates a buffer of that many
    rows with its weights (DeepSeek-V3.2's top-k indices; refused without it);
    ``compute_capability`` / ``sm_count``: the GPU, for layouts vLLM's kernels repack per GPU
    (GPTQ, AWQ, AutoRound: refused without a capability; the Marlin workspace per SM);
    ``vllm_version``: the release, where those layouts differ by release;
    ``lora``: ``--enable-lora``'s settings: its stacks and punica buffers join each rank's figure
    (``RankWeights.lora_bytes``; needs ``max_num_batched_tokens`` and ``max_num_seqs``;
    :func:`dryboot.vllm.lora.model_manager.lora_tensors`, refused by name where not modelled);
    ``kv_cache_dtype``: ``--kv-cache-dtype``, where it picks an attention backend that allocates
    with the weights (0.33.0's FlashInfer KV counter: on SM 10.x, for an fp8 cache on SM 8.x; a
    sparse MLA model's ``FLASH_ATTN_MLA_SPARSE`` buffer per layer on SM 9.x from 0.31.0);
    ``attention_backend``: ``--attention-backend`` (``None``: vLLM's choice), likewise;
    ``max_model_len``: the engine's, for a model whose rotary table spans it (Cohere Compass).
    ``engram_cpu_offload``: ``--engram-config``'s ``cpu_offload`` (Qwen4-Exp's PLE n-gram tables in
    pinned host memory, refused; false: on the device, sized);
    ``max_num_seqs`` / ``num_speculative_tokens``: the scheduler's and ``--speculative-config``'s, for a
    sparse-MLA model's index-group workspace (vLLM 0.30.0+; refused without ``max_num_seqs``);
    ``mm_encoder_tp_mode``: ``--mm-encoder-tp-mode`` (``data``: the towers of
    :data:`dryboot.vllm.config.mm_encoder_tp.SIZED_DATA_TOWERS` whole on every TP rank; any other
    tower as ``weights`` splits it);
    ``flashinfer_cubin``: whether ``flashinfer-cubin`` is installed (vLLM's images: yes), without
    which 0.33.0's FlashInfer attention does not take attention sinks (no KV counter, no float32
    sinks for such layers: :func:`.weights.flashinfer_sinks`).

    A model dryboot does not model is not an error here: the report says why (``refused``).
    :raises InputError: a malformed config, index or header, ``--load-format safetensors``
        without safetensors files, or headers that lack a tensor the config implies
        (:class:`.weights.MissingTensor`, naming the first: ``model.layers.3.mlp.gate_proj``).
    """
    if load_format not in LOAD_FORMATS:
        raise InputError("--load-format", None, f"{load_format!r} is not one of {', '.join(LOAD_FORMATS)}")
    # a checkpoint directory, or its config.json; any other file (``X.config.json``) is a config
    # alone, whose neighbours are not a checkpoint
    config_path = model / "config.json" if model.is_dir() else model
    directory = model if model.is_dir() else model.parent
    in_checkpoint = model.is_dir() or model.name == "config.json"
    config = _json(config_path)
    if not isinstance(config, dict):
        raise InputError(str(directory / "config.json"), None, "not a JSON object")
    hq_path = directory / "hf_quant_config.json"
    hf_quant = _json(hq_path) if in_checkpoint and hq_path.is_file() else None
    sharded = in_checkpoint and has_shards(directory)
    if load_format == "safetensors" and not sharded:
        raise InputError(str(directory), None, "--load-format safetensors: no *.safetensors file here")
    if lora is not None:
        lora.validate()
        if max_num_batched_tokens is None or max_num_seqs is None:
            raise InputError(
                "--enable-lora", None, "LoRA's punica buffers need max_num_batched_tokens and max_num_seqs"
            )
    report = WeightsReport()
    qc = config.get("quantization_config", hf_quant)
    algo = nested_modelopt_mixed_algo(qc) if isinstance(qc, Mapping) else None
    why = None if algo is None else modelopt_mixed_refusal(algo, rules_for(vllm_version))
    if why is not None:  # ModelConfig refuses it before any weight (0.27.1-0.30.0)
        report.refused = InputError(
            str(hq_path if "quantization_config" not in config else config_path),
            "quantization.quant_algo"
            if "quantization_config" not in config
            else "quantization_config.quantization.quant_algo",
            why,
        ).line()
        return report
    # a ModelOpt checkpoint's fp8 KV cache, which ``--kv-cache-dtype auto`` serves as fp8 (vLLM's
    # ``resolve_kv_cache_dtype_string``: ModelOpt's only; hf_quant_config.json is ModelOpt's)
    modelopt_kv = (
        isinstance(qc, Mapping)
        and ("quantization_config" not in config or str(qc.get("quant_method", "")).startswith("modelopt"))
        and modelopt_fp8_kv_cache(config, hf_quant)
    )
    use_headers = sharded and load_format != "dummy"
    tensors = None
    if _repacked(config, hf_quant) and sm_count is None:
        report.notes.append(
            "the GPU's SM count is unknown: each Marlin-served layer's workspace is taken as two 512-byte blocks "
            "(one on GPUs of 128 SMs or fewer)"
        )
    if use_headers and _repacked(config, hf_quant):
        config = _gptq_modules_from_headers(config, directory)
        use_headers = False
        report.notes.append(_repacked_note(config, vllm_version))
    if use_headers:
        tensors, report.index_total_size = read_checkpoint(directory)
        report.source = "checkpoint headers"
    else:
        report.source = "config alone"
        report.notes.append(
            "from the config alone: no safetensors headers read (a checkpoint's own tensors, e.g. a "
            "pruned or re-exported one, may differ)"
        )
    qc = config.get("quantization_config")
    plain_fp8 = isinstance(qc, Mapping) and str(qc.get("quant_method")).lower() == "fp8"
    if (_repacked(config, hf_quant) or plain_fp8) and compute_capability is not None:
        report.notes.append(
            f"what stays allocated after vLLM {vllm_version}'s post-load repacking for the kernels it picks on SM "
            f"{compute_capability[0]}.{compute_capability[1]} (checked against vLLM on the meta device)"
        )
    else:
        report.notes.append(
            "what vLLM's model class allocates (checked against vLLM on the meta device); vLLM's line is what "
            "stays allocated after loading, which a kernel's post-load step (process_weights_after_loading) may "
            "change"
        )
    try:
        for stage in range(pp):
            par = Parallel(
                tp=tp,
                pp=pp,
                pp_rank=stage,
                dp=dp,
                expert_parallel=expert_parallel,
                pp_partition=pp_partition,
                capability=compute_capability,
                sm_count=sm_count,
                vllm_version=vllm_version,
                kv_cache_dtype=kv_cache_dtype,
                attention_backend=attention_backend,
                mm_encoder_tp_mode=mm_encoder_tp_mode,
                engram_cpu_offload=engram_cpu_offload,
                max_num_seqs=max_num_seqs,
                num_speculative_tokens=num_speculative_tokens,
                flashinfer_cubin=flashinfer_cubin,
            )
            serve: dict[str, Any] = {
                "language_model_only": language_model_only,
                "limit_mm_per_prompt": limit_mm_per_prompt,
                "max_num_batched_tokens": max_num_batched_tokens,
                "max_model_len": max_model_len,
                "image_norm_channels": image_norm_channels(directory) if in_checkpoint else 0,
            }
            if tensors is not None:
                w = checkpoint_rank_weights(tensors, config, par, hf_quant=hf_quant, dtype=dtype, **serve)
            else:
                w = rank_weights(config, par, hf_quant=hf_quant, dtype=dtype, **serve)
            if lora is not None:
                assert max_num_batched_tokens is not None and max_num_seqs is not None  # checked above
                w.add_lora(
                    lora_tensors(
                        config,
                        lora,
                        tp=tp,
                        pp=pp,
                        model_dtype_bytes=model_dtype_bytes(config, dtype),
                        max_num_batched_tokens=max_num_batched_tokens,
                        max_num_seqs=max_num_seqs,
                        vllm_version=vllm_version,
                        expert_parallel=expert_parallel,
                    )
                )
            if why := unmodelled_flashinfer_counter(config, par, w, modelopt_kv):
                raise InputError("--gpu", None, why)
            if cutlass_mla_workspace(config, par):
                w.add("CUTLASS MLA workspace", CUTLASS_MLA_WORKSPACE_BYTES, buffer=True)
                w.notes.append(CUTLASS_MLA_NOTE)
            if prefill := mla_prefill_workspace(config, par, dtype, modelopt_kv):
                w.add("MLA prefill workspace", prefill_workspace_bytes(prefill), buffer=True)
                w.notes.append(MLA_PREFILL_NOTE.format(backend=prefill))
            report.stages.append(w)
            report.notes.extend(n for n in w.notes if n not in report.notes)  # a family's own limitation
        if lora is not None:
            report.notes.append(
                "LoRA: the stacks and punica buffers are in the figure; the profile run's LoRA intermediates "
                "(the shrink kernels' float32 [tokens, rank] buffers per slice) are not in the activation term"
            )
    except MissingTensor:
        raise  # a checkpoint that is not the config's model: bad input, not a limitation
    except InputError as e:
        report.stages = []
        report.refused = e.line()
    return report


#: the note of a figure holding CUTLASS MLA's import-time workspace
CUTLASS_MLA_NOTE = (
    "holds vLLM's CUTLASS MLA workspace (128 MiB, allocated when the MLA attention selector imports "
    "v1/attention/backends/mla/cutlass_mla.py while the model is built)"
)


#: the note of a figure holding the MLA prefill backend's workspace reservation
MLA_PREFILL_NOTE = (
    "holds vLLM's MLA prefill workspace ({backend}: VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE, 394 MiB by default, "
    "reserved from the worker's workspace manager when the MLA layers are built)"
)

#: why an MLA model's weights are refused on SM 10.x where the prefill backend's workspace is not
#: modelled (:func:`mla_prefill_workspace`)
MLA_PREFILL_WORKSPACE_REFUSAL = (
    "on SM {sm} vLLM {v}'s MLA prefill backend (TRT-LLM ragged / FlashInfer / FlashAttention) may reserve the "
    "worker's workspace (VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE, 394 MiB) while the model is built; {why}: MLA "
    "weights not sized there"
)

#: architectures whose MLA layers are their own classes (not ``MLAAttention``), whose prefill
#: backend's construction is not modelled
OWN_MLA_LAYERS = ("KimiK3", "HYV4", "Dots3Note", "Glm5Next", "DeepseekV4", "DeepseekV41")


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``hf_text_config``: the config's ``text_config`` where it has one, else the config."""
    text = config.get("text_config")
    return text if isinstance(text, Mapping) else config


def _sm100_sparse_impl(
    config: Mapping[str, Any],
    par: Parallel,
    dims: tuple[int, int, int],
    fp8_kv: bool,
    refuse: Callable[[str], InputError],
) -> None:
    """Check that a sparse MLA model's layers take ``FLASHINFER_MLA_SPARSE`` on SM 10.x (the attention
    selector: a named ``--attention-backend``, else the first of
    :func:`~dryboot.vllm.mla_prefill.sm100_sparse_priorities` that takes the layer), whose
    ``FlashInferMLASparseImpl.__init__`` reserves nothing while the model is built (its 394 MiB
    ``_fi_sparse_workspace`` comes with the first forward: 0.27.1-0.33.0) and keeps the dense-MHA
    prefill path (``supports_dense_mha_prefill``); 0.33.0's FLASH_ATTN_MLA_SPARSE_FA4, chosen before it
    with a 16-bit cache at 16 heads or fewer, builds the same impl (recorded with a bfloat16 cache: the
    fp8 cache's figure).

    :raises InputError: another backend serves (``refuse``: FLASHMLA_SPARSE's workspace reservation,
        another named backend, a named FLASHINFER_MLA_SPARSE that does not take the layer: not
        modelled), heads not divisible by TP."""
    heads = _text(config).get("num_attention_heads")
    if type(heads) is not int or heads % par.tp:
        raise refuse(f"the sparse MLA layers' heads per rank ({heads} over TP {par.tp}) cannot be read")
    kv = "fp8_e4m3" if fp8_kv and par.kv_cache_dtype == "auto" else par.kv_cache_dtype
    takes = flashinfer_mla_sparse_takes(kv, dims[0], dims[1])
    order = sm100_sparse_priorities(heads // par.tp, kv)
    choice = par.attention_backend or next(b for b in order if b != FLASHINFER_MLA_SPARSE or takes)
    if choice != FLASHINFER_MLA_SPARSE or not takes:
        raise refuse(
            f"its sparse MLA layers take {choice} ({kv} cache, {heads // par.tp} heads per rank), whose "
            "allocations while the model is built are not modelled on SM 10.x (FLASHINFER_MLA_SPARSE's are)"
        )


def _mla_dims(config: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """The ``(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)`` vLLM's prefill selector reads from
    ``hf_text_config`` (a ``text_config``'s where the config has one), or ``None`` where one is not
    written in it (the config class's default, not modelled)."""
    text = _text(config)
    nope, rope, v = (text.get(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if type(nope) is not int or type(rope) is not int or type(v) is not int:
        return None
    return (nope, rope, v)


def mla_prefill_workspace(
    config: Mapping[str, Any], par: Parallel, dtype: str = "auto", fp8_kv: bool = False
) -> str | None:
    """The MLA prefill backend whose constructor reserves the worker's workspace on this rank
    (:mod:`dryboot.vllm.mla_prefill`: TRTLLM_RAGGED on SM 10.x for (192, 64, 256) head dims), or
    ``None``: no GPU given, no dense MLA layer, or a backend that reserves nothing (FLASH_ATTN; every
    GPU but SM 10.x). ``dtype``: ``--dtype`` (the model dtype: ``weights.model_dtype_name``);
    ``fp8_kv``: a ModelOpt checkpoint's own fp8 cache (``fp8_e4m3`` under ``auto``).

    A DeepSeek-V3.2-style sparse MLA model (MLA layers with their indexer, ``index_topk``) builds the
    same prefill backend where its sparse impl keeps the dense-MHA prefill path
    (``MLAAttention.__init__``), and none where no prefill backend takes it (vLLM's warning, no
    error). On SM 10.x that is modelled where ``FLASHINFER_MLA_SPARSE`` serves it
    (:func:`_sm100_sparse_impl`), which reserves nothing itself while the model is built.

    :raises InputError: a model of ``MLAAttention`` layers whose head dims (written in its config)
        and dtype no prefill backend takes, on any GPU (vLLM raises ``No valid MLA prefill backend
        found``); on SM 10.x, an MLA model whose choice is not modelled
        (:data:`MLA_PREFILL_WORKSPACE_REFUSAL`: another sparse MLA backend than
        ``FLASHINFER_MLA_SPARSE``, sliding MLA, an architecture with its own MLA layer
        (:data:`OWN_MLA_LAYERS`), head dims not written in the config, a hybrid under pipeline
        parallelism)."""
    # at call: the config reader imports the model families, whose walks import this loader
    from dryboot.vllm.transformers_utils.config import geometry_from_config

    if par.capability is None or "kv_lora_rank" not in json.dumps(config):
        return None
    sm10 = par.capability[0] == 10
    try:
        kinds = {k.name for k in geometry_from_config(dict(config)).kinds}
    except InputError:
        if not sm10:
            return None  # the model's own figure (cutlass_mla_workspace refuses it where it matters)
        raise
    mla = {k for k in kinds if "MLA" in k}
    if not mla:
        return None
    sm = f"{par.capability[0]}.{par.capability[1]}"

    def refuse(why: str) -> InputError:
        return InputError("--gpu", None, MLA_PREFILL_WORKSPACE_REFUSAL.format(sm=sm, v=par.vllm_version, why=why))

    archs = [str(a) for a in config.get("architectures") or []]
    own = any(a.startswith(OWN_MLA_LAYERS) for a in archs)
    dims = _mla_dims(config)
    sparse = mla == {"MLA", "MLA_INDEXER"} and _text(config).get("index_topk") is not None
    backend = None
    if sparse and sm10 and not own and dims is not None:
        # the sparse impl first (vLLM builds it before the prefill backend); no prefill backend: none built
        _sm100_sparse_impl(config, par, dims, fp8_kv, refuse)
        backend = mla_prefill_backend(par.capability, dims, model_dtype_name(config, dtype), par.vllm_version)
        return backend if backend is not None and prefill_workspace_bytes(backend) else None
    if mla == {"MLA"} and not own and dims is not None:
        name = model_dtype_name(config, dtype)
        backend = mla_prefill_backend(par.capability, dims, name, par.vllm_version)
        if backend is None:
            raise InputError(
                "config.json",
                None,
                f"No valid MLA prefill backend found: vLLM {par.vllm_version} has none for {name} with MLA head "
                f"dims (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) {dims} on SM {sm}",
            )
    if not sm10:
        return None  # FLASH_ATTN: no workspace
    if mla != {"MLA"}:
        raise refuse(f"which prefill backend a model of {', '.join(sorted(mla))} layers builds is not modelled")
    if own:
        raise refuse(f"{archs[0]}'s own MLA layer's prefill backend is not modelled")
    if dims is None or backend is None:
        raise refuse("the model's MLA head dims (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) are not in its config")
    if par.pp > 1 and kinds - mla - {"NONE"}:
        raise refuse(
            f"which stages build an MLA layer is not modelled for a model of {', '.join(sorted(kinds))} layers"
        )
    return backend if prefill_workspace_bytes(backend) else None


def cutlass_mla_workspace(config: Mapping[str, Any], par: Parallel) -> bool:
    """Whether this rank's ``Model loading took`` holds CUTLASS MLA's 128 MiB workspace
    (:mod:`dryboot.vllm.cutlass_mla`): the model builds MLA attention layers (its layer kinds,
    :func:`~dryboot.vllm.transformers_utils.config.geometry_from_config`: MLA, sliding MLA, a
    sparse model's MLA) and vLLM's selector imports the module for them
    (:func:`~dryboot.vllm.cutlass_mla.imports_cutlass_mla`: SM 10.x without
    ``--attention-backend``, or CUTLASS_MLA named). Every stage of a model whose KV layers are all
    MLA builds one. Without a GPU and a backend named: ``False`` (the model's own figure).

    :raises InputError: a config whose layer kinds cannot be read where the selector would import
        the module; a hybrid (MLA beside other layers) under pipeline parallelism on such a GPU
        (which stages build an MLA layer is not modelled)."""
    # at call: the config reader imports the model families, whose walks import this loader
    from dryboot.vllm.transformers_utils.config import geometry_from_config

    if not imports_cutlass_mla(par.capability, par.attention_backend):
        return False  # not imported, or no GPU and no backend named: the model's own figure
    try:
        model = geometry_from_config(dict(config))
    except InputError:
        if "kv_lora_rank" not in json.dumps(config):
            return False
        raise InputError(
            "config.json",
            None,
            "its layer kinds cannot be read: whether vLLM's CUTLASS MLA workspace (128 MiB, SM 10.x) is in "
            "the weights is not known",
        ) from None
    kinds = {k.name for k in model.kinds}
    mla = {k for k in kinds if "MLA" in k}
    if not mla:
        return False
    others = {k for k in kinds - mla if k != "NONE"}
    if par.pp > 1 and others:
        raise InputError(
            "--pipeline-parallel-size",
            None,
            f"which stages build an MLA layer (and so hold vLLM's 128 MiB CUTLASS MLA workspace on SM 10.x) is "
            f"not modelled for a model of {', '.join(sorted(kinds))} layers",
        )
    return True


def weights_as_served(
    walk: Callable[[bool], WeightsReport],
    architecture: str,
    tp: int,
    version: str,
    language_model_only: bool,
    mm_encoder_tp_mode: str,
) -> WeightsReport:
    """``walk(language_model_only)`` (a :func:`model_weights` under the served flags, walked with
    ``mm_encoder_tp_mode``) as vLLM serves ``architecture``: under ``--mm-encoder-tp-mode data``
    through :func:`encoder_tp_data`, which walks the other ``--language-model-only`` to tell
    whether the model has a tower."""
    report = walk(language_model_only)
    if mm_encoder_tp_mode != "data":
        return report
    return encoder_tp_data(
        report, lambda: walk(not language_model_only), architecture, tp, version, language_model_only
    )


def encoder_tp_data(
    report: WeightsReport,
    other: Callable[[], WeightsReport],
    architecture: str,
    tp: int,
    version: str,
    language_model_only: bool = False,
) -> WeightsReport:
    """``report`` (walked with ``mm_encoder_tp_mode="data"``) as vLLM serves ``architecture``
    under ``--mm-encoder-tp-mode data`` (:mod:`dryboot.vllm.config.mm_encoder_tp`). ``other()``:
    the walk with the other ``--language-model-only`` (the same bytes: the model has no tower,
    ``report`` is unchanged). A class without ``supports_encoder_tp_data`` falls back to
    ``weights`` (``report``, with vLLM's warning as a note, logged with ``--language-model-only``
    too); a supporting class's tower of ``SIZED_DATA_TOWERS`` is already whole in ``report``; under
    TP > 1 any other tower built (a supporting class not sized) is
    refused by name.

    :returns: ``report`` (a note added) or a refused report."""
    if report.refused:
        return report
    plain = other()
    if not plain.refused and [w.loaded_bytes for w in plain.stages] == [w.loaded_bytes for w in report.stages]:
        return report
    kind = support(architecture, version)
    if kind == "fallback":
        report.notes.append(f"vLLM warns: {FALLBACK_WARNING}")
        return report
    if language_model_only or tp == 1 or architecture in SIZED_DATA_TOWERS:
        return report
    return WeightsReport(
        refused=(
            f"--mm-encoder-tp-mode data: {architecture} (supported) builds its encoder tower unsharded on each of the "
            f"{tp} TP ranks: that tower per rank is not modelled (modelled: "
            + ", ".join(sorted(SIZED_DATA_TOWERS))
            + ")"
        )
    )


def drafter_model_weights(
    path: Path | None,
    target_config: Mapping[str, Any],
    method: str,
    *,
    tp: int = 1,
    pp: int = 1,
    max_model_len: int,
    dtype: str = "auto",
    num_speculative_tokens: int | None = None,
    vllm_version: str = "0.28.0",
) -> Any:
    """The drafter's own weights on the last stage's rank (``models.llama_eagle3.drafter_weights``)
    for the drafter at ``path`` (its ``config.json``, and its safetensors headers' tensor names
    when the directory holds them: they decide whether it keeps its own embedding and LM head);
    ``path`` ``None``: the target's own MTP layers (``method`` ``mtp``).

    :raises InputError: an unreadable config or header, or a drafter whose weights are not
        modelled (named)."""
    # at call: plan with a drafter only; llama_eagle registers EAGLE-1's walk with llama_eagle3
    from dryboot.vllm.model_executor.models import llama_eagle  # noqa: F401
    from dryboot.vllm.model_executor.models.llama_eagle3 import drafter_weights  # at call: as above

    config: Mapping[str, Any] = target_config  # path None: the target's own MTP layers
    names = None
    hf_quant = None
    if path is not None:
        directory = path if path.is_dir() else path.parent
        config = _json(directory / "config.json" if path.is_dir() else path)
        in_checkpoint = path.is_dir() or path.name == "config.json"  # as model_weights reads the target
        names = checkpoint_tensor_names(path)
        hq_path = directory / "hf_quant_config.json"
        if in_checkpoint and hq_path.is_file() and (method == "mtp" or method.endswith("_mtp")):
            # an MTP drafter is the target's own directory: its layers take the target's quantization
            hf_quant = _json(hq_path)
    return drafter_weights(
        target_config,
        config,
        method,
        Parallel(tp=tp, pp=pp),
        names,
        max_model_len=max_model_len,
        dtype=dtype,
        num_speculative_tokens=num_speculative_tokens,
        vllm_version=vllm_version,
        hf_quant=hf_quant,
    )
