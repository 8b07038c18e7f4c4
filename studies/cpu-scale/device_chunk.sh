#!/usr/bin/env bash
# One GPU lease (one command of at most 10 minutes, on a copy of a clean checkout with no git): install and record
# the commit, smoke-test the README's main command and the CUDA code paths on the GPU, then run the next resumable
# chunks of the claims' declared runs (studies/cpu-scale/claims/README.md) until BUDGET seconds have passed:
#   - on the GPU, one process: the TinyImageNet table (ext-class-tin32), the 8 seeds HBCT's claims declare. A batch-32
#     convnet is launch-bound, so one CUDA context does better than many (12 processes sharing one H100 finished only
#     6 old models in 12 minutes);
#   - on the other CPU cores, 14 processes: HBCT and its baselines at 12,000 steps (ext-class, ext-data), 8 seeds.
# Each chunk starts from the run folder carried in .device/ and everything it adds comes back under $OUT, shared
# models included (a cell cut off by the budget loses only its unfinished model), as tar parts of at most 15 MB:
#   cat tin.tgz.* | tar -xz -C RUN_FOLDER
#
# Prepared here, in the ignored folder .device/ (carried): whl/ (geoopt, pydantic, pydantic-core, annotated-types,
# typing-inspection as wheels for Python 3.12), data/tiny-imagenet-200-r300.zip (the 50 classes the table uses, in
# the official layout), the run folders tin/ and hbct12k/ (cells/ and models/ of the runs so far), cache/ (this
# machine's dataset cache files that the chunks read, from the `cache hit` lines of a `--dry-run`) and MANIFEST
# (`python studies/cpu-scale/stamp_commit.py manifest`). The cache matters: the lease machine's torch renders the
# embedded images with other bytes, so its cells would be keyed to other data and could not join this machine's
# tables (a seed's methods are paired on one old model and one dataset).
set -uo pipefail
BUDGET=${1:-420}  # seconds for the grids
HBCT_SET=hbct,hbct-no-entail,independent,l2,bct,hot-refresh,advbct,hoc-euclidean
export PYTHONPATH=/tmp/site HOME=/tmp/bbc-home PYTHONUNBUFFERED=1
if ! command -v benchbackcompat >/dev/null; then  # installed by an earlier call on this machine?
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/whl/*.whl || exit 1
    python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
    python3 studies/cpu-scale/stamp_commit.py stamp .device/MANIFEST || exit 1
    mkdir -p "$HOME/.cache/benchbackcompat" && cp .device/cache/* "$HOME/.cache/benchbackcompat/"
    nvidia-smi -L
    # the README's main command, and the tests of the CUDA paths, beside the grids
    (cd /tmp && timeout 300 benchbackcompat run --scenario both --methods hbct,hoc --out /tmp/smoke) > "$OUT/smoke.log" 2>&1 &
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_data_augment.py tests/test_speed.py > "$OUT/tests.log" 2>&1 &
fi
grid() {  # NAME DEVICE WORKERS ARGS...: resume run folder .device/NAME under the budget, its log in $OUT
    local name=$1 device=$2 workers=$3
    shift 3
    timeout -k 30 "$BUDGET" benchbackcompat run --preset cpu --device "$device" --workers "$workers" --no-progress \
        --out ".device/$name" "$@" > "$OUT/$name.log" 2>&1
    echo "$name: exit $?"
}
grid tin cuda 1 --scenario ext-class-tin32 --methods "$HBCT_SET" --seeds 0-7 --data-root .device/data &
grid hbct12k cpu 14 --scenario ext-class,ext-data --methods "$HBCT_SET" --seeds 0-7 --set train.min_steps=12000 &
wait
for name in tin hbct12k; do
    tar -czf - -C ".device/$name" --exclude=locks . | split -b 15M - "$OUT/$name.tgz."
    benchbackcompat status --results ".device/$name" 2>&1 | tail -n 3
done
