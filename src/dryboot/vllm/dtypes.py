"""Cache dtypes: element sizes, KV-cache dtype names and user-declared custom KV caches.

Mirrors vLLM 0.28.0's ``vllm/utils/torch_utils.py`` (``STR_DTYPE_TO_TORCH_DTYPE``,
``get_kv_cache_torch_dtype``) and ``vllm/v1/kv_cache_interface.py`` (``get_kv_quant_mode``).
Sizes are bytes per element.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from dryboot.errors import InputError, not_positive_integer

#: torch dtype name -> bytes per element.
TORCH_DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
    "int8": 1,
    "float8_e4m3fn": 1,
}

#: vLLM's string dtype names (``--dtype``, ``--kv-cache-dtype``, ``--mamba-*-dtype``,
#: HF ``torch_dtype``) -> torch dtype name, as ``STR_DTYPE_TO_TORCH_DTYPE``.
STR_TO_TORCH_DTYPE: dict[str, str] = {
    "float32": "float32",
    "float": "float32",
    "half": "float16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "fp8": "uint8",
    "fp8_e4m3": "uint8",
    "fp8_e5m2": "uint8",
    "int8": "int8",
    "int4_per_token_head": "uint8",
    "int8_per_token_head": "int8",
    "fp8_per_token_head": "uint8",
    "nvfp4": "uint8",
    "nvfp4_4over6": "uint8",
    "fp8_ds_mla": "uint8",
}


class KVQuantMode(Enum):
    """How a KV cache is quantized (``KVQuantMode`` in ``v1/kv_cache_interface.py``)."""

    NONE = "none"
    FP8_PER_TENSOR = "fp8_per_tensor"
    INT8_PER_TOKEN_HEAD = "int8_per_token_head"
    FP8_PER_TOKEN_HEAD = "fp8_per_token_head"
    INT4_PER_TOKEN_HEAD = "int4_per_token_head"
    NVFP4 = "nvfp4"
    CUSTOM = "custom"

    # members are singletons: identity hashing is exact and runs in C (Enum's is Python code)
    __hash__ = object.__hash__

    @property
    def is_per_token_head(self) -> bool:
        return self in (
            KVQuantMode.INT8_PER_TOKEN_HEAD,
            KVQuantMode.FP8_PER_TOKEN_HEAD,
            KVQuantMode.INT4_PER_TOKEN_HEAD,
        )


#: The ``--kv-cache-dtype`` values dryboot plans for (vLLM 0.28.0's names).
KV_CACHE_DTYPES = (
    "auto",
    "bfloat16",
    "float16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "int8_per_token_head",
    "fp8_per_token_head",
    "int4_per_token_head",
    "nvfp4",
    "nvfp4_4over6",
    "fp8_ds_mla",
)

#: ``--kv-cache-dtype`` values vLLM 0.28.0 accepts (``CacheDType``) whose layout dryboot does
#: not model: refused by name. (``fp8_ds_mla`` is planned for sparse MLA models only: see
#: :data:`SPARSE_MLA_ONLY_KV_CACHE_DTYPES`.)
UNMODELLED_KV_CACHE_DTYPES = (
    "fp8_inc",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
)

#: ``--kv-cache-dtype`` values only a sparse MLA model's backend (``FLASHMLA_SPARSE``) serves:
#: DeepSeek's ``fp8_ds_mla`` layout (656 bytes per token of the MLA layers).
SPARSE_MLA_ONLY_KV_CACHE_DTYPES = ("fp8_ds_mla",)

#: ``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` values (vLLM's ``MambaDType``).
MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")

#: ``--dtype`` values (vLLM's ``ModelDType``).
MODEL_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")


def kv_quant_mode(kv_cache_dtype: str) -> KVQuantMode:
    """The quantization mode of a ``--kv-cache-dtype`` value (``get_kv_quant_mode``)."""
    if kv_cache_dtype == "int4_per_token_head":
        return KVQuantMode.INT4_PER_TOKEN_HEAD
    if kv_cache_dtype == "int8_per_token_head":
        return KVQuantMode.INT8_PER_TOKEN_HEAD
    if kv_cache_dtype == "fp8_per_token_head":
        return KVQuantMode.FP8_PER_TOKEN_HEAD
    if kv_cache_dtype.startswith("fp8"):
        return KVQuantMode.FP8_PER_TENSOR
    if kv_cache_dtype.startswith("nvfp4"):
        return KVQuantMode.NVFP4
    return KVQuantMode.NONE


def torch_dtype_of(name: str, model_dtype: str) -> str:
    """Resolve a cache dtype name (``auto`` = the model dtype) to a torch dtype name.

    Mirrors ``get_kv_cache_torch_dtype``. ``model_dtype`` is a torch dtype name.

    :raises ValueError: for an unknown name.
    """
    if name == "auto":
        return model_dtype
    try:
        return STR_TO_TORCH_DTYPE[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}") from None


def dtype_bytes(torch_dtype: str) -> int:
    """Bytes per element of a torch dtype name (``get_dtype_size``)."""
    return TORCH_DTYPE_BYTES[torch_dtype]


# --------------------------------------------------------------------------------------
# Custom (out-of-tree) KV caches
# --------------------------------------------------------------------------------------

_BINOPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,
    ast.Mod: operator.mod,
}


def _eval_formula(node: ast.AST, head_dim: int) -> int:
    if isinstance(node, ast.Expression):
        return _eval_formula(node.body, head_dim)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id == "head_dim":
        return head_dim
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval_formula(node.left, head_dim)
        right = _eval_formula(node.right, head_dim)
        if isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)) and right == 0:
            raise ValueError("division by zero")
        return _BINOPS[type(node.op)](left, right)
    raise ValueError("only integers, head_dim and + - * / // % ( ) are allowed")


@dataclass(frozen=True)
class CustomKVCacheDtype:
    """A KV cache dtype declared by the user, for caches that live outside upstream vLLM.

    Example: KVarN (4-bit K, 2-bit V, group-128 scales) stores 210 B per head per token at
    head_dim 256, needs kernel blocks that are multiples of 128, and its kernel cannot read a
    padded page: ``CustomKVCacheDtype("kvarn", "210*head_dim//256", 128, can_pad=False)``.

    :param name: the ``--kv-cache-dtype`` value that selects it.
    :param bytes_per_head_token: bytes one KV head stores per token (K and V together), as an
        integer or an integer formula of ``head_dim`` (``+ - * / // %``, parentheses;
        ``/`` is integer division).
    :param kernel_block_size: the kernel block; framework blocks must be multiples of it.
    :param can_pad: whether its kernel indexes pages by block stride, so unification may pad
        its page (``indexes_kv_by_block_stride`` in vLLM terms).
    """

    name: str
    bytes_per_head_token: str
    kernel_block_size: int = 16
    can_pad: bool = True

    def content_bytes(self, head_dim: int) -> int:
        """Bytes per head per token at ``head_dim``.

        :raises ValueError: when the formula is malformed or not positive.
        """
        return _formula_value(self.bytes_per_head_token, head_dim)


@lru_cache(maxsize=1024)
def _formula_value(formula: str, head_dim: int) -> int:
    try:
        tree = ast.parse(formula.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"bytes per head per token {formula!r} is not a formula") from None
    value = _eval_formula(tree, head_dim)
    if value <= 0:
        raise ValueError(
            f"bytes per head per token {formula!r} gives {value} at head_dim {head_dim}; it must be positive"
        )
    return value


def parse_custom_kv_cache_dtype(text: str, source: str = "--custom-kv-cache-dtype") -> CustomKVCacheDtype:
    """Parse ``NAME:BYTES[:kernel_block=N][:pad=yes|no]``, e.g. ``kvarn:210:kernel_block=128:pad=no``.

    ``BYTES`` is bytes per head per token, an integer or a formula of ``head_dim``
    (``'210*head_dim//256'``).

    :raises InputError: naming ``source`` and the faulty part.
    """
    parts = [p.strip() for p in text.split(":")]
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise InputError(source, text, "expected NAME:BYTES_PER_HEAD_TOKEN[:kernel_block=N][:pad=yes|no]")
    name, formula = parts[0], parts[1]
    if name in KV_CACHE_DTYPES:
        raise InputError(source, text, f"{name!r} is a built-in --kv-cache-dtype; pick another name")
    kernel_block = 16
    can_pad = True
    for extra in parts[2:]:
        key, _, value = extra.partition("=")
        if key == "kernel_block":
            if not value.isdigit() or int(value) <= 0:
                raise InputError(source, text, not_positive_integer(value, "kernel_block"))
            kernel_block = int(value)
        elif key == "pad":
            if value not in ("yes", "no", "true", "false"):
                raise InputError(source, text, f"pad must be yes or no, got {value!r}")
            can_pad = value in ("yes", "true")
        else:
            raise InputError(source, text, f"unknown field {key!r} (kernel_block, pad)")
    custom = CustomKVCacheDtype(name, formula, kernel_block, can_pad)
    try:
        custom.content_bytes(128)
    except ValueError as exc:
        raise InputError(source, text, str(exc)) from None
    return custom
