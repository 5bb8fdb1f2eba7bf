"""dryboot boot's pieces that need no boot environment: parsing, trees, arms, limits by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.boot.arms import vllm_argv
from dryboot.boot.compare import Figures, boot_figures, differences
from dryboot.boot.env import EXTRAS, RELEASES, default_env_dir, requirements
from dryboot.boot.session import H200, limitation, parse_gpu, release_of, resolve_tree
from dryboot.errors import InputError
from dryboot.planner.profiles import load_profiles

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "reference-deployment-boot.toml"


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, check=False)


def test_gpu_names() -> None:
    assert parse_gpu(None) is H200
    assert parse_gpu("h200") is H200
    g = parse_gpu("sm89:24G")
    assert (g.capability, g.total_memory) == ((8, 9), 24 << 30)
    b200 = parse_gpu("b-200")
    assert (b200.name, b200.capability) == ("NVIDIA B200", (10, 0)) and b200.total_memory > 170 << 30
    assert parse_gpu("RTX 3090").name == "NVIDIA GeForce RTX 3090"
    with pytest.raises(InputError, match="--gpu"):
        parse_gpu("GTX 9999")


def test_tree_resolution(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such directory"):
        resolve_tree(str(tmp_path / "nope"))
    with pytest.raises(InputError, match="holds no vllm package"):
        resolve_tree(str(tmp_path))
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text("__version__ = version = '0.28.0'\n")
    for given in (tmp_path, pkg):
        t = resolve_tree(str(given))
        assert (t.import_root, t.version) == (str(tmp_path.resolve()), "0.28.0")


@pytest.mark.parametrize("version", ["0.26.0", "0.27.0", "0.34.0", "1.0.0"])
def test_releases_outside_the_range_are_refused(version: str) -> None:
    with pytest.raises(InputError, match=r"0\.27\.1 to 0\.33\.x"):
        release_of(version, "x")


def test_releases_inside_the_range() -> None:
    assert [release_of(v, "x") for v in ("0.27.1", "0.28.0+cu129", "0.33.0")] == ["0.27.1", "0.28.0", "0.33.0"]


def test_environment_pins() -> None:
    assert RELEASES[0] == "0.27.1" and RELEASES[-1] == "0.33.0"
    r = requirements("0.28.0")
    assert r.torch == "torch==2.13.0" and r.vllm == "vllm==0.28.0"
    assert r.stamp().splitlines()[:3] == ["v2", "torch==2.13.0", "vllm==0.28.0"]
    assert requirements("0.33.0").torch == "torch==2.14.0"
    with pytest.raises(InputError, match="no pin table"):
        requirements("0.26.0")


def test_profile_flags_become_vllm_serve_flags(tmp_path: Path) -> None:
    drafter = tmp_path / "d.config.json"
    drafter.write_text("{}")
    argv = vllm_argv(
        {
            "model": "m.json",
            "max-model-len": 4096,
            "enable-prefix-caching": True,
            "async-scheduling": False,
            "num-speculative-tokens": 7,
        },
        {"method": "dflash", "model": "d.config.json"},
        tmp_path,
        tmp_path / "work",
    )
    i = argv.index("--speculative-config")
    spec = json.loads(argv[i + 1])
    assert argv[:i] == ["--max-model-len", "4096", "--enable-prefix-caching", "--no-async-scheduling"]
    assert spec["num_speculative_tokens"] == 7 and (Path(spec["model"]) / "config.json").is_file()


def test_a_cuda_need_is_a_limit_but_vllm_refusing_a_backend_is_an_answer() -> None:
    cuda = {"ok": False, "stage": "model", "error": "AssertionError: Torch not compiled with CUDA enabled"}
    assert "needs CUDA at construction" in str(limitation(cuda))
    answer = {"ok": False, "stage": "model", "error": "ValueError: No valid attention backend found for cuda with X"}
    assert limitation(answer) is None
    assert limitation({"ok": False, "stage": "crash", "error": "died"}) is not None


def test_figures_and_differences() -> None:
    a = boot_figures(
        {
            "ok": True,
            "block_size": 448,
            "groups": [["Mamba", 448, 10, 8]],
            "num_blocks": 3,
            "tokens": 68605,
            "concurrency": 1.049,
            "max_model_len": 65536,
            "kv_log": ["Padding mamba page size by 3.23% to ensure ..."],
        }
    )
    assert a.row() == "448/3.23%/68,605" and a.concurrency == 1.05
    assert differences(a, a) == []
    b = Figures(refusal="ValueError: To serve at least one request ...")
    assert differences(b, Figures(refusal="other words")) == []
    assert differences(a, b, "main", "pr") == [
        "engine start: main starts, pr refuses (ValueError: To serve at least one request ...)"
    ]


def test_arms_name_their_code() -> None:
    pset = load_profiles(EXAMPLE)
    main, pr, up = pset.arm("main"), pset.arm("pr"), pset.arm("upstream")
    assert main.series is not None and main.series.endswith("examples/patches/promote-divisor")
    assert (main.base, main.vllm_version, pr.policies.unification) == ("0.28.0", "0.28.0", "promote-granular")
    assert up.tree is None and up.series is not None


@pytest.mark.parametrize(
    ("arm", "reason"),
    [
        ('tree = "t"\nseries = "s"\nbase = "0.28.0"', "not both"),
        ('series = "s"', "series and base go together"),
        ("tree = 3", "must be a string"),
    ],
)
def test_bad_arm_code_is_refused_by_name(tmp_path: Path, arm: str, reason: str) -> None:
    text = EXAMPLE.read_text().split("[arms.main]")[0].replace('"models/', f'"{REPO}/examples/models/')
    f = tmp_path / "p.toml"
    f.write_text(text + f"[arms.x]\n{arm}\n")
    r = dryboot("profiles", str(f))
    assert r.returncode == 2 and reason in r.stderr and "arms.x" in r.stderr and len(r.stderr.splitlines()) == 1


def test_boot_needs_compare_and_code() -> None:
    r = dryboot("profiles", str(EXAMPLE), "--boot")
    assert r.returncode == 2 and "--boot needs --compare" in r.stderr
    r = dryboot("profiles", str(REPO / "examples" / "reference-deployment.toml"), "--compare", "main", "pr", "--boot")
    assert r.returncode == 2 and "arms.main: --boot needs the arm's code" in r.stderr


def test_boot_no_longer_needs_the_kv_budget(tmp_path: Path) -> None:
    """Issue 27 item 7: without --kv-cache-memory-bytes the budget is computed; what is refused
    is the tree (here: none)."""
    r = dryboot("boot", "--vllm", str(tmp_path), "--model", "m", "--max-model-len", "8")
    assert r.returncode == 2 and "--kv-cache-memory-bytes" not in r.stderr and "holds no vllm package" in r.stderr


def test_boot_refuses_a_missing_tree_and_a_release_outside_the_range(tmp_path: Path) -> None:
    r = dryboot("boot", "--vllm", str(tmp_path / "no"), "--model", "m", "--kv-cache-memory-bytes", "1")
    assert r.returncode == 2 and "no such directory" in r.stderr
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text("__version__ = version = '0.26.0'\n")
    r = dryboot(
        "boot", "--vllm", str(tmp_path), "--python", sys.executable, "--model", "m", "--kv-cache-memory-bytes", "1"
    )
    assert r.returncode == 2 and "0.26.0: dryboot boot runs vLLM 0.27.1 to 0.33.x" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_boot_env_refuses_an_unknown_release(tmp_path: Path) -> None:
    r = dryboot("boot-env", "--vllm-version", "0.26.0", str(tmp_path / "env"))
    assert r.returncode == 2 and "no pin table" in r.stderr and not (tmp_path / "env").exists()


def test_mm_extras_are_a_separate_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``boot-env --with-mm-extras``: the same pins plus timm (--no-deps), in ``<release>-mm``,
    with a stamp of its own (the shared environment is neither reused for it nor changed)."""
    monkeypatch.setenv("DRYBOOT_BOOT_ENV_ROOT", str(tmp_path))
    for release in RELEASES:
        plain, mm = requirements(release), requirements(release, extras=True)
        assert mm.extras == EXTRAS and plain.extras == () and mm.light == plain.light and mm.nodeps == plain.nodeps
        assert mm.stamp() != plain.stamp() and mm.stamp().startswith(plain.stamp())
        assert default_env_dir(release, extras=True) == tmp_path / f"{release}-mm"
        assert default_env_dir(release) == tmp_path / release
    assert [e.split("==")[0] for e in EXTRAS] == ["timm"]  # torchaudio: the engine start's stand-in
    assert "--with-mm-extras" in dryboot("boot-env", "--help").stdout


