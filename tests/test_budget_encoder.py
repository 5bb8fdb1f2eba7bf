"""The multimodal encoder's share of vLLM's profile run (``activation: multimodal encoder``,
:mod:`dryboot.vllm.worker.encoder_profile`): the dummy batch ``MultiModalBudget`` picks against
posted lines, the interval's bounds from the tower's widths, refusals by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.worker.encoder_profile import (
    GEMMA3_PAN_AND_SCAN,
    LLAVA_NEXT_PINPOINTS,
    EncoderBatch,
    encoder_batch,
    encoder_term,
    gemma3_num_crops,
    idefics3_tiles,
    kimi_k25_sized,
    llava_next_tokens,
    max_tokens_per_item,
    processor_max_pixels,
    select_best_resolution,
    sized_for_processor,
    vision_tower,
)
from dryboot.vllm.worker.profile_run import activation_terms, forward_shape

REPO = Path(__file__).resolve().parents[1]
LINES: list[dict[str, Any]] = json.loads((REPO / "tests/data/budget/encoder/profile-lines.json").read_text())["lines"]
QWEN3_VL_8B = REPO / "tests/data/configs/public/Qwen--Qwen3-VL-8B-Instruct/config.json"
QWEN35_27B = REPO / "tests/data/configs/public/Qwen--Qwen3.5-27B/config.json"
GEMMA4 = REPO / "tests/data/configs/public/google--gemma-4-26B-A4B/config.json"


def _config(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize("entry", LINES, ids=lambda e: e["source"].split(" ")[0].rsplit("/", 1)[-1])
def test_dummy_batch_as_posted(entry: dict[str, Any]) -> None:
    config = entry["config_widths"] if "config_widths" in entry else _config(REPO / entry["config"])
    tower = vision_tower(config["vision_config"], config["model_type"], config=config)
    assert tower is not None
    batch = encoder_batch(
        tower,
        max_num_batched_tokens=entry["max_num_batched_tokens"],
        max_num_seqs=entry["max_num_seqs"],
        max_model_len=entry["max_model_len"],
        limit_mm_per_prompt=entry["limit_mm_per_prompt"],
    )
    assert batch is not None
    line = (
        f"Encoder cache will be initialized with a budget of {batch.budget} tokens, and profiled with "
        f"{batch.items} {batch.modality} items of the maximum feature size."
    )
    assert line == entry["line"]


def test_qwen3_tower_largest_items() -> None:
    tower = vision_tower(_config(QWEN3_VL_8B)["vision_config"])
    assert tower is not None
    # image: 16,777,216 px / 32^2 = 16,384 tokens; video: 2 frames at 25,165,824 / 2 px = 12,288
    assert max_tokens_per_item(tower, 32768) == {"image": 16384, "video": 12288}
    # a larger batch budget takes more items (budget // tokens), capped by the decoder's side
    b = encoder_batch(tower, max_num_batched_tokens=40000, max_num_seqs=256, max_model_len=32768)
    assert b is not None and (b.budget, b.items, b.modality) == (40000, 2, "image")
    b = encoder_batch(tower, max_num_batched_tokens=40000, max_num_seqs=1, max_model_len=20000)
    assert b is not None and b.items == 1
    # images off: the video is profiled; both off: nothing
    b = encoder_batch(
        tower, max_num_batched_tokens=2048, max_num_seqs=8, max_model_len=8192, limit_mm_per_prompt={"image": 0}
    )
    assert b is not None and (b.modality, b.tokens_per_item, b.budget) == ("video", 12288, 12288)
    none = encoder_batch(
        tower,
        max_num_batched_tokens=2048,
        max_num_seqs=8,
        max_model_len=8192,
        limit_mm_per_prompt={"image": 0, "video": 0},
    )
    assert none is None


def test_bounds_from_the_widths() -> None:
    tower = vision_tower(_config(QWEN3_VL_8B)["vision_config"])
    assert tower is not None
    batch = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert batch is not None
    v2 = encoder_term(tower, batch, tp=1, dtype_bytes=2, runner="V2", decoder_high=1 << 40)
    # the outputs held through the decoder pass: 16,384 tokens x 4,096 x (1 main + 3 deepstack) x 2 B
    assert v2.low == 16384 * 4096 * 4 * 2
    # the tower's MLP alone at 65,536 patches: fc1 and its activation, 2 x 4,304 x 2 B per patch
    assert v2.high > v2.low + 65536 * 2 * 4304 * 2
    v1 = encoder_term(tower, batch, tp=1, dtype_bytes=2, runner="V1", decoder_high=1 << 40)
    # V1 also keeps the dummy pixel values (65,536 patches x 3 x 2 x 16 x 16, at least 2 B)
    assert v1.low == v2.low + 65536 * 1536 * 2
    tp2 = encoder_term(tower, batch, tp=2, dtype_bytes=2, runner="V2", decoder_high=1 << 40)
    assert tp2.low == v2.low and tp2.high < v2.high
    # with a small decoder peak the run's peak is the tower's: the low bound rises to the tower's
    # certain widest point (MLP fc1 and activation at 65,536 patches) less the decoder's high bound
    narrow = encoder_term(tower, batch, tp=1, dtype_bytes=2, runner="V2", decoder_high=256 << 20)
    assert narrow.low >= 65536 * 2 * 4304 * 2 - (256 << 20) and narrow.low > v2.low
    assert narrow.high == v2.high


@settings(max_examples=150, deadline=None)
@given(
    mnbt=st.integers(1, 300_000),
    seqs=st.integers(1, 1024),
    mml=st.integers(1, 1 << 20),
    image=st.integers(0, 5),
    video=st.integers(0, 5),
    tp=st.sampled_from([1, 2, 4, 8]),
    dec=st.integers(0, 1 << 36),
)
def test_term_is_an_interval(mnbt: int, seqs: int, mml: int, image: int, video: int, tp: int, dec: int) -> None:
    tower = vision_tower(_config(QWEN35_27B)["vision_config"])
    assert tower is not None
    batch = encoder_batch(
        tower,
        max_num_batched_tokens=mnbt,
        max_num_seqs=seqs,
        max_model_len=mml,
        limit_mm_per_prompt={"image": image, "video": video},
    )
    if image == 0 and video == 0:
        assert batch is None
        return
    assert batch is not None and batch.items >= 1
    assert batch.budget >= batch.tokens_per_item and batch.tokens <= max(batch.budget, batch.tokens_per_item)
    for runner in ("V1", "V2"):
        t = encoder_term(tower, batch, tp=tp, dtype_bytes=2, runner=runner, decoder_high=dec)
        assert 0 < t.low <= t.high


def test_activation_terms_add_the_encoder_and_refuse_other_towers() -> None:
    shape = forward_shape(_config(QWEN35_27B))
    terms = activation_terms(
        shape, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, compiled=True, max_model_len=32768
    )
    enc = [t for t in terms if t.name == "activation: multimodal encoder"]
    assert len(enc) == 1 and "1 image item(s) x 16,384 tokens" in enc[0].source
    # skipped: no encoder term, and the decoder's terms unchanged
    text = activation_terms(
        shape, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, compiled=True, encoder_profiled=False
    )
    assert [t for t in terms if t is not enc[0]] == text
    # another tower (GLM-4.1V's) stays refused by name
    glm = {**_config(QWEN3_VL_8B), "model_type": "glm4v", "vision_config": {"model_type": "glm4v_vision"}}
    with pytest.raises(InputError, match=r"glm4v_vision tower"):
        activation_terms(
            forward_shape(glm), max_num_batched_tokens=2048, max_num_seqs=256, tp=1, compiled=True, max_model_len=8192
        )


def test_a_bounded_family_with_a_width_missing_is_refused_by_name() -> None:
    # (Qwen3-VL's config class defaults a missing width, as vLLM reads it: test_budget_encoder_defaults.py)
    config = _config(QWEN35_27B)
    config["vision_config"] = {k: v for k, v in config["vision_config"].items() if k != "intermediate_size"}
    shape = forward_shape(config)  # the text-only paths still plan
    assert shape.vision_tower is None
    with pytest.raises(InputError, match=r"vision_config\.intermediate_size"):
        activation_terms(shape, max_num_batched_tokens=2048, max_num_seqs=8, tp=1, compiled=True, max_model_len=8192)


FIDELITY = REPO / "tests/fidelity/data/architectures"


def test_qwen2_family_profiles_the_longest_video_the_context_allows() -> None:
    # Qwen2.5-VL's tower over its fidelity config; the processor's published max_pixels
    # (files/.../preprocessor_config.json): 12,845,056 px = 16,384 tokens at patch 14, merge 2
    config = _config(FIDELITY / "Qwen2_5_VLForConditionalGeneration.json")
    tower = vision_tower(config["vision_config"], config["model_type"])
    assert tower is not None and tower.gated and not tower.pos_embeds
    pre = _config(FIDELITY / "files/Qwen2_5_VLForConditionalGeneration/preprocessor_config.json")
    assert processor_max_pixels(pre) == (12845056, 0)
    # 128,000 tokens: 14 frames (the cap), 7 temporal patches of 16,384 tokens; a posted 0.23.0 boot of
    # Qwen2.5-VL-7B-Instruct at max len 128000 logs "a budget of 114688 tokens, and profiled with 1 video
    # items" (docs/budget.md)
    b = encoder_batch(tower, max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=128000)
    assert b is not None and (b.budget, b.items, b.modality) == (114688, 1, "video")
    # 32,768: 4 frames, 2 temporal patches; below 16,384 the video keeps 1 frame and ties the image:
    # vLLM's max over (tokens, name) takes the video
    assert max_tokens_per_item(tower, 32768) == {"image": 16384, "video": 32768}
    b = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=8192)
    assert b is not None and (b.modality, b.tokens_per_item) == ("video", 16384)
    # Qwen2-VL: embed_dim and mlp_ratio, the vision hidden_size is the merger's output
    q2 = _config(FIDELITY / "Qwen2VLForConditionalGeneration.json")
    t2 = vision_tower(q2["vision_config"], q2["model_type"])
    assert t2 is not None and (t2.hidden_size, t2.intermediate_size, t2.out_hidden_size) == (128, 512, 512)
    assert not t2.gated and not t2.pos_embeds


def test_a_checkpoints_processor_sizes_decide_the_item(tmp_path: Path) -> None:
    from dryboot.planner.budget import with_processor_sizes

    config = _config(QWEN3_VL_8B)
    (tmp_path / "config.json").write_text(json.dumps(config))
    shape = forward_shape(config)
    assert with_processor_sizes(shape, str(tmp_path / "config.json")) == shape  # none beside it: defaults
    # a checkpoint whose processor caps images at 1,843,200 px (1,800 tokens) and videos lower
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 1843200}}))
    (tmp_path / "video_preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 1843200}}))
    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    assert (sized.image_max_pixels, sized.video_max_pixels) == (1843200, 1843200)
    terms = activation_terms(
        sized, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, compiled=False, max_model_len=8192
    )
    enc = next(t for t in terms if t.name == "activation: multimodal encoder")
    assert "1 image item(s) x 1,800 tokens" in enc.source and "checkpoint's processor configs" in enc.source
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": "big"}}))
    with pytest.raises(InputError, match=r"size\.longest_edge"):
        with_processor_sizes(shape, str(tmp_path / "config.json"))
    (tmp_path / "preprocessor_config.json").write_text("{not json")
    with pytest.raises(InputError, match=r"preprocessor_config\.json"):
        with_processor_sizes(shape, str(tmp_path / "config.json"))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["size", "max_pixels", "min_pixels"]),
        st.one_of(
            st.integers(-5, 1 << 40),
            st.booleans(),
            st.text(max_size=5),
            st.none(),
            st.dictionaries(
                st.sampled_from(["longest_edge", "shortest_edge"]),
                st.one_of(st.integers(-5, 1 << 40), st.text(max_size=3)),
            ),
        ),
    )
)
def test_processor_sizes_parse_or_refuse_in_one_line(pre: dict[str, Any]) -> None:
    try:
        image, video = processor_max_pixels(pre)
    except InputError as e:
        assert "\n" not in e.line()
        return
    assert image >= 0 and video == 0


def test_fixed_size_towers_of_llava_and_paligemma() -> None:
    llava = _config(FIDELITY / "LlavaForConditionalGeneration.json")  # CLIP, image 112, patch 14
    shape = forward_shape(llava)
    tower = shape.vision_tower
    assert tower is not None and tower.class_token
    # 8 x 8 patches and a class token run; the "default" strategy drops the class token: 64 tokens
    assert (tower.image_patches, tower.image_tokens) == (65, 64)
    assert tower.out_hidden_size == llava["text_config"]["hidden_size"]  # the projector's output
    b = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=4096)
    assert b is not None and (b.modality, b.items, b.tokens) == ("image", 128, 8192)
    full = vision_tower(llava["vision_config"], "llava", "full")
    assert full is not None and full.image_tokens == 65
    t = encoder_term(tower, b, tp=1, dtype_bytes=2, runner="V1", decoder_high=1 << 40)
    # V1 holds the outputs and the pixel values (128 images x 3 x 112 x 112, at least 2 B)
    assert t.low == 8192 * tower.out_hidden_size * 2 + 128 * 3 * 112 * 112 * 2
    pali = _config(FIDELITY / "PaliGemmaForConditionalGeneration.json")  # SigLIP 224 / 14: 256 tokens
    pt = forward_shape(pali).vision_tower
    assert pt is not None and (pt.image_patches, pt.image_tokens, pt.projector_widths) == (256, 256, 1)
    # an image-only wrapper: images off leaves nothing to encode
    assert (
        encoder_batch(
            pt, max_num_batched_tokens=8192, max_num_seqs=8, max_model_len=8192, limit_mm_per_prompt={"image": 0}
        )
        is None
    )
    onevision = forward_shape({**llava, "model_type": "llava_onevision"})
    with pytest.raises(InputError, match=r"clip_vision_model \(in llava_onevision"):
        activation_terms(
            onevision, max_num_batched_tokens=2048, max_num_seqs=8, tp=1, compiled=False, max_model_len=4096
        )


def test_llava_next_largest_pinpoint() -> None:
    # the published default pinpoints over CLIP-336 (24 x 24 patches, 576 base features): 672 x 672
    # has the most, 2 x 2 tiles of 576 unpadded features, 48 newlines and the base 576
    p = LLAVA_NEXT_PINPOINTS
    assert [llava_next_tokens(h, w, p, 336, 24, 576)[0] for h, w in p] == [1752, 1776, 2928, 2376, 2328]
    # an image between pinpoints is padded to the best fit, its padding rows dropped
    assert select_best_resolution(500, 800, p) == (672, 672)
    assert llava_next_tokens(500, 800, p, 336, 24, 576) == (48 * 30 + 30 + 576, 4)
    cfg = _config(FIDELITY / "LlavaNextForConditionalGeneration.json")  # CLIP 112 / 14, pinpoints up to 224
    tower = forward_shape(cfg).vision_tower
    assert tower is not None
    # 224 x 224: 2 x 2 tiles of 8 x 8 features, 16 newlines, 64 base; 5 crops of 64 patches and a class token
    assert (tower.image_tokens, tower.crops, tower.image_patches) == (256 + 16 + 64, 5, 5 * 65)
    b = encoder_batch(tower, max_num_batched_tokens=2048, max_num_seqs=8, max_model_len=4096)
    assert b is not None and (b.items, b.tokens) == (6, 6 * 336)
    assert tower.pixels(1, 336) == 5 * 64 * 3 * 14 * 14  # no pixels for the class tokens
    with pytest.raises(InputError, match="image_grid_pinpoints"):
        vision_tower(cfg["vision_config"], "llava_next", config={**cfg, "image_grid_pinpoints": [[0, 5]]})
    with pytest.raises(InputError, match="image_grid_pinpoints"):
        vision_tower(cfg["vision_config"], "llava_next", config={**cfg, "image_grid_pinpoints": [[50, 60]]})


def test_only_the_v2_runners_first_stage_encodes() -> None:
    shape = forward_shape(_config(QWEN35_27B))
    kw: dict[str, Any] = {"max_num_batched_tokens": 2048, "max_num_seqs": 8, "tp": 1, "compiled": False}
    names = {
        (runner, first): [
            t.name for t in activation_terms(shape, runner=runner, first_stage=first, max_model_len=8192, **kw)
        ]
        for runner in ("V1", "V2")
        for first in (True, False)
    }
    assert "activation: multimodal encoder" not in names[("V2", False)]
    assert all("activation: multimodal encoder" in names[k] for k in (("V2", True), ("V1", True), ("V1", False)))


_WIDTH_KEYS = [
    "hidden_size",
    "intermediate_size",
    "num_heads",
    "num_attention_heads",
    "patch_size",
    "temporal_patch_size",
    "spatial_merge_size",
    "out_hidden_size",
    "embed_dim",
    "mlp_ratio",
    "image_size",
    "deepstack_visual_indexes",
    "pixel_shuffle_ratio",
    "merge_kernel_size",
]


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(_WIDTH_KEYS),
        st.one_of(
            st.integers(-3, 5000),
            st.floats(allow_nan=True),
            st.booleans(),
            st.text(max_size=3),
            st.lists(st.integers(0, 40), max_size=4),
        ),
    ),
    st.sampled_from(
        [
            "qwen3_vl",
            "qwen3_5",
            "qwen2_vl",
            "qwen2_5_vl",
            "llava",
            "paligemma",
            "gemma3",
            "llava_next",
            "mistral3",
            "idefics3",
            "smolvlm",
            "internvl_chat",
            "llama4",
            "llava_onevision",
            "kimi_vl",
            "glm4v",
            "glm4v_moe",
            "kimi_k25",
        ]
    ),
    st.sampled_from(
        [
            "clip_vision_model",
            "siglip_vision_model",
            "pixtral",
            "idefics3_vision",
            "intern_vit_6b",
            "llama4_vision_model",
            "moonvit",
            "glm4v_vision",
            "glm4v_moe_vision",
            None,
        ]
    ),
    st.dictionaries(
        st.sampled_from(
            [
                "mm_tokens_per_image",
                "image_grid_pinpoints",
                "spatial_merge_size",
                "vision_feature_layer",
                "spatial_pool_stride",
            ]
        ),
        st.one_of(
            st.integers(-3, 5000),
            st.booleans(),
            st.text(max_size=3),
            st.lists(st.one_of(st.integers(-2, 2000), st.lists(st.integers(-2, 2000), max_size=3)), max_size=4),
        ),
    ),
    st.dictionaries(
        st.sampled_from(["do_pan_and_scan", "pan_and_scan_max_num_crops", "pan_and_scan_min_crop_size"]),
        st.one_of(st.integers(-3, 5000), st.booleans(), st.floats(allow_nan=True), st.text(max_size=3)),
    ),
)
def test_hostile_vision_configs_give_a_tower_none_or_one_line(
    vision: dict[str, Any], model_type: str, kind: str | None, top: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    if kind is not None:
        vision = {**vision, "model_type": kind}
    try:
        tower = vision_tower(vision, model_type, config=top, mm_processor_kwargs=kwargs)
    except InputError as e:
        assert "\n" not in e.line()
        return
    if tower is not None:
        assert tower.hidden_size > 0 and tower.patch_size > 0 and tower.spatial_merge_size > 0


def test_an_absurd_processor_size_is_refused_not_searched() -> None:
    tower = vision_tower(_config(QWEN3_VL_8B)["vision_config"])
    assert tower is not None
    with pytest.raises(InputError, match="over 16,777,216 tokens"):
        max_tokens_per_item(tower, 8192, image_max_pixels=10**18)
    # a prime token count is factored into the widest grid of aspect ratio 200 or less
    assert max_tokens_per_item(tower, 8192, image_max_pixels=16411 * 1024)["image"] <= 16411


def test_gemma3_crops_and_pan_and_scan() -> None:
    # gemma3_mm.py: the dummy image is image_size wide, image_size x pan_and_scan_max_num_crops tall;
    # without --mm-processor-kwargs pan-and-scan stays off (the processor's defaults win over
    # preprocessor_config.json), so one 896 crop of 64 x 64 patches pooled 4 x 4 to 256 tokens
    cfg = _config(FIDELITY / "Gemma3ForConditionalGeneration.json")
    shape = forward_shape(cfg)
    tower = shape.vision_tower
    assert tower is not None
    assert (tower.image_patches, tower.image_tokens, tower.pool, tower.crops) == (4096, 256, 4, 1)
    assert tower.out_hidden_size == cfg["text_config"]["hidden_size"]
    b = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert b is not None and (b.modality, b.items, b.budget) == ("image", 32, 8192)
    # on: the 896 x 3584 dummy splits into 4 crops beside the resized image: 5 x 256 embeddings
    pas = vision_tower(cfg["vision_config"], "gemma3", config=cfg, mm_processor_kwargs={"do_pan_and_scan": True})
    assert pas is not None and (pas.crops, pas.image_tokens, pas.image_patches) == (5, 1280, 5 * 4096)
    b = encoder_batch(pas, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert b is not None and (b.items, b.tokens) == (6, 7680)
    capped = vision_tower(
        cfg["vision_config"],
        "gemma3",
        config=cfg,
        mm_processor_kwargs={"do_pan_and_scan": True, "pan_and_scan_max_num_crops": 2},
    )
    assert capped is not None and capped.image_tokens == 3 * 256
    with pytest.raises(InputError, match="mm_tokens_per_image"):
        vision_tower(cfg["vision_config"], "gemma3", config={**cfg, "mm_tokens_per_image": 200})
    with pytest.raises(InputError, match="pan_and_scan_max_num_crops"):
        vision_tower(cfg["vision_config"], "gemma3", config=cfg, mm_processor_kwargs={"pan_and_scan_max_num_crops": 0})


@pytest.mark.parametrize(
    ("width", "height", "crops"),
    [
        (896, 3584, 4),  # the dummy image: 4 crops along its height
        (896, 896, 0),  # square: under the 1.2 ratio
        (1000, 1100, 0),  # ratio 1.1
        (2000, 500, 4),  # min(2000 // 256, round(4)) = 4 crops of 500 x 500
        (300, 100, 0),  # 2 crops of 150 px: under the 256 px minimum
        (1200, 800, 2),  # round(1.5) = 2 crops of 600 x 800
        (8000, 1000, 4),  # round(8) capped at pan_and_scan_max_num_crops
    ],
)
def test_gemma3_num_crops(width: int, height: int, crops: int) -> None:
    kwargs = {**GEMMA3_PAN_AND_SCAN, "do_pan_and_scan": True}
    assert gemma3_num_crops(width, height, kwargs) == crops
    assert gemma3_num_crops(width, height, GEMMA3_PAN_AND_SCAN) == 0


#: mistralai/Mistral-Small-3.1-24B-Instruct-2503's published widths (config.json: a pixtral
#: vision_config, spatial_merge_size 2; preprocessor_config.json: size.longest_edge 1540)
MISTRAL_SMALL_31 = {
    "architectures": ["Mistral3ForConditionalGeneration"],
    "model_type": "mistral3",
    "spatial_merge_size": 2,
    "vision_feature_layer": -1,
    "multimodal_projector_bias": False,
    "projector_hidden_act": "gelu",
    "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "mistral",
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 40,
        "vocab_size": 131072,
    },
    "vision_config": {
        "model_type": "pixtral",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "head_dim": 64,
        "image_size": 1540,
        "patch_size": 14,
        "num_channels": 3,
    },
}


def _encoder_term(
    shape: Any,
    *,
    compiled: bool = True,
    tp: int = 1,
    mm_limits: dict[str, int] | None = None,
    release: str = "0.28.0",
    mnbt: int = 8192,
) -> Any:
    """The one ``activation: multimodal encoder`` term at 256 sequences and 32,768 tokens."""
    terms = activation_terms(
        shape,
        max_num_batched_tokens=mnbt,
        max_num_seqs=256,
        tp=tp,
        compiled=compiled,
        max_model_len=32768,
        mm_limits=mm_limits,
        release=release,
    )
    (enc,) = [t for t in terms if t.name == "activation: multimodal encoder"]
    return enc


def _encoder(shape: Any, release: str, mnbt: int = 8192) -> Any:
    return _encoder_term(shape, compiled=False, release=release, mnbt=mnbt)


def test_mistral3_pixtral_largest_square(tmp_path: Path) -> None:
    from dryboot.planner.budget import with_processor_sizes

    shape = forward_shape(MISTRAL_SMALL_31)
    tower = shape.vision_tower
    assert tower is not None and tower.model_type == "pixtral" and tower.gated
    # a 1540 px square: 110 x 110 patches of 14 px, embeddings on the 55 x 55 grid of merged patches
    assert (tower.image_patches, tower.image_tokens, tower.out_hidden_size) == (12100, 3025, 5120)
    b = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert b is not None and (b.items, b.budget, b.tokens) == (2, 8192, 6050)
    # a processor capping the edge at 1024 px: ceil(1024 / 14) = 74 patches a side, ceil(1024 / 28) = 37 tokens
    small = sized_for_processor(tower, 1024)
    assert (small.image_patches, small.image_tokens) == (74 * 74, 37 * 37)
    (tmp_path / "config.json").write_text(json.dumps(MISTRAL_SMALL_31))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 1024}}))
    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    enc = _encoder(sized, "0.33.0")
    assert "5 image item(s) x 1,369 tokens" in enc.source and "longest_edge (1024 px" in enc.source
    # up to 0.28 the tower attends through one dense N x N mask over the batch's 24,200 patches
    old, new = _encoder(shape, "0.28.0"), _encoder(shape, "0.33.0")
    mask = 24200 * 24200 * 2
    assert old.high - new.high >= 2 * mask and "dense block-diagonal attention mask" in old.source
    assert "mask" not in new.source
    # several feature layers' hidden states, or another wrapper's pixtral: refused by name
    multi = forward_shape({**MISTRAL_SMALL_31, "vision_feature_layer": [-1, -2]})
    assert multi.vision_tower is None
    with pytest.raises(InputError, match="pixtral"):
        _encoder(multi, "0.33.0")
    pix_llava = forward_shape({**MISTRAL_SMALL_31, "model_type": "llava"})
    assert pix_llava.vision_tower is None


def test_mm_processor_kwargs_reach_gemma3_or_are_refused_by_name() -> None:
    from dryboot.planner.flags import parse_mm_processor_kwargs

    cfg = _config(FIDELITY / "Gemma3ForConditionalGeneration.json")
    kwargs = dict(parse_mm_processor_kwargs('{"do_pan_and_scan": true}'))
    on = forward_shape(cfg, mm_processor_kwargs=kwargs).vision_tower
    assert on is not None and on.crops == 5
    # a key the tower does not read (a Qwen max_pixels, or any key for a tower without options)
    for shape in (
        forward_shape(cfg, mm_processor_kwargs={"max_pixels": 100}),
        forward_shape(MISTRAL_SMALL_31, mm_processor_kwargs={"do_pan_and_scan": True}),
    ):
        assert shape.vision_tower is None
        with pytest.raises(InputError, match=r"--mm-processor-kwargs: (max_pixels|do_pan_and_scan): not read"):
            _encoder(shape, "0.33.0")
    for bad in ("[1]", "{not json", '{"a": [1]}'):
        with pytest.raises(ValueError):
            parse_mm_processor_kwargs(bad)


@pytest.mark.parametrize(
    ("tile", "edge", "crops"),
    [
        (364, 1456, 17),  # Idefics3's default: 4 x 4 tiles and the global image
        (384, 1536, 17),  # SmolVLM-Instruct's processor
        (364, 364, 1),  # one tile: the global image only
        (364, 200, 1),
        (364, 1000, 10),  # ceil(1000 / 364) = 3
        (364, 9000, 145),  # capped at 4,096 px: 12 x 12 + 1
    ],
)
def test_idefics3_tiles(tile: int, edge: int, crops: int) -> None:
    assert idefics3_tiles(tile, edge) == crops


def test_idefics3_and_smolvlm_crops(tmp_path: Path) -> None:
    from dryboot.planner.budget import with_processor_sizes

    cfg = _config(FIDELITY / "Idefics3ForConditionalGeneration.json")  # 364 / 14, scale 2
    shape = forward_shape(cfg)
    tower = shape.vision_tower
    assert tower is not None and tower.model_type == "idefics3_vision"
    # 26 x 26 patches a tile, shuffled 2 x 2 into 169 embeddings; 17 tiles at the default 1,456 px
    assert (tower.crops, tower.image_patches, tower.image_tokens) == (17, 17 * 676, 17 * 169)
    b = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert b is not None and (b.items, b.tokens) == (2, 2 * 2873)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "preprocessor_config.json").write_text(
        json.dumps({"size": {"longest_edge": 728}, "max_image_size": {"longest_edge": 364}})
    )
    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    enc = _encoder(sized, "0.33.0")
    assert "9 image item(s) x 845 tokens" in enc.source  # 2 x 2 tiles and the global image: 5 x 169
    smol = forward_shape(_config(FIDELITY / "SmolVLMForConditionalGeneration.json")).vision_tower  # 512 / 16
    assert smol is not None and (smol.model_type, smol.image_tokens) == ("smolvlm_vision", 17 * 256)
    # SmolVLM-Instruct's widths: 384 px at patch 14 is 27 patches a side (the conv floors), 81
    # embeddings at scale 3; its processor's 1,536 px edge makes 4 x 4 tiles of 384 and the global one
    v = {"model_type": "smolvlm_vision", "image_size": 384, "patch_size": 14, "hidden_size": 1152}
    inst = vision_tower(v, "smolvlm", config={"scale_factor": 3})
    assert inst is not None and (inst.image_tokens, inst.tile_size) == (17 * 81, 384)
    assert sized_for_processor(inst, 1536).crops == 17 and sized_for_processor(inst, 768).image_tokens == 5 * 81
    with pytest.raises(InputError, match="scale_factor"):
        vision_tower(cfg["vision_config"], "idefics3", config={**cfg, "scale_factor": 0})
    with pytest.raises(InputError, match="image_size"):
        vision_tower(cfg["vision_config"], "idefics3", config={**cfg, "scale_factor": 3})  # 26 % 3
    assert vision_tower({**cfg["vision_config"], "model_type": "siglip_vision_model"}, "idefics3") is None


#: OpenGVLab/InternVL3-8B's published widths and tiling (config.json, ``internvl_chat``)
INTERNVL3_8B = {
    "architectures": ["InternVLChatModel"],
    "model_type": "internvl_chat",
    "downsample_ratio": 0.5,
    "dynamic_image_size": True,
    "use_thumbnail": True,
    "max_dynamic_patch": 12,
    "min_dynamic_patch": 1,
    "ps_version": "v2",
    "select_layer": -1,
    "torch_dtype": "bfloat16",
    "llm_config": {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "vocab_size": 151674,
    },
    "vision_config": {
        "model_type": "intern_vit_6b",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "image_size": 448,
        "patch_size": 14,
        "qk_normalization": False,
        "norm_type": "layer_norm",
    },
}


def test_internvl_tiles_and_video() -> None:
    tower = forward_shape(INTERNVL3_8B).vision_tower
    assert tower is not None and tower.class_token
    # 12 tiles and the thumbnail, 32 x 32 patches and a class token each, shuffled to 256 embeddings
    assert (tower.crops, tower.image_tokens, tower.image_patches, tower.frame_tokens) == (13, 3328, 13 * 1025, 256)
    # a Qwen text model: the dummy video takes the context left beside one image, one crop a frame
    assert max_tokens_per_item(tower, 32768) == {"image": 3328, "video": (32768 - 3328) // 256 * 256}
    b = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert b is not None and (b.modality, b.items, b.tokens, b.budget) == ("video", 1, 29440, 29440)
    assert tower.patches(1, 29440, "video") == 115 * 1025 and tower.pixels(1, 29440, "video") == 115 * 1024 * 588
    b = encoder_batch(
        tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768, limit_mm_per_prompt={"image": 0}
    )
    assert b is not None and (b.modality, b.tokens) == ("video", 32768)
    b = encoder_batch(
        tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768, limit_mm_per_prompt={"video": 0}
    )
    assert b is not None and (b.modality, b.items, b.tokens) == ("image", 2, 6656)
    # an InternLM2 text model has no video token; dynamic tiles off: one crop, no thumbnail
    lm = forward_shape({**INTERNVL3_8B, "llm_config": {**INTERNVL3_8B["llm_config"], "model_type": "internlm2"}})
    assert lm.vision_tower is not None and max_tokens_per_item(lm.vision_tower, 32768) == {"image": 3328}
    one = vision_tower(
        INTERNVL3_8B["vision_config"], "internvl_chat", config={**INTERNVL3_8B, "dynamic_image_size": False}
    )
    assert one is not None and (one.crops, one.image_tokens) == (1, 256)
    # InternViT-6B (qk_normalization, dummy heads under TP): refused by name
    six = forward_shape({**INTERNVL3_8B, "vision_config": {**INTERNVL3_8B["vision_config"], "qk_normalization": True}})
    with pytest.raises(InputError, match="intern_vit_6b"):
        _encoder(six, "0.33.0")
    with pytest.raises(InputError, match="downsample_ratio"):
        vision_tower(INTERNVL3_8B["vision_config"], "internvl_chat", config={**INTERNVL3_8B, "downsample_ratio": 0.3})


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.text(max_size=40),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
            lambda inner: st.one_of(
                st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=8,
        ).map(json.dumps),
    )
)
def test_mm_processor_kwargs_parse_or_refuse_in_one_line(text: str) -> None:
    from dryboot.planner.flags import parse_mm_processor_kwargs

    try:
        pairs = parse_mm_processor_kwargs(text)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    assert all(isinstance(k, str) and isinstance(v, bool | int | float | str) for k, v in pairs)


def test_mistral3_processor_edge_before_0_29_is_refused(tmp_path: Path) -> None:
    from dryboot.planner.budget import with_processor_sizes

    (tmp_path / "config.json").write_text(json.dumps(MISTRAL_SMALL_31))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 1024}}))
    sized = with_processor_sizes(forward_shape(MISTRAL_SMALL_31), str(tmp_path / "config.json"))
    # 0.27-0.28 count the dummy by vision_config.image_size; 0.29 on by the processor's edge
    with pytest.raises(InputError, match="longest_edge 1024 px: not bounded"):
        _encoder(sized, "0.28.0")
    assert "x 1,369 tokens" in _encoder(sized, "0.29.0").source
    # the published processor (edge = image_size) counts the same either way
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 1540}}))
    same = with_processor_sizes(forward_shape(MISTRAL_SMALL_31), str(tmp_path / "config.json"))
    assert "x 3,025 tokens" in _encoder(same, "0.27.1").source


def test_gemma4_profiles_the_padded_dummy_video() -> None:
    """gemma_4_26B_A4B: a video counts 32 x 78 = 2,496 tokens, above the 280 of an image, so
    ``profile_run`` encodes budget // 2,496 videos of 32 frames padded to 630 patches (64
    embeddings each from the 224 px dummy); with videos off, the image padded to 2,520 patches."""
    shape = forward_shape(_config(GEMMA4))
    tower = shape.vision_tower
    assert tower is not None and tower.model_type == "gemma4_vision"
    batch = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert batch == EncoderBatch("video", 2496, 3, 8192)
    assert tower.patches(3, batch.tokens, "video") == 96 * 630
    assert tower.embeddings(3, batch.tokens, "video") == 96 * 64
    image = encoder_batch(
        tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768, limit_mm_per_prompt={"video": 0}
    )
    assert image == EncoderBatch("image", 280, 29, 8192)
    assert tower.patches(29, image.tokens) == 29 * 2520 and tower.embeddings(29, image.tokens) == 29 * 256
    enc = _encoder_term(shape)
    assert "3 video item(s) x 2,496 tokens" in enc.source and "60,480 patches" in enc.source
    # the outputs (6,144 embeddings x 2,816) are the least it holds; the widest chunk bounds it
    assert 6144 * 2816 * 2 <= enc.low < enc.high < 3 << 30


def test_gemma4_max_soft_tokens_from_the_processor_kwargs() -> None:
    config = _config(GEMMA4)
    big = forward_shape(config, mm_processor_kwargs={"max_soft_tokens": 1120}).vision_tower
    assert big is not None and (big.image_tokens, big.image_patches, big.image_embeds) == (1120, 10080, 1089)
    nested = forward_shape(config, mm_processor_kwargs={"images_kwargs": {"max_soft_tokens": 70}}).vision_tower
    assert nested is not None and nested.image_tokens == 70
    odd = forward_shape(config, mm_processor_kwargs={"max_soft_tokens": 100}).vision_tower  # not supported: default
    assert odd is not None and odd.image_tokens == 280
    other = forward_shape(config, mm_processor_kwargs={"do_pan_and_scan": True})
    assert other.vision_tower is None and "do_pan_and_scan" in other.vision_refusal


#: Llama-4-Scout-17B-16E-Instruct's published ``vision_config`` widths (its config.json on the Hub;
#: the corpus's copy of that config keeps the text model only)
LLAMA4_VISION = {
    "hidden_size": 1408,
    "image_size": 336,
    "intermediate_size": 5632,
    "model_type": "llama4_vision_model",
    "num_attention_heads": 16,
    "num_channels": 3,
    "num_hidden_layers": 34,
    "patch_size": 14,
    "pixel_shuffle_ratio": 0.5,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
    "vision_output_dim": 4096,
}
LLAMA4_SCOUT = REPO / "tests/data/configs/public/meta-llama--Llama-4-Scout-17B-16E-Instruct/config.json"


def test_llama4_profiles_sixteen_tiles_and_the_global_tile(tmp_path: Path) -> None:
    """Llama-4-Scout: the dummy image is 16 tiles and the global tile, 577 positions each (576
    patches and the class token), 144 embeddings each: 2,448 tokens; 3 fit an 8,192 budget."""
    config = {**_config(LLAMA4_SCOUT), "vision_config": LLAMA4_VISION}
    shape = forward_shape(config)
    tower = shape.vision_tower
    assert tower is not None and (tower.crops, tower.image_tokens, tower.image_patches) == (17, 2448, 17 * 577)
    assert tower.out_hidden_size == 5120  # multi_modal_projector onto the text model's width
    batch = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert batch == EncoderBatch("image", 2448, 3, 8192)
    assert tower.pixels(3, batch.tokens) == 3 * 17 * 3 * 336 * 336
    enc = _encoder_term(shape)
    assert "3 image item(s) x 2,448 tokens" in enc.source and "29,427 patches" in enc.source
    # the widest block: 29,427 positions x (1,408 + 2 x 5,632) bf16 x 100-125 %, beside float32 pixels
    block = 29427 * (1408 + 2 * 5632) * 2
    assert block < enc.high and enc.low >= 7344 * 5120 * 2
    # a checkpoint's processor with max_patches 4: 5 chunks an image
    (tmp_path / "preprocessor_config.json").write_text(
        json.dumps({"max_patches": 4, "size": {"height": 336, "width": 336}})
    )
    from dryboot.planner.budget import with_processor_sizes

    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    assert sized.image_max_pixels == 4
    small = sized_for_processor(tower, sized.image_max_pixels)
    assert (small.crops, small.image_tokens) == (5, 720)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"max_patches": "16"}))
    with pytest.raises(InputError, match="max_patches"):
        with_processor_sizes(shape, str(tmp_path / "config.json"))
    # another tower under a llama4 wrapper stays refused by name
    other = forward_shape({**config, "vision_config": {**LLAMA4_VISION, "model_type": "siglip_vision_model"}})
    assert other.vision_tower is None


#: llava-hf/llava-onevision-qwen2-7b-ov-hf's widths (transformers' LlavaOnevisionConfig defaults,
#: which its config.json keeps: SigLIP so400m at 384 px and patch 14, Qwen2-7B's 3,584)
ONEVISION = {
    "model_type": "llava_onevision",
    "vision_feature_select_strategy": "full",
    "vision_aspect_ratio": "anyres_max_9",
    "vision_config": {
        "model_type": "siglip_vision_model",
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "num_attention_heads": 16,
        "image_size": 384,
        "patch_size": 14,
    },
    "text_config": {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "vocab_size": 152064,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
    },
    "torch_dtype": "bfloat16",
}


def test_llava_onevision_image_or_its_video() -> None:
    """The 1153 x 944 dummy: 3 x 4 tiles of 384 px and the resized image (13 crops of 27 x 27
    patches), 8,748 tokens; the video: 16 frames of 196 pooled tokens and a newline (3,137), so
    the image is profiled unless its limit is 0; a short context holds fewer frames."""
    shape = forward_shape(ONEVISION)
    tower = shape.vision_tower
    assert tower is not None and (tower.crops, tower.image_tokens, tower.image_patches) == (13, 8748, 13 * 729)
    assert max_tokens_per_item(tower, 32768) == {"image": 8748, "video": 16 * 196 + 1}
    assert max_tokens_per_item(tower, 1000)["video"] == 5 * 196 + 1
    assert max_tokens_per_item(tower, 100)["video"] == 197  # at least one frame
    assert encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768) == EncoderBatch(
        "image", 8748, 1, 8748
    )
    video = encoder_batch(
        tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768, limit_mm_per_prompt={"image": 0}
    )
    assert video == EncoderBatch("video", 3137, 2, 8192)
    assert tower.patches(2, video.tokens, "video") == 32 * 729 and tower.embeddings(2, video.tokens, "video") == 6274
    enc = _encoder_term(shape, mm_limits={"image": 0})
    assert "2 video item(s) x 3,137 tokens" in enc.source and "23,328 patches" in enc.source
    # every frame's 729 patches go through the projector before the pooling: two 3,584-wide tensors
    assert enc.high >= 2 * 23328 * 3584 * 2
    # vLLM's merge needs the full feature set; a CLIP tower is not OneVision's
    with pytest.raises(InputError, match="vision_feature_select_strategy"):
        vision_tower(ONEVISION["vision_config"], "llava_onevision", "default", config=ONEVISION)
    with pytest.raises(InputError, match="spatial_pool_stride"):
        vision_tower(
            ONEVISION["vision_config"], "llava_onevision", "full", config={**ONEVISION, "spatial_pool_stride": 3}
        )


def test_gemma4_with_audio_profiles_the_video_or_the_tiny_dummy_audio(tmp_path: Path) -> None:
    """gemma-4-E2B-it (an ``audio_config``): an audio counts ``audio_seq_length`` (750) tokens, below the
    video's 2,496, so the video is profiled as without audio; with videos off the audio's 750
    passes the image's 280 and budget // 750 dummy audios of 512 samples run, one embedding each."""
    config = _config(REPO / "tests/fidelity/data/newest/configs/google--gemma-4-E2B-it/config.json")  # published
    shape = forward_shape(config)
    tower = shape.vision_tower
    assert tower is not None and shape.modalities == ("audio", "image", "video") and tower.audio_item_tokens == 750
    batch = encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768)
    assert batch == EncoderBatch("video", 2496, 3, 8192)
    audio = encoder_batch(
        tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768, limit_mm_per_prompt={"video": 0}
    )
    assert audio == EncoderBatch("audio", 750, 10, 8192)
    enc = _encoder_term(shape, mm_limits={"video": 0})
    assert "10 audio item(s) x 750 tokens" in enc.source
    assert enc.low == 10 * tower.out_hidden_size * 2 and enc.high < 16 << 20
    # an audio_seq_length above the video's tokens makes the audio the profiled item
    long = forward_shape(config, mm_processor_kwargs={"audio_seq_length": 3000}).vision_tower
    assert long is not None
    assert encoder_batch(long, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768) == EncoderBatch(
        "audio", 3000, 2, 8192
    )
    bad = forward_shape(config, mm_processor_kwargs={"audio_seq_length": "750"})
    assert bad.vision_tower is None and "audio_seq_length" in bad.vision_refusal
    # the checkpoint's processor_config.json, unless --mm-processor-kwargs names one
    from dryboot.planner.budget import with_processor_sizes

    (tmp_path / "processor_config.json").write_text(json.dumps({"audio_seq_length": 188}))
    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    assert sized.vision_tower is not None and sized.vision_tower.audio_item_tokens == 188
    kept = with_processor_sizes(shape, str(tmp_path / "config.json"), audio_seq_length_given=True)
    assert kept.vision_tower is not None and kept.vision_tower.audio_item_tokens == 750


