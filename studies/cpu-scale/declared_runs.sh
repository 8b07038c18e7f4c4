#!/usr/bin/env bash
# The claims' declared runs still to finish (studies/cpu-scale/claims/README.md), at the cpu preset, in the order
# they are published. OUT is a copy of leaderboard/records (made here if absent), so every stored cell is skipped and
# every command resumes; DATA_ROOT holds TinyImageNet (tiny-imagenet-200 or its zip). Finished records go back with
# `python studies/cpu-scale/sync_records.py OUT leaderboard/records`.
set -euo pipefail
OUT=${1:?usage: declared_runs.sh OUT DATA_ROOT}
ROOT=${2:?usage: declared_runs.sh OUT DATA_ROOT}
[ -d "$OUT" ] || cp -r "$(dirname "$0")/../../leaderboard/records" "$OUT"
# The entailment claim's six seeds (HBCT with and without its entailment cone) first, so it is decided first.
benchbackcompat run --preset cpu --workers 2 --out "$OUT" --scenario ext-class-tin32 \
    --methods hbct,hbct-no-entail --seeds 0-5 --data-root "$ROOT"
# Then the rows of HBCT's P_com claim (eight seeds), and last the two rows that serve the study's table only.
benchbackcompat run --preset cpu --workers 2 --out "$OUT" --scenario ext-class-tin32 \
    --methods hbct,l2,bct,hot-refresh,advbct,hoc-euclidean --seeds 0-7 --data-root "$ROOT"
benchbackcompat run --preset cpu --workers 2 --out "$OUT" --scenario ext-class-tin32 \
    --methods hbct-no-entail,independent --seeds 0-7 --data-root "$ROOT"
