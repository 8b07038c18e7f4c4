"""Claims: papers' claims declared as data (claims files), judged on the stored tables, rendered as ``claims.md``
(digest and tally) and one page per paper (``claims/<paper>.md``).

The core holds the judging code and the page; the claims themselves live in claims files that anyone can write for
their own paper (``docs/claims.md``) and hand to ``benchbackcompat leaderboard --claims FILE``.
"""
from benchbackcompat.report.claims.declared import Claim, ClaimsFile, load_claims
from benchbackcompat.report.claims.installed import load_all
from benchbackcompat.report.claims.judge import Judgement, judge
from benchbackcompat.report.claims.page import PlannedScenario, claims_pages

__all__ = ["Claim", "ClaimsFile", "Judgement", "PlannedScenario", "claims_pages", "judge", "load_all",
           "load_claims"]