def test_help_says_what_is_faked_and_which_gpus() -> None:
    out = dryboot("boot", "--help").stdout
    assert "What is faked" in out and "GPU table" in out and "smXY:SIZE" in out


def test_an_environment_that_cannot_import_the_tree_is_named(tmp_path: Path) -> None:
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text("__version__ = version = '0.28.0'\n")
    r = dryboot("boot", "--vllm", str(tmp_path), "--python", sys.executable, "--model", "m",
                "--kv-cache-memory-bytes", "1")  # fmt: skip
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "the tree does not import: ModuleNotFoundError: No module named" in r.stderr  # torch, or vllm.platforms


def test_budget_flags_and_tree_only_figures() -> None:
    """Issue 27 item 7, without a boot environment: which argv pins a budget, the figures an
    answer with a computed budget gives, and that dryboot's plan (no weights) is not compared on
    them; dryboot's own profile keys never reach vLLM."""
    from dryboot.boot.arms import vllm_argv
    from dryboot.boot.budget import needs_budget
    from dryboot.boot.compare import Figures, boot_figures, differences

    assert needs_budget(["--max-model-len", "1024"])
    assert not needs_budget(["--kv-cache-memory-bytes", "1G"]) and not needs_budget(["--kv-cache-memory=1G"])
    answer = {
        "ok": True, "block_size": 16, "groups": [["FullAttention", 16, 65536, 2]], "num_blocks": 10, "tokens": 160,
        "concurrency": 1.0, "max_model_len": 160, "weights_bytes": [1 << 30],
        "budget": {"available": [1, 3 << 29, 2 << 30]},
    }  # fmt: skip
    f = boot_figures(answer)
    assert (f.weights_gib, f.available_gib, f.available_bytes) == (1.0, 1.5, 3 << 29)
    plain = Figures(block_size=16, groups=f.groups, num_blocks=10, tokens=160, concurrency=1.0, max_model_len=160)
    assert differences(f, plain) == []
    more = boot_figures({**answer, "weights_bytes": [(1 << 30) + (256 << 20)]})
    assert differences(f, more, "a", "b") == ["Model loading took (GiB): a 1.0, b 1.25"]
    argv = vllm_argv({"model": "m", "gpu": "RTX 3090", "max-model-len": 8}, None, Path("."), Path("."))
    assert argv == ["--max-model-len", "8"]


