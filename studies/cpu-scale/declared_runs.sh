#!/usr/bin/env bash
# The claims' declared runs still to finish (studies/cpu-scale/claims/README.md), at the cpu preset, in the order
# they are published. OUT is a copy of leaderboard/records (made here if absent), so every stored cell is skipped and
# every command resumes; DATA_ROOT holds TinyImageNet (tiny-imagenet-200 or its zip) for the last one. Finished
# records go back with `python studies/cpu-scale/sync_records.py OUT leaderboard/records`.
set -euo pipefail
OUT=${1:?usage: declared_runs.sh OUT DATA_ROOT}
ROOT=${2:?usage: declared_runs.sh OUT DATA_ROOT}
[ -d "$OUT" ] || cp -r "$(dirname "$0")/../../leaderboard/records" "$OUT"
bbc() { benchbackcompat run --preset cpu --workers 2 --out "$OUT" "$@"; }
STATIONARY=hoc,dsimplex-fd,er,fan,bct,lce,advbct,cvs
bbc --scenario cl2r-16 --methods "$STATIONARY" --seeds 0-8
# the lambda ablation of Table VIII(b): lambda = 1 first (its two claims declare seeds 0-5), then the rest at 0-7
bbc --scenario cl2r-16 --methods hoc --seeds 0-5 --set methods.hoc.lam=1.0
for lam in 0.0 0.05 0.25 0.5; do bbc --scenario cl2r-16 --methods hoc --seeds 0-7 --set methods.hoc.lam=$lam; done
bbc --scenario cl2r-16 --methods hoc --seeds 6,7 --set methods.hoc.lam=1.0
bbc --scenario ext-class-tin32 --methods hbct,hbct-no-entail,independent,l2,bct,hot-refresh,advbct,hoc-euclidean \
    --seeds 0-7 --data-root "$ROOT"
