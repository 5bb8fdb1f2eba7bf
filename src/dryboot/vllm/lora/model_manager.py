"""What ``--enable-lora`` allocates on each rank while vLLM (0.27.1, 0.28.0, 0.30.0, 0.33.0) loads
the model.

vLLM wraps every supported layer at start (the adapters are unknown then): ``LoRAModelManager``
(``lora/model_manager.py``) builds one punica wrapper and, for every module whose name ends in a
linear layer's or an ``embedding_modules`` name, the LoRA layer ``from_layer`` picks, whose
``create_lora_weights`` allocates zeroed A/B stacks on the GPU in the LoRA dtype. This runs inside
``load_model``'s ``DeviceMemoryProfiler`` (``load_lora_model``), so it is part of vLLM's
``Model loading took`` line. The shapes below are read from vLLM 0.28.0's code and checked on each
release of :data:`LORA_RELEASES` (they differ in the punica embeddings index only); families and
layer kinds not listed are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError

#: vLLM 0.28.0's ``MaxLoRARanks`` (``config/lora.py``)
MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: the decoder families whose wrapped layers are modelled (each decoder layer's ``qkv_proj``,
#: ``o_proj``, ``gate_up_proj``, ``down_proj``), and whether the model class declares
#: ``embedding_modules`` (``embed_tokens`` and ``lm_head`` wrapped too: Llama and Qwen3 in 0.28.0,
#: not Qwen2)
LORA_ARCHITECTURES: Mapping[str, bool] = {
    "LlamaForCausalLM": True,
    "Qwen2ForCausalLM": False,
    "Qwen3ForCausalLM": True,
    "MistralForCausalLM": False,
    "Phi3ForCausalLM": True,
    "Gemma2ForCausalLM": False,
    "Gemma3ForCausalLM": False,
}
#: families whose ``packed_modules_mapping`` maps ``qkv_proj`` and ``gate_up_proj`` to themselves
#: (Phi-3's checkpoints hold them fused): one LoRA slice each, over the whole fused output
ONE_SLICE_PACKED = frozenset({"Phi3ForCausalLM"})
#: MoE families whose experts vLLM wraps in ``FusedMoEWithLoRA`` (and their router ``gate`` in
#: ``ReplicatedLinearWithLoRA``) -> whether the class declares ``embedding_modules``
MOE_LORA: Mapping[str, bool] = {"Qwen3MoeForCausalLM": True, "MixtralForCausalLM": True, "Qwen2MoeForCausalLM": False}
#: ``LogitsProcessorWithLoRA.create_lora_weights``' limit
MAX_LORA_VOCAB = 258048
#: releases whose LoRA layers are read
LORA_RELEASES = ("0.27.1", "0.28.0", "0.30.0", "0.33.0")
_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


@dataclass(frozen=True)
class LoRAConfig:
    """vLLM's ``LoRAConfig`` fields that size the GPU stacks: ``--max-loras``,
    ``--max-lora-rank``, ``--fully-sharded-loras``, ``--lora-dtype`` (``auto``: the model
    dtype), ``--max-cpu-loras`` (host memory only; validated as vLLM does)."""

    max_loras: int = 1
    max_lora_rank: int = 16
    fully_sharded_loras: bool = False
    lora_dtype: str = "auto"
    max_cpu_loras: int | None = None

    def validate(self) -> None:
        """vLLM's ``LoRAConfig`` checks. :raises InputError: naming the flag."""
        if self.max_loras < 1:
            raise InputError("--max-loras", None, f"{self.max_loras} is below 1")
        if self.max_lora_rank not in MAX_LORA_RANKS:
            raise InputError(
                "--max-lora-rank", None, f"{self.max_lora_rank} is not one of {', '.join(map(str, MAX_LORA_RANKS))}"
            )
        if self.max_cpu_loras is not None and self.max_cpu_loras < self.max_loras:
            raise InputError(
                "--max-cpu-loras", None, f"max_cpu_loras ({self.max_cpu_loras}) must be >= max_loras ({self.max_loras})"
            )
        if self.lora_dtype != "auto" and self.lora_dtype not in _DTYPE_BYTES:
            raise InputError("--lora-dtype", None, f"{self.lora_dtype!r} is not modelled")


@dataclass(frozen=True)
class LoRATensor:
    """One GPU tensor LoRA allocates: ``name`` (module and stack), ``shape``, ``itemsize``."""

    name: str
    shape: tuple[int, ...]
    itemsize: int

    @property
    def nbytes(self) -> int:
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n


