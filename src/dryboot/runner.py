"""Glue from user-facing inputs (paths, flag values, a speculative config) to plan inputs."""

from __future__ import annotations

from dataclasses import replace

from dryboot.engine_args import EngineArgs
from dryboot.errors import InputError
from dryboot.flags import (
    MODEL_FREE_METHODS,
    add_custom_dtypes,
    apply_flags,
    check_speculative_config,
    parse_speculative_config,
)
from dryboot.modelconfig import ModelGeometry, load_model
from dryboot.plan import Drafter


def check_model(model: ModelGeometry) -> None:
    """What vLLM asserts about a model's heads before any KV cache exists: the attention
    heads split evenly over the KV heads (``Attention.__init__``: "num_heads (H) is not
    divisible by num_kv_heads (K)"). MLA models and models without attention are exempt.

    :raises InputError: naming the config file and ``num_key_value_heads``.
    """
    heads, kv = model.num_attention_heads, model.num_kv_heads
    if model.use_mla or not any(k.is_attention for k in model.kinds) or heads < 1 or kv < 1:
        return
    if heads % kv:
        raise InputError(
            model.source,
            "num_key_value_heads",
            f"{kv} KV heads do not divide the {heads} attention heads; vLLM asserts "
            f"num_heads ({heads}) is divisible by num_kv_heads ({kv})",
        )


def build_engine_args(
    model_path: str,
    flags: dict[str, object],
    custom_dtypes: list[str],
) -> tuple[ModelGeometry, EngineArgs]:
    """Load the model and parse command-line engine flags into :class:`EngineArgs`
    (errors name the flag, ``--<name>``).

    :raises InputError: a bad path, config or flag value.
    """
    model = load_model(model_path)
    check_model(model)
    args = EngineArgs()
    for name, value in flags.items():
        args = apply_flags(args, {name: value}, f"--{name}")
    args = add_custom_dtypes(args, custom_dtypes)
    args.validate()
    return model, args


def load_drafter_and_k(
    spec_config: str | dict[str, object] | None,
    spec_model: str | None,
    args: EngineArgs,
) -> tuple[Drafter | None, EngineArgs]:
    """Read the drafter from ``--speculative-config`` / ``--speculative-model``.

    ``num_speculative_tokens`` from the speculative config sets the engine's (as in vLLM);
    ``--num-speculative-tokens`` alone plans a drafter-less speculative engine (e.g. MTP
    inside the target) that still grows the mamba state.

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
    if k:
        args = replace(args, num_speculative_tokens=k)
    path = spec_model or cfg.model
    if path is None:
        if cfg.method in MODEL_FREE_METHODS or cfg.method.endswith("mtp"):
            return None, args  # proposals without separate draft layers
        raise InputError(source, "model", f"method {cfg.method!r} needs the drafter's config.json")
    if not args.num_speculative_tokens:
        raise InputError(source, "num_speculative_tokens", "required with a draft model (or --num-speculative-tokens)")
    try:
        drafter_model = load_model(path)
        check_model(drafter_model)
    except InputError as exc:
        where = "--speculative-model" if spec_model else f"{source}: model"
        raise InputError(where, None, exc.line()) from None
    drafter = Drafter(
        model=drafter_model,
        method=cfg.method,
        kv_cache_dtype=cfg.kv_cache_dtype,
        attention_backend=cfg.attention_backend,
        block_size=cfg.block_size,
    )
    return drafter, args
