"""The documentation's examples run as printed: every Python block of README.md and docs/*.md is executed, and every
`benchbackcompat ...` line of their bash blocks is parsed by the command's own parser (a `run` line is also turned
into its validated run request; nothing is executed), so an example cannot drift from the API.

Training is shrunk in one explicit way: while a page's blocks run, every run request is made a ``--smoke`` run (tiny
data, one epoch per model unless the example sets ``train.epochs``) on one CPU thread, in a temporary working folder
that the page's blocks share in order (a block reading ``results`` reads what an earlier block of its page wrote).
A block that cannot run here says why in an HTML comment right above it, ``<!-- no-test: reason -->``: it is
compiled and its imports executed. A block marked ``<!-- file: NAME -->`` (a claims file, a preset) is written to NAME
in that working folder when the page's blocks reach it. Study pages (the root studies/ folder) are left out: records of past studies, not instructions."""
from __future__ import annotations

import argparse
import ast
import inspect
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import benchbackcompat
from benchbackcompat.cli import build_parser
from benchbackcompat.cli.run import run_request
from benchbackcompat.cli.scaffold import create_plugin

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:^<!-- (?:no-test: (?P<skip>[^>]*?)|file: (?P<file>[\w.-]+)) -->\n)?"
                   r"^```(?P<lang>\w*)\n(?P<code>.*?)^```", re.S | re.M)
SHELLS = ("bash", "sh", "shell", "console")
INLINE_CALL = re.compile(r"`(benchbackcompat\.\w+\(.*?\))`")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    skip: str | None  # the reason of a `<!-- no-test: reason -->` marker
    file: str | None = None  # the name of a `<!-- file: NAME -->` marker: the block is written to NAME

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path, *langs: str) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [Block(page, text[:m.start("code")].count("\n") + 1, m["lang"], m["code"], m["skip"], m["file"])
            for m in BLOCK.finditer(text) if m["lang"] in langs]


def command_lines(block: Block) -> list[list[str]]:
    """The argument lists of the block's `benchbackcompat` commands (continuations joined, comments dropped, each
    command of an `a && b` line on its own)."""
    commands: list[list[str]] = []
    for line in block.code.replace("\\\n", " ").splitlines():
        words: list[str] = []
        for word in [*shlex.split(line, comments=True), "&&"]:
            if word != "&&":
                words.append(word)
                continue
            if words[:1] == ["benchbackcompat"]:
                commands.append(words[1:])
            words = []
    return commands


PYTHON = [b for page in PAGES for b in blocks(page, "python")]
SHELL = [b for page in PAGES for b in blocks(page, *SHELLS)]


def test_counts_of_checked_examples():
    """Every page's examples are found (a broken fence would hide them) and markers stay rare; the counts are
    printed (`pytest -s`)."""
    skipped = [b for b in PYTHON + SHELL if b.skip is not None]
    lines = sum(len(command_lines(b)) for b in SHELL)
    print(f"\ndoc examples: {len(PYTHON) - len(skipped)} Python blocks run, {len(skipped)} compiled only "
          f"({'; '.join(f'{b}: {b.skip}' for b in skipped)}), {lines} CLI lines parsed")
    assert len(PYTHON) >= 9 and lines >= 25
    assert len(skipped) <= 2 and all(b.skip.strip() for b in skipped)
    assert not any(b.skip for b in SHELL), "CLI lines are only parsed: nothing to skip"


def spelled_out(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The options of ``argv`` that are not spelled out in full (argparse accepts ``--seed`` for ``--seeds``); after
    ``--`` (calibrate), those of ``run``."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    before, _, after = shlex.join(argv).partition(" -- ")
    known = set(parser._option_string_actions).union(*(commands[w]._option_string_actions for w in argv if w in commands))
    unknown = [w for w in shlex.split(before) if w.startswith("--") and w.split("=")[0] not in known]
    return unknown + [w for w in shlex.split(after) if w.startswith("--") and w not in commands["run"]._option_string_actions]


@pytest.mark.parametrize("block", SHELL, ids=str)
def test_cli_lines_parse(block, capsys):
    for argv in command_lines(block):
        assert spelled_out(build_parser(), argv) == [], f"{block}: `benchbackcompat {shlex.join(argv)}`: unknown options"
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as stop:  # --version and --help exit 0 after printing; a bad line exits 2
            assert stop.code == 0, f"{block}: `benchbackcompat {shlex.join(argv)}` does not parse: {capsys.readouterr().err}"
            continue
        if args.command == "calibrate":  # its run arguments after `--` go to `run`
            args = build_parser().parse_args(["run", "--scenario", args.scenario, "--methods", args.methods,
                                              *(a for a in args.run_args if a != "--")])
        if args.command == "run":
            run_request(args)  # --set values, seeds and the other options validate


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_inline_api_calls_bind(page):
    for call in INLINE_CALL.findall(page.read_text(encoding="utf-8")):
        node = ast.parse(call, mode="eval").body
        function = getattr(benchbackcompat, node.func.attr)
        args = [ast.literal_eval(a) for a in node.args]
        inspect.signature(function).bind(*args, **{k.arg: ast.literal_eval(k.value) for k in node.keywords})


@pytest.fixture
def smoke_runs(tmp_path, monkeypatch):
    """Every run request made smoke-sized, training on one thread (the CPUs are shared); the working folder a
    temporary one holding the scaffolded my-method package (the plugin guide's example) on the import path."""
    from benchbackcompat.execution import runner

    real = runner.run
    monkeypatch.setattr(runner, "run", lambda request, *a, **k: real(request.model_copy(update={"smoke": True}), *a, **k))
    monkeypatch.chdir(tmp_path)
    create_plugin("my-method", tmp_path / "bbc-my-method")
    monkeypatch.syspath_prepend(str(tmp_path / "bbc-my-method"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(page, smoke_runs):
    for block in blocks(page, "python", "toml"):
        if block.file:
            Path(block.file).write_text(block.code, encoding="utf-8")
            continue
        if block.lang != "python":
            continue
        tree = ast.parse(block.code, filename=str(block))
        if block.skip is not None:
            compile(tree, str(block), "exec")
            tree.body = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        exec(compile(tree, str(block), "exec"), {"__name__": f"docs_example_{block.line}"})