def test_kimi_vl_moonvit_sized_by_the_processors_in_token_limit(tmp_path: Path) -> None:
    """Kimi-VL-A3B's MoonViT: the 1024 px dummy scaled under in_token_limit 4,096 to 897 px, padded
    to 33 x 33 tokens (4,356 patches); 7 images fill an 8,192 budget. A processor with 16,384 leaves
    it at 1024 px: 37 x 37."""
    config = _config(FIDELITY / "KimiVLForConditionalGeneration.json")
    config["vision_config"] = {
        "model_type": "moonvit",
        "patch_size": 14,
        "num_attention_heads": 16,
        "num_hidden_layers": 27,
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "merge_kernel_size": [2, 2],
    }
    shape = forward_shape(config)
    tower = shape.vision_tower
    assert tower is not None and (tower.image_tokens, tower.image_patches) == (1089, 4356)
    assert encoder_batch(tower, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32768) == EncoderBatch(
        "image", 1089, 7, 8192
    )
    enc = _encoder_term(shape)
    assert "7 image item(s) x 1,089 tokens" in enc.source and "in_token_limit 4096" in enc.source
    from dryboot.planner.budget import with_processor_sizes

    (tmp_path / "preprocessor_config.json").write_text(
        json.dumps({"in_token_limit": 16384, "patch_size": 14, "merge_kernel_size": [2, 2]})
    )
    sized = with_processor_sizes(shape, str(tmp_path / "config.json"))
    assert sized.image_max_pixels == 16384
    assert sized_for_processor(tower, sized.image_max_pixels).image_tokens == 37 * 37
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"in_token_limit": 4096, "patch_size": 16}))
    with pytest.raises(InputError, match="patch_size"):
        with_processor_sizes(shape, str(tmp_path / "config.json"))
    odd = forward_shape({**config, "vision_config": {**config["vision_config"], "merge_kernel_size": [2]}})
    assert odd.vision_tower is None and "merge_kernel_size" in odd.vision_refusal


