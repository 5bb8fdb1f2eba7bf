"""dryboot's per-rank weight bytes against what vLLM 0.28.0 allocates on the meta device.

``data/weights/recorded.json`` holds vLLM's own figures (``record_weights.py``: the model built by
vLLM's loader on the meta device, every parameter and buffer summed) for the published configs of
``data/weights/configs/`` under TP 1/2/4/8 and, for MoE, expert parallelism. Every case is checked
in the default test run (no vLLM needed): from the config alone, and from a checkpoint's
safetensors headers (headers written with the tensors the published checkpoint holds, in its
names and dtypes; no tensor data). A case vLLM refuses must be refused.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.safetensors import read_checkpoint
from dryboot.vllm.model_executor.model_loader.weights import (
    ARCHITECTURES,
    CONFIG_ONLY,
    REFUSED_METHODS,
    Parallel,
    checkpoint_rank_weights,
    modelled_architectures,
    quant_from_config,
    rank_weights,
)
from dryboot.vllm.model_executor.models import granite4_vision
from dryboot.vllm.models.registry import is_draft_model

DATA = Path(__file__).resolve().parent / "data" / "weights"
#: the planned architectures' tiny configs, recorded as ``arch--<Architecture>``
ARCHS = Path(__file__).resolve().parent / "data" / "architectures"
RECORDED = json.loads((DATA / "recorded.json").read_text())["cases"]


def _config(name: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if name.startswith("arch--"):
        return json.loads((ARCHS / f"{name[6:]}.json").read_text()), None
    cdir = DATA / "configs" / name
    hq = cdir / "hf_quant_config.json"
    return json.loads((cdir / "config.json").read_text()), (json.loads(hq.read_text()) if hq.exists() else None)


def _parallel(argv: list[str], pp_rank: int = 0) -> Parallel:
    pp = int(argv[argv.index("--pipeline-parallel-size") + 1]) if "--pipeline-parallel-size" in argv else 1
    return Parallel(
        tp=int(argv[argv.index("--tensor-parallel-size") + 1]),
        pp=pp,
        pp_rank=pp_rank,
        expert_parallel="--enable-expert-parallel" in argv,
    )


def _lm_only(row: dict[str, Any]) -> bool:
    return "--language-model-only" in row["argv"]


def _serve(row: dict[str, Any]) -> dict[str, Any]:
    """The serving flags of a recorded case that the weights depend on."""
    argv = row["argv"]
    limits = json.loads(argv[argv.index("--limit-mm-per-prompt") + 1]) if "--limit-mm-per-prompt" in argv else None
    return {
        "language_model_only": _lm_only(row),
        "limit_mm_per_prompt": limits,
        "max_num_batched_tokens": row.get("max_num_batched_tokens", 8192),
    }


def _attr_bytes(config: dict[str, Any], row: dict[str, Any]) -> int:
    """Tensors vLLM allocates with the model as plain module attributes (not parameters or
    buffers: the recorder's ``allocated_bytes`` has them, its ``buffer_bytes`` not): DeepSeek-V3.2's
    int32 top-k indices ``[max_num_batched_tokens, index_topk]``, Qwen3-VL's deepstack buffers,
    Gemma-3n's ``per_layer_embeddings``."""
    tokens = row.get("max_num_batched_tokens", 8192)
    if config["architectures"][0] == "Granite4VisionForConditionalGeneration":
        # its deepstack feature buffers: a list attribute of the wrapper, one per level
        return granite4_vision.deepstack_buffer_bytes(config, "0.28.0", tokens, 2)
    if config["architectures"][0] in DEEPSTACK_WRAPPERS:
        return deepstack_bytes(config, row)
    if config["architectures"][0] == "CohereCompassForConditionalGeneration":
        return compass_deepstack(config, row)[0]
    if config["architectures"][0] == "Gemma3nForConditionalGeneration":
        # the wrapper's per_layer_embeddings [max_num_batched_tokens, layers x per-layer width] (bf16)
        text = config["text_config"]
        return 2 * tokens * text["num_hidden_layers"] * text["hidden_size_per_layer_input"]
    if config["architectures"][0] in ("HYV4ForCausalLM", "Glm5NextForCausalLM"):
        return 0  # its walk adds the top-k indices to the allocated bytes only, not its buffer bytes
    return 4 * tokens * config["index_topk"] if "index_topk" in config else 0


def deepstack_bytes(config: dict[str, Any], row: dict[str, Any], version: str = "0.28.0", stage: int = 0) -> int:
    """Qwen3-VL's deepstack feature buffers (a list attribute: in the recorder's allocated bytes, not
    its buffer bytes) on ``stage`` of ``version``, as ``qwen3_vl.py`` builds them: one
    ``[max_num_batched_tokens, H_text]`` per ``deepstack_visual_indexes`` entry where the stage
    builds the vision tower (0.27.1: always; 0.33.0: the first stage only)."""
    limits = _serve(row)["limit_mm_per_prompt"] or {}
    no_vision = limits.get("image", 1) == 0 and limits.get("video", 1) == 0
    tower = not _lm_only(row) and not no_vision and (stage == 0 or version != "0.33.0")
    if not (tower or version == "0.27.1"):
        return 0
    outer = config.get("thinker_config", config.get("vlm_config", config))  # Alpamayo2Super: vlm_config
    text, vision = outer["text_config"], outer["vision_config"]
    dtype = text.get("torch_dtype") or config.get("torch_dtype") or "bfloat16"
    ab = 4 if dtype == "float32" else 2
    tokens = row.get("max_num_batched_tokens", 8192)
    return len(vision.get("deepstack_visual_indexes") or []) * tokens * text["hidden_size"] * ab


def compass_deepstack(
    config: dict[str, Any], row: dict[str, Any], version: str = "0.33.0", stage: int = 0
) -> tuple[int, int]:
    """Cohere Compass's deepstack feature buffers (``cohere_compass.py``: one ``[max_num_batched_tokens,
    H_text]`` per level, made whatever the tower) as (bytes on the device, bytes on the meta device):
    on the device where ``stage`` builds the vision tower, else made inside ``_mark_tower_model``'s
    ``no_init_weights`` (a ``torch.device("meta")`` context), which hold no memory but which the
    recorder's ``allocated_bytes`` counts (every meta tensor a module holds)."""
    levels = config["vision_config"].get("deepstack_visual_indexes", [8, 16, 24]) or []
    text = config["text_config"]
    ab = 4 if (text.get("torch_dtype") or config.get("torch_dtype")) == "float32" else 2
    n = len(levels) * row.get("max_num_batched_tokens", 8192) * text["hidden_size"] * ab
    limits = _serve(row)["limit_mm_per_prompt"] or {}
    tower = not _lm_only(row) and limits.get("image", 1) != 0 and (stage == 0 or version != "0.33.0")
    return (n, 0) if tower else (0, n)


def oracle_meta_bytes(config: dict[str, Any], row: dict[str, Any]) -> int:
    """What the recorder's ``allocated_bytes`` counts on stage 0 that vLLM makes on the meta
    device inside a skipped tower's context (Cohere Compass's deepstack buffers): not GPU memory."""
    if config["architectures"][0] == "CohereCompassForConditionalGeneration":
        return compass_deepstack(config, row)[1]
    return 0


def recorded_max_model_len(config: dict[str, Any]) -> int:
    """The ``--max-model-len`` the recorder passes (``record_weights._max_model_len``): 4096, or the
    model's own length where shorter."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    keys = ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_target_positions")
    own = [text.get(k) for k in keys]
    return min([4096, *(v for v in own if type(v) is int and v > 0)])


#: wrappers holding Qwen3-VL's deepstack feature buffers (``qwen3_vl.deepstack_buffers``)
DEEPSTACK_WRAPPERS = {
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Cosmos3ForConditionalGeneration",
    "Qwen3OmniMoeForConditionalGeneration",
    "Alpamayo2Super",
}


def _stages(row: dict[str, Any]) -> list[tuple[int, int]]:
    """vLLM's [param, buffer] bytes per pipeline stage (one stage without PP)."""
    return [(s[0], s[1]) for s in row.get("stages") or [[row["param_bytes"], row["buffer_bytes"]]]]


#: architectures whose pipeline stages dryboot refuses (recorded, not modelled): none today
PP_REFUSED: set[str] = set()


def _arch(row: dict[str, Any]) -> str:
    return str(_config(row["config"])[0]["architectures"][0])


#: recorded cases of architectures dryboot models; the others (recorded for the families to come)
#: must be refused by name
#: architectures with buffers that view parameters (Mamba2's ``conv_weights``)
VIEW_BUFFERS = {
    "NemotronHForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "Mamba2ForCausalLM",
    "FalconH1ForCausalLM",
    "Zamba2ForCausalLM",
}


def _method_refused(row: dict[str, Any]) -> bool:
    """A checkpoint whose quantization method dryboot refuses by name (:data:`REFUSED_METHODS`)."""
    config, hq = _config(row["config"])
    qc = config.get("quantization_config") or hq or {}
    return str(qc.get("quant_method", "")).lower() in REFUSED_METHODS


MODELLED = {
    cid: row for cid, row in RECORDED.items() if _arch(row) in modelled_architectures() and not _method_refused(row)
}
UNMODELLED = {cid: row for cid, row in RECORDED.items() if cid not in MODELLED}


@pytest.mark.parametrize("cid", sorted(UNMODELLED))
def test_unmodelled_architecture_refused_by_name(cid: str) -> None:
    row = UNMODELLED[cid]
    config, hq = _config(row["config"])
    if is_draft_model(_arch(row)):
        # vLLM does not build a drafter head as a target (its class reads the absent speculative
        # config: "'NoneType' object has no attribute 'draft_model_config'")
        assert not row["ok"], row
        with pytest.raises(InputError, match="is a drafter head"):
            rank_weights(config, _parallel(row["argv"]), hf_quant=hq)
        return
    with pytest.raises(InputError, match=r"not modelled|name the GPU"):
        rank_weights(config, _parallel(row["argv"]), hf_quant=hq)


def test_recorded_corpus_size() -> None:
    served = [r for r in MODELLED.values() if r["ok"]]
    assert len(served) >= 76
    assert len(MODELLED) - len(served) >= 4  # vLLM's refusals are checked too


@pytest.mark.parametrize("cid", sorted(MODELLED))
def test_config_alone_matches_vllm(cid: str) -> None:
    row = MODELLED[cid]
    config, hq = _config(row["config"])
    if not row["ok"] or (len(_stages(row)) > 1 and config["architectures"][0] in PP_REFUSED):
        with pytest.raises(InputError):
            rank_weights(config, _parallel(row["argv"]), hf_quant=hq, **_serve(row))
        return
    got = []
    for stage in range(len(_stages(row))):
        w = rank_weights(config, _parallel(row["argv"], stage), hf_quant=hq, **_serve(row))
        got.append((w.param_bytes, w.buffer_bytes - _attr_bytes(config, row)))
    if config["architectures"][0] in VIEW_BUFFERS:
        # vLLM's buffers include views of parameters (no memory of their own): the recorder's
        # buffer sum counts them, dryboot does not (the allocated bytes check the rest)
        assert [g[0] for g in got] == [s[0] for s in _stages(row)]
        assert all(g[1] <= s[1] for g, s in zip(got, _stages(row), strict=True))
        return
    assert got == _stages(row)


@pytest.mark.parametrize("cid", sorted(cid for cid, row in MODELLED.items() if row["ok"]))
def test_allocated_bytes_match_vllm(cid: str) -> None:
    """What the CUDA caching allocator holds for the model vLLM builds (every storage once, in
    512-byte blocks: the recorder's ``allocated_bytes``), per stage: ``Model loading took``
    before any post-load repacking."""
    row = MODELLED[cid]
    config, hq = _config(row["config"])
    recorded = [s[2] for s in row["stages"]] if "stages" in row else [row["allocated_bytes"]]
    got = [
        rank_weights(config, _parallel(row["argv"], stage), hf_quant=hq, **_serve(row)).allocated_bytes
        for stage in range(len(recorded))
    ]
    assert got == recorded


# ---------------------------------------------------------------- checkpoint headers


def hf_tensors(config: dict[str, Any], hq: dict[str, Any] | None) -> dict[str, tuple[str, list[int]]]:
    """The tensors a Hugging Face checkpoint of ``config`` holds (names, safetensors dtypes and
    shapes as transformers and ModelOpt/fp8 exporters write them: separate q/k/v and gate/up,
    one tensor per expert, fp8 block scales ``weight_scale_inv``)."""
    q = quant_from_config(config, hq)
    h, n, nq = config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"]
    nkv = config.get("num_key_value_heads", nq)
    hd = config.get("head_dim") or h // nq
    f = "F16" if config.get("torch_dtype") == "float16" else "BF16"
    arch = config["architectures"][0]
    out: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": (f, [config["vocab_size"], h])}
    if not config.get("tie_word_embeddings", arch in ("Gemma2ForCausalLM", "Gemma3ForCausalLM")):
        out["lm_head.weight"] = (f, [config["vocab_size"], h])
    out["model.norm.weight"] = (f, [h])

    def linear(name: str, n_out: int, k: int) -> None:
        # modules the exporter left unquantized (ModelOpt ``exclude_modules``, fp8 ``ignored_layers``)
        kept = any(
            name == i or name.startswith(i + ".") or (i.endswith("*") and name.startswith(i[:-1])) for i in q.ignored
        )
        if q.method is None or kept:
            out[name + ".weight"] = (f, [n_out, k])
        elif q.method == "fp8":
            bn, bk = q.block or (1, 1)
            out[name + ".weight"] = ("F8_E4M3", [n_out, k])
            out[name + ".weight_scale_inv"] = ("F32", [math.ceil(n_out / bn), math.ceil(k / bk)])
        elif q.method == "modelopt":
            out[name + ".weight"] = ("F8_E4M3", [n_out, k])
            out[name + ".weight_scale"] = ("F32", [])
            out[name + ".input_scale"] = ("F32", [])
        else:
            out[name + ".weight"] = ("U8", [n_out, k // 2])
            out[name + ".weight_scale"] = ("F8_E4M3", [n_out, k // 16])
            out[name + ".weight_scale_2"] = ("F32", [])
            out[name + ".input_scale"] = ("F32", [])

    if arch in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "Glm4MoeLiteForCausalLM"):
        _deepseek_tensors(config, out, linear, f)
        return out
    if arch == "Glm4MoeForCausalLM":
        _glm4_moe_tensors(config, out, linear, f)
        return out
    moe = arch in ("Qwen3MoeForCausalLM", "MixtralForCausalLM", "Qwen3NextForCausalLM", "Qwen2MoeForCausalLM")
    nxt = arch == "Qwen3NextForCausalLM"
    for i in range(n):
        p = f"model.layers.{i}"
        if nxt and (i + 1) % config.get("full_attention_interval", 4):  # a Gated DeltaNet layer
            la = f"{p}.linear_attn"
            nk, nv = config["linear_num_key_heads"], config["linear_num_value_heads"]
            kd, vd = nk * config["linear_key_head_dim"], nv * config["linear_value_head_dim"]
            out[f"{la}.in_proj_qkvz.weight"] = (f, [2 * kd + 2 * vd, h])
            out[f"{la}.in_proj_ba.weight"] = (f, [2 * nv, h])
            out[f"{la}.conv1d.weight"] = (f, [2 * kd + vd, 1, config["linear_conv_kernel_dim"]])
            out[f"{la}.dt_bias"] = (f, [nv])
            out[f"{la}.A_log"] = ("F32", [nv])
            out[f"{la}.norm.weight"] = ("F32", [config["linear_value_head_dim"]])
            out[f"{la}.out_proj.weight"] = (f, [h, vd])
        else:
            linear(f"{p}.self_attn.q_proj", (2 if nxt else 1) * nq * hd, h)
            linear(f"{p}.self_attn.k_proj", nkv * hd, h)
            linear(f"{p}.self_attn.v_proj", nkv * hd, h)
            linear(f"{p}.self_attn.o_proj", h, nq * hd)
        if arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM"):
            for m, size in (("q_proj", nq * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
                out[f"{p}.self_attn.{m}.bias"] = (f, [size])
        qk_norm = arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Gemma3ForCausalLM")
        if qk_norm or (nxt and f"{p}.self_attn.q_proj.weight" in out):
            out[f"{p}.self_attn.q_norm.weight"] = (f, [hd])
            out[f"{p}.self_attn.k_norm.weight"] = (f, [hd])
        norms = ["input_layernorm", "post_attention_layernorm"]
        if arch in ("Gemma2ForCausalLM", "Gemma3ForCausalLM"):
            norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        for m in norms:
            out[f"{p}.{m}.weight"] = (f, [h])
        if moe:
            mix = arch == "MixtralForCausalLM"
            e = config["num_local_experts" if mix else "num_experts"]
            inter = config["intermediate_size" if mix else "moe_intermediate_size"]
            base = f"{p}.block_sparse_moe" if mix else f"{p}.mlp"
            gate, up, down = ("w1", "w3", "w2") if mix else ("gate_proj", "up_proj", "down_proj")
            out[f"{base}.gate.weight"] = (f, [e, h])
            if nxt or arch == "Qwen2MoeForCausalLM":
                si = config["shared_expert_intermediate_size"]
                out[f"{base}.shared_expert_gate.weight"] = (f, [1, h])
                linear(f"{base}.shared_expert.gate_proj", si, h)
                linear(f"{base}.shared_expert.up_proj", si, h)
                linear(f"{base}.shared_expert.down_proj", h, si)
            for j in range(e):
                linear(f"{base}.experts.{j}.{gate}", inter, h)
                linear(f"{base}.experts.{j}.{up}", inter, h)
                linear(f"{base}.experts.{j}.{down}", h, inter)
        else:
            inter = config["intermediate_size"]
            linear(f"{p}.mlp.gate_proj", inter, h)
            linear(f"{p}.mlp.up_proj", inter, h)
            linear(f"{p}.mlp.down_proj", h, inter)
    return out


def _deepseek_tensors(config: dict[str, Any], out: dict[str, tuple[str, list[int]]], linear: Any, f: str) -> None:
    """DeepSeek-V2/V3 checkpoint names: MLA projections (``q_a_proj``, ``kv_a_proj_with_mqa``,
    ``q_b_proj``, ``kv_b_proj``), dense layers below ``first_k_dense_replace``, then the gate (with
    its float32 ``e_score_correction_bias``), ``shared_experts`` and one module per expert."""
    h, nq = config["hidden_size"], config["num_attention_heads"]
    nope, rope, v = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
    kv_lora, q_lora = config["kv_lora_rank"], config.get("q_lora_rank")
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        if q_lora:
            linear(f"{a}.q_a_proj", q_lora, h)
            out[f"{a}.q_a_layernorm.weight"] = (f, [q_lora])
            linear(f"{a}.q_b_proj", nq * (nope + rope), q_lora)
        else:
            linear(f"{a}.q_proj", nq * (nope + rope), h)
        linear(f"{a}.kv_a_proj_with_mqa", kv_lora + rope, h)
        out[f"{a}.kv_a_layernorm.weight"] = (f, [kv_lora])
        linear(f"{a}.kv_b_proj", nq * (nope + v), kv_lora)
        linear(f"{a}.o_proj", h, nq * v)
        if "index_topk" in config:  # DeepSeek-V3.2's indexer
            ih, hd = config["index_n_heads"], config["index_head_dim"]
            linear(f"{a}.indexer.wq_b", ih * hd, q_lora)
            out[f"{a}.indexer.wk.weight"] = (f, [hd, h])
            out[f"{a}.indexer.weights_proj.weight"] = (f, [ih, h])
            out[f"{a}.indexer.k_norm.weight"] = ("F32", [hd])
            out[f"{a}.indexer.k_norm.bias"] = ("F32", [hd])
        _deepseek_moe_layer(config, i, out, linear, f, gate=f)


def _deepseek_moe_layer(
    config: dict[str, Any], i: int, out: dict[str, tuple[str, list[int]]], linear: Any, f: str, gate: str
) -> None:
    """Layer ``i``'s norms and DeepSeek-style MLP checkpoint names (DeepSeek-V2/V3, GLM-4.5): a
    dense MLP below ``first_k_dense_replace``, then the gate (``gate``: its dtype) with its
    float32 ``e_score_correction_bias``, ``shared_experts`` and one module per expert."""
    h, e, inter = config["hidden_size"], config["n_routed_experts"], config["moe_intermediate_size"]
    p = f"model.layers.{i}"
    for m in ("input_layernorm", "post_attention_layernorm"):
        out[f"{p}.{m}.weight"] = (f, [h])
    if i < config["first_k_dense_replace"]:
        linear(f"{p}.mlp.gate_proj", config["intermediate_size"], h)
        linear(f"{p}.mlp.up_proj", config["intermediate_size"], h)
        linear(f"{p}.mlp.down_proj", h, config["intermediate_size"])
        return
    out[f"{p}.mlp.gate.weight"] = (gate, [e, h])
    out[f"{p}.mlp.gate.e_score_correction_bias"] = ("F32", [e])
    si = inter * config["n_shared_experts"]
    linear(f"{p}.mlp.shared_experts.gate_proj", si, h)
    linear(f"{p}.mlp.shared_experts.up_proj", si, h)
    linear(f"{p}.mlp.shared_experts.down_proj", h, si)
    for j in range(e):
        linear(f"{p}.mlp.experts.{j}.gate_proj", inter, h)
        linear(f"{p}.mlp.experts.{j}.up_proj", inter, h)
        linear(f"{p}.mlp.experts.{j}.down_proj", h, inter)


def _glm4_moe_tensors(config: dict[str, Any], out: dict[str, tuple[str, list[int]]], linear: Any, f: str) -> None:
    """GLM-4.5 checkpoint names (transformers' ``Glm4MoeForCausalLM``): q/k/v with biases,
    ``o_proj``, q/k norms, dense MLPs below ``first_k_dense_replace``, then the gate with its
    float32 ``e_score_correction_bias``, ``shared_experts`` and one module per expert."""
    h, nq, nkv = config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"]
    hd = config["head_dim"]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        for m, size in (("q_proj", nq * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
            linear(f"{a}.{m}", size, h)
            out[f"{a}.{m}.bias"] = (f, [size])
        linear(f"{a}.o_proj", h, nq * hd)
        if config.get("use_qk_norm"):
            out[f"{a}.q_norm.weight"] = (f, [hd])
            out[f"{a}.k_norm.weight"] = (f, [hd])
        _deepseek_moe_layer(config, i, out, linear, f, gate="F32")


ST_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}


def write_header_only_shards(directory: Path, tensors: dict[str, tuple[str, list[int]]], shards: int = 3) -> None:
    """Safetensors files holding only their headers (offsets as the tensors would lie), and the
    index naming each tensor's shard."""
    names = sorted(tensors)
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        off = 0
        for name in names[s::shards]:
            dt, shape = tensors[name]
            nb = math.prod(shape) * ST_BYTES[dt]
            header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
            off += nb
            weight_map[name] = fname
        total += off
        blob = json.dumps(header).encode()
        (directory / fname).write_bytes(struct.pack("<Q", len(blob)) + blob)
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )


PP_REFUSED_DIRS: set[str] = set()


def _large(row: dict[str, Any]) -> bool:
    """A checkpoint of more than ~10k tensors (many experts in many layers): its headers are
    checked at TP 1 and under PP only (the sharding rules are the small ones')."""
    config = _config(row["config"])[0]
    experts = config.get("n_routed_experts") or config.get("num_experts") or config.get("num_local_experts") or 0
    return bool(experts * config.get("num_hidden_layers", 0) > 4096)


HEADER_CASES = sorted(
    cid
    for cid, row in MODELLED.items()
    if row["ok"]
    and (row["argv"][1] in ("1", "4", "8") or len(row["argv"]) > 2)
    and (not _large(row) or row["argv"][1] == "1" or "--pipeline-parallel-size" in row["argv"])
    and not ("--pipeline-parallel-size" in row["argv"] and row["config"].split("--")[1] in PP_REFUSED_DIRS)
    and not row["config"].startswith("arch--")  # tiny configs: no published checkpoint
    and _arch(row) in ARCHITECTURES
    and ARCHITECTURES[_arch(row)] not in CONFIG_ONLY
)


@pytest.mark.parametrize("name", ["Qwen--Qwen3.5-27B", "Qwen--Qwen3.5-35B-A3B", "nvidia--Nemotron-H-56B-Base-8K"])
def test_unmapped_checkpoint_refused_by_name(name: str) -> None:
    config, hq = _config(name)
    with pytest.raises(InputError, match="--load-format dummy"):
        checkpoint_rank_weights({}, config, Parallel(), hf_quant=hq)


def test_limit_mm_per_prompt_zero_skips_the_tower() -> None:
    config, hq = _config("Qwen--Qwen3.5-27B")
    lm_only = RECORDED["Qwen--Qwen3.5-27B --tensor-parallel-size 1 --language-model-only"]
    w = rank_weights(config, Parallel(), hf_quant=hq, limit_mm_per_prompt={"image": 0, "video": 0})
    assert (w.param_bytes, w.buffer_bytes) == (lm_only["param_bytes"], lm_only["buffer_bytes"])
    w = rank_weights(config, Parallel(), hf_quant=hq, limit_mm_per_prompt={"image": 0})
    assert w.param_bytes == RECORDED["Qwen--Qwen3.5-27B --tensor-parallel-size 1"]["param_bytes"]


@pytest.mark.parametrize(
    "name", ["Qwen--Qwen3-VL-8B-Instruct", "Qwen--Qwen3-VL-30B-A3B-Instruct", "google--gemma-4-26B-A4B"]
)
def test_composed_wrapper_limit_mm_zero_skips_the_tower(name: str) -> None:
    """A wrapper of ``models/`` (its tower composed onto the walk's text model) drops the tower when
    every modality it takes is limited to 0, as ``--language-model-only`` does; one left keeps it."""
    config, hq = _config(name)
    lm_only = RECORDED[f"{name} --tensor-parallel-size 2 --language-model-only"]
    w = rank_weights(config, Parallel(tp=2), hf_quant=hq, limit_mm_per_prompt={"image": 0, "video": 0})
    assert (w.param_bytes, w.buffer_bytes) == (lm_only["param_bytes"], lm_only["buffer_bytes"])
    w = rank_weights(config, Parallel(tp=2), hf_quant=hq, limit_mm_per_prompt={"image": 0}, max_num_batched_tokens=8192)
    assert w.param_bytes == RECORDED[f"{name} --tensor-parallel-size 2"]["param_bytes"]


@pytest.mark.parametrize("name", ["Qwen--Qwen3-VL-8B-Instruct", "MiniMaxAI--MiniMax-M2.5", "google--gemma-4-26B-A4B"])
def test_composed_family_checkpoint_refused_by_name(name: str) -> None:
    """The families of ``models/`` are sized from the config only: headers are refused by name."""
    config, hq = _config(name)
    with pytest.raises(InputError, match="--load-format dummy"):
        checkpoint_rank_weights({}, config, Parallel(), hf_quant=hq)


def test_built_as_refuses_a_parameter_its_layout_lacks() -> None:
    """A decoder built as another's layout refuses a field that adds parameters that layout lacks."""
    config = json.loads((ARCHS / "GraniteForCausalLM.json").read_text())
    with pytest.raises(InputError, match="mlp_bias"):
        rank_weights({**config, "mlp_bias": True}, Parallel())


def test_gemma3_limit_mm_image_zero_skips_the_tower() -> None:
    """Gemma-3's tower takes images only: ``--limit-mm-per-prompt '{"image": 0}'`` skips it."""
    config, hq = _config("unsloth--gemma-3-12b-it")
    lm_only = RECORDED["unsloth--gemma-3-12b-it --tensor-parallel-size 2 --language-model-only"]
    w = rank_weights(config, Parallel(tp=2), hf_quant=hq, limit_mm_per_prompt={"image": 0})
    assert (w.param_bytes, w.buffer_bytes) == (lm_only["param_bytes"], lm_only["buffer_bytes"])


def test_gemma3_quantized_refused_by_name() -> None:
    config, _ = _config("google--gemma-3-1b-it")
    config = {**config, "quantization_config": {"quant_method": "fp8"}}
    with pytest.raises(InputError, match="Gemma3ForCausalLM layouts are not modelled"):
        rank_weights(config, Parallel())


def test_rnj1_refusals_by_name() -> None:
    """RNJ-1 (the Gemma-3 walk): a chunked layer without its own ``rope_parameters`` entry fails as
    vLLM's ``get_rope`` does; quantized layouts and checkpoint headers are not recorded."""
    config = json.loads((ARCHS / "Rnj1ForCausalLM.json").read_text())
    full = {"full_attention": config["rope_parameters"]["full_attention"]}
    with pytest.raises(InputError, match="unhashable type: 'dict'"):
        rank_weights({**config, "rope_parameters": full}, Parallel())
    with pytest.raises(InputError, match="fp8 Rnj1ForCausalLM layouts are not modelled"):
        rank_weights({**config, "quantization_config": {"quant_method": "fp8"}}, Parallel())
    with pytest.raises(InputError, match="checkpoint tensors of Rnj1ForCausalLM are not mapped"):
        rank_weights(config, Parallel(), tensors={})


def test_rnj1_chunked_rope_shares_a_table_with_an_equal_rope() -> None:
    """A chunked layer's rope equal to full attention's is one cached table (``get_rope``), not two."""
    config = json.loads((ARCHS / "Rnj1ForCausalLM.json").read_text())
    rope = config["rope_parameters"]
    same = {**rope, "chunked_attention": rope["full_attention"]}
    two = rank_weights(config, Parallel()).buffer_bytes
    one = rank_weights({**config, "rope_parameters": same}, Parallel()).buffer_bytes
    assert two - one == config["max_position_embeddings"] * config["head_dim"] * 2


@pytest.mark.parametrize("cid", HEADER_CASES)
def test_checkpoint_headers_match_vllm(cid: str, tmp_path: Path) -> None:
    row = MODELLED[cid]
    config, hq = _config(row["config"])
    write_header_only_shards(tmp_path, hf_tensors(config, hq))
    tensors, total = read_checkpoint(tmp_path)
    assert total == sum(t.nbytes for t in tensors.values())
    got = []
    for stage in range(len(_stages(row))):
        w = checkpoint_rank_weights(tensors, config, _parallel(row["argv"], stage), hf_quant=hq, **_serve(row))
        assert w.source == "checkpoint headers"
        got.append((w.param_bytes, w.buffer_bytes - _attr_bytes(config, row)))
    assert got == _stages(row)


def test_tied_lm_head_in_checkpoint_counted_once(tmp_path: Path) -> None:
    config, hq = _config("Qwen--Qwen3-0.6B")
    tensors = hf_tensors(config, hq)
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]  # some exporters save it
    write_header_only_shards(tmp_path, tensors, shards=1)
    got, _ = read_checkpoint(tmp_path)
    w = checkpoint_rank_weights(got, config, Parallel(tp=2), hf_quant=hq)
    assert w.param_bytes == RECORDED["Qwen--Qwen3-0.6B --tensor-parallel-size 2"]["param_bytes"]


def test_unknown_tensor_is_refused_by_name(tmp_path: Path) -> None:
    config, hq = _config("Qwen--Qwen3-0.6B")
    tensors = hf_tensors(config, hq)
    tensors["model.layers.0.mlp.mystery.weight"] = ("BF16", [4, 4])
    write_header_only_shards(tmp_path, tensors, shards=1)
    got, _ = read_checkpoint(tmp_path)
    with pytest.raises(InputError, match=r"model\.layers\.0\.mlp\.mystery\.weight"):
        checkpoint_rank_weights(got, config, Parallel(tp=1), hf_quant=hq)


@pytest.mark.parametrize("method", sorted(REFUSED_METHODS))
def test_unmodelled_format_refused_by_name(method: str) -> None:
    config, _ = _config("Qwen--Qwen3-8B")
    config = {**config, "quantization_config": {"quant_method": method, "bits": 4}}
    with pytest.raises(InputError, match=f"quant_method: {method}: .*not modelled"):
        rank_weights(config, Parallel())


def test_deepseek_v4_refused_without_a_gpu() -> None:
    """DeepSeek-V4's weights are checked per GPU (SM 8.x, ``test_weights_dsv4.py``): without one
    its tiny config is refused by name."""
    config = json.loads((ARCHS / "DeepseekV4ForCausalLM.json").read_text())
    with pytest.raises(InputError, match=r"DeepseekV4ForCausalLM: its layout after loading is checked per GPU"):
        rank_weights(config, Parallel(tp=1, vllm_version="0.33.0"), max_num_batched_tokens=2048)


# ---------------------------------------------------------------- per release: 0.27.1

#: vLLM 0.27.1's own figures for a few tiny configs (``RECORD_WEIGHTS_OUT=.../recorded-0.27.1.json
#: record_weights.py --tiny ...`` in the 0.27.1 boot environment)
RECORDED_0271 = json.loads((DATA / "recorded-0.27.1.json").read_text())


def test_0271_records_are_0271() -> None:
    assert RECORDED_0271["vllm"] == "0.27.1"
    assert sum(r["ok"] for r in RECORDED_0271["cases"].values()) >= 25


@pytest.mark.parametrize("cid", sorted(cid for cid, row in RECORDED_0271["cases"].items() if row["ok"]))
def test_allocated_bytes_match_vllm_0271(cid: str) -> None:
    """0.27.1's attention layers (``Attention`` and ``MLAAttention``) also create the float32
    ``q_range`` / ``k_range`` / ``v_range`` scalars on the GPU: three blocks per layer more than
    0.28.0 builds (the same case in ``recorded.json``), which the walk counts on 0.27.1 only."""
    row = RECORDED_0271["cases"][cid]
    config, hq = _config(row["config"])
    recorded = [s[2] for s in row["stages"]] if "stages" in row else [row["allocated_bytes"]]
    got = [
        rank_weights(
            config, replace(_parallel(row["argv"], stage), vllm_version="0.27.1"), hf_quant=hq, **_serve(row)
        ).allocated_bytes
        for stage in range(len(recorded))
    ]
    assert got == recorded
    if cid in RECORDED and RECORDED[cid]["ok"]:  # the same case on 0.28.0: three blocks per attention layer fewer
        assert recorded[-1] > RECORDED[cid]["allocated_bytes"]


def test_0271_refusals_are_vllms() -> None:
    for row in RECORDED_0271["cases"].values():
        if not row["ok"]:
            config, hq = _config(row["config"])
            with pytest.raises(InputError):
                rank_weights(config, replace(_parallel(row["argv"]), vllm_version="0.27.1"), hf_quant=hq)
