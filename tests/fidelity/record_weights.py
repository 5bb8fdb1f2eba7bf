"""Record what vLLM allocates for a model's weights, per rank, on the meta device.

    $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py [NAME...]
    $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny [ARCHITECTURE...]

``--tiny``: the tiny verification config of each planned architecture
(``data/architectures/<Architecture>.json``, with its ``files/<Architecture>/``), recorded as
config ``arch--<Architecture>``.

Runs *inside* the boot environment's interpreter (no dryboot import): it loads
``src/dryboot/boot/engine_start.py`` by path, installs its stand-ins (faked H200, kernels absent,
distributed groups of the configured sizes), and for every published config in
``data/weights/configs/`` under each flag set of ``flag_sets`` it parses ``vllm serve``'s flags,
runs ``create_engine_config`` and builds the model exactly as the worker does
(``get_model_loader(load_config).load_model``: vLLM's ``initialize_model`` on the meta device),
then sums ``numel * element_size`` of every parameter and buffer of the built model (each tensor
once: tied embeddings share one parameter). That is what vLLM allocates for rank 0 *before*
``process_weights_after_loading`` (which this oracle does not run: kernels' repacking, e.g. to
Marlin, is outside it). Under ``--enable-expert-parallel`` the expert map (integers, not
weights) is computed on the CPU (``determine_expert_map`` reads its values). Every TP rank
allocates the same shapes (vocab and heads divide exactly). ``flag_sets`` gives the flags
(``RECORD_WEIGHTS_MM_ENCODER_TP=1``: a multimodal wrapper's ``--mm-encoder-tp-mode data`` at TP 2
and 4 too, ``recorded-<release>-mmtp.json``). ``RECORD_WEIGHTS_CONFIGS=DIR``: the published configs of
another directory (``data/weights/kimi-k3``); ``RECORD_WEIGHTS_GPU=MAJOR.MINOR``: the stand-in GPU's
compute capability (default the H200's 9.0; Kimi-K3's KDA native-decode copies depend on it);
``RECORD_WEIGHTS_WORKSPACE=1``: the worker's workspace manager set up first, on the meta device (HY V4's
sparse MLA backend reserves its workspace at construction; the workspace is not counted);
``RECORD_WEIGHTS_GPU_CAST=1``: vLLM's ``is_meta_module`` answers ``False`` in Kimi-K3's wrapper
module (0.30+), so its MoonViT tower and projector take the branch a GPU takes (``.to(device,
dtype)``, onto the stand-in's device, the meta device) instead of keeping the float32 temporal
table the meta device skips the cast for (0.27.1-0.29.0 cast unconditionally); each such row says
``"gpu_cast": true``.

Writes ``data/weights/recorded.json`` (``RECORD_WEIGHTS_OUT``: another file, e.g. another
release's ``data/weights/recorded-0.27.1.json``): ``{"vllm", "cases": {id: {"config", "argv", "ok",
"param_bytes", "buffer_bytes", "allocated_bytes", "storage_bytes", "by_dtype", "stages",
"error"}}}`` (``stages``: [param, buffer, allocated] bytes of each pipeline stage's rank 0, under
``--pipeline-parallel-size``; the top-level figures are then the last stage's).
``allocated_bytes``: every storage of the model's parameters and buffers once, rounded up to the
CUDA caching allocator's 512-byte blocks, i.e. what ``torch.cuda.memory_allocated`` would hold
for the model as ``initialize_model`` builds it (``storage_bytes``: unrounded). Nothing recorded
comes from dryboot.

What is faked: the GPU (an H200, SM 9.0, 132 SMs: ``engine_start.py``'s stand-in), the absent
CUDA kernels, the distributed groups, no JIT warmup registration (``engine_start.py``'s: 0.30.0+'s
DeepSeek-V4 layers would import TileLang / CuTe DSL modules only to register them), cuda-python
(a stub whose calls raise: MiniMax-M2's TP > 1 norm then takes vLLM's own no-P2P fallback; its
workspace is ``cudaMalloc``'d outside torch's allocator either way). What is not run: weight loading and
``process_weights_after_loading`` (kernels' repacking: Marlin, FlashInfer/MXFP4 layouts, fp8
requantization), so the quantization formats whose layout changes there are refused by dryboot,
not checked.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oracle_stand_ins
import remote_code_table

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCHS = HERE / "data" / "architectures"

TPS = (1, 2, 4, 8)
#: extra flag sets (beside each TP): expert parallelism for MoE configs
EP_FLAGS = ["--enable-expert-parallel"]
#: ``--limit-mm-per-prompt`` values recorded for wrappers with a tower per modality (or a modality
#: of their own), by ``model_type``: each tower is dropped when all its modalities are 0
PARTIAL_LIMITS = {
    "qwen2_5_omni": ('{"audio": 0}', '{"image": 0, "video": 0}'),
    "qwen3_omni_moe": ('{"audio": 0}', '{"image": 0, "video": 0}'),
    "kimi_k25": ('{"image": 0, "video": 0}', '{"vision_chunk": 0}'),
    # Alpamayo2Super takes images only; its class marks its tower for images and videos
    "alpamayo2_super": ('{"image": 0}',),
    # Gemma-3n: each tower alone, at every TP
    "gemma3n": ('{"image": 0}', '{"audio": 0}'),
}
#: model types whose partial limits are recorded at every TP of :data:`TPS` (else TP 2 only)
PARTIAL_LIMITS_ALL_TPS = ("gemma3n",)
#: config keys of a multimodal wrapper's towers (recorded with ``--language-model-only`` too)
MULTIMODAL_KEYS = (
    "vision_config",
    "audio_config",
    "thinker_config",
    "vit_config",
    "visual_tokenizer_config",
    "encoder_config",
    "vq_config",
    "vision_representation_config",
    "vlm_config",  # Alpamayo2Super: its Qwen-3-VL text and vision configs
    "audio_encoder_config",  # MiDashengLM's Dasheng encoder
    "timm_model_ids",  # OpenVLA's timm featurizers
    "audio_encoder_conf",  # FunASR's encoder (built outside _mark_tower_model: kept)
    "vision_n_layers",  # DeepSeek-V4's wrapper: its ViT's keys sit flat on the top level
)
#: model types whose tower config is nested below the top level (Moondream3: ``config.vision``),
#: recorded with ``--language-model-only`` too
NESTED_TOWER_TYPES = ("moondream3",)
#: model types whose every flag set is recorded with ``--language-model-only`` too (Kimi-K3: the
#: language model's figures beside the wrapper's, each stage)
LANGUAGE_MODEL_EVERYWHERE = ("kimi_k3",)
#: remote-code text models whose tiny config gets its checkpoint's config class beside it
#: (``data/remote-code/<dir>/*.py``, as ``test_architectures.REMOTE_CODE`` puts them)
TINY_REMOTE_CODE = {
    "Param2MoEForCausalLM": "param2moe",
    "BailingMoeV2ForCausalLM": "bailing_moe_v2",
    "TeleChat2ForCausalLM": "telechat2",
    "BailingMoeForCausalLM": "bailing_moe",
}
#: flags added to every flag set of an architecture vLLM builds on one backend only (RNJ-1's
#: ``chunk_lookback`` layers: ``TRITON_ATTN``; the weights do not depend on the backend)
ARCH_FLAGS = {
    "Rnj1ForCausalLM": ["--attention-backend", "TRITON_ATTN"],
    # a config class only the checkpoint ships (remote_code_table.WEIGHTS_TRUSTED: its files copied beside)
    **{arch: ["--trust-remote-code"] for arch in remote_code_table.WEIGHTS_TRUSTED},
    # InternLM2Config is the checkpoint's own (data/remote-code/internlm2/, put beside the config)
    "InternLM2ForCausalLM": ["--trust-remote-code"],
    **{arch: ["--trust-remote-code"] for arch in TINY_REMOTE_CODE},
}


def flag_sets(config: dict[str, Any]) -> list[list[str]]:
    sets = [["--tensor-parallel-size", str(tp)] for tp in TPS]
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    moe = any(k in config or k in text for k in ("num_experts", "num_local_experts", "n_routed_experts"))
    if moe:
        sets += [["--tensor-parallel-size", str(tp), *EP_FLAGS] for tp in (2, 8)]
    # pipeline stages: each stage's worker builds its own layers (recorded per stage)
    sets += [["--tensor-parallel-size", "2", "--pipeline-parallel-size", "3"]]
    if os.environ.get("RECORD_WEIGHTS_PP2"):  # two stages at TP 2 too (recorded-*-remote-families.json)
        sets += [["--tensor-parallel-size", "2", "--pipeline-parallel-size", "2"]]
    multimodal = any(k in config for k in MULTIMODAL_KEYS) or config.get("model_type") in NESTED_TOWER_TYPES
    if multimodal:  # a multimodal wrapper: the text model alone, too
        sets += [["--tensor-parallel-size", str(tp), "--language-model-only"] for tp in (1, 2)]
    if os.environ.get("RECORD_WEIGHTS_MM_ENCODER_TP") and any(k in config for k in MULTIMODAL_KEYS):
        # --mm-encoder-tp-mode data (a class with supports_encoder_tp_data builds its tower whole on
        # every TP rank; the others fall back to weights): only when asked for (recorded-*-mmtp.json)
        sets += [["--tensor-parallel-size", str(tp), "--mm-encoder-tp-mode", "data"] for tp in (2, 4)]
    tps = TPS if config.get("model_type") in PARTIAL_LIMITS_ALL_TPS else (2,)
    for limits in PARTIAL_LIMITS.get(str(config.get("model_type")), ()):
        sets += [["--tensor-parallel-size", str(tp), "--limit-mm-per-prompt", limits] for tp in tps]
    if config.get("model_type") in LANGUAGE_MODEL_EVERYWHERE:
        lmo = [[*s, "--language-model-only"] for s in sets if "--language-model-only" not in s]
        sets += [s for s in lmo if s not in sets]
    extra = ARCH_FLAGS.get(str((config.get("architectures") or [""])[0]), [])
    return [[*s, *extra] for s in sets]


def _max_model_len(config: dict[str, Any]) -> int:
    """4096, or the model's own length where shorter (GPT-2 style configs: ``n_positions``,
    ``n_ctx``, ``max_position_embeddings``; Whisper's decoder: ``max_target_positions``): the
    weights do not depend on it, and vLLM refuses a length beyond the model's."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    keys = ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_target_positions")
    own = [text.get(k) for k in keys]
    return min([4096, *(v for v in own if type(v) is int and v > 0)])


