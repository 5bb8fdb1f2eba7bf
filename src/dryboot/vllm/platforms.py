"""The hybrid attention block size and the mamba page padding.

Mirrors vLLM 0.28.0's ``vllm/platforms/interface.py``:
``Platform.update_block_size_for_backend`` (phase 1: the backend's preferred block when
``--block-size`` is not given) and ``Platform._align_hybrid_block_size`` (phase 2: the
smallest attention block, a multiple of the kernel alignment, whose page holds one mamba
state; then the mamba page is padded to exactly that attention page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from math import lcm

from dryboot.errors import InputError
from dryboot.vllm.backends import AttentionBackend


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative integers (``vllm.utils.math_utils.cdiv``)."""
    return -(-a // b)


@dataclass(frozen=True)
class BlockSizeDecision:
    """Result of the block-size phases.

    :param block_size: the attention block size every full-attention layer gets (tokens).
    :param mamba_page_size_padded: the padded mamba page (bytes), or ``None`` when unpadded.
    :param mamba_block_size: the mamba layers' block size (tokens).
    :param padding_pct: ``100 * (padded - natural) / natural`` of the mamba page.
    :param log: the lines vLLM logs, verbatim.
    """

    block_size: int
    mamba_page_size_padded: int | None
    mamba_block_size: int
    padding_pct: float | None = None
    log: tuple[str, ...] = field(default=())


def preferred_block_size(
    backend: AttentionBackend, user_block_size: int | None, default: int = 16, all_backends: str | None = None
) -> tuple[int, list[str]]:
    """Phase 1: ``--block-size`` if given, else the backend's preferred block (tokens).
    ``all_backends``: from vLLM 0.31 the line names every attention backend ("A/B backend(s).")."""
    if user_block_size is not None:
        return user_block_size, []
    preferred = backend.preferred_block_size(default)
    log = []
    if preferred != default:
        if all_backends is not None:
            log.append(f"Setting kv cache block size to {preferred} for {all_backends} backend(s).")
        else:
            log.append(f"Setting kv cache block size to {preferred} for {backend.name} backend.")
    return preferred, log


def preferred_block_size_for_backends(
    backends: list[AttentionBackend], user_block_size: int | None, default: int = 16
) -> tuple[int, list[str]]:
    """Phase 1 over every attention backend (vLLM 0.33's
    ``Platform._preferred_block_size_for_backends``): ``--block-size`` if given; one backend: its
    preferred block; the default when every backend addresses it; else the smallest LCM of one
    kernel block per backend that every backend addresses. Logged as "Setting kv cache block size
    to B for A/B/C backend(s)." when it is not the default.

    :raises InputError: backends that share no block (vLLM's ``ValueError``).
    """
    if user_block_size is not None:
        return user_block_size, []
    if len(backends) == 1:
        preferred = backends[0].preferred_block_size(default)
    elif all(b.supports_block_size(default) for b in backends):
        preferred = default
    else:
        per_backend = [[kb.size for kb in b.kernel_blocks] or [1] for b in backends]
        fits = [
            c
            for c in sorted({lcm(*sizes) for sizes in product(*per_backend)})
            if all(b.supports_block_size(c) for b in backends)
        ]
        if not fits:
            raise InputError(
                "--block-size",
                None,
                "the attention backends share no supported KV cache block size ("
                + "; ".join(f"{b.name}: {[kb.size for kb in b.kernel_blocks]}" for b in backends)
                + ")",
            )
        preferred = fits[0]
    log = []
    if preferred != default:
        names = "/".join(b.name for b in backends)
        log.append(f"Setting kv cache block size to {preferred} for {names} backend(s).")
    return preferred, log


def align_hybrid_block_size(
    *,
    block_size: int,
    attn_page_size_1_token: int,
    mamba_page_size: int,
    backend: AttentionBackend,
    mamba_cache_mode: str,
    use_mla: bool = False,
    mamba_chunk_size: int | None = None,
    extra_kernel_alignments: tuple[int, ...] = (),
    max_model_len: int | None = None,
    indexer_alignment: int | None = None,
) -> BlockSizeDecision:
    """Phase 2 for hybrid models (``_align_hybrid_block_size``).

    ``align = max(smallest kernel block, block_size)`` (at least 128 for MLA);
    ``B = align * cdiv(mamba_page, align * attn_page_size_1_token)`` (mode ``none``/``align``)
    or a multiple of ``lcm(chunk, align)`` covering the mamba state (mode ``all``); the
    attention block becomes ``B`` when larger, and the mamba page is padded to
    ``block * attn_page_size_1_token``.

    :param attn_page_size_1_token: bytes of one token of a full-attention page (after the
        backend's packing; per rank).
    :param mamba_page_size: natural bytes of one mamba layer's state (per rank).
    :param extra_kernel_alignments: other backends' smallest kernel blocks that B must also
        be a multiple of (vLLM 0.32+ rule); empty for 0.28.
    :param indexer_alignment: in mode ``none`` / ``align``, a multiple ``B`` is then rounded up to
        (``_get_indexer_block_alignment``: a kpool indexer's pages, vLLM 0.30 / 0.31).
    """
    if mamba_page_size == 0:
        return BlockSizeDecision(block_size, None, block_size)
    align = max(backend.smallest_kernel_block, block_size)
    if use_mla:
        align = max(align, 128)
    for other in extra_kernel_alignments:
        align = lcm(align, other)
    log: list[str] = []
    if mamba_cache_mode == "all":
        base_chunk = mamba_chunk_size or block_size
        chunk = lcm(base_chunk, align)
        tokens_per_state = cdiv(mamba_page_size, attn_page_size_1_token)
        attn_block = chunk * cdiv(tokens_per_state, chunk)
    else:
        attn_block = align * cdiv(mamba_page_size, align * attn_page_size_1_token)
        if indexer_alignment:
            attn_block = indexer_alignment * cdiv(attn_block, indexer_alignment)
    if block_size < attn_block:
        block_size = attn_block
        log.append(
            f"Setting attention block size to {attn_block} tokens to ensure that attention "
            "page size is >= mamba page size."
        )
    if mamba_cache_mode == "align":
        mamba_block = block_size
    elif mamba_cache_mode == "all":
        mamba_block = attn_block
    else:
        mamba_block = max_model_len if max_model_len and max_model_len > 0 else block_size
    attn_page = block_size * attn_page_size_1_token
    if attn_page == mamba_page_size:
        return BlockSizeDecision(block_size, None, mamba_block, 0.0, tuple(log))
    pct = 100 * (attn_page - mamba_page_size) / mamba_page_size
    log.append(
        f"Padding mamba page size by {pct:.2f}% to ensure that mamba page size and attention "
        "page size are exactly equal."
    )
    return BlockSizeDecision(block_size, attn_page, mamba_block, pct, tuple(log))
