"""GPTQ's empty ``modules_in_block_to_quantize`` (issue 33): composed tiny Qwen3 / Llama configs
with Qwen3-8B-GPTQ-Int4's quantization config, the key absent or ``[]``, each given a header-only
checkpoint of the real shapes (:func:`checkpoint_dir`): GPTQ-packed (every decoder-block linear
layer's ``qweight`` / ``qzeros`` / ``scales`` / ``g_idx``) or, for a folder named
``...+float-checkpoint``, float tensors only (no quantized tensor, as a re-exported or unquantized
checkpoint that kept its GPTQ config). vLLM fills an empty or absent list from the checkpoint's
non-float tensors (``AutoGPTQConfig.maybe_update_config``); what it does when that read finds none
differs by release (``utils/gptq_utils.py`` ``is_layer_gptq_quantized``).

Recorded with :data:`LOAD_WEIGHTS`: after the model is built, vLLM's own loader
(``DefaultModelLoader.load_weights``) is run over the checkpoint's tensors as meta tensors of the
header's shapes and dtypes (no data read), so that a checkpoint whose tensors the built layers do
not take fails as vLLM fails it.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=gptqempty``, and by ``test_weights_gptqempty.py`` (the same checkpoints for dryboot).
vLLM's answers live in ``data/weights/quant-recorded-gptqempty-<version>.json``.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-gptqempty"
RECORDED_NAME = "quant-recorded-gptqempty-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6 and 8.9 (Marlin)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
)
TPS = (1, 2)
#: the recorder runs vLLM's loader over the checkpoint's tensors (meta tensors of the header's shapes)
LOAD_WEIGHTS = True
#: the suffix of a config folder whose checkpoint holds float tensors only
FLOAT_CHECKPOINT = "+float-checkpoint"
#: the decoder-block linear layers as the checkpoint names them: (name, input, output) in units of
#: hidden / q (heads x head_dim) / kv / intermediate
LINEARS = (
    ("self_attn.q_proj", "hidden", "q"),
    ("self_attn.k_proj", "hidden", "kv"),
    ("self_attn.v_proj", "hidden", "kv"),
    ("self_attn.o_proj", "q", "hidden"),
    ("mlp.gate_proj", "hidden", "intermediate"),
    ("mlp.up_proj", "hidden", "intermediate"),
    ("mlp.down_proj", "intermediate", "hidden"),
)
#: safetensors dtype name -> bytes per element
DTYPE_BYTES = {"F16": 2, "BF16": 2, "F32": 4, "I32": 4}


def checkpoint_tensors(config: dict[str, Any], float_only: bool) -> dict[str, tuple[str, list[int]]]:
    """The checkpoint's tensors, name -> (safetensors dtype, shape): embedding, final norm and
    head (untied), each layer's norms (Qwen3's ``q_norm`` / ``k_norm`` too) in the config's
    ``torch_dtype``; each decoder-block linear layer either as GPTQ packs it (4-bit: ``qweight
    [k / 8, n]`` I32, ``qzeros [k / group, n / 8]`` I32, ``scales [k / group, n]`` F16, ``g_idx [k]``
    I32) or, ``float_only``, as its ``weight [n, k]`` in the model dtype."""
    dt = {"float16": "F16", "bfloat16": "BF16", "float32": "F32"}[config["torch_dtype"]]
    h, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    hd = config.get("head_dim") or h // config["num_attention_heads"]
    dims = {
        "hidden": h,
        "q": config["num_attention_heads"] * hd,
        "kv": config["num_key_value_heads"] * hd,
        "intermediate": inter,
    }
    qc = config["quantization_config"]
    pack, group = 32 // qc["bits"], qc["group_size"]
    out: dict[str, tuple[str, list[int]]] = {
        "model.embed_tokens.weight": (dt, [vocab, h]),
        "model.norm.weight": (dt, [h]),
    }
    if not config.get("tie_word_embeddings"):
        out["lm_head.weight"] = (dt, [vocab, h])
    norms = [("input_layernorm", h), ("post_attention_layernorm", h)]
    if config["model_type"] == "qwen3":
        norms += [("self_attn.q_norm", hd), ("self_attn.k_norm", hd)]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        for n, size in norms:
            out[f"{p}.{n}.weight"] = (dt, [size])
        for lin, kin, nout in LINEARS:
            k, n = dims[kin], dims[nout]
            if float_only:
                out[f"{p}.{lin}.weight"] = (dt, [n, k])
                continue
            out[f"{p}.{lin}.qweight"] = ("I32", [k // pack, n])
            out[f"{p}.{lin}.qzeros"] = ("I32", [k // group, n // pack])
            out[f"{p}.{lin}.scales"] = ("F16", [k // group, n])
            out[f"{p}.{lin}.g_idx"] = ("I32", [k])
    return out


def checkpoint_dir(cdir: Path, tmp: Path) -> Path:
    """The directory vLLM (and dryboot) is given for config folder ``cdir``: its ``config.json``
    and a header-only ``model.safetensors`` of :func:`checkpoint_tensors` (float-only where the
    folder's name ends with :data:`FLOAT_CHECKPOINT`); the data offsets are those of the real
    file, whose data is absent (headers only are read)."""
    config = json.loads((cdir / "config.json").read_text())
    d = tmp / cdir.name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_bytes((cdir / "config.json").read_bytes())
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, (dt, shape) in checkpoint_tensors(config, cdir.name.endswith(FLOAT_CHECKPOINT)).items():
        nb = DTYPE_BYTES[dt]
        for s in shape:
            nb *= s
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    blob = json.dumps(header).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob)
    return d
