#!/usr/bin/env bash
# What the GPU run of the reference fixes executes (issue 6; see docs/fixes.md).
# Usage, from the repository root with syncguard importable (installed or on PYTHONPATH):
#   benchmarks/gpu_fixes.sh OUT_DIR
# Writes OUT_DIR/{env.txt,pytest.txt,bench.txt,fixes.json,fixes.png,breakdown.txt}.
set -uo pipefail
out="${1:?usage: benchmarks/gpu_fixes.sh OUT_DIR}"
repo="$(pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Run Python from a scratch folder: from the repository root, `python3 -m` would put the
# repository's syncguard/ folder (no runtime subpackage before installation) on sys.path
# first; the scratch folder also keeps pytest's and hypothesis's caches out of OUT_DIR.
work="$(mktemp -d)"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} 2>&1 | tee "$out/env.txt"
(cd "$work" && python3 -m pytest -q -p no:cacheprovider -p no:syncguard --import-mode=importlib \
  "$repo/tests/runtime/test_reference.py") 2>&1 | tee "$out/pytest.txt"
tests_rc=${PIPESTATUS[0]}
(cd "$work" && python3 -m syncguard.runtime.bench --json "$out/fixes.json") 2>&1 \
  | tee "$out/bench.txt"
bench_rc=${PIPESTATUS[0]}
python3 "$repo/benchmarks/plot_fixes.py" "$out/fixes.json" "$out/fixes.png"
(cd "$work" && python3 "$repo/benchmarks/mapping_breakdown.py") 2>&1 | tee "$out/breakdown.txt"
breakdown_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc breakdown rc=$breakdown_rc"
exit $(( tests_rc || bench_rc || breakdown_rc ))
