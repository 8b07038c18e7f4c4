#!/usr/bin/env bash
# The GPU check of one short device lease, in a few minutes (run from the repository root; results under $OUT):
#   1. the README's main command on the device, timed (wall and CPU seconds), with what `amp = "auto"` chose there
#      and the two rates it measured (its log lines);
#   2. the training step's throughput against the GPU's dense bf16 peak (benchmarks/throughput.py: ResNet-18 at
#      batch 128 and 512, FLOPs counted with torch.utils.flop_counter) and ours against a DataLoader pipeline;
#   3. the tests of the device code paths (augmentation on the device, precision choice, speed options).
# Without a GPU it runs the same on the CPU (step 2 then has no peak to compare with).
#   OUT=/tmp/out bash benchmarks/device_check.sh [DEVICE]
set -uo pipefail
DEVICE=${1:-auto}
OUT=${OUT:-/tmp/device-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
command -v benchbackcompat >/dev/null || python3 -m pip install -q -e ".[test]" > "$OUT/install.log" 2>&1 || exit 1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" | tee "$OUT/device.txt"
TIMEFORMAT="main command: wall %R s, user %U s, system %S s"
{ time timeout 300 benchbackcompat run --scenario both --methods hbct,hoc --device "$DEVICE" --out "$OUT/main" ; } \
    > "$OUT/main.log" 2>&1
grep -E "amp auto|main command|cells in" "$OUT/main.log"
timeout 240 python3 benchmarks/throughput.py --device "$DEVICE" --parts train --quick > "$OUT/throughput.log" 2>&1
tail -n 20 "$OUT/throughput.log"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_data_augment.py tests/test_speed.py > "$OUT/tests.log" 2>&1
tail -n 3 "$OUT/tests.log"