class LoRARefused(InputError):
    """LoRA's allocations are not modelled for this model or setting (budget undetermined)."""


def _refuse(reason: str) -> LoRARefused:
    return LoRARefused("--enable-lora", None, reason)


def _div(n: int, d: int, what: str) -> int:
    if n % d:
        raise _refuse(f"{what} ({n}) is not divisible by the tensor-parallel size {d}")
    return n // d


def _pad_vocab(vocab: int, pad: int = 64) -> int:
    return -(-vocab // pad) * pad


def _linear_stacks(
    name: str, in_size: int, outs: tuple[int, ...], kind: str, lc: LoRAConfig, tp: int, item: int
) -> list[LoRATensor]:
    """A wrapped linear layer's stacks (``BaseLinearLayerWithLoRA`` /
    ``MergedColumnParallelLinearWithLoRA.create_lora_weights``): per slice, A
    ``[max_loras, 1, a_rank, in]`` and B ``[max_loras, 1, out, rank]``. Column-parallel: ``in``
    whole, ``out`` the rank's slice, ``a_rank`` = rank / TP when fully sharded. Row-parallel:
    ``in`` the rank's slice, ``out`` whole, or / TP when fully sharded."""
    r = lc.max_lora_rank
    a_rank = _div(r, tp, "--max-lora-rank") if (lc.fully_sharded_loras and kind == "column") else r
    tensors = [
        LoRATensor(f"{name}.lora_a_stacked[{i}]", (lc.max_loras, 1, a_rank, in_size), item) for i in range(len(outs))
    ]
    for i, out in enumerate(outs):
        if kind == "row" and lc.fully_sharded_loras:
            out = _div(out, tp, f"{name} output")
        tensors.append(LoRATensor(f"{name}.lora_b_stacked[{i}]", (lc.max_loras, 1, out, r), item))
    return tensors


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


def _int(config: Mapping[str, Any], key: str) -> int:
    v = config.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise InputError("config.json", key, "missing or not a positive integer")
    return v


def _sparse_layer(config: Mapping[str, Any], arch: str, layer: int) -> bool:
    """Whether decoder layer ``layer`` holds the MoE block (Qwen-MoE: not in ``mlp_only_layers``
    and every ``decoder_sparse_step``-th; Mixtral: every layer)."""
    if arch == "MixtralForCausalLM":
        return True
    only = config.get("mlp_only_layers") or []
    step = config.get("decoder_sparse_step") or 1
    if not isinstance(only, list) or not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise InputError("config.json", "decoder_sparse_step", "mlp_only_layers must be a list, the step >= 1")
    return layer not in only and _int(config, "num_experts") > 0 and (layer + 1) % step == 0


def _moe_stacks(
    name: str, config: Mapping[str, Any], arch: str, lc: LoRAConfig, tp: int, item: int
) -> list[LoRATensor]:
    """One MoE block's LoRA tensors: the router ``gate`` (``ReplicatedLinearWithLoRA``, A
    ``[max_loras, 1, rank, H]``, B ``[max_loras, 1, E, rank]``); ``FusedMoEWithLoRA`` over ``E``
    experts of intermediate ``I`` (``I / TP`` per rank): w13 A ``[max_loras, E, rank, H]`` and B
    ``[max_loras, E, I / TP, rank]`` per slice (gate and up: two), w2 A ``[max_loras, E, rank, I /
    TP]``, B ``[max_loras, E, H, rank]`` (fully sharded: w13 A's rank and w2 B's ``H`` / TP), an
    int32 ``adapter_enabled`` ``[max_loras + 1]``; Qwen2-MoE's shared expert MLP and its
    ``shared_expert_gate`` (``[1, H]``, replicated) as linear layers."""
    h = _int(config, "hidden_size")
    experts = _int(config, "num_local_experts" if arch == "MixtralForCausalLM" else "num_experts")
    inter = _int(config, "intermediate_size" if arch == "MixtralForCausalLM" else "moe_intermediate_size")
    i_r = _div(inter, tp, "the experts' intermediate size")
    r, n = lc.max_lora_rank, lc.max_loras
    fs = lc.fully_sharded_loras
    out = _linear_stacks(f"{name}.gate", h, (experts,), "replicated", lc, tp, item)
    shared = config.get("shared_expert_intermediate_size") or 0
    if arch == "Qwen2MoeForCausalLM" or shared:
        out += _linear_stacks(f"{name}.shared_expert_gate", h, (1,), "replicated", lc, tp, item)
    if shared:
        s_r = _div(_int(config, "shared_expert_intermediate_size"), tp, "the shared expert's intermediate size")
        out += _linear_stacks(f"{name}.shared_expert.gate_up_proj", h, (s_r, s_r), "column", lc, tp, item)
        out += _linear_stacks(f"{name}.shared_expert.down_proj", s_r, (h,), "row", lc, tp, item)
    a_rank = _div(r, tp, "--max-lora-rank") if fs else r
    for i in range(2):
        out.append(LoRATensor(f"{name}.experts.w13_lora_a_stacked[{i}]", (n, experts, a_rank, h), item))
    out.append(LoRATensor(f"{name}.experts.w2_lora_a_stacked", (n, experts, r, i_r), item))
    for i in range(2):
        out.append(LoRATensor(f"{name}.experts.w13_lora_b_stacked[{i}]", (n, experts, i_r, r), item))
    w2_out = _div(h, tp, "the hidden size") if fs else h
    out.append(LoRATensor(f"{name}.experts.w2_lora_b_stacked", (n, experts, w2_out, r), item))
    out.append(LoRATensor(f"{name}.experts.adapter_enabled", (n + 1,), 4))
    return out


def lora_tensors(
    config: Mapping[str, Any],
    lc: LoRAConfig,
    *,
    tp: int = 1,
    pp: int = 1,
    model_dtype_bytes: int = 2,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    vllm_version: str = "0.28.0",
    expert_parallel: bool = False,
) -> list[LoRATensor]:
    """Every GPU tensor ``--enable-lora`` allocates on one rank of vLLM ``vllm_version``
    (``LoRAModelManager``):

    - Phi-3 (:data:`ONE_SLICE_PACKED`): ``qkv_proj`` and ``gate_up_proj`` one slice each, over the
      fused output; an MoE family's (:data:`MOE_LORA`) sparse layers as :func:`_moe_stacks`;
    - per decoder layer (hidden ``H``, intermediate ``I``, heads ``q``/``kv`` of ``head_dim``):
      ``qkv_proj`` (``MergedQKVParallelLinearWithLoRA``, three slices of ``in = H``,
      ``out = q / TP x hd`` and ``max(kv / TP, 1) x hd`` twice), ``o_proj`` (row, ``in = q x hd /
      TP``, ``out = H``), ``gate_up_proj`` (two slices ``I / TP``), ``down_proj`` (row, ``I / TP``
      -> ``H``), each as :func:`_linear_stacks`;
    - where the class declares ``embedding_modules`` (:data:`LORA_ARCHITECTURES`):
      ``embed_tokens`` (``VocabParallelEmbeddingWithLoRA``): A ``[max_loras, vocab, rank]`` (the
      whole unpadded vocabulary on every rank), B ``[max_loras, 1, H, rank]``;
    - ``lm_head`` through ``LogitsProcessorWithLoRA``: A ``[max_loras, 1, rank, H]``, B
      ``[max_loras, 1, vocab, rank]``, and at TP >= 2 an int64 ``sharded_to_full_mapping``
      ``[vocab padded to 64]``;
    - the punica wrapper (``PunicaWrapperGPU``): int64 ``[T]`` x 3 and ``[2, T]`` (``[T]`` from
      0.30), int64
      ``[max_num_seqs]`` x 3, and two ``LoRAKernelMeta`` of int32 ``[T]`` x 2, ``[max_loras + 1]``
      x 2 and ``[max_loras + 2]`` (``T``: ``--max-num-batched-tokens``).

    Sizes in the LoRA dtype (``auto``: the model's, ``model_dtype_bytes``).

    :raises LoRARefused: another architecture or release, a quantized model, tied embeddings
        where the head is wrapped (it would be wrapped twice), pipeline parallelism, an MoE family
        under expert parallelism.
    :raises InputError: a flag vLLM rejects (:meth:`LoRAConfig.validate`), a vocabulary above
        258048 where the head is wrapped (vLLM's own refusal), or a malformed config.
    """
    lc.validate()
    if vllm_version not in LORA_RELEASES:
        raise _refuse(f"LoRA's allocations are modelled for vLLM {', '.join(LORA_RELEASES)} only, not {vllm_version}")
    archs = config.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if arch not in LORA_ARCHITECTURES and arch not in MOE_LORA:
        raise _refuse(f"LoRA's allocations are not modelled for {arch or 'this model'} (budget undetermined)")
    embeddings = LORA_ARCHITECTURES[arch] if arch in LORA_ARCHITECTURES else MOE_LORA[arch]
    if embeddings and config.get("tie_word_embeddings"):
        raise _refuse(f"LoRA over tied embeddings ({arch}) is not modelled (budget undetermined)")
    if config.get("quantization_config"):
        raise _refuse(f"LoRA over a quantized {arch} is not modelled (budget undetermined)")
    if pp > 1:
        raise _refuse("LoRA under pipeline parallelism is not modelled (budget undetermined)")
    if expert_parallel and arch in MOE_LORA:
        raise _refuse(f"LoRA over {arch}'s experts under expert parallelism is not modelled (budget undetermined)")
    item = _DTYPE_BYTES[lc.lora_dtype] if lc.lora_dtype != "auto" else model_dtype_bytes
    h = _int(config, "hidden_size")
    inter = _int(config, "intermediate_size")
    heads = _int(config, "num_attention_heads")
    kv = _int(config, "num_key_value_heads") if config.get("num_key_value_heads") is not None else heads
    hd = _int(config, "head_dim") if config.get("head_dim") is not None else h // heads
    vocab = _int(config, "vocab_size")
    layers = _int(config, "num_hidden_layers")
    if embeddings and vocab > MAX_LORA_VOCAB:
        raise InputError(
            "--enable-lora", None, f"When using LoRA, vocab size must be <= {MAX_LORA_VOCAB} (vocab_size {vocab})"
        )
    q_out = _div(heads, tp, "num_attention_heads") * hd
    kv_out = (kv // tp if kv >= tp else 1) * hd
    i_out = _div(inter, tp, "intermediate_size")
    r, n = lc.max_lora_rank, lc.max_loras
    out: list[LoRATensor] = []
    if embeddings:
        out += [
            LoRATensor("embed_tokens.lora_a_stacked", (n, vocab, r), item),
            LoRATensor("embed_tokens.lora_b_stacked", (n, 1, h, r), item),
        ]
    for li in range(layers):
        p = f"layers.{li}"
        one = arch in ONE_SLICE_PACKED
        qkv = (q_out + 2 * kv_out,) if one else (q_out, kv_out, kv_out)
        out += _linear_stacks(f"{p}.qkv_proj", h, qkv, "column", lc, tp, item)
        out += _linear_stacks(f"{p}.o_proj", q_out, (h,), "row", lc, tp, item)
        if arch in MOE_LORA and _sparse_layer(config, arch, li):
            out += _moe_stacks(f"{p}.mlp", config, arch, lc, tp, item)
            continue
        out += _linear_stacks(f"{p}.gate_up_proj", h, (2 * i_out,) if one else (i_out, i_out), "column", lc, tp, item)
        out += _linear_stacks(f"{p}.down_proj", i_out, (h,), "row", lc, tp, item)
    if embeddings:
        out += [
            LoRATensor("logits_processor.lora_a_stacked", (n, 1, r, h), item),
            LoRATensor("logits_processor.lora_b_stacked", (n, 1, vocab, r), item),
        ]
    if embeddings and tp >= 2:
        out.append(LoRATensor("logits_processor.sharded_to_full_mapping_gpu", (_pad_vocab(vocab),), 8))
    t, s = max_num_batched_tokens, max_num_seqs
    out += [
        LoRATensor(f"punica.{k}", (t,), 8)
        for k in ("_token_lora_indices", "_sampler_indices", "_sampler_indices_padded")
    ]
    # [2, T] through 0.28 (the added-vocabulary row went with --lora-extra-vocab-size); [T] from 0.30
    emb = (t,) if _release(vllm_version) >= (0, 30) else (2, t)
    out.append(LoRATensor("punica._embeddings_indices", emb, 8))
    out += [LoRATensor(f"punica.{k}", (s,), 8) for k in ("_seq_start_locs", "_seq_lengths", "_lora_indices_per_batch")]
    for meta in ("token_mapping_meta", "prompt_mapping_meta"):
        out += [
            LoRATensor(f"punica.{meta}.token_lora_mapping", (t,), 4),
            LoRATensor(f"punica.{meta}.token_indices_sorted_by_lora_ids", (t,), 4),
            LoRATensor(f"punica.{meta}.active_lora_ids", (n + 1,), 4),
            LoRATensor(f"punica.{meta}.num_tokens_per_lora", (n + 1,), 4),
            LoRATensor(f"punica.{meta}.lora_token_start_loc", (n + 2,), 4),
        ]
    return out