GLM41V_VISION = {
    "model_type": "glm4v_vision",
    "depth": 24,
    "hidden_size": 1536,
    "intermediate_size": 13696,
    "num_heads": 12,
    "out_hidden_size": 4096,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "image_size": 336,
}


def _glm4v_dir(tmp_path: Path, processor_class: str = "Glm4vProcessor") -> Path:
    config = _config(FIDELITY / "Glm4vForConditionalGeneration.json")
    config["vision_config"] = GLM41V_VISION
    config["text_config"] = {**config["text_config"], "hidden_size": 4096}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "preprocessor_config.json").write_text(
        json.dumps({"size": {"shortest_edge": 12544, "longest_edge": 9633792}, "processor_class": processor_class})
    )
    (tmp_path / "video_preprocessor_config.json").write_text(
        json.dumps({"size": {"shortest_edge": 12544, "longest_edge": 47040000}})
    )
    return tmp_path / "config.json"


def test_glm41v_profiles_the_video_filling_max_model_len(tmp_path: Path) -> None:
    """GLM-4.1V at 32,768 tokens: the largest image is 2184 px square (6,084 tokens); the budget
    counts a video of 26,656 tokens (the frames within 32,768 less one image), but the profiled
    dummy video fills the whole 32,768: 31,974 embeddings, 127,896 patches through the tower."""
    from dryboot.planner.budget import with_processor_sizes

    source = _glm4v_dir(tmp_path)
    shape = with_processor_sizes(forward_shape(_config(source)), str(source))
    assert (shape.image_max_pixels, shape.video_max_pixels) == (9633792, 47040000)
    enc = _encoder_term(shape)
    assert "1 video item(s) x 26,656 tokens (encoder budget 26,656; 127,896 patches" in enc.source
    # the embeddings of the video run: 31,974 x 4,096 x 2 bytes at least
    assert enc.low >= 31974 * 4096 * 2
    img = _encoder_term(shape, mm_limits={"video": 0})
    assert "1 image item(s) x 6,084 tokens (encoder budget 8,192; 24,336 patches" in img.source


