#!/usr/bin/env bash
# The claims' declared runs still to finish (studies/cpu-scale/claims/README.md), at the cpu preset, in the order
# they are published. OUT is a copy of leaderboard/records (made here if absent, unpacked when the records are a packed
# store), so every stored cell is skipped and every command resumes; DATA_ROOT holds TinyImageNet (tiny-imagenet-200
# or its zip). Finished records go back with
# `python studies/cpu-scale/sync_records.py OUT leaderboard/records`.
set -euo pipefail
OUT=${1:?usage: declared_runs.sh OUT DATA_ROOT}
ROOT=${2:?usage: declared_runs.sh OUT DATA_ROOT}
RECORDS="$(dirname "$0")/../../leaderboard/records"
if [ ! -d "$OUT" ]; then
    if [ -f "$RECORDS/packed.json" ]; then benchbackcompat unpack "$RECORDS" "$OUT"; else cp -r "$RECORDS" "$OUT"; fi
fi
tin32() {
    benchbackcompat run --preset cpu --workers 2 --out "$OUT" --scenario ext-class-tin32 --data-root "$ROOT" "$@"
}
# The rows of HBCT's P_com claim (eight seeds; its entailment claim's six seeds are stored), then the two rows that
# serve the study's table only.
tin32 --methods hbct,l2,bct,hot-refresh,advbct,hoc-euclidean --seeds 0-7
tin32 --methods hbct-no-entail,independent --seeds 0-7
# The claims declared not run yet (studies/cpu-scale/claims/README.md), cheapest first, into the same OUT. The 100-class
# scales are not calibrated: calibrate each first (benchbackcompat calibrate), as the 50-class one was.
cpu() { benchbackcompat run --preset cpu --workers 2 --out "$OUT" "$@"; }
# iam7-replacement-gain (about 1.5 core-hours): HOC and d-Simplex-FD on iam-cl2r-7 without replacements
cpu --scenario iam-cl2r-7 --methods hoc,dsimplex-fd --seeds 0-6 --set 'replacements=[]' --set 'pretrain_classes=[25]' --set methods.hoc.lam=0.1
# hbct-pcom-ext-data-10pct-cmc1 (about 4 core-hours): ext-data with the old model on 10% of the images
cpu --scenario ext-data --methods hbct,l2,bct,hot-refresh,advbct,hoc-euclidean --seeds 0-7 --set train.min_steps=12000 --set old_fraction=0.1
# hbct-sequential-updates (about 7 core-hours): five models of 20 classes on 100 embedded classes
cpu --scenario multi-step --methods hbct,l2,bct,hot-refresh,advbct,hoc-euclidean --seeds 0-7 --set num_models=5 --set data.num_classes=100
# hbct-pcom-ext-data-tin-cmc1 and -map (about 12 core-hours): ext-data on TinyImageNet-50 at 32x32
cpu --scenario ext-data --data-root "$ROOT" --methods hbct,l2,bct,hot-refresh,advbct,hoc-euclidean --seeds 0-7 --set data.name=tinyimagenet --set data.image_size=32 --set data.train_per_class=300 --set data.test_per_class=50 --set train.epochs=40 --set model.backbone=convnet-m
# cl2r31-hoc-above-each (about 26 core-hours), then the IAM-CL2R 31-task claims (about 36 + 8 + 10 + 40 core-hours)
cpu --scenario cl2r --methods hoc,dsimplex-fd --seeds 0-6 --set num_tasks=31 --set data.num_classes=100 --set methods.hoc.lam=0.1
cpu --scenario iam-cl2r --methods hoc,dsimplex-fd --seeds 0-6 --set num_tasks=31 --set data.num_classes=100 --set 'replacements=[11, 21]' --set methods.hoc.lam=0.1
cpu --scenario iam-cl2r --methods hoc,dsimplex-fd --seeds 0-6 --set num_tasks=31 --set data.num_classes=100 --set 'replacements=[]' --set 'pretrain_classes=[25]' --set methods.hoc.lam=0.1
cpu --scenario iam-cl2r --methods hoc --seeds 0-5 --set num_tasks=31 --set data.num_classes=100 --set 'replacements=[11, 21]' --set memory_per_class=0 --set methods.hoc.lam=0.1
cpu --scenario iam-cl2r --methods hoc --seeds 0-5 --set num_tasks=31 --set data.num_classes=100 --set 'replacements=[]' --set 'pretrain_classes=[25]' --set memory_per_class=0 --set methods.hoc.lam=0.1
cpu --scenario iam-cl2r --methods hoc,dsimplex-fd --seeds 0-5 --set num_tasks=31 --set data.num_classes=100 --set 'replacements=[11, 21]' --set 'pretrain_architectures=["convnet-s", "convnet-m", "senet18"]' --set methods.hoc.lam=0.1
# psp-cifar-20-steps and -50-steps (about 28 and 69 core-hours)
cpu --scenario multi-step --methods psp,lsp,bct --seeds 0-7 --set num_models=20 --set data.num_classes=100 --set methods.psp.temperature=12.0 --set methods.lsp.temperature=12.0
cpu --scenario multi-step --methods psp,lsp,bct --seeds 0-7 --set num_models=50 --set data.num_classes=100 --set methods.psp.temperature=12.0 --set methods.lsp.temperature=12.0
# hbct-pcom-ext-data-cifar-map (about 2 core-hours): the four Euclidean baselines on ext-data at 12,000 steps
cpu --scenario ext-data --methods l2,hot-refresh,advbct,hoc-euclidean --seeds 0-7 --set train.min_steps=12000
