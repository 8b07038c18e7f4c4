#!/usr/bin/env bash
# The claims' declared runs still to finish (studies/cpu-scale/claims/README.md), at the cpu preset, in the order
# they are published. OUT is a copy of leaderboard/records (made here if absent), so every stored cell is skipped and
# every command resumes; DATA_ROOT holds TinyImageNet (tiny-imagenet-200 or its zip). Finished records go back with
# `python studies/cpu-scale/sync_records.py OUT leaderboard/records`.
set -euo pipefail
OUT=${1:?usage: declared_runs.sh OUT DATA_ROOT}
ROOT=${2:?usage: declared_runs.sh OUT DATA_ROOT}
[ -d "$OUT" ] || cp -r "$(dirname "$0")/../../leaderboard/records" "$OUT"
tin32() {
    benchbackcompat run --preset cpu --workers 2 --out "$OUT" --scenario ext-class-tin32 --data-root "$ROOT" "$@"
}
# The rows of HBCT's P_com claim (eight seeds; its entailment claim's six seeds are stored), then the two rows that
# serve the study's table only.
tin32 --methods hbct,l2,bct,hot-refresh,advbct,hoc-euclidean --seeds 0-7
tin32 --methods hbct-no-entail,independent --seeds 0-7
