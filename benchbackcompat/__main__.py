"""``python -m benchbackcompat`` (and ``torchrun -m benchbackcompat run ...``)."""
import sys

from benchbackcompat.cli import main

sys.exit(main())
