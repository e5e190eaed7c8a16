"""Run the ``oam`` CLI as a subprocess (servers on a free loopback port)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m oam_core.cli ARGS`` to completion (60 s at most)."""
    return subprocess.run(
        [sys.executable, "-m", "oam_core.cli", *args],
        cwd=cwd,
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def start_cli(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``python -m oam_core.cli ARGS`` in the background."""
    return subprocess.Popen(
        [sys.executable, "-m", "oam_core.cli", *args],
        cwd=cwd,
        env={**ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 60) -> None:
    """Wait until something accepts connections on 127.0.0.1:``port``.

    Raises:
        AssertionError: if the process exits first or the timeout passes.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"server exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}"
            )
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a background server started by ``start_cli`` (terminate, then kill)."""
    process.terminate()
    try:
        process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=15)
