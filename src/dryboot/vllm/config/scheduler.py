"""The scheduler limits vLLM refuses (``vllm/config/scheduler.py``
``SchedulerConfig.verify_max_model_len``, the same rules in 0.27.1-0.33.0).

dryboot models chunked prefill on only (``--no-enable-chunked-prefill`` is refused by name), so
of the rules there the one that applies is: the tokens of one scheduler step
(``max_num_batched_tokens``) must be at least the sequences of one step (``max_num_seqs``).
``long_prefill_token_threshold`` is not a dryboot flag: a ``vllm serve`` line's is checked
(:func:`verify_long_prefill_token_threshold`); 0.31+'s ``max_num_active_seqs`` is not read.
"""

from __future__ import annotations

from dryboot.errors import InputError
from dryboot.vllm.engine_args import EngineArgs

__all__ = ["scheduler_limits", "verify_long_prefill_token_threshold", "verify_max_model_len"]


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