def test_glm4v_refused_without_its_processor_sizes_or_with_another_processor(tmp_path: Path) -> None:
    source = _glm4v_dir(tmp_path)
    bare = forward_shape(_config(source))
    with pytest.raises(InputError, match=r"preprocessor_config\.json size\.longest_edge"):
        activation_terms(bare, max_num_batched_tokens=8192, max_num_seqs=256, tp=1, compiled=True, max_model_len=32768)
    from dryboot.planner.budget import with_processor_sizes

    other = with_processor_sizes(bare, str(_glm4v_dir(tmp_path, "Glm46VProcessor")))
    assert other.vision_tower is None and "Glm46VProcessor" in other.vision_refusal
    with pytest.raises(InputError, match="timestamp tokens"):
        activation_terms(other, max_num_batched_tokens=8192, max_num_seqs=256, tp=1, compiled=True, max_model_len=32768)
    # vLLM's get_processor_config: tokenizer_config.json names the class where the others do not
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 9633792}}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"processor_class": "Glm4vProcessor"}))
    kept = with_processor_sizes(bare, str(source))
    assert kept.vision_tower is not None and kept.image_max_pixels == 9633792
    moe = forward_shape(_config(FIDELITY / "Glm4vMoeForConditionalGeneration.json"))  # GLM-4.5V's wrapper
    assert moe.vision_tower is not None and moe.vision_tower.model_type == "glm4v_moe_vision"
    assert moe.vision_tower.merger_intermediate == 128 and moe.vision_tower.intermediate_size == 512
    odd = forward_shape({**_config(source), "vision_config": {**GLM41V_VISION, "temporal_patch_size": 1}})
    assert odd.vision_tower is None and "temporal_patch_size" in odd.vision_refusal


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 1 << 40), st.integers(1, 1 << 40), st.integers(1, 1 << 20), st.booleans())
def test_glm4v_items_for_any_processor_area(image: int, video: int, mml: int, image_active: bool) -> None:
    from dryboot.vllm.worker.encoder_profile import glm4v_sized, glm4v_tower

    tower = glm4v_tower(GLM41V_VISION, "glm4v_vision")
    try:
        sized = glm4v_sized(
            tower, max_model_len=mml, image_max_pixels=image, video_max_pixels=video, image_active=image_active
        )
    except InputError as e:
        assert "\n" not in e.line() and "size.longest_edge" in e.line()
        return
    assert sized.image_tokens > 0 and sized.image_patches == 4 * sized.image_tokens
    assert sized.video_item_tokens > 0 and sized.frame_embeds > 0
    # the profiled video fills max_model_len, the counted one that less an image: where the counted
    # one fits its room, the profiled one (more room) never has fewer tokens; where no frame count
    # fits, vLLM's _get_max_video_frames falls back to one frame, which may be more than the run's
    room = mml - (sized.image_tokens if image_active else 0)
    if sized.video_item_tokens <= room:
        assert sized.video_item_tokens <= sized.frame_embeds


