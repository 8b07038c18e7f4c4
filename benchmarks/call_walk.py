"""The walk of a scenario name from the command line (or the Python API) to the engine.

Traces every call into ``benchbackcompat`` from the entry point until the engine's ``run_cell``
starts, and keeps the calls that receive the scenario name in their arguments (as a string, in a
list, or as a field of an argument object: an argparse namespace, a dataclass, a pydantic model,
up to five levels deep; ``self`` is not counted, so a method of an object that holds the name is
not a step). Prints each step with its module and call depth, then the counts:
steps (calls that carry the name), modules (distinct modules among them) and climbs (returns
from a step back to its caller before the next step: how often the walk goes up again).

    python benchmarks/call_walk.py            # the command line: run --scenario walked ...
    python benchmarks/call_walk.py --api      # benchbackcompat.run(scenarios=["walked"], ...)
    python benchmarks/call_walk.py --stdlib   # also count calls in other Python modules (argparse, ...)
    python benchmarks/call_walk.py --seeds    # walk the seeds instead: --seeds 4242 (as text, then a number)

The scenario is named ``walked`` (kind ext-class) in a temporary preset, so that its name is not
also its kind. Nothing is trained: the walk stops when ``run_cell`` is entered.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from importlib import metadata
from pathlib import Path

VALUE = "walked"
SEED = 4242  # a seed no default uses, walked with --seeds
WALKED: set[object] = {VALUE}  # the values a step carries (the scenario name, or the seed as text and as a number)
PACKAGE = str(Path(__file__).resolve().parents[1] / "benchbackcompat")
PRESET = f"""
[defaults]
data = {{ name = "embedded", num_classes = 4, train_per_class = 4, test_per_class = 2, open_classes = 2 }}
model = {{ backbone = "convnet-s" }}
train = {{ epochs = 1 }}
[scenarios.{VALUE}]
kind = "ext-class"
"""


class Arrived(BaseException):
    """Raised when the engine's ``run_cell`` is entered: the walk is over."""


def carries(obj, depth: int = 5) -> bool:
    if isinstance(obj, str) or (isinstance(obj, int) and not isinstance(obj, bool)):
        return obj in WALKED
    if depth == 0 or isinstance(obj, (float, bytes, Path)) or obj is None:
        return False
    if isinstance(obj, (list, tuple, set, frozenset)):
        return any(carries(item, depth - 1) for item in list(obj)[:64])
    if isinstance(obj, dict):
        return any(carries(item, depth - 1) for item in list(obj.values())[:64])
    if (isinstance(obj, argparse.Namespace) or dataclasses.is_dataclass(obj) or hasattr(type(obj), "model_fields")) \
            and not isinstance(obj, type) and hasattr(obj, "__dict__"):
        return any(carries(item, depth - 1) for item in list(vars(obj).values())[:64])
    return False


def walk(entry, everywhere: bool = False) -> list[tuple[int, str, str]]:
    steps: list[tuple[int, str, str]] = []
    active: list[int] = []  # frame ids of the steps still on the stack
    climbs = [0]

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "call" and (code.co_filename.startswith(PACKAGE) or everywhere and code.co_filename != __file__):
            if code.co_name == "run_cell" and code.co_filename.startswith(PACKAGE):
                steps.append((depth(frame), frame.f_globals["__name__"], code.co_name))
                raise Arrived
            arguments = [frame.f_locals[name] for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
                         if name in frame.f_locals and name != "self"]
            if any(carries(a) for a in arguments):
                steps.append((depth(frame), frame.f_globals.get("__name__", "?"), code.co_qualname))
                active.append(id(frame))
        elif event == "return" and active and active[-1] == id(frame):
            active.pop()
            climbs[0] += 1

    sys.setprofile(profile)
    try:
        entry()
    except Arrived:
        pass
    finally:
        sys.setprofile(None)
    walk.climbs = climbs[0]
    return steps


def depth(frame) -> int:
    count = 0
    while frame is not None:
        count, frame = count + 1, frame.f_back
    return count


def command_line():
    """The function the ``benchbackcompat`` command calls (its console-script entry point), given the arguments."""
    found = metadata.entry_points(group="console_scripts", name="benchbackcompat")
    if not found:
        raise SystemExit("error: no `benchbackcompat` command is installed; `pip install -e .` in the repository")
    return next(iter(found)).load()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", action="store_true", help="enter through benchbackcompat.run instead of the CLI")
    parser.add_argument("--stdlib", action="store_true", help="count calls in every Python module, not only the package")
    parser.add_argument("--seeds", action="store_true", help=f"walk the seeds (--seeds {SEED}) instead of the scenario")
    options = parser.parse_args()
    if options.seeds:
        WALKED.clear()
        WALKED.update({str(SEED), SEED})
    folder = Path(tempfile.mkdtemp())
    preset = folder / "walk.toml"
    preset.write_text(PRESET)
    if options.api:
        import benchbackcompat

        entry = lambda: benchbackcompat.run(scenarios=[VALUE], methods=["l2"], preset=str(preset), out=folder / "r",  # noqa: E731
                                            seeds=[SEED] if options.seeds else None)
    else:
        cli = command_line()
        entry = lambda: cli(["run", "--scenario", VALUE, "--methods", "l2", "--preset", str(preset),  # noqa: E731
                             "--out", str(folder / "r"), "-q", *(["--seeds", str(SEED)] if options.seeds else [])])
    steps = walk(entry, options.stdlib)
    low = min(d for d, _, _ in steps)
    for d, module, name in steps:
        print(f"{'  ' * (d - low)}{module}.{name}")
    print(f"{len(steps)} steps through {len({m for _, m, _ in steps})} modules, {walk.climbs} climbs back up")


if __name__ == "__main__":
    main()
