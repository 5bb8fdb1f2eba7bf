"""The scheduler limits vLLM refuses (``vllm/config/scheduler.py``
``SchedulerConfig.verify_max_model_len``, the same rules in 0.27.1-0.33.0).

dryboot models chunked prefill on only (``--no-enable-chunked-prefill`` is refused by name), so
of the rules there the one that applies is: the tokens of one scheduler step
(``max_num_batched_tokens``) must be at least the sequences of one step (``max_num_seqs``).
``long_prefill_token_threshold`` is not a dryboot flag: a ``vllm serve`` line's is checked
(:func:`verify_long_prefill_token_threshold`); 0.31+'s ``max_num_active_seqs`` is not read.

An encoder-decoder model (Whisper) runs without chunked prefill, whatever the flags say
(:func:`encoder_decoder_batched_tokens`): its default budget grows to ``max_model_len``, and a
given one below ``max_model_len`` is refused.
"""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.vllm.engine_args import EngineArgs

__all__ = [
    "encoder_decoder_batched_tokens",
    "scheduler_limits",
    "verify_long_prefill_token_threshold",
    "verify_max_model_len",
]


def scheduler_limits(args: EngineArgs, max_model_len: int) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` as ``SchedulerConfig`` receives them
    (``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``): a default
    ``max_num_batched_tokens`` is capped at ``max_num_seqs * max_model_len``; a default
    ``max_num_seqs`` at ``max_num_batched_tokens``. Tokens, sequences.
    """
    tokens = args.resolved_max_num_batched_tokens()
    if args.max_num_seqs is None:
        return tokens, args.resolved_max_num_seqs()
    if args.max_num_batched_tokens is None and max_model_len > 0:
        tokens = min(tokens, args.max_num_seqs * max_model_len)
    return tokens, args.max_num_seqs


def encoder_decoder_batched_tokens(args: EngineArgs, max_model_len: int) -> EngineArgs:
    """``args`` with ``max_num_batched_tokens`` as an encoder-decoder model's scheduler gets it:
    chunked prefill is off (``ModelConfig.is_chunked_prefill_supported`` is false, and
    ``SchedulerConfig.__post_init__`` turns it off), so a default budget is
    ``min(max_num_seqs * max_model_len, max(max_model_len, tier default))`` with the tier's (or the
    given) ``max_num_seqs`` (``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``, the
    same in 0.27.1-0.33.0); that budget is also ``max_num_encoder_input_tokens``, which sizes a
    cross-attention cache. Tokens; ``max_model_len`` the resolved one.

    :raises InputError: a given ``--max-num-batched-tokens`` below ``max_model_len``, in vLLM's
        words (``SchedulerConfig.verify_max_model_len`` without chunked prefill).
    """
    given = args.max_num_batched_tokens
    if given is not None:
        if given < max_model_len:
            raise InputError(
                "--max-num-batched-tokens",
                str(given),
                f"max_num_batched_tokens ({given}) is smaller than max_model_len ({max_model_len}). This "
                "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
                "longer sequences. Please increase max_num_batched_tokens or decrease max_model_len. (vLLM's "
                "SchedulerConfig: an encoder-decoder model runs without chunked prefill)",
            )
        return args
    tier_tokens, tier_seqs = args.batch_defaults()
    seqs = args.max_num_seqs if args.max_num_seqs is not None else tier_seqs
    return args.evolve(max_num_batched_tokens=min(seqs * max_model_len, max(max_model_len, tier_tokens)))


def verify_max_model_len(args: EngineArgs, max_model_len: int) -> None:
    """``SchedulerConfig.verify_max_model_len`` with chunked prefill on: one step's tokens must
    cover one step's sequences. ``max_model_len`` in tokens (the resolved one).

    :raises InputError: ``--max-num-batched-tokens`` (or ``--max-num-seqs`` when only it was
        given) with vLLM's reason, e.g. ``max_num_batched_tokens (100) must be greater than or
        equal to max_num_seqs (256).``
    """
    tokens, seqs = scheduler_limits(args, max_model_len)
    if tokens < seqs:
        flag = "--max-num-seqs" if args.max_num_batched_tokens is None else "--max-num-batched-tokens"
        raise InputError(
            flag,
            None,
            f"max_num_batched_tokens ({tokens}) must be greater than or equal to max_num_seqs ({seqs}) "
            "(vLLM's SchedulerConfig refuses it)",
        )


def verify_long_prefill_token_threshold(threshold: object, max_model_len: int, source: str) -> None:
    """``SchedulerConfig.verify_max_model_len``: ``long_prefill_token_threshold`` (tokens) may not
    exceed ``max_model_len`` (the resolved one). ``source``: where the threshold came from.

    :raises InputError: ``<source>: long_prefill_token_threshold: ...`` with vLLM's reason.
    """
    if isinstance(threshold, int) and not isinstance(threshold, bool) and threshold > max_model_len:
        raise InputError(
            source,
            "long_prefill_token_threshold",
            f"long_prefill_token_threshold ({threshold}) cannot be greater than the max_model_len "
            f"({max_model_len}) (vLLM's SchedulerConfig refuses it)",
        )
