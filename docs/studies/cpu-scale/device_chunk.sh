#!/usr/bin/env bash
# One GPU lease (one command of at most 10 minutes, on a copy of a clean checkout with no git): install and record
# the commit, smoke-test the README's main command and the CUDA code paths on the GPU, then run the next resumable
# chunk of the TinyImageNet table into WORK on the machine's 16 CPU cores: its convnet-m at batch 32 is launch-bound
# on a GPU (12 cells sharing one H100 finished only their old models in 12 minutes). Called again on the same
# machine, it resumes. What comes back, under $OUT: the finished records (tin.tgz, no model files) and the logs.
#
# Prepared here, in the ignored folder .device/ (carried): whl/ (geoopt, pydantic, pydantic-core, annotated-types,
# typing-inspection as wheels for Python 3.12), data/tiny-imagenet-200-r300.zip (the 50 classes the table uses, in
# the official layout) and MANIFEST (`python docs/studies/cpu-scale/stamp_commit.py manifest`).
set -uo pipefail
BUDGET=${1:-420}  # seconds for the grid
WORK=${WORK:-/tmp/bbc-tin}
HBCT_SET=hbct,hbct-no-entail,independent,l2,bct,hot-refresh,advbct,hoc-euclidean
export PYTHONPATH=/tmp/site HOME=/tmp/bbc-home PYTHONUNBUFFERED=1
if ! command -v benchbackcompat >/dev/null; then  # installed by an earlier call on this machine?
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/whl/*.whl || exit 1
    python3 -m pip install -q --no-index --no-deps --no-build-isolation . || exit 1
    python3 docs/studies/cpu-scale/stamp_commit.py stamp .device/MANIFEST || exit 1
    nvidia-smi -L
    # the README's main command, and the tests of the CUDA paths, beside the grid
    (cd /tmp && timeout 300 benchbackcompat run --scenario both --methods hbct,hoc --out /tmp/smoke) > "$OUT/smoke.log" 2>&1 &
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_data_augment.py tests/test_speed.py > "$OUT/tests.log" 2>&1 &
fi
timeout -k 30 "$BUDGET" benchbackcompat run --preset cpu --scenario ext-class-tin32 --methods "$HBCT_SET" \
    --seeds 0,1,2 --device cpu --workers 15 --data-root .device/data --out "$WORK" > "$OUT/tin.log" 2>&1
echo "grid exit $?"
tar -czf "$OUT/tin.tgz" -C "$WORK" --exclude=models --exclude=locks .
wait
benchbackcompat status --results "$WORK" 2>&1 | tail -n 4
