"""The study's tests (``python -m pytest studies/cpu-scale``, which CI runs after the framework's suite): the study's
scripts import each other as siblings (``from leaderboard_rows import ...``), and these tests use the framework suite's
checks of claims files and of public imports (``tests/``)."""
from __future__ import annotations

import sys
from pathlib import Path

STUDY = Path(__file__).resolve().parents[1]
for folder in (STUDY, STUDY.parents[1] / "tests"):
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
