#!/usr/bin/env bash
# The runtime audit's GPU evidence (issues 5 and 13; see docs/runtime.md): every ground-truth
# op under sync_audit(mode="record"), the audit's overheads, real clients with and without the
# audit plus `syncguard verify` on each, then the audit's own tests on this machine.
# Usage, from the repository root with syncguard importable (installed or on PYTHONPATH; the
# clients' verify step needs libcst, the clients timm, lightning and torch_geometric):
#   benchmarks/gpu_audit.sh OUT_DIR
# Writes OUT_DIR/{env.txt,audit_ops.txt,audit_overhead.txt,clients.json,clients.md,
# clients.log,pytest.txt}. Without CUDA the scripts fall back to CPU runs and say so.
set -uo pipefail
out="${1:?usage: benchmarks/gpu_audit.sh OUT_DIR}"
repo="$(pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Run from a scratch folder: from the repository root, Python would import the repository's
# syncguard/ folder (which has no runtime subpackage before installation) first.
work="$(mktemp -d)"
export PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  python3 -c 'import sys, torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  python3 -c 'import timm, lightning, torch_geometric as g; print("timm", timm.__version__, "lightning", lightning.__version__, "torch_geometric", g.__version__)'
} 2>&1 | tee "$out/env.txt"
(cd "$work" && python3 "$repo/benchmarks/audit_ops.py") 2>&1 | tee "$out/audit_ops.txt"
ops_rc=${PIPESTATUS[0]}
(cd "$work" && python3 "$repo/benchmarks/audit_overhead.py") 2>&1 | tee "$out/audit_overhead.txt"
overhead_rc=${PIPESTATUS[0]}
(cd "$work" && python3 "$repo/benchmarks/audit_clients.py" "$out") > "$out/clients.log" 2>&1
clients_rc=$?
tail -n 60 "$out/clients.log"
(cd "$work" && python3 -m pytest -q -p no:cacheprovider --import-mode=importlib \
  "$repo"/tests/runtime/test_audit_*.py) 2>&1 | tee "$out/pytest.txt"
tests_rc=${PIPESTATUS[0]}
echo "audit_ops rc=$ops_rc audit_overhead rc=$overhead_rc clients rc=$clients_rc tests rc=$tests_rc"
exit $(( ops_rc || overhead_rc || clients_rc || tests_rc ))
