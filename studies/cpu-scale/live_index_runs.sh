#!/usr/bin/env bash
# The live-index tables (ext-class and both with every refresh order, the oracle bound, five permutations of the
# random order and the FAISS indexes), every method at seeds 0-2 at the cpu preset, into OUT; every command resumes.
# The four methods the study's backfilling section compares run first. Finished records go back with
# `python studies/cpu-scale/sync_records.py OUT leaderboard/records`.
set -euo pipefail
OUT=${1:?usage: live_index_runs.sh OUT}
ALL=advbct,bct,cores,cvs,dsimplex-fd,er,etf-ce,etf-dr,fan,hbct,hbct-no-entail,hoc,hoc-euclidean,hot-refresh,ift,independent,l2,lce,lsp,lwf,psp
ORDERS='"random", "class-distance", "class-balanced", "uncertainty", "hbct-uncertainty", "learned", "oracle", "oracle-bound"'
live() {
    benchbackcompat run --preset cpu --workers 2 --out "$OUT" --seeds 0,1,2 \
        --set "backfill={orders=[$ORDERS], permutations=5}" --set 'index={}' "$@"
}
live --scenario ext-class --methods bct,hot-refresh,hbct,cores
live --scenario ext-class --methods "$ALL"
live --scenario both --methods "$ALL"