def test_glm4v_counted_video_falls_back_to_one_frame_when_none_fits() -> None:
    """vLLM 0.33.0's ``Glm4vProcessingInfo._get_max_video_frames`` keeps one frame when no count's
    tokens fit the room: at a 1,568 px video area, room 1 (max_model_len 2 less a 1-token image)
    counts 9 tokens (one 84 x 84 frame) while the profiled video (room 2) runs 3 frames of 2."""
    from dryboot.vllm.worker.encoder_profile import glm4v_sized, glm4v_tower

    tower = glm4v_tower(GLM41V_VISION, "glm4v_vision")
    sized = glm4v_sized(tower, max_model_len=2, image_max_pixels=1, video_max_pixels=1568, image_active=True)
    assert (sized.image_tokens, sized.video_item_tokens, sized.frame_embeds) == (1, 9, 2)


def test_kimi_k25_vision_chunk_stays_profiled_under_image_and_video_limits() -> None:
    """Kimi-K2.5's tower serves vLLM's ``vision_chunk`` modality only: ``--limit-mm-per-prompt``
    image and video 0 leave it profiled (and refused by name); ``vision_chunk`` 0 skips it."""
    from dryboot.vllm.worker.profile_run import encoder_profiled

    shape = forward_shape(_config(REPO / "tests/data/configs/public/moonshotai--Kimi-K2.5/config.json"))
    assert shape.modalities == ("vision_chunk",)
    assert encoder_profiled(shape, limit_mm_per_prompt={"image": 0, "video": 0})
    assert not encoder_profiled(shape, limit_mm_per_prompt={"vision_chunk": 0})
    with pytest.raises(InputError, match="media_proc_cfg"):
        activation_terms(
            shape,
            max_num_batched_tokens=8192,
            max_num_seqs=256,
            tp=1,
            compiled=True,
            max_model_len=8192,
            mm_limits={"image": 0, "video": 0},
        )


