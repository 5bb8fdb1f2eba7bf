"""Map a logged ``non-default args`` dict onto dryboot's engine flags.

Keys are vLLM 0.28.0's argument names and those 0.27.1 and 0.29.0-0.33.0 add (``EngineArgs`` fields
and the OpenAI server's options, ``vllm/engine/arg_utils.py``, the serve parser's ``cli_args.py``;
every release's parser table, ``data/vllm-<release>-serve-options.json``). Each key is one of:

* **mapped**: a flag dryboot plans with (``max_model_len`` -> ``--max-model-len`` ...);
* **located**: where the config comes from (``model``, ``model_tag``, ``hf_config_path``,
  ``revision``) or the drafter (``speculative_config``, ``spec_method/spec_model/spec_tokens``);
* **refused**: it changes the KV-cache geometry in a way dryboot does not model (pipeline or
  context parallelism, ``hf_overrides``, a KV connector...). A refused key with its neutral
  value (``pipeline_parallel_size: 1``, as an old ``Namespace`` prints every argument) is fine;
* **ignored, with a note**: anything else. Keys known not to touch the KV cache are named as
  such; memory-only keys are named as measured in the logged budget; keys dryboot does not know
  (a newer vLLM) are named as assumed harmless.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from dryboot.checklog.literal import Opaque
from dryboot.errors import InputError
from dryboot.planner.flags import FLAGS_BY_NAME, parse_value
from dryboot.vllm.engine_args import EngineArgs

#: logged key -> dryboot flag (vLLM's name, without dashes).
MAPPED: dict[str, str] = {
    "tensor_parallel_size": "tensor-parallel-size",
    "dtype": "dtype",
    "kv_cache_dtype": "kv-cache-dtype",
    "attention_backend": "attention-backend",
    "block_size": "block-size",
    "mamba_cache_dtype": "mamba-cache-dtype",
    "mamba_ssm_cache_dtype": "mamba-ssm-cache-dtype",
    "mamba_cache_mode": "mamba-cache-mode",
    "max_model_len": "max-model-len",
    "max_num_batched_tokens": "max-num-batched-tokens",
    "max_num_seqs": "max-num-seqs",
    "enable_prefix_caching": "enable-prefix-caching",
    "async_scheduling": "async-scheduling",
    "kv_cache_memory_bytes": "kv-cache-memory-bytes",
    "gpu_memory_utilization": "gpu-memory-utilization",
    "num_gpu_blocks_override": "num-gpu-blocks-override",
    "prefix_match_unit": "prefix-match-unit",
    # the config class vLLM reads with (the checkpoint's own with an auto_map AutoConfig)
    "trust_remote_code": "trust-remote-code",
    # data: a supporting class's tower whole on every TP rank (its heads need not divide TP)
    "mm_encoder_tp_mode": "mm-encoder-tp-mode",
}

_LOCATION_KEYS = frozenset({"model", "model_tag", "hf_config_path", "revision"})
_SPEC_SHORTHANDS = {"spec_method": "method", "spec_model": "model", "spec_tokens": "num_speculative_tokens"}

#: key -> (values that leave the geometry as dryboot plans it, why any other value is refused).
REFUSED: dict[str, tuple[tuple[object, ...], str]] = {
    "pipeline_parallel_size": ((1,), "pipeline parallelism splits the layers across stages; dryboot plans PP = 1"),
    "prefill_context_parallel_size": ((1,), "context parallelism changes the tokens each rank caches"),
    "decode_context_parallel_size": ((1,), "context parallelism changes the tokens each rank caches"),
    "disable_sliding_window": ((False,), "sliding-window layers become full attention"),
    "disable_hybrid_kv_cache_manager": ((False, None), "one KV cache group for every layer type"),
    "hf_overrides": ((None, {}), "the config vLLM builds differs from config.json"),
    "model_class_overrides": ((None, {}), "another model class builds other layers"),
    "model_impl": (("auto", "vllm"), "another implementation builds other layers"),
    "runner": (("auto", "generate"), "a pooling runner keeps no generation KV cache"),
    "convert": (("auto", "none"), "a converted model keeps another KV cache"),
    "kv_cache_dtype_skip_layers": ((None, [], ()), "layers with another KV dtype share the block pool"),
    "mamba_block_size": ((None,), "a user mamba block size changes the hybrid alignment"),
    "use_replayssm": ((False,), "ReplaySSM changes the mamba state"),
    "kv_transfer_config": ((None,), "a KV connector can change the KV layout and block count"),
    "kv_offloading_size": ((None,), "KV offloading adds a connector to the KV cache"),
    "kv_sharing_fast_prefill": ((False,), "layers share KV caches"),
    "quantization_config": ((None, {}), "the quantization config can set the KV cache scheme"),
    "additional_config": ((None, {}), "platform plugins read it"),
    "worker_cls": (("auto",), "a custom worker builds its own KV cache"),
    "diffusion_config": ((None,), "a diffusion model keeps another cache"),
    "enable_chunked_prefill": (
        (True, None),
        "without chunked prefill max_num_batched_tokens grows to max_model_len (and mamba align needs it)",
    ),
    # options of other releases than 0.28.0 (data/vllm-<release>-serve-options.json)
    "override_attention_dtype": ((None,), "another attention dtype (vLLM 0.27.1)"),
    "enable_mamba_fine_grained_prefix_cache": ((False, None), "finer Mamba prefix-cache states (vLLM 0.30.0)"),
    "enable_mamba_shared_prefix_checkpoint": ((False, None), "more Mamba align checkpoints (vLLM 0.31.0+)"),
    "swa_bounded_replay": ((True, None), "DeepSeek-V4.1's sliding-window KV in prefix caching (vLLM 0.31.0+)"),
    "aux_output_config": ((None, {}), "an aux-output connector beside the KV cache (vLLM 0.31.0+)"),
}

#: Keys whose only effect is memory the boot measures (already inside "Available KV cache memory").
MEASURED = frozenset(
    {
        "enforce_eager",
        "compilation_config",
        "cudagraph_capture_sizes",
        "max_cudagraph_capture_size",
        "optimization_level",
        "cpu_offload_gb",
        "cpu_offload_params",
        "offload_backend",
        "offload_group_size",
        "offload_num_in_group",
        "offload_prefetch_step",
        "offload_params",
        "quantization",
        "load_format",
        "enable_lora",
        "max_loras",
        "max_lora_rank",
        "max_cpu_loras",
        "lora_dtype",
        "fully_sharded_loras",
        "enable_sleep_mode",
        "enable_cumem_allocator",
        "limit_mm_per_prompt",
        "mm_processor_cache_gb",
        # the multimodal encoder's profile: the largest item's size and how TP splits the tower
        "mm_processor_kwargs",
        "skip_mm_profiling",
        "enable_expert_parallel",
        "enable_eplb",
        "eplb_config",
        "moe_backend",
        "linear_backend",
        "kernel_config",
        "mamba_config",
        "mamba_backend",
        "gdn_prefill_backend",
        "kda_prefill_backend",
        "language_model_only",
        # options of other releases than 0.28.0: kernels, sampling and sleep-mode memory
        "kda_decode_backend",
        "sparse_indexer_topk_backend",
        "monokernel",
        "enable_hc_sp",
        "enable_batch_sharded_sampling",
        "enable_shm_tensor_arena",
        "sleep_mode_backend",
        "sleep_mode_offload_cudagraph",
        "sleep_preserve_parameter_names",
        "max_lora_cls_labels",
    }
)

#: vLLM 0.28.0 arguments known not to touch the KV cache (server, tokenizer, logging, sampling,
#: scheduling policy, distributed plumbing).
HARMLESS_PATTERNS = re.compile(
    r"^(?:host|port|uds|api_key|api_server_count|headless|served_model_name|tokenizer\w*|skip_tokenizer_init"
    r"|download_dir|seed|revision|code_revision|hf_token|config_format|chat_\w+|response_role"
    r"|ssl_\w+|root_path|middleware|allowed_\w+|allow_credentials|enable_auto_tool_choice|tool_\w+"
    r"|reasoning_\w+|enable_log_\w+|disable_log_\w+|\w*log_level|disable_uvicorn_access_log|disable_fastapi_docs"
    r"|enable_request_id_headers|enable_server_load_tracking|enable_force_include_usage|enable_prompt_tokens_details"
    r"|enable_tokenizer_info_endpoint|return_tokens_as_token_ids|lora_modules|default_mm_loras|prompt_adapters?"
    r"|max_log_len|h11_\w+|log_config_file|uvicorn_\w+|subparser|dispatch_function|model_tag_\w+|\w*_timeout\w*"
    r"|distributed_executor_backend|data_parallel_\w+|master_\w+|nnodes|node_rank|numa_\w+|device_ids"
    r"|max_parallel_loading_workers|disable_custom_all_reduce|ray_\w+|worker_extension_cls|scheduler_cls"
    r"|scheduling_policy|long_prefill_token_threshold|max_num_partial_prefills|max_long_partial_prefills"
    r"|max_num_scheduled_tokens|stream_interval|max_logprobs|logprobs_mode|generation_config"
    r"|override_generation_config|structured_outputs_config|guided_decoding_\w+|logits_processors"
    r"|pooler_config|otlp_traces_endpoint|collect_detailed_traces|show_hidden_metrics_for_version"
    r"|kv_cache_metrics\w*|cudagraph_metrics|enable_mfu_metrics|profiler_config|kv_events_config|use_tqdm_on_load"
    r"|prefix_caching_hash_algo|disable_cascade_attn|enable_prompt_embeds|enable_mm_embeds|mm_\w+"
    r"|media_io_kwargs|interleave_mm_strings|io_processor_plugin|renderer_num_workers|video_\w+"
    r"|safetensors_\w+|model_loader_extra_config|ignore_patterns|pt_load_map_location|aggregate_engine_logging"
    r"|disable_log_stats|enable_mamba_cache_stochastic_rounding|mamba_cache_philox_rounds"
    r"|mamba_ssu_algorithm|replayssm_buffer_len|dcp_\w+|cp_kv_cache_interleave_size|enable_dbo|ubatch_size"
    r"|dbo_\w+|all2all_backend|enable_elastic_ep|enable_ep_weight_filter|expert_placement_strategy"
    r"|disable_nccl_for_dp_synchronization|watermark|prefill_schedule_interval|scheduler_reserve_full_isl"
    r"|disable_chunked_mm_input|enable_flashinfer_autotune|enable_bf16x3_router_gemm|ir_op_priority"
    r"|fault_tolerance_config|enable_fault_tolerance|tokens_only|shutdown_timeout|weight_transfer_config"
    r"|fail_on_environ_validation|jit_monitor_\w+|enable_layerwise_nvtx_tracing|enable_logging_iteration_details"
    r"|ec_transfer_config|ec_manager_config|reasoning_config|model_weights|return_sampling_mask"
    r"|enable_return_routed_experts|use_fp64_gumbel|enable_tower_connector_lora|specialize_active_lora"
    r"|enable_mixed_moe_lora_format|enable_moe_shared_loras|lora_target_modules|allow_deprecated_quantization"
    r"|kv_offloading_backend|enable_ssl_refresh|disable_frontend_multiprocessing|enable_offline_docs"
    r"|trust_request_chat_template|exclude_tools_when_tool_choice_none|log_error_stack|tokens_only"
    r"|grpc\w*|_api_process_\w+|cohere_\w+|config|default_chat_template_kwargs|disable_access_log_for_endpoints"
    r"|dp_supervisor_\w+|enable_flash_late_interaction|enable_per_request_metrics|fingerprint_\w+"
    # options of other releases than 0.28.0: server, metrics, admission and elastic-EP plumbing
    r"|calculate_kv_scales|anthropic_\w+|custom_histogram_buckets|dp_sync_interval|elastic_ep_max_dp_size"
    r"|enable_nccl_comm_suspend|enable_scale_out|enable_trace_replay|logging_config|long_prefill_token_threshold_\w+"
    r"|max_num_active_seqs|max_num_queued_\w+|per_request_spec_decode_metrics|prefix_cache_retention_interval"
    r"|sse_keep_alive_interval|trust_request_mm_kwargs|watchdog_config|watermark_config)$"
)


@dataclass(frozen=True)
class LoggedArgs:
    """What the logged arguments say, mapped.

    :param args: engine flags (no KV budget; the caller adds one).
    :param flags: the dryboot flags set, vLLM names -> values as logged (for reports).
    :param speculative: the speculative config (vLLM's keys dryboot reads), or ``None``.
    :param model: the model the args name (``model`` or ``model_tag``).
    :param hf_config_path: ``hf_config_path`` when given.
    :param revision: the hub revision the args name.
    :param notes: one sentence per ignored key.
    :param expert_parallel: ``enable_expert_parallel`` (planning only: the weights per rank).
    :param engram_cpu_offload: ``engram_config``'s ``cpu_offload`` (vLLM's default: true): where
        the weights walk puts Qwen4-Exp's PLE n-gram tables (no KV figure reads it).
    """

    args: EngineArgs
    flags: dict[str, object]
    speculative: dict[str, object] | None
    model: str | None
    hf_config_path: str | None
    revision: str | None
    notes: tuple[str, ...] = field(default=())
    expert_parallel: bool = False
    engram_cpu_offload: bool = True


_ENUM_NAME = re.compile(r"<?\s*(?:\w+\.)*[A-Z]\w*Enum\.(?P<name>[A-Z0-9_]+)\b")


def _as_flag_text(value: object) -> object:
    """A logged value as :func:`dryboot.planner.flags.parse_value` takes it (an enum repr -> its name)."""
    if isinstance(value, Opaque):
        m = _ENUM_NAME.search(value.text)
        return m["name"] if m else value.text
    return value


def _neutral(value: object, neutral: tuple[object, ...]) -> bool:
    return any(value == n and type(value) is type(n) for n in neutral) or (value is None and None in neutral)


def _spec_dict(value: object, source: str, key: str) -> dict[str, object]:
    if isinstance(value, str):
        import json  # at call: only a speculative config given as text is JSON

        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(source, key, f"invalid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise InputError(source, key, f"expected a dict, got {value!s:.60}")
    return {str(k).replace("-", "_"): v for k, v in value.items()}


#: Keys the planner models that a logged boot cannot be checked with (its budget lines are per
#: pipeline stage): mapped only when :func:`map_args` is asked to plan (``plan --serve``).
PLANNED_ONLY: dict[str, str] = {
    "pipeline_parallel_size": "pipeline-parallel-size",
    "data_parallel_size": "data-parallel-size",  # experts split over TP x DP ranks (the weights)
    "nnodes": "nnodes",
    # what the KV budget predicted from --gpu reads (a logged boot's budget already holds them)
    "enforce_eager": "enforce-eager",
    "optimization_level": "optimization-level",
    "compilation_config": "compilation-config",
    "language_model_only": "language-model-only",
    "limit_mm_per_prompt": "limit-mm-per-prompt",
    "mm_processor_kwargs": "mm-processor-kwargs",  # the encoder term's largest item (Gemma-3's crops)
    "skip_mm_profiling": "skip-mm-profiling",
    # LoRA's stacks join the weights (vllm.lora.model_manager), mapped only with enable_lora
    "enable_lora": "enable-lora",
    "max_loras": "max-loras",
    "max_lora_rank": "max-lora-rank",
    "max_cpu_loras": "max-cpu-loras",
    "lora_dtype": "lora-dtype",
    "fully_sharded_loras": "fully-sharded-loras",
}
#: ``EngineArgs`` shorthands vLLM copies into ``compilation_config`` (``create_engine_config``:
#: each "and compilation_config.<key> are mutually exclusive").
_COMPILATION_SHORTHANDS = ("cudagraph_capture_sizes", "max_cudagraph_capture_size")
_LORA_KEYS = frozenset(
    {"enable_lora", "max_loras", "max_lora_rank", "max_cpu_loras", "lora_dtype", "fully_sharded_loras"}
)

#: vLLM 0.28.0 load formats served by its default or dummy loader: the same tensors, read elsewhere
_SAME_SIZE_LOAD_FORMATS = frozenset(
    {"auto", "hf", "dummy", "fastsafetensors", "instanttensor", "npcache", "pt", "safetensors"}
)


def _planned_memory_note(key: str, value: object) -> str | None:
    """``plan``'s note for a :data:`MEASURED` key it does not map: what the KV budget dryboot
    predicts from ``--gpu`` leaves out (``None``: nothing to say)."""
    if key == "enable_expert_parallel":
        return None
    if key == "load_format" and value in _SAME_SIZE_LOAD_FORMATS:
        return f"ignored load_format {value!r}: where vLLM reads the weights from, not their size"
    return (
        f"ignored {key}: its memory is not counted in the KV budget dryboot predicts from --gpu "
        "(a pinned --kv-cache-memory-bytes is exact)"
    )


def map_args(
    logged: dict[str, object], source: str, *, label: str = "non-default args", plan: bool = False
) -> LoggedArgs:
    """Map ``logged`` (a parsed ``non-default args`` dict or ``Namespace``, or a parsed ``vllm
    serve`` command line) onto engine flags.

    :param label: what ``logged`` is, in error messages (``<source>: <label>: <key>: ...``).
    :param plan: also map :data:`PLANNED_ONLY` keys (planning a command line, not checking a log).
    :raises InputError: a key that changes the geometry and dryboot cannot model, or a value
        dryboot's flag parser rejects.
    """
    where = f"{source}: {label}" if label else source
    mapped = {**MAPPED, **PLANNED_ONLY} if plan else MAPPED
    args = EngineArgs()
    flags: dict[str, object] = {}
    notes: list[str] = []
    speculative: dict[str, object] | None = None
    shorthands: dict[str, object] = {}
    model: str | None = None
    hf_config_path: str | None = None
    revision: str | None = None
    shorthands_cc: dict[str, object] = {}
    expert_parallel = False
    engram_cpu_offload = True
    for key, value in logged.items():
        if plan and key in _LORA_KEYS and logged.get("enable_lora") is not True:
            if key != "enable_lora":
                notes.append(f"ignored {key}: LoRA is off (no enable_lora)")
        elif key in mapped:
            if value is None:
                continue  # the default (an old Namespace prints every argument)
            flag = FLAGS_BY_NAME[mapped[key]]
            parsed: Any = parse_value(flag, _as_flag_text(value), where, key)
            args = replace(args, **{flag.field: parsed})
            flags[flag.name] = value if not isinstance(value, Opaque) else str(_as_flag_text(value))
        elif key in ("model", "model_tag"):
            if isinstance(value, str) and value and (model is None or key == "model"):
                model = value
        elif key == "hf_config_path":
            hf_config_path = value if isinstance(value, str) and value else None
        elif key == "revision":
            revision = value if isinstance(value, str) and value else None
        elif key == "speculative_config":
            if value is not None:
                speculative = _spec_dict(value, where, key)
        elif key in _SPEC_SHORTHANDS:
            if value is not None:
                shorthands[_SPEC_SHORTHANDS[key]] = value
        elif key == "attention_config":
            args, flags, more = _attention_config(value, args, flags, where)
            notes.extend(more)
        elif key == "engram_config" and plan:
            engram_cpu_offload, more = engram_config(value, logged, where)
            notes.extend(more)
        elif key == "engram_config":
            # a logged boot: where the n-gram tables live is in its logged weights, no KV figure reads it
            notes.append(f"ignored {key}: where the n-gram embedding tables live (the weights), not the KV cache")
        elif key == "performance_mode":
            if value == "interactivity" and plan:
                notes.append(
                    f"ignored performance_mode {value!r}: it changes the CUDA graph capture sizes, which the KV "
                    "budget dryboot predicts from --gpu does not follow (a pinned --kv-cache-memory-bytes is exact)"
                )
            elif value != "throughput" and not plan:
                notes.append(f"ignored performance_mode {value!r}: only CUDA graph sizes change")
        elif key in REFUSED:
            neutral, why = REFUSED[key]
            if not _neutral(value, neutral):
                raise InputError(
                    where, key, f"{value!s:.60} changes the KV cache geometry ({why}); dryboot cannot model it"
                )
        elif key in _COMPILATION_SHORTHANDS and plan:
            if value is not None:
                shorthands_cc[key] = value
        elif key in MEASURED and plan:
            note = _planned_memory_note(key, value)
            if note is not None:
                notes.append(note)
            if key == "enable_expert_parallel":
                expert_parallel = value is True
        elif key in MEASURED:
            notes.append(f"ignored {key}: its memory is measured in the logged KV budget")
        elif HARMLESS_PATTERNS.match(key):
            notes.append(f"ignored {key}: does not touch the KV cache")
        else:
            notes.append(
                f"ignored {key}: not an argument dryboot knows (vLLM 0.28.0); assumed not to touch the KV cache"
            )
    if shorthands:
        speculative = dict(speculative or {})
        for k, v in shorthands.items():
            if k in speculative:
                raise InputError(where, f"spec_{k}", f"given with speculative_config[{k!r}]; vLLM refuses both")
            speculative[k] = v
    if shorthands_cc:
        args, flags = _compilation_shorthands(shorthands_cc, args, flags, where)
    if logged.get("performance_mode") == "throughput" and "max_num_batched_tokens" not in flags:
        doubled = 2 * args.resolved_max_num_batched_tokens()
        args = replace(args, max_num_batched_tokens=doubled)
        notes.append(
            f"performance_mode 'throughput' doubles the default max_num_batched_tokens: {doubled} "
            f"(unless the log says otherwise)"
        )
    return LoggedArgs(
        args=args,
        flags=flags,
        speculative=speculative,
        model=model,
        hf_config_path=hf_config_path,
        revision=revision,
        notes=tuple(notes),
        expert_parallel=expert_parallel,
        engram_cpu_offload=engram_cpu_offload,
    )


#: ``EngramConfig``'s fields (``vllm/config/engram.py``, 0.30.0-0.33.0) that only place or share
#: the host copy of CPU-offloaded tables: no device figure changes.
_ENGRAM_HOST_ONLY = ("dp_shared_memory", "use_thp")


def engram_config(value: object, logged: dict[str, object], where: str) -> tuple[bool, list[str]]:
    """``--engram-config`` (vLLM 0.30.0+ ``EngramConfig``): (its ``cpu_offload``, notes).

    ``cpu_offload`` (default true) keeps the n-gram embedding tables (Qwen4-Exp's PLE,
    DeepSeek-V4.1's Engram) in pinned host memory; false puts them on the device, which the
    weights walk sizes (``Parallel.engram_cpu_offload``). No KV cache reads either.

    :raises InputError: not a dict, a key ``EngramConfig`` does not have, a value that is not a
        boolean, the combinations ``EngramConfig`` refuses (``dp_shared_memory`` or ``use_thp``
        without ``cpu_offload``; ``use_thp`` with ``dp_shared_memory``; ``dp_shared_memory`` with
        one DP rank), or ``embedding_across_dp`` with several DP ranks (it widens the tables'
        shard group to TP x DP, which dryboot does not model).
    """
    key = "engram_config"
    if value is None:
        return True, []
    config = _spec_dict(value, where, key)
    fields = ("cpu_offload", "embedding_across_dp", *_ENGRAM_HOST_ONLY)
    for k, v in config.items():
        if k not in fields:
            raise InputError(where, f"{key}.{k}", f"EngramConfig has no such field (it has {', '.join(fields)})")
        if not isinstance(v, bool) and not (k == "dp_shared_memory" and v is None):
            raise InputError(where, f"{key}.{k}", f"expected true or false, got {v!s:.40}")
    offload = config.get("cpu_offload", True) is True
    shared = config.get("dp_shared_memory") is True
    thp = config.get("use_thp") is True
    dp = logged.get("data_parallel_size")
    if shared and not offload:
        raise InputError(where, f"{key}.dp_shared_memory", "requires cpu_offload true (vLLM refuses it)")
    if thp and (not offload or shared):
        raise InputError(where, f"{key}.use_thp", "requires cpu_offload true and no dp_shared_memory (vLLM refuses it)")
    several_dp = isinstance(dp, int) and dp > 1
    if shared and not several_dp:
        raise InputError(where, f"{key}.dp_shared_memory", "requires data_parallel_size > 1 (vLLM refuses it)")
    if config.get("embedding_across_dp") is True and several_dp:
        raise InputError(
            where,
            f"{key}.embedding_across_dp",
            "shards the n-gram tables across TP x DP ranks; dryboot models the TP group only",
        )
    notes = [
        f"engram_config cpu_offload {str(offload).lower()}: the n-gram embedding tables "
        + ("stay in pinned host memory" if offload else "are on the device (in the weights)")
        + "; no KV figure reads it"
    ]
    notes.extend(
        f"ignored engram_config.{k}: where the host copy lives, not a device figure"
        for k in _ENGRAM_HOST_ONLY
        if k in config
    )
    return offload, notes


def _compilation_shorthands(
    given: dict[str, object], args: EngineArgs, flags: dict[str, object], where: str
) -> tuple[EngineArgs, dict[str, object]]:
    """``--cudagraph-capture-sizes`` / ``--max-cudagraph-capture-size`` copied into the
    compilation config, as ``EngineArgs.create_engine_config`` copies them.

    :raises InputError: the key also given inside ``compilation_config`` (vLLM refuses both).
    """
    import json  # at call: only these shorthands rebuild the compilation config

    config = json.loads(args.compilation_config) if args.compilation_config else {}
    for key, value in given.items():
        if key in config:
            raise InputError(where, key, f"{key} and compilation_config.{key} are mutually exclusive")
        config[key] = value
    flag = FLAGS_BY_NAME["compilation-config"]
    text = json.dumps(config)
    args = replace(args, compilation_config=parse_value(flag, text, where, "compilation_config"))
    return args, {**flags, flag.name: text}


def validate_logged(args: EngineArgs, source: str) -> None:
    """:meth:`EngineArgs.validate`, its errors naming the logged key (``kv_cache_dtype``) rather
    than dryboot's flag (``--kv-cache-dtype``).

    :raises InputError: ``<source>: non-default args: <key>: <reason>``.
    """
    try:
        args.validate()
    except InputError as exc:
        by_flag = {f"--{flag}": key for key, flag in MAPPED.items()}
        key = by_flag.get(exc.source)
        if key is None:
            raise
        raise InputError(f"{source}: non-default args", key, exc.reason) from None


def _attention_config(
    value: object, args: EngineArgs, flags: dict[str, object], where: str
) -> tuple[EngineArgs, dict[str, object], list[str]]:
    """``--attention-config`` (``AttentionConfig``): ``backend`` sets the backend; a per-kind
    backend map, an indexer cache dtype and a named MLA prefill backend are refused; the rest is
    kernel tuning."""
    notes: list[str] = []
    if value is None:
        return args, flags, notes
    if not isinstance(value, dict):
        raise InputError(where, "attention_config", f"expected a dict, got {value!s:.60}")
    for k, v in value.items():
        if k == "backend" and v is not None:
            flag = FLAGS_BY_NAME["attention-backend"]
            args = replace(
                args, attention_backend=parse_value(flag, _as_flag_text(v), where, "attention_config.backend")
            )
            flags = {**flags, "attention-backend": str(_as_flag_text(v))}
        elif k == "backend_per_kind" and v:
            raise InputError(
                where,
                "attention_config.backend_per_kind",
                "per-kind backends change page sizes; dryboot cannot model it",
            )
        elif k == "indexer_kv_dtype" and v not in (None, "auto"):
            raise InputError(
                where,
                "attention_config.indexer_kv_dtype",
                f"{v!s:.20}: it sets MiniMax-M3's indexer cache dtype (AttentionConfig.resolve_indexer_kv_dtype); "
                "dryboot models the default (bf16) only",
            )
        elif k == "mla_prefill_backend" and v is not None:
            raise InputError(
                where,
                "attention_config.mla_prefill_backend",
                f"{v!s:.20}: a named MLA prefill backend decides whether the worker's workspace (394 MiB on SM "
                "10.x) is reserved while the model is built; dryboot models vLLM's own choice only "
                "(dryboot.vllm.mla_prefill)",
            )
        elif v is not None:
            notes.append(f"ignored attention_config.{k}: kernel tuning, does not touch the KV cache")
    return args, flags, notes
