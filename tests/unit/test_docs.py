"""Every docs page's examples run as tests.

* ``>>>`` blocks are doctests: pytest collects ``docs/*.md`` (``--doctest-glob``).
* Other ``python`` blocks of a page run here, in order, in one namespace, in a fresh
  directory. A page whose examples need a service gets a stand-in: ``postgres.md`` a
  real PostgreSQL from ``pgserver`` (its URL replaces the documented one),
  ``oracle.md`` the recording fake connection of ``tests/oracle``, ``llms.md`` and
  ``memory-pipeline.md`` a local stand-in for the hosted model; the tracer provider
  ``service.md`` sets lasts only for its test.
* ``cli.md``: the first ``jsonl`` block is written to ``chat.jsonl`` and every line
  of its ``bash`` blocks that starts with ``oam`` runs through the CLI, in order.
* Every page has at least one example that one of these runs.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_readme import README_MODEL, _FakeHostedLlm
from typer.testing import CliRunner

import oam_core.llms
from oam_core.apis.llm import ILlm

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
DOC_PG_URL = "postgresql://app:secret@localhost:5432/agents"
"""The PostgreSQL URL the docs show; the test puts a real server's URL in its place."""
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
_NOT_HERE: dict[str, str] = {}
"""Pages whose plain blocks are run elsewhere, with the reason (their doctests still run)."""
_SERVERS = ("oam mcp", "oam serve")
"""Commands that serve until stopped: tests/service starts them and drives them."""


def _blocks(page: str, lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall((DOCS / page).read_text("utf-8")) if kind == lang]


def _plain_python(page: str) -> list[str]:
    return [b for b in _blocks(page, "python") if ">>>" not in b]


def _doctests(page: str) -> int:
    return sum(b.count(">>> ") for b in _blocks(page, "python"))


def _cli_lines(page: str) -> list[str]:
    return [
        line.split("  #")[0].strip()
        for block in _blocks(page, "bash")
        for line in block.splitlines()
        if line.startswith("oam ") and not line.startswith(_SERVERS)
    ]


# -- per-page stand-ins ----------------------------------------------------------------


