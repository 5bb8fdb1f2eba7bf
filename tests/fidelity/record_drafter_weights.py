"""Record what vLLM allocates for a drafter's own weights (``--speculative-config``), per rank,
on the meta device.

    $DRYBOOT_VLLM_PYTHON tests/fidelity/record_drafter_weights.py

Runs inside the boot environment (no dryboot import), with ``record_weights.py``'s stand-ins
(``engine_start.py``'s faked H200, kernels absent, distributed groups). For each case of
``CASES`` (a published target config of ``data/weights/configs/``, a published drafter config of
``tests/data/configs/public/``, a method, a TP size) it builds the target as the worker does, then
the proposer ``GPUModelRunner.__init__`` builds (``engine_start._make_drafter``) and its
``load_model(target)`` (the drafter's ``get_model`` on the meta device, then vLLM's own
``_maybe_share_embeddings`` / ``_maybe_share_lm_head``). No weight is loaded, so the drafter
holds no ``has_own_embed_tokens`` / ``has_own_lm_head`` and vLLM shares both: the ``shared``
figure. The drafter model as ``get_model`` built it (before sharing) gives the ``own`` figure:
what stays when its checkpoint holds its own embedding and LM head that differ from the
target's. Each figure counts every storage of the drafter's parameters, buffers and tensor
attributes that the target does not hold (a rotary table ``get_rope`` caches for both is the
target's), in the allocator's 512-byte blocks (``allocated_bytes``), plus each tensor's name,
shape and dtype (``tensors``).

Writes ``data/weights/drafters/recorded.json`` (``RECORD_OUT``: elsewhere; ``RECORD_TPS``: a
comma-separated subset of the TP sizes; ``RECORD_FROM``: the first case of ``CASES`` to record;
``RECORD_TARGETS``: a comma-separated list of the targets whose cases are recorded;
``RECORD_POST_LOAD``: run vLLM's ``process_weights_after_loading`` on the drafter after its
``load_model``, with ``record_quant_weights.py``'s kernel fakes, as vLLM's loader does: the
``shared`` figure is then what stays after loading).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oracle_stand_ins

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = HERE / "data" / "weights" / "drafters" / "recorded.json"

#: drafter configs kept for this recorder (verbatim published heads, ``SOURCE`` beside each)
DRAFTER_CONFIGS = "tests/fidelity/data/weights/drafters/configs/"
LLAMA2_7B = "tests/fidelity/data/weights/configs/meta-llama--Llama-2-7b-hf"
MEDUSA_VICUNA = "tests/fidelity/data/drafters/medusa-vicuna-7b-standin"
QUANT_MODELOPT = "tests/fidelity/data/weights/quant-configs-modelopt/"
PUBLIC = "tests/data/configs/public/"
QUANT_FIRST = "tests/fidelity/data/weights/quant-configs/"

#: (target config dir under data/weights/configs (or a folder relative to the repository), drafter (a directory under
#: tests/data/configs/public, or a config file or directory relative to the repository; None: the
#: target's own MTP layers), method[, {"config": fields set over the drafter's config, "spec":
#: fields added to --speculative-config}])
CASES: list[tuple[Any, ...]] = [
    ("meta-llama--Meta-Llama-3.1-8B", "specforge--llama3-8B-eagle3", "eagle3"),
    ("meta-llama--Meta-Llama-3.1-8B", "eagle--EAGLE-LLaMA3-Instruct-8B", "eagle"),
    ("Qwen--Qwen3-8B", "specforge--qwen3-8b-eagle3", "eagle3"),
    ("meta-llama--Llama-3.3-70B-Instruct", "specforge--llama3-70B-eagle3", "eagle3"),
    ("Qwen--Qwen3-8B", "specforge--qwen3-8b-dflash", "dflash"),
    ("Qwen--Qwen3.5-27B", "specforge--qwen3.5-27b-dflash", "dflash"),
    ("Qwen--Qwen3.5-27B", "examples/models/dflash2-drafter-sw5.config.json", "dflash"),
    ("Qwen--Qwen3.5-27B", None, "mtp"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking", None, "mtp"),
    ("deepseek-ai--DeepSeek-V3", None, "mtp"),
    ("Qwen--Qwen3-8B", "tests/fidelity/data/weights/configs/Qwen--Qwen3-0.6B", "draft_model"),
    ("meta-llama--Meta-Llama-3.1-8B", "tests/fidelity/data/weights/configs/Qwen--Qwen3-1.7B", "draft_model"),
    # EAGLE-3 heads of the public corpus on their targets (or a published model of the target's
    # shapes, named); the head's own layers are the head's config's
    ("Qwen--Qwen3-32B", "specforge--qwen3-32b-eagle3", "eagle3"),
    ("Qwen--Qwen3-30B-A3B", "specforge--qwen3-30B-A3B-eagle3", "eagle3"),
    ("Qwen--Qwen3-30B-A3B", "specforge--qwen3-30B-A3B-eagle3.1", "eagle3"),  # fc_norm
    ("Qwen--Qwen3-8B", "specforge--qwen3-4b-eagle3", "eagle3"),
    ("deepseek-ai--DeepSeek-V3", "specforge--deepseek-v3-671b-eagle3", "eagle3"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking", "specforge--qwen3-next-80b-a3b-eagle3", "eagle3"),
    ("Qwen--Qwen3.5-35B-A3B", "specforge--qwen3.5-35b-a3b-eagle3", "eagle3"),
    ("Qwen--Qwen2.5-7B", "specforge--qwen2.5-7b-eagle3", "eagle3"),
    # QwQ-32B has DeepSeek-R1-Distill-Qwen-32B's (Qwen2.5-32B's) shapes; the head says model_type qwen2
    ("deepseek-ai--DeepSeek-R1-Distill-Qwen-32B", "specforge--qwq-32B-eagle3", "eagle3"),
    ("Qwen--Qwen3-VL-8B-Instruct", "specforge--qwen3-vl-8b-eagle3", "eagle3"),
    ("Qwen--Qwen3-VL-30B-A3B-Instruct", "specforge--qwen3-vl-30b-a3b-eagle3", "eagle3"),
    ("google--gemma-4-26B-A4B", "specforge--gemma4-26b-a4b-eagle3", "eagle3"),
    ("openai--gpt-oss-20b-unquantized", "specforge--gpt-oss-20B-eagle3", "eagle3"),
    # Kimi-K2.5's language model has Kimi-K2's shapes
    ("moonshotai--Kimi-K2-Instruct", "specforge--kimi-k25-eagle3", "eagle3"),
    ("meta-llama--Meta-Llama-3.1-8B", "speculators--research-eagle3-llama3-8B", "eagle3"),
    ("Qwen--Qwen3-8B", "speculators--research-eagle3-qwen3-8B", "eagle3"),
    ("meta-llama--Llama-3.3-70B-Instruct", "speculators--research-eagle3-llama3.3-70B", "eagle3"),
    # heads vLLM's registry has no class for (Eagle3 + their architecture): vLLM refuses them
    ("Qwen--Qwen3.5-122B-A10B", "specforge--qwen3.5-122b-a10b-eagle3-moe", "eagle3"),
    ("moonshotai--Kimi-K2-Instruct", "specforge--kimi-k2-eagle3", "eagle3"),
    # SpecForge heads kept under data/weights/drafters/configs (verbatim, SOURCE beside each)
    ("google--gemma-3-1b-it", DRAFTER_CONFIGS + "specforge--gemma3-1b-eagle3", "eagle3"),
    # Qwen2.5-VL-7B's language model has Qwen2.5-7B's shapes (the head: mrope)
    ("Qwen--Qwen2.5-7B", DRAFTER_CONFIGS + "specforge--qwen2-5-vl-7B-eagle3", "eagle3"),
    ("Qwen--Qwen3-VL-8B-Instruct", DRAFTER_CONFIGS + "specforge--qwen3-vl-8b-instruct-eagle3", "eagle3"),
    # a Phi-4-mini head (model_type phi3); no Phi-4-mini target here: the head's layers are its
    # own config's whatever the target, which only decides sharing (another width: own embedding)
    ("meta-llama--Meta-Llama-3.1-8B", DRAFTER_CONFIGS + "specforge--phi4-mini-eagle3", "eagle3"),
    # a four-layer P-EAGLE head (PEagleDraftModel), plain and with parallel drafting
    ("Qwen--Qwen3-8B", DRAFTER_CONFIGS + "specforge--qwen3-8b-peagle", "eagle3"),
    ("Qwen--Qwen3-8B", DRAFTER_CONFIGS + "specforge--qwen3-8b-peagle", "eagle3", {"spec": {"parallel_drafting": True}}),
    # the layouts vLLM's EAGLE-3 classes build that no published head here has: a published head
    # with the one field changed (the variant named in the case)
    *(
        ("Qwen--Qwen3-8B", "specforge--qwen3-8b-eagle3", "eagle3", {"config": change})
        for change in (
            {"norm_before_fc": True},
            {"eagle_config": {"norm_before_fc": True, "eagle_aux_hidden_state_layer_ids": [1, 9, 17, 25, 33]}},
            {"attention_bias": True},
            {"mlp_bias": True},
            {"bias": True},
            {"eagle_config": {"use_aux_hidden_state": False}},
            {"num_hidden_layers": 2, "target_hidden_size": 2048, "num_aux_hidden_states": 2},
            {"architectures": ["Qwen3ForCausalLM"]},
            {"architectures": ["Eagle3Qwen3ForCausalLM"], "attention_bias": True, "num_aux_layers": 4},
            {"architectures": ["Eagle3MiniMaxM2ForCausalLM"]},
            {"architectures": ["Eagle3Qwen2_5vlForCausalLM"]},
            {"architectures": ["Eagle3Qwen3vlForCausalLM"]},
            {"architectures": ["PeagleQwen3ForCausalLM"], "fc_norm": True, "norm_before_fc": True},
        )
    ),
    # parallel drafting: vLLM asks the head's config for a mask token (ptd_token_id here)
    (
        "Qwen--Qwen3-8B",
        "specforge--qwen3-8b-eagle3",
        "eagle3",
        {"config": {"ptd_token_id": 151665}, "spec": {"parallel_drafting": True}},
    ),
    # EAGLE-3 heads with DeepSeek's MLA attention (deepseek_eagle3.py Eagle3DeepseekV2ForCausalLM:
    # MLA layers, a dense MLP), TorchSpec's published configs: on the Kimi-K2 target they were
    # trained for (Kimi-K2.5's language model has Kimi-K2's shapes), on DeepSeek-V3 (another
    # vocabulary, FP8 blocks), and the Qwen3-8B head on its target (model_type deepseek_v3: vLLM
    # reads it as DeepSeek's MTP module and refuses Eagle3DeepSeekMTPModel)
    ("moonshotai--Kimi-K2-Instruct", DRAFTER_CONFIGS + "torchspec--kimi-k25-eagle3-mla", "eagle3"),
    ("moonshotai--Kimi-K2-Instruct", DRAFTER_CONFIGS + "torchspec--kimi-k3-eagle3-mla", "eagle3"),
    ("deepseek-ai--DeepSeek-V3", DRAFTER_CONFIGS + "torchspec--kimi-k25-eagle3-mla", "eagle3"),
    ("Qwen--Qwen3-8B", DRAFTER_CONFIGS + "torchspec--qwen3-8b-eagle3-mla", "eagle3"),
    # the layouts deepseek_eagle3.py builds that no published head here has (the one field changed)
    *(
        (
            "moonshotai--Kimi-K2-Instruct",
            DRAFTER_CONFIGS + "torchspec--kimi-k25-eagle3-mla",
            "eagle3",
            {"config": change},
        )
        for change in (
            {"q_lora_rank": None},
            {"num_hidden_layers": 2, "fc_norm": True, "draft_vocab_size": 32000},
            {"architectures": ["Eagle3DeepseekV3ForCausalLM"], "target_hidden_size": 2048, "num_aux_hidden_states": 2},
            {"max_position_embeddings": 8192, "rope_scaling": None},
        )
    ),
    # the MTP layer of a quantized target: ModelOpt NVFP4 DeepSeek-V3 (hf_quant_config.json; its
    # exclude_modules name the MTP layer, model.layers.61*, left unquantized)
    ("nvidia--DeepSeek-V3-0324-NVFP4", None, "mtp"),
    # the MTP layers of quantized Qwen3.5 / 3.6 targets (a target given as a folder of the
    # repository: the published ModelOpt configs, their hf_quant_config.json beside): vLLM builds
    # mtp.layers.* and mtp.fc with the target's quantization config, by those names; the published
    # NVIDIA checkpoints leave them unquantized (ignore mtp* / mtp.layers.0*), and vLLM forces the
    # fc of a modelopt_fp4 target unquantized whatever the config says
    *((QUANT_MODELOPT + name, None, "mtp") for name in ("nvidia--Qwen3.6-27B-NVFP4", "nvidia--Qwen3.6-35B-A3B-NVFP4")),
    (PUBLIC + "nvidia--Qwen3.5-122B-A10B-NVFP4", None, "mtp"),
    (PUBLIC + "nvidia--Qwen3.5-397B-A17B-NVFP4", None, "mtp"),  # ignores mtp.layers.0* only
    # weight-only integer targets of the first quantized set (published quantization objects on
    # Qwen3.5 / 3.6 configs, each SOURCE says how): vLLM quantizes their MTP layers by name
    *(
        (QUANT_FIRST + name, None, "mtp")
        for name in ("Qwen--Qwen3.5-27B+CT-W4A16-g32", "Qwen--Qwen3.6-27B+AutoRound-W4A16-RTN")
    ),
    # Medusa heads (method medusa; MedusaConfig renames *num*heads* / *num*layers* keys): the
    # stand-in of FasterDecoding/medusa-vicuna-7b-v1.3's old-format config (data/drafters/: hidden
    # size and vocabulary from MedusaConfig's defaults, the vocabulary then the target's), and a
    # config constructed from the keys vLLM's layout reads (bias, two layers, one shared truncated
    # LM head; no published one found; SOURCE beside it)
    ("meta-llama--Llama-2-7b-hf", MEDUSA_VICUNA, "medusa"),
    ("meta-llama--Llama-2-7b-hf", DRAFTER_CONFIGS + "constructed--medusa-vllm-layout", "medusa"),
    ("Qwen--Qwen2.5-7B", MEDUSA_VICUNA, "medusa"),
    # a base model's config with the Medusa keys added (as community heads publish them): it names
    # the base class, which vLLM builds instead of Medusa's and fails on
    ("meta-llama--Llama-2-7b-hf", LLAMA2_7B, "medusa", {"config": {"medusa_num_heads": 5, "medusa_num_layers": 1}}),
]
TPS = (1, 2, 4)


def _tensors(module: Any, exclude: set[int]) -> dict[str, Any]:
    import itertools

    import torch

    out: dict[str, Any] = {}
    seen: set[int] = set()
    named = itertools.chain(
        module.named_parameters(remove_duplicate=False), module.named_buffers(remove_duplicate=False)
    )
    attrs = (
        (f"{mname}.{k}" if mname else k, v)
        for mname, m in module.named_modules()
        for k, v in vars(m).items()
        if isinstance(v, torch.Tensor) and v.device.type == "meta"
    )
    for name, t in itertools.chain(named, attrs):
        key = t.untyped_storage()._cdata
        if key in exclude or key in seen:
            continue
        seen.add(key)
        out[name] = [list(t.shape), str(t.dtype).replace("torch.", ""), t.untyped_storage().nbytes()]
    return out


def _storages(module: Any) -> set[int]:
    import itertools

    import torch

    attrs = (v for m in module.modules() for v in vars(m).values() if isinstance(v, torch.Tensor))
    return {t.untyped_storage()._cdata for t in itertools.chain(module.parameters(), module.buffers(), attrs)}


def main() -> int:
    post_load = bool(os.environ.get("RECORD_POST_LOAD"))
    if post_load:  # the repack kernels' schemas and the value checks answered on the meta device
        import importlib.util

        spec = importlib.util.spec_from_file_location("quant_fakes", HERE / "quant_fakes.py")
        assert spec is not None and spec.loader is not None
        qf = importlib.util.module_from_spec(spec)
        sys.modules["quant_fakes"] = qf
        spec.loader.exec_module(qf)
        qf.define_ops()
    es, real_stdout = oracle_stand_ins.start()
    if post_load:
        qf.route_ops()
    V = es.V
    import torch

    doc: dict[str, Any] = {"vllm": V.vllm.__version__, "cases": {}}
    meta = torch.device("meta")
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="record-drafter-weights-"))
    tps = [int(t) for t in os.environ.get("RECORD_TPS", "").split(",") if t] or list(TPS)
    # RECORD_FROM: start at that case of CASES (re-record the later ones only)
    for case in CASES[int(os.environ.get("RECORD_FROM") or 0) :]:
        target, draft, method = case[:3]
        if os.environ.get("RECORD_TARGETS") and target not in os.environ["RECORD_TARGETS"].split(","):
            continue
        extra: dict[str, Any] = case[3] if len(case) > 3 else {}
        for tp in tps:
            cid = f"{target} + {draft} ({method}) --tensor-parallel-size {tp}"
            if extra:
                cid += " " + json.dumps(extra, sort_keys=True)
            t0 = time.perf_counter()
            es._reset_per_process_caches()
            row: dict[str, Any] = {"target": target, "drafter": draft, "method": method, "tp": tp, "ok": False}
            if extra:
                row["extra"] = extra
            try:
                spec_cfg: dict[str, Any] = {"method": method, "num_speculative_tokens": 1 if method == "mtp" else 3}
                spec_cfg.update(extra.get("spec", {}))
                if "config" in extra:
                    src = REPO / draft if "/" in draft else REPO / "tests/data/configs/public" / draft
                    ddir = scratch / f"variant-{len(list(scratch.iterdir()))}"
                    ddir.mkdir()
                    base = json.loads((src / "config.json").read_text())
                    (ddir / "config.json").write_text(json.dumps({**base, **extra["config"]}))
                    spec_cfg["model"] = str(ddir)
                elif draft is not None and draft.endswith(".json"):
                    ddir = scratch / Path(draft).stem
                    ddir.mkdir(exist_ok=True)
                    (ddir / "config.json").write_text((REPO / draft).read_text())
                    spec_cfg["model"] = str(ddir)
                elif draft is not None and "/" in draft:
                    spec_cfg["model"] = str(REPO / draft)
                elif draft is not None:
                    spec_cfg["model"] = str(REPO / "tests/data/configs/public" / draft)
                args = es._parse(
                    str(REPO / target if "/" in target else HERE / "data" / "weights" / "configs" / target),
                    [
                        "--max-model-len",
                        "4096",
                        "--tensor-parallel-size",
                        str(tp),
                        "--speculative-config",
                        json.dumps(spec_cfg),
                    ],
                )
                cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(
                    usage_context=V.UsageContext.OPENAI_API_SERVER
                )
                es._set_parallel_groups(cfg, 0)
                with V.set_current_vllm_config(cfg):
                    model = V.get_model_loader(cfg.load_config).load_model(
                        vllm_config=cfg, model_config=cfg.model_config
                    )
                    target_st = _storages(model)
                    drafter = es._make_drafter(cfg, meta)
                    built: dict[str, Any] = {}
                    plain_get = getattr(drafter, "_get_model", None)

                    def get_model(
                        plain: Any = plain_get,
                        into: dict[str, Any] = built,
                        held: set[int] = target_st,
                        draft_config: Any = cfg.speculative_config.draft_model_config,
                    ) -> Any:
                        m = plain()
                        if post_load:
                            # vLLM's own post-load step, which its loader runs inside get_model
                            # (before the proposer shares the target's embedding and LM head):
                            # the KV-cache methods drop their scale parameters
                            from vllm.model_executor.model_loader.utils import process_weights_after_loading

                            process_weights_after_loading(m, draft_config, meta)
                        into.update(_tensors(m, held))
                        return m

                    if hasattr(drafter, "_get_model"):
                        drafter._get_model = get_model
                    drafter.load_model(model)
                    if not hasattr(drafter, "_get_model"):  # Medusa's proposer: its heads alone, nothing shared
                        built.update(_tensors(drafter.model, target_st))
                shared = _tensors(drafter.model, target_st)
                row.update(
                    ok=True,
                    shared_allocated_bytes=sum(-(-v[2] // 512) * 512 for v in shared.values()),
                    own_allocated_bytes=sum(-(-v[2] // 512) * 512 for v in built.values()),
                    shared_tensors=sorted(shared),
                    # a draft model's tensors are the walk's (recorded.json's own cases): not listed
                    tensors=built if method != "draft_model" else {},
                )
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            row["seconds"] = round(time.perf_counter() - t0, 2)
            doc["cases"][cid] = row
            real_stdout.write(
                json.dumps({cid: {k: v for k, v in row.items() if k not in ("tensors", "shared_tensors")}}) + "\n"
            )
            real_stdout.flush()
    out = Path(os.environ.get("RECORD_OUT") or OUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