K25_MEDIA = {
    "patch_size": 14,
    "merge_kernel_size": [2, 2],
    "in_patch_limit": 16384,
    "patch_limit_on_one_side": 512,
    "in_patch_limit_each_frame": 16384,
    "in_patch_limit_video": None,
    "temporal_merge_kernel_size": 4,
    "fixed_output_tokens": None,
}


def test_kimi_k25_profiles_its_video_chunk(tmp_path: Path) -> None:
    """moonshotai/Kimi-K2.5's published widths (``vt_*`` equal to transformers' defaults) under a
    media_proc_cfg whose frames may hold as many patches as an image: the 3000 px dummy is scaled
    to 1820 px, padded to 130 x 130 patches (4,225 tokens); the chunk ties the image, so vLLM's
    dummy is the chunk: 4 frames, 67,600 patches; one item fills an 8,192 budget."""
    from dryboot.planner.budget import with_processor_sizes

    config = _config(REPO / "tests/data/configs/public/moonshotai--Kimi-K2.5/config.json")
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"media_proc_cfg": K25_MEDIA}))
    shape = with_processor_sizes(forward_shape(config), str(tmp_path / "config.json"))
    tower = shape.vision_tower
    assert tower is not None and (tower.image_tokens, tower.pooled_frames, tower.image_patches) == (4225, 4, 67600)
    enc = _encoder_term(shape, tp=8, mm_limits={"image": 0, "video": 0})
    assert "1 vision_chunk item(s) x 4,225 tokens (encoder budget 8,192; 67,600 patches" in enc.source
    assert "a video chunk of 4 frames" in enc.source
    assert enc.low >= 4225 * 7168 * 2  # the embeddings on the text model's width
    off = activation_terms(
        shape,
        max_num_batched_tokens=8192,
        max_num_seqs=256,
        tp=8,
        compiled=True,
        max_model_len=32768,
        mm_limits={"vision_chunk": 0},
    )
    assert not [t for t in off if t.name == "activation: multimodal encoder"]


