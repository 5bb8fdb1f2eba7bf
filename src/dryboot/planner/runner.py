"""Glue from user-facing inputs (paths, flag values, a speculative config) to plan inputs."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import replace

from dryboot.errors import InputError
from dryboot.planner.flags import (
    MODEL_FREE_METHODS,
    add_custom_dtypes,
    apply_flags,
    check_speculative_config,
    parse_speculative_config,
)
from dryboot.planner.plan import Drafter
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.config.resolve import check_parser_choices
from dryboot.vllm.distributed import ENV as ENV_PP_LAYER_PARTITION
from dryboot.vllm.engine_args import DeferredRefusal, EngineArgs
from dryboot.vllm.models.gemma import assistant_overrides
from dryboot.vllm.models.registry import eagle_head_overrides, unregistered_eagle_head
from dryboot.vllm.transformers_utils.config import (
    check_config,
    geometry_from_config,
    load_config_json,
    load_model,
    refuse_drafter_as_model,
    unknown_override_keys,
)
from dryboot.vllm.transformers_utils.speculators import draft_config, is_speculators
from dryboot.vllm.versions import rules_for

#: Methods whose draft model keeps no KV cache (``medusa``: ``MedusaModel``'s heads are
#: residual MLP blocks over the target's last hidden state; vLLM's ``SpeculativeConfig`` reads an
#: old-format Medusa checkpoint as ``model_type: medusa``): the plan is the target's alone.
KV_FREE_DRAFT_METHODS = frozenset({"medusa"})


def build_engine_args(
    model_path: str,
    flags: dict[str, object],
    custom_dtypes: list[str],
    hf_overrides: str | dict[str, object] | None = None,
) -> tuple[ModelGeometry, EngineArgs]:
    """Load the model (with ``--hf-overrides``, JSON) and parse command-line engine flags into
    :class:`EngineArgs` (errors name the flag, ``--<name>``).

    :raises InputError: a bad path, config, override or flag value.
    """
    overrides: dict[str, object] | None = None
    if isinstance(hf_overrides, str):
        try:
            parsed = json.loads(hf_overrides)
        except json.JSONDecodeError as exc:
            raise InputError("--hf-overrides", f"column {exc.colno}", f"invalid JSON: {exc.msg}") from None
        if not isinstance(parsed, dict):
            raise InputError("--hf-overrides", None, "must be a JSON object")
        overrides = parsed
    elif hf_overrides is not None:
        overrides = dict(hf_overrides)
    notes: tuple[str, ...] = ()
    if overrides:
        check_config(overrides, "--hf-overrides")
        _, data = load_config_json(model_path)
        notes = tuple(
            f"--hf-overrides: {key} is not a key of the model's config.json (vLLM sets it anyway; is it misspelled?)"
            for key in unknown_override_keys(data, overrides)
        )
    version = "vllm-version"
    release = apply_flags(EngineArgs(), {version: flags[version]}, f"--{version}") if version in flags else EngineArgs()
    refuse_drafter_as_model(model_path, release.vllm_version, overrides)
    args = EngineArgs(input_notes=notes)
    for name, value in flags.items():
        args = apply_flags(args, {name: value}, f"--{name}")
    args = add_custom_dtypes(args, custom_dtypes)
    # vLLM's argument parser exits on a choice its release lacks before any config is read
    check_parser_choices(args, rules_for(args.vllm_version))
    model = load_model(model_path, overrides)
    if args.pipeline_parallel_size > 1 and ENV_PP_LAYER_PARTITION in os.environ:
        # read from the environment, as vLLM's get_pp_indices does
        args = replace(args, pp_layer_partition=os.environ[ENV_PP_LAYER_PARTITION])
    args.validate()
    return model, args


def load_drafter_and_k(
    spec_config: str | dict[str, object] | None,
    spec_model: str | None,
    args: EngineArgs,
    *,
    target_vocab_size: int | None = None,
    target_architecture: str | None = None,
) -> tuple[Drafter | None, EngineArgs]:
    """Read the drafter from ``--speculative-config`` / ``--speculative-model``.
    ``target_architecture``: the target's, for the releases that refuse its MTP drafter.

    ``num_speculative_tokens`` from the speculative config sets the engine's (as in vLLM);
    ``--num-speculative-tokens`` alone plans a drafter-less speculative engine (e.g. MTP
    inside the target) that still grows the mamba state. An EAGLE head whose class the release's
    registry lacks comes back as no drafter and the args' ``drafter_refusal``, which the engine
    config raises where vLLM's ``SpeculativeConfig`` refuses it.

    :raises InputError: malformed JSON or an unreadable drafter config.
    """
    source = "--speculative-config"
    if spec_config is None and spec_model is None:
        return None, args
    cfg = parse_speculative_config(spec_config if spec_config is not None else {}, source)
    check_speculative_config(cfg, args, source)
    if spec_model is not None and cfg.model is not None:
        raise InputError("--speculative-model", spec_model, f"{source} already names the drafter ({cfg.model})")
    k = cfg.num_speculative_tokens
    if k and args.num_speculative_tokens and k != args.num_speculative_tokens:
        raise InputError(
            "--num-speculative-tokens",
            str(args.num_speculative_tokens),
            f"{source} sets num_speculative_tokens to {k}; give it once",
        )
    args = replace(
        args,
        drafter_refusal=None,
        speculative_method=cfg.method,
        disable_padded_drafter_batch=cfg.disable_padded_drafter_batch,
        aux_hidden_state_layer_ids=cfg.aux_hidden_state_layer_ids,
        ignored_inputs=args.ignored_inputs + tuple(f"--speculative-config {k}" for k in cfg.ignored),
    )
    if k:
        args = replace(args, num_speculative_tokens=k)
    path = spec_model or cfg.model
    if cfg.method == "extract_hidden_states":
        if path is not None:
            where = "--speculative-model" if spec_model else "model"
            raise InputError(
                source, where, "extract_hidden_states builds its own cache layer from the target: no model"
            )
        return None, args  # its cache layer is built from the target (create_engine_config)
    if path is None:
        if cfg.method.endswith("mtp") and target_architecture is not None:
            # at call: the MTP module's release rules (vLLM's SpeculativeConfig refuses some targets)
            from dryboot.vllm.model_executor.models.mtp import mtp_release_refusal

            if (why := mtp_release_refusal(target_architecture, args.vllm_version)) is not None:
                raise InputError(source, "method", why)
        if cfg.method.endswith("mtp"):
            # the checkpoint's MTP module: the proposer builds it under the speculative config's backend
            # (SpecDecodeBaseProposer._create_draft_vllm_config), kept for it
            for key, value in (("kv_cache_dtype", cfg.kv_cache_dtype), ("block_size", cfg.block_size)):
                if value is not None:
                    raise InputError(source, key, f"not modelled for the checkpoint's MTP module (method {cfg.method})")
            return None, replace(args, speculative_attention_backend=cfg.attention_backend)
        if cfg.method in MODEL_FREE_METHODS:
            return None, args  # proposals without separate draft layers
        raise InputError(source, "model", f"method {cfg.method!r} needs the drafter's config.json")
    where = "--speculative-model" if spec_model else f"{source}: model"
    try:
        _, data = load_config_json(path)
    except InputError as exc:
        raise InputError(where, None, exc.line()) from None
    if not args.num_speculative_tokens:
        if spec_config is None:  # only --speculative-model was given: name it, not a flag the user did not give
            raise InputError(
                "--speculative-model",
                spec_model,
                "a draft model needs its number of speculative tokens: --num-speculative-tokens N "
                "(or --speculative-config with num_speculative_tokens)",
            )
        raise InputError(source, "num_speculative_tokens", "required with a draft model (or --num-speculative-tokens)")
    if cfg.method in KV_FREE_DRAFT_METHODS:
        # its heads read the target's hidden states and keep no KV cache; their weights are read
        # from its config (the budget's drafter term)
        return None, replace(args, speculative_model_path=str(path))
    spec_data = spec_config if isinstance(spec_config, dict) else {}
    if isinstance(spec_config, str) and spec_config.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            spec_data = json.loads(spec_config)
    draft_text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
    draft_vocab = draft_text.get("vocab_size") if isinstance(draft_text, dict) else None
    if (
        cfg.method == "draft_model"
        and target_vocab_size is not None
        and isinstance(draft_vocab, int)
        and draft_vocab != target_vocab_size
        and not spec_data.get("use_heterogeneous_vocab")
    ):
        # vLLM's SpeculativeConfig.verify_equal_vocab_size_if_draft_model
        raise InputError(
            where,
            "vocab_size",
            f"the target and the draft model must have the same vocabulary size ({target_vocab_size} vs "
            f"{draft_vocab}), as vLLM requires (use_heterogeneous_vocab lifts it)",
        )
    try:
        source_path = str(path)
        if is_speculators(data):
            drafter_model = speculators_draft_model(path, data, cfg.method)
        else:
            overrides = assistant_overrides(data, cfg.method, source_path)
            if overrides is None and (why := unregistered_eagle_head(data, cfg.method, args.vllm_version)):
                # vLLM's SpeculativeConfig names the head's class after the target's ModelConfig and
                # ParallelConfig: refused there (create_engine_config), never planned
                refusal = DeferredRefusal(where, None, f"{source_path}: architectures: {why}", args.vllm_version)
                return None, replace(args, drafter_refusal=refusal)
            overrides = overrides or eagle_head_overrides(data, cfg.method, source_path, args.vllm_version)
            drafter_model = load_model(path, overrides)
    except InputError as exc:
        raise InputError(where, None, exc.line()) from None
    drafter = Drafter(
        model=drafter_model,
        method=cfg.method,
        kv_cache_dtype=cfg.kv_cache_dtype,
        attention_backend=cfg.attention_backend,
        block_size=cfg.block_size,
    )
    return drafter, args


def speculators_draft_model(path: str, data: dict[str, object], method: str) -> ModelGeometry:
    """A speculators-format draft model (``speculators_config``) as vLLM builds it: its
    ``transformer_layer_config`` under the class its algorithm names
    (:func:`dryboot.vllm.transformers_utils.speculators.draft_config`).

    :raises InputError: the format's refusals, or a ``method`` other than the config's algorithm.
    """
    source, _ = load_config_json(path)
    kind = data.get("speculators_model_type")
    if kind != method:
        raise InputError(
            source,
            "speculators_model_type",
            f"{kind!r}: a speculators-format {kind} draft model under method {method!r} is not modelled",
        )
    return geometry_from_config(draft_config(dict(data), source), source)
