#!/usr/bin/env bash
# Behaviour check for refactors: run a fixed set of tiny cells (every method family, every scenario
# kind) into OUT, then compare two such folders with benchmarks/compare_results.py.
#   bash benchmarks/baseline_cells.sh results-before   # on the old commit
#   bash benchmarks/baseline_cells.sh results-after    # on the new one
#   python benchmarks/compare_results.py results-before results-after
# A few CPU minutes. The embedded dataset is cached in $BBC_HOME (default: ./.home, private).
set -euo pipefail
OUT=${1:?usage: baseline_cells.sh OUT_DIR}
BBC_HOME=${BBC_HOME:-$PWD/.home}
TINY=(--set train.epochs=1 --set data.train_per_class=10 --set data.test_per_class=4 --set train.batch_size=32)
bbc() { HOME="$BBC_HOME" OMP_NUM_THREADS=1 benchbackcompat run --out "$OUT" "${TINY[@]}" "$@" >/dev/null 2>>"$OUT.log" || echo "exit $? (see $OUT.log): $*"; }
ALL=advbct,bct,cores,cvs,dsimplex-fd,er,etf-ce,etf-dr,fan,hbct,hbct-no-entail,hoc,hoc-euclidean,hot-refresh,ift,independent,l2,lce,lsp,lwf,psp
bbc --scenario ext-class --methods "$ALL"                      # every method once (and the not-applicable reasons)
bbc --scenario ext-data,new-arch,both --methods independent,l2,hbct
bbc --scenario multi-step --methods independent,l2,cores,hoc,psp,lsp,fan,hbct --set num_models=4
bbc --scenario cl2r --methods er,dsimplex-fd,hoc,lwf,ift,l2,advbct --set num_tasks=3 --set initial_class_fraction=0.4
bbc --scenario iam-cl2r --methods er,hoc --set num_tasks=3 --set initial_class_fraction=0.4 --set replacements=[3] \
    --set pretrain_classes=[10,20] --set pretrain.epochs=1
bbc --scenario model-zoo --methods independent,l2,psp
echo "cells in $OUT: $(ls "$OUT/cells" | wc -l)"