def test_kimi_k25_refuses_widths_read_two_ways_and_other_forwards() -> None:
    config = _config(REPO / "tests/data/configs/public/moonshotai--Kimi-K2.5/config.json")
    wide = forward_shape({**config, "vision_config": {**config["vision_config"], "vt_hidden_size": 1536}})
    assert wide.vision_tower is None and "vt_hidden_size" in wide.vision_refusal
    other = forward_shape(
        {**config, "vision_config": {**config["vision_config"], "mm_projector_type": "patchmergerv2"}}
    )
    assert other.vision_tower is None and "mm_projector_type" in other.vision_refusal
    tower = forward_shape(config).vision_tower
    assert tower is not None
    for bad in (
        {"media_proc_cfg": {**K25_MEDIA, "fixed_output_tokens": 64}},
        {"media_proc_cfg": {**K25_MEDIA, "patch_size": 16}},
        {},
    ):
        with pytest.raises(InputError, match="media_proc_cfg"):
            kimi_k25_sized(tower, bad)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(list(K25_MEDIA)),
        st.one_of(
            st.integers(-3, 1 << 26),
            st.none(),
            st.booleans(),
            st.floats(allow_nan=True),
            st.lists(st.integers(-1, 20), max_size=3),
        ),
    )
)
def test_kimi_k25_any_media_proc_cfg_sizes_or_one_line(changes: dict[str, Any]) -> None:
    tower = forward_shape(_config(REPO / "tests/data/configs/public/moonshotai--Kimi-K2.5/config.json")).vision_tower
    assert tower is not None
    try:
        sized = kimi_k25_sized(tower, {"media_proc_cfg": {**K25_MEDIA, **changes}})
    except InputError as e:
        assert "\n" not in e.line() and "media_proc_cfg" in e.line()
        return
    assert sized.image_tokens > 0 and sized.image_patches == sized.pooled_frames * 4 * sized.image_tokens


