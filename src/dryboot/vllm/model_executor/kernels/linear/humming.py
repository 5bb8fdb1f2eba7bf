"""What vLLM's Humming kernels keep after ``process_weights_after_loading``, per layer.

vLLM 0.32.0 and 0.33.0 (``humming-kernels`` 0.1.17 and 0.1.19, a requirement of each CUDA wheel)
move Humming directly ahead of Marlin in every kernel list on SM 9.0 (``layers/quantization/utils/humming/priority.py``
``prioritize_humming``; ``_HUMMING_PREFERRED_CAPABILITIES = {90}``): the mixed-precision list
(``HummingLinearKernel``: a weight-only integer layer that Machete declines), the NVFP4 list
(``HummingNvFp4LinearKernel``) and the fused-MoE backend lists (``HUMMING`` ahead of ``MARLIN``).
Every one of them converts a layer to Humming's "standard" schema and calls
``humming.transform.prepare_and_transform_humming_tensors`` (vLLM's
``utils/humming/linear.py`` ``prepare_humming_linear_layer_config``, ``utils/humming/moe.py``
``_prepare_and_transform_sublayer``), whose output shapes are declared in the package's own Python
(``HummingWeightSchema.get_tensors_attrs``, ``transform_humming_*``, the ``register_op`` bodies of
``humming/ops/weight.py``). This module mirrors those shape rules:

* the output features ``n`` are padded to a multiple of :data:`PAD_N` and the input ``k`` to
  :data:`PAD_K` (``pad_n_to_multiple=256, pad_k_to_multiple=128`` in both callers), every tensor
  padded to the padded shape (``check_and_pad_tensors``);
* ``weight``: ``repack_weight`` to ``[pk / (256 / a_bits), pn x (256 / a_bits) x bits / 32]``
  int32 (``pk x pn x bits / 8`` bytes);
* ``weight_scale``: group scales ``[pk / g, pn]`` (per-channel: ``[1, pn]``) in the scale dtype
  (the activation dtype for integer and fp8 channel weights, fp8 for NVFP4), a tensor scale one
  float32, block scales (fp8 ``[bn, bk]`` blocks) float32 ``[pk / bk, pn / bn]``
  (``HummingWeightSchema``: a block scale's ``bs_dtype`` is float32);
* ``zero_point`` (integer zero points): ``[pk / g, pn x zp_bits / 32]`` int32, ``zp_bits`` 4 for
  weights of at most 4 bits, else 8 (``transform_humming_zero_point``);
* ``weight_scale_2``: a tensor scale one float32 (``[e]`` for experts), a channel scale ``[pn]``
  in the activation dtype;
* ``bias`` ``[pn]`` in the activation dtype and, for a linear layer, a ``zero_bias`` buffer of the
  same shape (``register_buffer("zero_bias", zeros_like(bias))``; 0.31.0+: before, the W8A16 fp8
  layers of ``humming_utils.py`` keep the padded bias alone);
* every other parameter of the layer (``weight_shape``, ``g_idx``, the loaded scales) is deleted;
* the kernel object keeps ``locks``, ``8 x SMs`` int32 (``vllm/utils/humming.py``
  ``create_humming_locks``): per linear layer (``HummingLinearKernel`` /
  ``HummingNvFp4LinearKernel``) and per MoE layer (the Humming experts' ``__init__``).

For the 16-bit-activation layouts on SM 9.0, no value of the checkpoint changes a shape: the
conversions that read values (``convert_symmetric_integer_weight``: sign-magnitude codes when no
code is 0; ``_may_process_global_scale``: one global scale when a fused layer's parts agree, which
vLLM's NVFP4 schemes already reduce to their maximum) repack in place of the same size.

Checked byte-exact against vLLM 0.33.0 with humming-kernels 0.1.19 and vLLM 0.32.0 with 0.1.17 on
the meta device (``tests/fidelity/data/weights/quant-recorded-*0.33.0*.json`` and ``*0.32.0*.json``,
the H100 rows recorded with the package): the two packages declare the same shapes
(``transform.py`` and ``ops/weight.py`` unchanged), and 0.32.0's integration differs from 0.33.0's
only where no tensor is kept (a cached ``DeviceInfo`` per device, ``replace_parameter``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dryboot.errors import InputError

#: ``pad_n_to_multiple`` / ``pad_k_to_multiple`` of vLLM 0.33's Humming linear and MoE callers
PAD_N = 256
PAD_K = 128
#: ``create_humming_locks``: int32 locks per multiprocessor
LOCKS_PER_SM = 8
#: the int32 locks of a Humming W8A16 fp8 linear layer before ``create_humming_locks`` (0.27.1-0.31.0:
#: ``HummingFP8ScaledMMLinearKernel``'s ``torch.zeros(1024, dtype=torch.int32)``, 0.27.1's
#: ``prepare_humming_layer`` ``locks`` buffer)
FIXED_LOCKS = 1024


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


@dataclass(frozen=True)
class HummingLayer:
    """One layer (or one MoE sub-layer: ``w13`` / ``w2``) in Humming's standard schema, per rank.

    :param n: output features (``sum(output_partition_sizes)``; ``w13``: ``2 x intermediate``).
    :param k: input features (``input_size_per_partition``).
    :param bits: weight bits (4 or 8 for integers, 4 for NVFP4).
    :param group_size: input features per weight scale; ``0`` one scale per output channel,
        ``-1`` a single tensor scale.
    :param group_size_n: output features per weight scale of a block scale (fp8 ``[bn, bk]``
        blocks: ``group_size_n = bn``, ``group_size = bk``), ``0`` for no block scale.
    :param scale_bytes: the element size of the group / channel scales (the activation dtype's for
        integer weights, 1 for NVFP4's fp8 scales).
    :param act_bytes: the activation (``params_dtype``) element size.
    :param zero_points: integer zero points (AWQ, asymmetric compressed-tensors).
    :param weight_scale_2: a second scale: ``"tensor"`` (NVFP4's global scale) or ``None``.
    :param bias: the layer has a bias.
    :param zero_bias: a linear layer with a bias keeps a ``zero_bias`` twin (vLLM 0.31.0+'s
        ``utils/humming/linear.py``; before, ``humming_utils.py`` keeps the bias alone).
    :param experts: local experts of an MoE sub-layer, ``0`` for a linear layer.
    """

    n: int
    k: int
    bits: int
    group_size: int
    scale_bytes: int
    act_bytes: int = 2
    zero_points: bool = False
    weight_scale_2: str | None = None
    bias: bool = False
    experts: int = 0
    group_size_n: int = 0
    zero_bias: bool = True

    @property
    def padded_nk(self) -> tuple[int, int]:
        """``(pn, pk)``: ``n`` rounded up to :data:`PAD_N`, ``k`` to :data:`PAD_K`."""
        return _round_up(self.n, PAD_N), _round_up(self.k, PAD_K)


def humming_tensors(layer: HummingLayer) -> list[tuple[str, int]]:
    """The tensors a layer holds after Humming's ``prepare_and_transform_humming_tensors``, as
    (kind, bytes) (the module docstring's rules; the caller rounds each to allocator blocks).
    Without the kernel's ``locks`` (:func:`humming_locks_bytes`)."""
    pn, pk = layer.padded_nk
    e = max(layer.experts, 1)
    out = [("weight", e * pn * pk * layer.bits // 8)]
    if layer.group_size == -1:
        out.append(("scale", e * 4))
    elif layer.group_size_n:  # a block scale: float32 [pn / bn, pk / bk]
        out.append(("scale", e * (pn // layer.group_size_n) * (pk // layer.group_size) * 4))
    else:
        groups = pk // layer.group_size if layer.group_size > 0 else 1
        out.append(("scale", e * groups * pn * layer.scale_bytes))
        if layer.zero_points:
            zp_bits = 4 if layer.bits <= 4 else 8
            out.append(("scale", e * groups * pn * zp_bits // 8))
    if layer.weight_scale_2 == "tensor":
        out.append(("scale", e * 4))
    if layer.bias:
        out.append(("bias", e * pn * layer.act_bytes))
        if not layer.experts and layer.zero_bias:
            out.append(("bias", pn * layer.act_bytes))  # zero_bias
    return out


def humming_locks_bytes(sm_count: int | None) -> int:
    """``create_humming_locks``: ``8 x SMs`` int32 (bytes), one set per Humming linear kernel
    object and per Humming MoE experts object; ``sm_count`` the GPU's multiprocessors
    (``torch.cuda.get_device_properties().multi_processor_count``), ``None`` when unknown.

    :raises InputError: an unknown SM count (a GPU spec such as ``sm90:80G``, or a table GPU no
        source gives the multiprocessors of): the locks' size is the GPU's, not guessed."""
    if sm_count is None:
        raise InputError(
            "--gpu",
            None,
            "Humming's locks (8 int32 per multiprocessor, per Humming layer) need the GPU's multiprocessors, "
            "unknown for this GPU: name one whose SM count is known (e.g. H100, H200)",
        )
    return LOCKS_PER_SM * sm_count * 4


def humming_fp8_locks_bytes(locks: str, sm_count: int | None) -> int:
    """The locks (bytes) one ``HummingFP8ScaledMMLinearKernel`` layer keeps: ``locks`` is the
    release's rule (``QuantRules.humming_wfp8a16_locks``): ``fixed`` (:data:`FIXED_LOCKS` int32,
    0.27.1-0.31.0) or ``sm`` (``create_humming_locks``, 0.32.0+: :func:`humming_locks_bytes`).

    :raises InputError: ``sm`` on a GPU whose multiprocessors are unknown."""
    return FIXED_LOCKS * 4 if locks == "fixed" else humming_locks_bytes(sm_count)
