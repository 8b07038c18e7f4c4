"""`list methods` and `describe` answer from a cache keyed by the installed code: a second call does not import
the plugins (nor torch), and any change of the code or of the preset asks them again."""
from __future__ import annotations

import os
import subprocess
import sys

from benchbackcompat.cli.answer_cache import cached_answer, digest


def test_an_answer_is_computed_once_and_asked_again_when_an_input_changes(tmp_path):
    preset = tmp_path / "preset.toml"
    preset.write_text("a = 1\n")
    calls = []

    def answer():
        calls.append(1)
        return f"answer {len(calls)}", True

    assert cached_answer(tmp_path / "cache", ["describe", "x"], answer, [preset]) == "answer 1"
    assert cached_answer(tmp_path / "cache", ["describe", "x"], answer, [preset]) == "answer 1" and len(calls) == 1
    preset.write_text("a = 2\n")
    assert cached_answer(tmp_path / "cache", ["describe", "x"], answer, [preset]) == "answer 2"
    assert cached_answer(tmp_path / "cache", ["describe", "y"], answer, [preset]) == "answer 3"  # another question


def test_an_answer_that_reports_a_broken_plugin_is_not_kept(tmp_path):
    calls = []

    def broken():
        calls.append(1)
        return "plugin x: unavailable", False

    cached_answer(tmp_path, ["list", "methods"], broken)
    cached_answer(tmp_path, ["list", "methods"], broken)
    assert len(calls) == 2


def test_a_changed_file_has_another_digest_and_a_missing_one_none(tmp_path):
    code = tmp_path / "method.py"
    code.write_text("WEIGHT = 1\n")
    before = digest([code])
    code.write_text("WEIGHT = 2\n")
    assert digest([code]) != before and digest([tmp_path / "gone.py"]) == {}


def test_the_second_list_and_describe_do_not_import_torch(tmp_path):
    code = ("import sys; from benchbackcompat.cli import main; main(['list', 'methods']); main(['describe', 'l2']); "
            "print('torch' in sys.modules)")
    env = {**os.environ, "HOME": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.stdout.strip().endswith("True") and second.stdout.strip().endswith("False"), (first, second)
    assert first.stdout.rsplit("\n", 2)[0] == second.stdout.rsplit("\n", 2)[0]  # the same tables
