"""The retrieval metrics by name, each with the name the leaderboard shows it under. The scorers
(``metrics.protocols``) register only these names, and the report asks this table for how to write them; it
imports no torch, so reading stored records does not either."""
from __future__ import annotations

METRICS = {"cmc@1": "CMC@1", "cmc@5": "CMC@5", "map": "mAP", "map@r": "mAP@R", "top1": "top-1",
           "verification": "verification"}
