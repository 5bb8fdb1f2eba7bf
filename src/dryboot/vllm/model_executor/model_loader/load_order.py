"""The device allocations of a load in vLLM's order, for what dryboot makes exact: a Llama-family
dense decoder on vLLM 0.28.0, unquantized or AWQ / GPTQ 4-bit served by Marlin.

``Model loading took`` counts the caching allocator's blocks (:mod:`.allocator`), and a block
freed during the load and taken whole by a later, smaller request counts whole. Two phases of
the load free large blocks:

* the rotary table: ``RotaryEmbedding._compute_cos_sin_cache`` (``layers/rotary_embedding/base.py``)
  computes, on the device and in float32, the positions ``t [P]``, ``freqs = t x inv_freq
  [P, d / 2]``, its ``cos`` and ``sin`` and their concatenation ``[P, d]``, then keeps the table
  in the model dtype (``cache.to(dtype)``, ``[P, d]``). ``get_rope`` caches the module, so only the
  first attention layer (after its ``qkv_proj`` and ``o_proj``) computes it; the intermediates are
  free before its MLP is built;
* Marlin's ``process_weights_after_loading`` of an AWQ layer (``MarlinLinearKernel``,
  ``kernels/linear/mixed_precision/marlin.py``; ``marlin_utils.py``): AWQ's packing is undone on
  ``qweight`` and ``qzeros`` (three transient int32 unpackings, 8 x the packed bytes each, then
  the repacked tensor), the workspace is allocated, the zero points permuted
  (``marlin_zero_points``: two unpacked transients, the packed result), ``gptq_marlin_repack``
  writes the Marlin ``qweight`` and ``marlin_permute_scales`` the scales; each original is
  released as its successor is made.

Facts from vLLM 0.28.0's model classes (``models/llama.py``: ``LlamaDecoderLayer`` builds
``self_attn`` (``qkv_proj``, ``o_proj``, the rotary module, ``Attention``), then ``mlp``
(``gate_up_proj``, ``down_proj``), then ``input_layernorm`` and ``post_attention_layernorm``;
``LlamaModel``: ``embed_tokens``, the layers, ``norm``; ``LlamaForCausalLM``: the model, then
``lm_head`` unless tied) and from the recorded traces
``tests/fidelity/data/weights/load-trace-0.28.0-meta-llama--Meta-Llama-3.1-8B*.json`` (AWQ-INT4 and
GPTQ-Int4 on an RTX 3090, bf16; the order of every storage vLLM allocates and frees on the meta
device), which the emitted order reproduces for
every request above 1 MiB (smaller ones come from the small pool, whose blocks are always the
request rounded to 512 bytes; the rotary module's ``inv_freq`` arithmetic is one event here).
Loading the checkpoint itself copies into the built parameters (no device allocation).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass

from dryboot.vllm.model_executor.model_loader.allocator import SMALL_SIZE, Event, replay, round_size

#: AWQ packs eight 4-bit values per int32 (``pack_factor``)
AWQ_PACK = 8
#: bytes of the int32 nibble shifts (8) AWQ's unpacking builds per tensor, and of the int64
#: interleave index (8) ``marlin_zero_points`` copies to the device
AWQ_SHIFTS_BYTES = 32
ZP_INTERLEAVE_BYTES = 64
#: the float32 scale scalars each ``Attention`` re-creates after loading (``k/v/q/prob``)
ATTENTION_POST_LOAD_SCALARS = 4


@dataclass(frozen=True)
class Marlin4:
    """4-bit weight-only layers served by Marlin: ``packing`` ``awq`` (zero points; ``qweight
    [k, n / 8]``, ``qzeros``, ``scales``) or ``gptq`` (symmetric, no act-order; ``qweight
    [k / 8, n]``, ``g_idx [k]``, ``qzeros``, ``scales``), ``group_size`` rows per scale group,
    ``sm_count`` multiprocessors (the int32 workspace per layer)."""

    packing: str
    group_size: int
    sm_count: int


@dataclass(frozen=True)
class DenseDecoder:
    """One rank of a Llama-family decoder, as vLLM allocates it (sizes in elements unless named):
    ``vocab_rows`` padded embedding rows, ``hidden``, ``layers``, ``qkv`` output and ``o_in`` input
    of the attention projections, ``inter`` the MLP width (each of gate and up), ``act_bytes`` the
    model dtype's bytes, ``tied`` (no separate ``lm_head``), ``positions`` and ``rotary_dim`` of
    the rotary table, ``quant`` (``None``: unquantized)."""

    vocab_rows: int
    hidden: int
    layers: int
    qkv: int
    o_in: int
    inter: int
    act_bytes: int
    tied: bool
    positions: int
    rotary_dim: int
    quant: Marlin4 | None = None


class _Keys:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


@dataclass(frozen=True)
class _Linear:
    k: int
    n: int
    keys: tuple[int, ...]  # the parameters as built: (weight,) or :func:`_packed_bytes`' tensors


def _packed_bytes(q: Marlin4, k: int, n: int, ab: int) -> tuple[int, ...]:
    """The parameters ``create_weights`` allocates, in its order (bytes): AWQ's ``qweight [k, n / 8]``
    and ``qzeros [k / g, n / 8]`` int32, ``scales [k / g, n]``; GPTQ's ``qweight [k / 8, n]``, ``g_idx
    [k]`` int32, then the same ``qzeros`` and ``scales``."""
    groups = k // q.group_size
    qweight, qzeros, scales = k * n // AWQ_PACK * 4, groups * n // AWQ_PACK * 4, groups * n * ab
    if q.packing == "gptq":
        return qweight, 4 * k, qzeros, scales
    return qweight, qzeros, scales


def _linear(m: DenseDecoder, key: _Keys, k: int, n: int, out: list[Event]) -> _Linear:
    """``create_weights`` of one linear layer of ``k`` inputs and ``n`` outputs."""
    sizes = (k * n * m.act_bytes,) if m.quant is None else _packed_bytes(m.quant, k, n, m.act_bytes)
    keys = tuple(key() for _ in sizes)
    out.extend(zip(keys, sizes, strict=True))
    return _Linear(k, n, keys)


def _rotary(m: DenseDecoder, key: _Keys) -> Iterator[Event]:
    """``_compute_cos_sin_cache`` and the table kept in the model dtype (bytes: float32 ``t [P]``,
    ``freqs``, ``cos``, ``sin`` ``[P, d / 2]``, ``cat`` ``[P, d]``; the table ``[P, d]``)."""
    p, half = m.positions, m.rotary_dim // 2
    inv, t, freqs, cos, sin, cat, table = (key() for _ in range(7))
    yield inv, half * 4
    yield t, p * 4
    yield freqs, p * half * 4
    yield cos, p * half * 4
    yield sin, p * half * 4
    yield cat, p * half * 2 * 4
    for k in (inv, t, freqs, cos, sin):
        yield k, 0
    if m.act_bytes != 4:  # cache.to(dtype): a copy unless the model runs in float32
        yield table, p * m.rotary_dim * m.act_bytes
        yield cat, 0


def _unpack(key: _Keys, packed: int) -> Generator[Event, None, tuple[int, int]]:
    """AWQ's order undone on one packed int32 tensor of ``packed`` bytes: shift, mask (the shift's
    result released), reorder (the mask's released), shift back, sum into the repacked tensor
    (the shifted one released). Leaves the reordered and the repacked tensors alive (the keys
    ``key.n - 1`` and ``key.n`` after the call)."""
    shifted, masked, reordered, back, repacked = (key() for _ in range(5))
    yield shifted, packed * AWQ_PACK
    yield masked, packed * AWQ_PACK
    yield shifted, 0
    yield reordered, packed * AWQ_PACK
    yield masked, 0
    yield back, packed * AWQ_PACK
    yield repacked, packed
    yield back, 0
    return reordered, repacked


def _gptq_marlin(m: DenseDecoder, q: Marlin4, key: _Keys, lin: _Linear) -> Iterator[Event]:
    """One symmetric GPTQ layer's ``process_weights_after_loading`` under Marlin: the workspace,
    ``g_idx`` replaced by an empty one, ``gptq_marlin_repack`` (the packed ``qweight`` released),
    ``marlin_permute_scales`` (the scales released), the unused ``qzeros`` released."""
    qweight, g_idx, qzeros, scales = lin.keys
    qb, _, _, sb = _packed_bytes(q, lin.k, lin.n, m.act_bytes)
    yield key(), 4 * q.sm_count  # marlin_make_workspace_new: int32 [sms], kept
    yield g_idx, 0
    yield key(), qb
    yield qweight, 0
    yield key(), sb
    yield scales, 0
    yield qzeros, 0


def _marlin(m: DenseDecoder, q: Marlin4, key: _Keys, lin: _Linear) -> Iterator[Event]:
    """One layer's ``process_weights_after_loading`` under Marlin (bytes as built): AWQ's below,
    GPTQ's :func:`_gptq_marlin`."""
    if q.packing == "gptq":
        yield from _gptq_marlin(m, q, key, lin)
        return
    qweight, qzeros, scales = lin.keys
    qb, zb, sb = _packed_bytes(q, lin.k, lin.n, m.act_bytes)
    shifts = key()
    yield shifts, AWQ_SHIFTS_BYTES
    q_reordered, q_gptq = yield from _unpack(key, qb)
    z_reordered, z_gptq = yield from _unpack(key, zb)
    for k in (shifts, qweight, q_reordered, qzeros, z_reordered):
        yield k, 0
    yield key(), 4 * q.sm_count  # marlin_make_workspace_new: int32 [sms], kept
    unpacked, first, interleave, second, zp = (key() for _ in range(5))
    yield unpacked, zb * AWQ_PACK
    yield first, zb * AWQ_PACK
    yield unpacked, 0
    yield interleave, ZP_INTERLEAVE_BYTES
    yield second, zb * AWQ_PACK
    yield interleave, 0
    yield first, 0
    yield zp, zb
    yield second, 0
    yield z_gptq, 0
    yield key(), qb  # gptq_marlin_repack
    yield q_gptq, 0
    yield key(), sb  # marlin_permute_scales
    yield scales, 0


@dataclass(frozen=True)
class LoadOrder:
    """The events of one load (:data:`~.allocator.Event`) and ``built_at``: the index of the first
    event after the model is built and loaded (before ``process_weights_after_loading``)."""

    events: list[Event]
    built_at: int


def load_events(m: DenseDecoder) -> LoadOrder:
    """Every device allocation and release of ``m``'s load, in vLLM 0.28.0's order (the module
    docstring); the rotary module's ``inv_freq`` arithmetic is one small event."""
    key = _Keys()
    out: list[Event] = []
    h, ab = m.hidden, m.act_bytes
    linears: list[_Linear] = []
    out.append((key(), m.vocab_rows * h * ab))  # VocabParallelEmbedding
    for li in range(m.layers):
        linears.append(_linear(m, key, h, m.qkv, out))
        linears.append(_linear(m, key, m.o_in, h, out))
        if li == 0:
            out.extend(_rotary(m, key))
        linears.append(_linear(m, key, h, 2 * m.inter, out))
        linears.append(_linear(m, key, m.inter, h, out))
        out.extend((key(), h * ab) for _ in range(2))  # input / post-attention RMSNorm
    out.append((key(), h * ab))  # the final norm
    if not m.tied:
        out.append((key(), m.vocab_rows * h * ab))  # ParallelLMHead
    built_at = len(out)
    if m.quant is not None:
        for lin in linears:
            out.extend(_marlin(m, m.quant, key, lin))
    for _ in range(m.layers * ATTENTION_POST_LOAD_SCALARS):
        out.append((key(), 4))
    return LoadOrder(out, built_at)


def load_surplus(m: DenseDecoder, max_split: int) -> tuple[int, int]:
    """(allocated, tensor blocks) at the end of ``m``'s load replayed under ``max_split`` (bytes):
    their difference is what ``Model loading took`` counts beyond the tensors. Only the large
    pool's requests (over ``SMALL_SIZE``) are replayed: the small pool is a pool of its own whose
    blocks are always split to the request (its sizes are multiples of 512 bytes), so it adds
    nothing beyond its tensors (the same figures as the whole replay, 20 times fewer events)."""
    live: dict[int, int] = {}
    large: list[Event] = []
    for key, nbytes in load_events(m).events:
        if nbytes == 0:
            if round_size(live.pop(key)) > SMALL_SIZE:
                large.append((key, 0))
        else:
            live[key] = nbytes
            if round_size(nbytes) > SMALL_SIZE:
                large.append((key, nbytes))
    tensors = sum(round_size(n) for n in live.values())
    return tensors + replay(large, max_split).surplus, tensors
