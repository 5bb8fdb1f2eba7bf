"""A local Ray cluster for the Ray tests: ``ray start --head`` on loopback with two CPUs (so two
worker actors), a small object store, no dashboard, its ports picked free, in a temporary directory
of its own. ``--block`` keeps the head in one process group, which teardown ends (SIGTERM, then
SIGKILL): only this cluster's processes, never another Ray on the machine.

Without Ray installed the tests skip, saying so, unless ``CI`` is set, where they fail (``.ci/run``
installs ``dryboot[ray]``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest


def need_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        reason = "Ray is not installed (pip install -e '.[dev,ray]'; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_cli() -> str:
    here = Path(sys.executable).parent / "ray"
    return str(here) if here.is_file() else (shutil.which("ray") or "ray")


@contextmanager
def local_cluster(cpus: int = 2) -> Iterator[str]:
    """A running head node; yields its address (``127.0.0.1:PORT``)."""
    need_ray()
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = _free_port()
    ports = {
        "--port": port,
        "--dashboard-agent-listen-port": _free_port(),
        "--dashboard-agent-grpc-port": _free_port(),
        "--metrics-export-port": _free_port(),
        "--runtime-env-agent-port": _free_port(),
    }
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    log = open(Path(temp) / "head.log", "w+")  # noqa: SIM115 (closed below)
    head = subprocess.Popen(
        [
            _ray_cli(),
            "start",
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            *(f"{k}={v}" for k, v in ports.items()),
            f"--num-cpus={cpus}",
            "--include-dashboard=false",
            "--object-store-memory=200000000",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
            "--block",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            log.seek(0)
            if "Ray runtime started" in log.read():
                break
            if head.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"ray start --head did not start:\n{log.read()[-3000:]}")
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
            try:
                os.killpg(head.pid, sig)
            except ProcessLookupError:
                break
            try:
                head.wait(timeout=wait)
                time.sleep(1)
            except subprocess.TimeoutExpired:
                continue
        # what the head's children left in its group
        with suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