def _fake_hosted_llm(monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    real = oam_core.llms.resolve_llm

    def resolve(value: Any, name: str = "llm") -> ILlm | None:
        return _FakeHostedLlm() if value == README_MODEL else real(value, name)

    monkeypatch.setattr(oam_core.llms, "resolve_llm", resolve)
    return code


def _fake_litellm_completion(monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    import litellm

    def completion(**request: Any) -> Any:
        assert request["model"] == "openai/smollm2" and request["api_base"].startswith("http")
        content = '{"topics": ["hiking", "jazz"]}'
        return litellm.ModelResponse(
            choices=[{"message": {"role": "assistant", "content": content}}]
        )

    monkeypatch.setattr(litellm, "completion", completion)
    return code


def _real_postgres(monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    import _pg

    try:
        url = _pg.conninfo_for(_pg.new_schema())
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    assert DOC_PG_URL in code
    return code.replace(DOC_PG_URL, url)


def _fake_oracle(monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    sys.path.insert(0, str(ROOT / "tests" / "oracle"))
    import oracledb
    from fakedb import FakePool

    class Pool(FakePool):
        __module__ = "oracledb.pool"  # what the store tells the back end by

        def close(self) -> None:
            self.conn.close()

    def create_pool(**kwargs: Any) -> Pool:
        assert kwargs["dsn"] == "localhost:1521/FREEPDB1", kwargs
        return Pool()

    monkeypatch.setattr(oracledb, "create_pool", create_pool)
    return code


def _tiny_cross_encoder(monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    """The model files the page names, as a tiny real ONNX cross-encoder
    (tests/tiny_cross_encoder.py), with its sha256 in place of the placeholder."""
    import shutil

    sys.path.insert(0, str(ROOT))
    from tests.tiny_cross_encoder import TOKENIZER, build_model

    folder = Path("models/ms-marco-MiniLM-L-6-v2")
    folder.mkdir(parents=True)
    digest = build_model(folder / "model.onnx", ["river"])
    shutil.copy(TOKENIZER, folder / "tokenizer.json")
    assert "<the model file's sha256>" in code
    return code.replace("<the model file's sha256>", digest)


def _own_tracer_provider(monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    """The page sets OpenTelemetry's global tracer provider: for this test only, so
    later tests still run without an SDK (tests/otel_globals.py)."""
    from tests.otel_globals import fresh_tracer_globals

    fresh_tracer_globals(monkeypatch)
    return code


SETUPS: dict[str, Callable[[pytest.MonkeyPatch, str], str]] = {
    "service.md": _own_tracer_provider,
    "retrieval.md": _tiny_cross_encoder,
    "memory-pipeline.md": _fake_hosted_llm,
    "llms.md": _fake_litellm_completion,
    "postgres.md": _real_postgres,
    "oracle.md": _fake_oracle,
}


@pytest.mark.filterwarnings("ignore::UserWarning:pydantic.*")  # LiteLLM's types, first use
@pytest.mark.parametrize("page", [p for p in PAGES if _plain_python(p)])
def test_python_blocks_run(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if page in _NOT_HERE:
        pytest.skip(f"docs/{page}: {_NOT_HERE[page]}")
    monkeypatch.chdir(tmp_path)
    code = "\n".join(_plain_python(page))
    setup = SETUPS.get(page)
    if setup is not None:
        code = setup(monkeypatch, code)
    # LlamaIndex's sync wrappers (docs/llama_index.md) run on asyncio.get_event_loop(),
    # which would leave a loop nobody closes (a ResourceWarning in a later test).
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        exec(compile(code, f"docs/{page}", "exec"), {"__name__": "__docs__"})
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    out = capsys.readouterr().out
    expected = {
        "memory-pipeline.md": "Alice is vegetarian",
        "llms.md": '{"topics": ["hiking", "jazz"]}',
        "postgres.md": "My dog Moose loves the beach.",
        "oracle.md": "OracleDBMemoryStore",
        "service.md": "oam.store.search 1",
    }
    if page in expected:
        assert expected[page] in out, out


@pytest.mark.parametrize("page", [p for p in PAGES if _cli_lines(p)])
def test_cli_lines_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oam_core import cli, clicommon

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(clicommon, "DEFAULT_EMBEDDER", "hashing")
    [chat] = _blocks(page, "jsonl")[:1]
    (tmp_path / "chat.jsonl").write_text(chat, encoding="utf-8")
    runner = CliRunner()
    for line in _cli_lines(page):
        result = runner.invoke(cli.app, shlex.split(line)[1:])
        assert result.exit_code == 0, f"docs/{page}: `{line}` failed:\n{result.output}"
        assert "Warning" not in result.stderr, f"docs/{page}: `{line}`: {result.stderr}"


@pytest.mark.parametrize("page", PAGES)
def test_every_page_has_an_example_that_runs(page: str) -> None:
    examples = _doctests(page) + len(_plain_python(page)) + len(_cli_lines(page))
    assert examples > 0, f"docs/{page} has no example that a test runs"


_PENDING_PAGES: set[str] = set()
"""Pages another change adds."""


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a page: lower-case, punctuation dropped, spaces to -."""
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.S)
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


_CODE_REFERENCE = re.compile(r"docs/([\w.-]+\.md)(?:#([\w-]+))?")
"""A docs reference in a docstring or comment: ``docs/<page>.md`` or ``docs/<page>.md#<anchor>``."""


def _code_references(where: str, text: str) -> list[tuple[str, str, str]]:
    return [(where, page, anchor) for page, anchor in _CODE_REFERENCE.findall(text)]


def _references() -> list[tuple[str, str, str]]:
    """``(where, page, anchor)`` of every docs reference in code, tests, benchmarks,
    scripts, docs and README."""
    found: list[tuple[str, str, str]] = []
    for folder in ("oam_core", "integrations", "tests", "bench", "scripts"):
        for path in ROOT.glob(f"{folder}/**/*.py"):
            found += _code_references(str(path.relative_to(ROOT)), path.read_text("utf-8"))
    for path in [ROOT / "README.md", *DOCS.glob("*.md")]:
        base = "" if path.parent == DOCS else "docs/"
        for target, anchor in re.findall(
            r"\]\(([\w./-]*\.md)?(?:#([\w-]+))?\)", path.read_text("utf-8")
        ):
            page = (target or path.name).removeprefix(base)
            if "/" not in page:
                found.append((str(path.relative_to(ROOT)), page, anchor))
    return found


def _missing(references: list[tuple[str, str, str]]) -> list[str]:
    """The references whose page or anchor does not exist."""
    missing = []
    for where, page, anchor in references:
        if page in _PENDING_PAGES or (ROOT / page).exists():
            continue
        path = DOCS / page
        if not path.exists():
            missing.append(f"{where}: docs/{page}")
        elif anchor and anchor not in _anchors(path):
            missing.append(f"{where}: docs/{page}#{anchor}")
    return missing


def test_docs_references_point_at_real_pages_and_anchors() -> None:
    missing = _missing(_references())
    assert not missing, "\n".join(sorted(set(missing)))


def test_a_docstring_reference_to_a_missing_anchor_fails() -> None:
    # "docs" + "/" keeps these made-up references out of this file's own references
    text = '"""Rules ({d}store.md#scopes; {d}store.md#no-such-rule; {d}nowhere.md)."""'
    d = "docs" + "/"
    found = _code_references("x.py", text.format(d=d))
    assert len(found) == 3
    assert _missing(found) == [f"x.py: {d}store.md#no-such-rule", f"x.py: {d}nowhere.md"]


_OUTSIDE_REFERENCES = ("SPEC " + "\N{SECTION SIGN}", "SPEC" + ".md", "seed" + " 00")
"""Citations of the specification and its reference pages, which live outside the
repository (spelled in pieces so this file does not hold them)."""
_OUTSIDE_NAMES = "|".join(("BUG" + "CASES", "ORACLE" + "_NOTES"))
_OUTSIDE_NOTES = "|".join(("STY" + "LE", "DES" + "IGN"))
_OUTSIDE_DOCUMENTS = re.compile(
    rf"\b(?:{_OUTSIDE_NAMES})\b|\b(?:{_OUTSIDE_NOTES})(?:\.md| ?\N{{SECTION SIGN}}| \d| \")"
)
"""Citations of the other documents kept outside the repository (bug classes, Oracle
facts, design and style notes): ``docs/failure-modes.md`` and ``docs/oracle.md`` say
what the code relies on. Spelled in pieces so this file does not match itself."""


def _cites_outside(line: str) -> bool:
    return any(n in line for n in _OUTSIDE_REFERENCES) or bool(_OUTSIDE_DOCUMENTS.search(line))


def test_a_citation_of_an_outside_document_is_caught() -> None:
    section = "\N{SECTION SIGN}"
    cited = [
        "BUG" + "CASES C21",
        "ORACLE" + "_NOTES " + section + "1",
        "STY" + "LE " + section + "9",
        "STY" + "LE 3",
        "DES" + "IGN.md",
        "DES" + 'IGN "Adapters stay thin"',
        "SP" + "EC " + section + "4",
    ]
    fine = ["docs/failure-modes.md#c21", "a STYLE constant", "DESIGNS", "oracle_notes"]
    assert [_cites_outside(line) for line in cited] == [True] * len(cited)
    assert [_cites_outside(line) for line in fine] == [False] * len(fine)


def test_no_tracked_file_cites_the_specification() -> None:
    """The repository stands alone: code, tests and docs cite ``docs/*.md`` pages, never
    the specification or the other documents kept outside it."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    cited = []
    for name in listed.stdout.decode("utf-8").split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if _cites_outside(line):
                cited.append(f"{name}:{number}: {line.strip()}")
    assert not cited, "\n".join(cited)
