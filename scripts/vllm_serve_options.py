"""Write src/dryboot/data/vllm-<version>-serve-options.json: every option of the ``vllm serve``
parser of the installed vLLM, with its destination and arity, and the names of vLLM's
environment variables (``vllm/envs.py``). Run it with a vLLM venv's python (never imported by
dryboot; the JSON is what dryboot reads):

    ~/.cache/dryboot/boot-env/<release>/bin/python scripts/vllm_serve_options.py src/dryboot/data
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
import types
from pathlib import Path


def _declare_torchvision_ops() -> object:
    """The oracle's own ``dryboot.boot.engine_start._declare_torchvision_ops`` (torchvision's two op
    schemas under a CPU torch, so transformers' image processors import), loaded from its file: this
    script runs in a vLLM venv, where dryboot is not installed."""
    path = Path(__file__).resolve().parents[1] / "src" / "dryboot" / "boot" / "engine_start.py"
    spec = importlib.util.spec_from_file_location("dryboot_engine_start", path)
    assert spec is not None and spec.loader is not None
    oracle = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = oracle  # its dataclasses look their module up
    spec.loader.exec_module(oracle)
    return oracle._declare_torchvision_ops()


def _serve_parser_module() -> str:
    """The module ``vllm serve`` takes ``make_arg_parser`` from, read from
    ``vllm/entrypoints/cli/serve.py``'s imports (importing that module needs the server's
    packages): ``vllm.entrypoints.openai.cli_args`` in 0.27.1 / 0.28.0,
    ``vllm.entrypoints.launchers.cli_args`` in 0.29.0-0.32.0, ``vllm.entrypoints.common.cli_args``
    in 0.33.0."""
    import vllm.entrypoints.cli as cli

    tree = ast.parse((Path(cli.__file__).parent / "serve.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "make_arg_parser" for a in node.names):
            assert node.module is not None
            return node.module
    raise SystemExit("vllm/entrypoints/cli/serve.py imports no make_arg_parser")


#: The web server's packages ``vllm.entrypoints.serve`` imports at module level in 0.27.1 /
#: 0.28.0 (its ``__init__`` imports FastAPI). The boot environments do not install them; where one
#: is missing it is stood in for by an empty module whose every name is a placeholder class (the
#: parser's options never read them).
_SERVER_PACKAGES = ("fastapi", "starlette", "uvicorn", "prometheus_fastapi_instrumentator", "partial_json_parser")


def _placeholder(attr: str) -> type:
    if attr.startswith("__"):
        raise AttributeError(attr)
    return type(attr, (), {})


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stand-in modules for the missing :data:`_SERVER_PACKAGES` (and their submodules)."""

    def find_spec(self, name: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] not in _SERVER_PACKAGES:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _placeholder  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _stand_in_server_packages() -> None:
    missing = [p for p in _SERVER_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        print("stand-in modules for", ", ".join(missing), file=sys.stderr)
        sys.meta_path.append(_StandIn())


def main() -> None:
    _stand_in_server_packages()
    keep = _declare_torchvision_ops()  # noqa: F841 - the registration lives as long as this
    import vllm
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    # no GPU here: the options of the parser do not depend on the platform
    platforms._current_platform = CpuPlatform()  # type: ignore[attr-defined]
    import vllm.envs as envs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    make_arg_parser = importlib.import_module(_serve_parser_module()).make_arg_parser

    parser = make_arg_parser(FlexibleArgumentParser())
    options = []
    for action in parser._actions:  # argparse keeps no public list
        if not action.option_strings:
            options.append({"dest": action.dest, "positional": True, "nargs": action.nargs})
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        kind = "value"
        if isinstance(action, argparse.BooleanOptionalAction):
            kind = "bool-optional"
        elif action.nargs == 0:
            kind = "flag"
        # every string the parser answers to: 0.33.0's EnableDisableAction hides the `--no-` forms
        # from action.option_strings but keeps them registered
        strings = sorted(o for o, a in parser._option_string_actions.items() if a is action)
        entry: dict[str, object] = {"dest": action.dest, "options": strings, "kind": kind}
        if kind == "bool-optional":
            # the strings that set False: `--no-X` (argparse), also `--disable-X` for an `--enable-X`
            # and the reverse (0.33.0's EnableDisableAction)
            negative = getattr(action, "negative_option_strings", None)
            entry["negative"] = sorted(
                negative if negative is not None else (o for o in strings if o.startswith("--no-"))
            )
        # only what is set (the reader takes a missing nargs / const as None): the JSON is package data
        if isinstance(action.nargs, str | int):
            entry["nargs"] = action.nargs
        if isinstance(action.const, bool | int | str):
            entry["const"] = action.const
        options.append(entry)
    out = Path(sys.argv[1]) / f"vllm-{vllm.__version__}-serve-options.json"
    doc = {"vllm": vllm.__version__, "options": options, "environment": sorted(envs.environment_variables)}
    # one option a line: small, and a release's diff shows the options it added or removed
    lines = [json.dumps(o, separators=(",", ":")) for o in options]
    env_names = json.dumps(doc["environment"], separators=(",", ":"))
    text = f'{{"vllm":"{vllm.__version__}","options":[\n' + ",\n".join(lines) + f'\n],\n"environment":{env_names}}}\n'
    assert json.loads(text) == doc
    out.write_text(text)
    print(out, len(options), "options", len(doc["environment"]), "variables")


if __name__ == "__main__":
    main()