def allocated(model: Any) -> tuple[int, int]:
    """What the model's tensors hold in device memory: each storage of its parameters, buffers and
    tensor attributes once (a buffer that views a parameter, e.g. Mamba2's ``conv_weights``,
    shares its storage), as the CUDA caching allocator counts it (each allocation rounded up to
    its 512-byte blocks) and unrounded."""
    import itertools

    import torch

    sizes: dict[int, int] = {}
    # tensors a module keeps as a plain attribute are allocated with the model too (DeepSeek-V3.2's
    # top-k indices buffer, shared by every indexer)
    # (on the meta device, i.e. the GPU's; ``Attention._k_scale_cpu`` and the like stay on the CPU)
    # and tensors a module keeps in a list attribute (Granite-4-Vision's deepstack feature buffers,
    # one ``[max_num_batched_tokens, H_text]`` per level, made under the loader's device context)
    held = (t for m in model.modules() for v in vars(m).values() for t in (v if isinstance(v, (list, tuple)) else (v,)))
    attrs = (v for v in held if isinstance(v, torch.Tensor) and v.device.type == "meta")
    for t in itertools.chain(model.parameters(), model.buffers(), attrs):
        st = t.untyped_storage()
        sizes[st._cdata] = st.nbytes()
    return sum(-(-n // 512) * 512 for n in sizes.values()), sum(sizes.values())


def config_dirs(argv: list[str], scratch: Path) -> list[Path]:
    """The config directories to record: the published ones of ``data/weights/configs/`` (or those
    named), or with ``--tiny`` each planned architecture's tiny config, written to ``scratch``."""
    if argv[:1] != ["--tiny"]:
        # RECORD_WEIGHTS_CONFIGS=DIR: another directory of configs (a family's own, e.g. data/weights/kimi-k3)
        configs = Path(os.environ.get("RECORD_WEIGHTS_CONFIGS") or DATA / "configs")
        return sorted(p for p in configs.iterdir() if p.is_dir() and (not argv or p.name in argv))
    import shutil

    dirs = []
    # ``defaults/ARCH`` names the config with every defaultable key left out (``arch--defaults--ARCH``)
    named = [ARCHS / f"{a}.json" for a in argv[1:] if a.startswith("defaults/")]
    for cfg in [*sorted(ARCHS.glob("*.json")), *named]:
        if cfg.stem == "recorded" or (argv[1:] and cfg.stem not in argv[1:] and cfg not in named):
            continue
        d = scratch / (f"arch--defaults--{cfg.stem}" if cfg in named else f"arch--{cfg.stem}")
        d.mkdir()
        shutil.copy(cfg, d / "config.json")
        # RECORD_WEIGHTS_OVERLAY={ARCH: {key: value}}: keys a release's config class needs set
        # (a published checkpoint's values), merged into that architecture's tiny config
        if extra := json.loads(os.environ.get("RECORD_WEIGHTS_OVERLAY") or "{}").get(cfg.stem):
            (d / "config.json").write_text(json.dumps({**json.loads(cfg.read_text()), **extra}))
        if (ARCHS / "files" / cfg.stem).is_dir():
            shutil.copytree(ARCHS / "files" / cfg.stem, d, dirs_exist_ok=True)
        trusted = cfg.stem in remote_code_table.WEIGHTS_TRUSTED
        code_dir = remote_code_table.directory(cfg.stem) if trusted else None
        if cfg.stem in TINY_REMOTE_CODE:
            code_dir = remote_code_table.DATA / TINY_REMOTE_CODE[cfg.stem]
        if code_dir is not None:
            for code in code_dir.glob("*.py"):
                shutil.copy(code, d / code.name)
        dirs.append(d)
    return dirs


def main() -> int:
    es, real_stdout = oracle_stand_ins.start()
    # FusedMoE's expert map under --enable-expert-parallel (integer bookkeeping, no weight) reads
    # its values at construction: it is computed on the CPU, not on the meta device
    import torch
    from vllm.model_executor.layers.fused_moe import expert_map_manager as emm

    plain_map = emm.determine_expert_map

    def expert_map_on_cpu(*a: Any, **k: Any) -> Any:
        with torch.device("cpu"):
            return plain_map(*a, **k)

    emm.determine_expert_map = expert_map_on_cpu
    oracle_stand_ins.stub_cuda_python()
    # RECORD_WEIGHTS_CONFIG_CLASSES=MODELS_DIR:TYPE,TYPE: the checkpoint's own config class of each
    # model_type the release's transformers lacks, stood in for by MODELS_DIR's (another transformers)
    if stand_in := os.environ.get("RECORD_WEIGHTS_CONFIG_CLASSES"):
        models_dir, _, kinds = stand_in.rpartition(":")
        oracle_stand_ins.register_config_classes(models_dir, kinds.split(","))
    V = es.V
    # RECORD_WEIGHTS_GPU=MAJOR.MINOR: the stand-in GPU's compute capability (default the H200's 9.0),
    # for a layer whose buffers depend on it (Kimi-K3's KDA native fused decode)
    if gpu := os.environ.get("RECORD_WEIGHTS_GPU"):
        es.GPU.capability = tuple(int(x) for x in gpu.split("."))
    if os.environ.get("RECORD_WEIGHTS_GPU_CAST"):
        # Kimi-K3's wrapper skips its tower's dtype cast on the meta device only (is_meta_module)
        with contextlib.suppress(ImportError):
            from vllm.models.kimi_k3.nvidia import model as k3

            if hasattr(k3, "is_meta_module"):
                k3.is_meta_module = lambda module: False
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="record-weights-"))
    # RECORD_WEIGHTS_OUT=FILE: another release's records (data/weights/recorded-0.27.1.json)
    out_path = Path(os.environ.get("RECORD_WEIGHTS_OUT") or DATA / "recorded.json")
    doc = json.loads(out_path.read_text()) if out_path.exists() else {"cases": {}}
    doc["vllm"] = V.vllm.__version__
    if gpu:
        doc["gpu_capability"] = list(es.GPU.capability)
    if os.environ.get("RECORD_WEIGHTS_OVERLAY"):
        doc["overlay"] = {**doc.get("overlay", {}), **json.loads(os.environ["RECORD_WEIGHTS_OVERLAY"])}
    for cdir in config_dirs(sys.argv[1:], scratch):
        config = json.loads((cdir / "config.json").read_text())
        for argv in flag_sets(config):
            # RECORD_WEIGHTS_FLAGS=S: only the flag sets containing S
            if os.environ.get("RECORD_WEIGHTS_FLAGS", "") not in " ".join(argv):
                continue
            cid = cdir.name + " " + " ".join(argv)
            t0 = time.perf_counter()
            es._reset_per_process_caches()
            row: dict[str, Any] = {"config": cdir.name, "argv": argv, "ok": False}
            try:
                args = es._parse(str(cdir), ["--max-model-len", str(_max_model_len(config)), *argv])
                cfg = V.AsyncEngineArgs.from_cli_args(args).create_engine_config(
                    usage_context=V.UsageContext.OPENAI_API_SERVER
                )
                pp = cfg.parallel_config.pipeline_parallel_size
                stages = []
                for pp_rank in range(pp):
                    stage_cfg = copy.deepcopy(cfg) if pp > 1 else cfg
                    es._set_parallel_groups(stage_cfg, pp_rank)
                    es._no_jit_warmup_registration(stage_cfg)  # as the engine start's workers
                    if os.environ.get("RECORD_WEIGHTS_WORKSPACE"):
                        # Worker.init_device's workspace manager, on the meta device (HY V4's sparse
                        # MLA backend reserves its workspace at construction; the workspace is not
                        # the model's: not counted)
                        from vllm.v1.worker.workspace import init_workspace_manager

                        init_workspace_manager(torch.device("meta"), 1)
                    with V.set_current_vllm_config(stage_cfg):
                        model = V.get_model_loader(stage_cfg.load_config).load_model(
                            vllm_config=stage_cfg, model_config=stage_cfg.model_config
                        )
                    stages.append(
                        [
                            sum(p.numel() * p.element_size() for p in model.parameters()),
                            sum(b.numel() * b.element_size() for b in model.buffers()),
                            allocated(model)[0],
                        ]
                    )
                if pp > 1:
                    row["stages"] = stages
                by_dtype: dict[str, int] = {}
                pbytes = 0
                for p in model.parameters():
                    n = p.numel() * p.element_size()
                    pbytes += n
                    by_dtype[str(p.dtype)] = by_dtype.get(str(p.dtype), 0) + n
                bbytes = sum(b.numel() * b.element_size() for b in model.buffers())
                alloc, storage = allocated(model)
                row.update(
                    ok=True,
                    param_bytes=pbytes,
                    buffer_bytes=bbytes,
                    allocated_bytes=alloc,
                    storage_bytes=storage,
                    max_num_batched_tokens=cfg.scheduler_config.max_num_batched_tokens,
                    by_dtype=by_dtype,
                )
                if os.environ.get("RECORD_WEIGHTS_GPU_CAST"):
                    row["gpu_cast"] = True
                if os.environ.get("RECORD_WEIGHTS_SHAPES") and argv[1] == "1":  # debugging aid
                    row["params"] = {n: [list(p.shape), str(p.dtype)] for n, p in model.named_parameters()}
                    row["buffers"] = {n: [list(b.shape), str(b.dtype)] for n, b in model.named_buffers()}
            except BaseException as e:  # every failure recorded as vLLM's answer for that case
                if isinstance(e, KeyboardInterrupt):
                    raise
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            with contextlib.suppress(Exception):
                del model
            row["seconds"] = round(time.perf_counter() - t0, 2)
            doc["cases"][cid] = row
            real_stdout.write(
                json.dumps({cid: {k: v for k, v in row.items() if k not in ("params", "buffers")}}) + "\n"
            )
            real_stdout.flush()
    doc["cases"] = dict(sorted(doc["cases"].items()))
    out_path.write_text(json.dumps(doc, indent=1) + "\n")
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