def test_a_malformed_config_is_one_line_exit_2_as_plan_says_it(tmp_path: Path) -> None:
    """Issue 28: boot exited 1 with a full report where plan exits 2 in one line."""
    import subprocess
    import sys

    bad = tmp_path / "config.json"
    bad.write_text('{"architectures": ["LlamaForCausalLM"], ')
    argv = ["--model", str(bad), "--kv-cache-memory-bytes", "1G"]
    boot = subprocess.run(
        [sys.executable, "-m", "dryboot", "boot", "--vllm", str(tmp_path / "no-tree"), *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    plan = subprocess.run([sys.executable, "-m", "dryboot", "plan", *argv], capture_output=True, text=True, check=False)
    assert boot.returncode == plan.returncode == 2
    assert boot.stderr == plan.stderr and len(boot.stderr.strip().splitlines()) == 1


def test_two_arms_that_fail_to_start_are_said_to_fail_and_messages_are_cut_at_a_blank() -> None:
    """Issue 28: `profiles --boot` said "identical to the token" for two arms that both failed
    to start, and cut vLLM's message mid-token."""
    from dryboot.boot.compare import Figures, differences
    from dryboot.cli.profiles_boot import _verdict, short_row
    from dryboot.textout import clip

    error = (
        "[parse] SystemExit: argument --kv-cache-dtype: invalid choice: 'int8_per_token_head' (choose from "
        "'auto', 'bfloat16', 'fp8', 'fp8_ds_mla', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc', 'int8_per_token_head_x', "
        "'nvfp4', 'turboquant_k8v4')"
    )
    a, b = Figures(refusal=error), Figures(refusal=error.replace("'auto', ", ""))
    assert differences(a, b, "main", "pr") == []  # refusal texts are not figures
    verdict = _verdict(a, b, "main", "pr", [])
    assert verdict.startswith("both fail to start: main: [parse] SystemExit") and "identical" not in verdict
    assert _verdict(a, a, "main", "pr", []).startswith("both fail to start, the same way: ")
    row = short_row(a)
    assert row.startswith("does not start: ") and row.endswith(" ...")
    words = set(error.split())
    assert all(w in words for w in row.removeprefix("does not start: ").removesuffix(" ...").split())
    assert clip("short", 10) == "short"
    assert clip("abcdefghijkl mn", 5) == "abcdefghijkl ..."


def _fake_env(root: Path, version: str) -> str:
    """A venv-shaped directory whose installed vllm says ``version``; returns its python."""
    pkg = root / "lib" / "python3.11" / "site-packages" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text(f"__version__ = version = '{version}'\n")
    (root / "bin").mkdir()
    (root / "bin" / "python").write_text("")
    return str(root / "bin" / "python")


def test_the_environment_variable_serves_its_own_release_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI exports $DRYBOOT_BOOT_PYTHON for 0.28.0; an arm on 0.29.0 takes 0.29.0's environment,
    not the variable's (profiles comparing a stack across releases boot each on its own code)."""
    from dryboot.boot.trees import choose_python

    monkeypatch.setenv("DRYBOOT_BOOT_ENV_ROOT", str(tmp_path / "envs"))
    monkeypatch.setenv("DRYBOOT_BOOT_PYTHON", _fake_env(tmp_path / "e028", "0.28.0+cu129"))
    own = _fake_env(tmp_path / "envs" / "0.29.0", "0.29.0")
    assert choose_python(None, "0.28.0") == str(tmp_path / "e028" / "bin" / "python")
    assert choose_python(None, None) == str(tmp_path / "e028" / "bin" / "python")
    assert choose_python(None, "0.29.0") == own
    assert choose_python("/explicit/python", "0.29.0") == "/explicit/python"
    # a tree the user names is imported first: the variable's environment serves it whatever its release
    tree = resolve_tree(str(tmp_path / "e028" / "lib" / "python3.11" / "site-packages"))
    assert choose_python(None, "0.29.1.dev3+g0abc", tree) == str(tmp_path / "e028" / "bin" / "python")
    with pytest.raises(InputError, match=r"no boot environment for vLLM 0\.30\.0"):
        choose_python(None, "0.30.0")


def test_the_boot_fakes_the_gpu_the_model_column_plans(tmp_path: Path) -> None:
    """`profiles --boot` faked an H200 unless --gpu, while dryboot's model column planned the
    profile's `gpu = ...`: each engine start is now faked as the arm's GPU, else the profile's,
    else --gpu's (the H200 by default), one boot process per GPU."""
    from dryboot.cli.profiles_boot import boot_gpus
    from dryboot.planner.profiles import with_gpu
    from dryboot.vllm.gpus import parse_gpu as table_gpu

    text = EXAMPLE.read_text().replace('"models/', f'"{REPO}/examples/models/')
    text = text.replace('[profiles."CTX=long"]\n', '[profiles."CTX=long"]\ngpu = "RTX 3090"\n', 1)
    text = text.replace("[arms.pr]\n", '[arms.pr]\ngpu = "B200"\n', 1)
    f = tmp_path / "p.toml"
    f.write_text(text)
    pset = load_profiles(f)
    names = [p.name for p in pset.profiles]
    rtx3090 = parse_gpu("RTX 3090")
    assert rtx3090.name == "NVIDIA GeForce RTX 3090" and rtx3090.capability == (8, 6)
    main = dict(boot_gpus(pset, pset.arm("main"), H200))
    assert [p.name for p in main[rtx3090]] == ["CTX=long"]
    assert [p.name for p in main[H200]] == [n for n in names if n != "CTX=long"]
    # the arm's GPU wins over the profile's: one process
    assert [(g, [p.name for p in ps]) for g, ps in boot_gpus(pset, pset.arm("pr"), H200)] == [
        (parse_gpu("B200"), names)
    ]
    # --gpu: the profiles naming none, for the boot and for the model column alike
    l40s = with_gpu(pset, table_gpu("L40S"))
    assert {g.name for g, _ in boot_gpus(l40s, l40s.arm("main"), parse_gpu("L40S"))} == {
        "NVIDIA L40S",
        "NVIDIA GeForce RTX 3090",
    }
    assert all(p.args.gpu is not None for p in l40s.profiles)