def test_minicpmv4_6_image_tokens_by_hand() -> None:
    """A 448 px square is one 8 x 8-token source (448 / 14 = 32 patches a side, 16 patches a token)
    and no slices; vLLM's dummy (448 x 4032 at 9 slices) is sliced 9 x 1 into 448 px squares (64
    tokens each) beside a source resized to 149 x 1344, rounded to 168 x 1344 (72 tokens); 4x keeps 4 x the
    tokens; an unknown downsample mode is refused."""
    from dryboot.vllm.worker.encoder_profile import minicpmv4_6_image_tokens

    assert minicpmv4_6_image_tokens(448, 448) == (64, 0, 0)
    assert minicpmv4_6_image_tokens(448, 4032) == (72, 9, 64)
    assert minicpmv4_6_image_tokens(448, 4032, downsample_mode="4x") == (288, 9, 256)
    with pytest.raises(InputError, match="downsample_mode"):
        minicpmv4_6_image_tokens(448, 448, downsample_mode="8x")


MINICPMV46 = REPO / "tests/fidelity/data/frontier/configs/openbmb--MiniCPM-V-4.6/config.json"
MINICPMV46_PRE = REPO / "tests/data/budget/encoder/openbmb--MiniCPM-V-4.6/preprocessor_config.json"


def _minicpmv46_dir(tmp_path: Path, pre: dict[str, Any] | None = None, **config: Any) -> Path:
    """The published MiniCPM-V-4.6 config (``config`` keys replaced) beside its published
    ``preprocessor_config.json`` (or ``pre``)."""
    (tmp_path / "config.json").write_text(json.dumps({**_config(MINICPMV46), **config}))
    text = MINICPMV46_PRE.read_text() if pre is None else json.dumps(pre)
    (tmp_path / "preprocessor_config.json").write_text(text)
    return tmp_path / "config.json"


def test_minicpmv46_profiles_sixteen_padded_frames(tmp_path: Path) -> None:
    """MiniCPM-V-4.6 at 32,768 tokens (its published config and preprocessor_config.json): the
    dummy video is 16 frames of 1120 x 10080 px (image_size x 9 slices), each a 96 x 12-patch
    source (72 tokens) and 9 slices of 32 x 32 patches (64 tokens): 10,368 tokens; the tower runs
    the 160 crops padded to the longest, 1,152 positions each: 184,320. Its widest point is a block
    before the window merger: the block's input, the residual stream, layer_norm2, fc1 and its
    activation (3 x 1,152 + 2 x 4,304 wide) beside the padded model-dtype pixels (588 a position)
    and the masks (3 bytes): vLLM's own forward peaks there (test_encoder_peak_minicpmv4_6.py)."""
    from dryboot.planner.budget import with_processor_sizes

    source = _minicpmv46_dir(tmp_path)
    shape = with_processor_sizes(forward_shape(_config(source)), str(source))
    assert shape.vision_tower is not None and shape.vision_tower.minicpmv is not None
    assert shape.vision_tower.minicpmv.from_checkpoint
    enc = _encoder_term(shape)
    assert "1 video item(s) x 10,368 tokens (encoder budget 10,368; 184,320 patches" in enc.source
    assert "sizes in the checkpoint's processor configs" in enc.source
    positions = 16 * 10 * 1152
    block = positions * (3 * 1152 + 2 * 4304) * 2 + positions * (588 * 2 + 3)
    assert enc.low >= 10368 * 1024 * 2  # the embeddings kept through the decoder's run
    assert f"{block / 2**20:,.0f} MiB at factor 1" in enc.source
    assert block * 125 // 100 <= enc.high <= 2 * block
    # images only: 8,192 // 648 = 12 images of 10 crops padded to 1,152 positions
    img = _encoder_term(shape, mm_limits={"video": 0})
    assert "12 image item(s) x 648 tokens (encoder budget 8,192; 138,240 patches" in img.source
    # at TP 2 the blocks' widths are sharded: a narrower peak
    assert _encoder_term(shape, tp=2).high < enc.high
    # without the processor file the processors' defaults (the same values) apply, and the term says so
    bare = _encoder_term(forward_shape(_config(source)))
    assert (bare.low, bare.high) == (enc.low, enc.high) and "defaults (no preprocessor_config.json" in bare.source


def test_minicpmv47_shares_the_tower_and_other_vision_types_stay_refused() -> None:
    """MiniCPM-V 4.7 (``minicpmv4_7`` over ``minicpmv4_7_vision``) runs 4.6's tower and items;
    a 4.7 wrapper over another tower type is not bounded."""
    config = _config(MINICPMV46)
    v47 = {
        **config,
        "model_type": "minicpmv4_7",
        "vision_config": {**config["vision_config"], "model_type": "minicpmv4_7_vision"},
    }
    assert _encoder_term(forward_shape(v47)).source == _encoder_term(forward_shape(config)).source.replace(
        "minicpmv4_6_vision", "minicpmv4_7_vision"
    )
    mixed = {**v47, "vision_config": config["vision_config"]}
    with pytest.raises(InputError, match=r"minicpmv4_6_vision tower"):
        _encoder_term(forward_shape(mixed))


def test_minicpmv46_4x_keeps_four_patches_a_token(tmp_path: Path) -> None:
    """downsample_mode 4x: the window merger is skipped, so every block runs the padded positions
    and the merger outputs 4 x the tokens: a 1120 x 10080 image is 288 + 9 x 256 = 2,592 tokens."""
    from dryboot.planner.budget import with_processor_sizes

    pre = {**json.loads(MINICPMV46_PRE.read_text()), "downsample_mode": "4x"}
    source = _minicpmv46_dir(tmp_path, pre)
    shape = with_processor_sizes(forward_shape(_config(source)), str(source))
    img = _encoder_term(shape, mm_limits={"video": 0})
    assert "3 image item(s) x 2,592 tokens (encoder budget 8,192; 34,560 patches" in img.source
    assert img.low >= 3 * 2592 * 1024 * 2
    # before 0.32 a video runs the config's mode (16x here) while counted at 4x: refused there
    with pytest.raises(InputError, match=r"config's downsample_mode 16x"):
        _encoder_term(shape, release="0.31.0")
    assert "1 video item(s)" in _encoder_term(shape, release="0.32.0").source


def test_minicpmv46_refusals_name_their_field(tmp_path: Path) -> None:
    from dryboot.planner.budget import with_processor_sizes

    def term(source: Path) -> Any:
        return _encoder_term(with_processor_sizes(forward_shape(_config(source)), str(source)))

    # 16x without the window merger: vLLM counts 16 patches a token, the tower merges 4
    with pytest.raises(InputError, match="insert_layer_id"):
        term(_minicpmv46_dir(tmp_path, insert_layer_id=-1))
    # a processor patch other than the tower's
    with pytest.raises(InputError, match="patch_size"):
        term(_minicpmv46_dir(tmp_path, {"patch_size": 16}))
    with pytest.raises(InputError, match="max_slice_nums"):
        term(_minicpmv46_dir(tmp_path, {"max_slice_nums": 0}))
    # transformers 5's nested processor_config.json is read first by the processors: not read here
    source = _minicpmv46_dir(tmp_path)
    (tmp_path / "processor_config.json").write_text(json.dumps({"image_processor": {"max_slice_nums": 4}}))
    with pytest.raises(InputError, match=r"processor_config\.json nests"):
        term(source)


@settings(max_examples=40, deadline=None)
@given(
    slices=st.integers(1, 20),
    video=st.integers(1, 20),
    scale=st.sampled_from([224, 448, 560, 980]),
    size=st.sampled_from([224, 448, 980, 1120]),
    mode=st.sampled_from(["16x", "4x"]),
    mml=st.integers(512, 65536),
)
def test_minicpmv46_any_processor_sizes_give_an_interval(
    slices: int, video: int, scale: int, size: int, mode: str, mml: int
) -> None:
    from dryboot.vllm.worker.encoder_profile import minicpmv4_6_processing, minicpmv4_6_sized

    shape = forward_shape({**_config(MINICPMV46), "image_size": size})
    assert shape.vision_tower is not None
    tower = minicpmv4_6_processing(
        shape.vision_tower,
        {"max_slice_nums": slices, "scale_resolution": scale, "downsample_mode": mode},
        {"max_slice_nums": video},
    )
    sized = minicpmv4_6_sized(tower, max_model_len=mml, image_active=True)
    assert sized.image_tokens > 0 and sized.image_patches >= sized.crops
    assert sized.frame_patches >= sized.frame_crops > 0
    batch = encoder_batch(sized, max_num_batched_tokens=2048, max_num_seqs=8, max_model_len=mml)
    assert batch is not None
    t = encoder_term(sized, batch, tp=1, dtype_bytes=2, runner="V1", decoder_high=0)
    assert 0 < t.low <= t.high
