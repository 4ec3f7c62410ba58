#!/usr/bin/env bash
# One whole-workflow run at scale, recorded: `make run CONFIG=...` under /usr/bin/time -v and
# bench/process_rss.py (every process and the local servers sampled), then bench/scale_run.py
# appends its stage times, plans and memory to bench/results/scale_runs.md (+ .json).
#
#   bench/scale_series.sh CONFIG LABEL [NOTE]
#
# The run's raw files (Snakemake log copy, time report, sampled RSS) go to data/scale-logs/.
# Run it alone on the machine: the record is only as good as the machine's quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
config=$1 label=$2 note=${3:-}
stamp=$(date -u +%Y%m%dT%H%M%S)
logs=data/scale-logs/$stamp
mkdir -p "$logs"
before=$(ls -1t .snakemake/log/*.snakemake.log 2>/dev/null | head -1 || true)
echo "scale run '$label' ($config) starting $(date -u +%H:%M:%S); logs in $logs" >&2
status=0
.venv/bin/python bench/process_rss.py --out "$logs/rss.json" -- \
  /usr/bin/time -v -o "$logs/time.txt" make run CONFIG="$config" >"$logs/make.log" 2>&1 || status=$?
# `|| true`: with pipefail, ls killed by SIGPIPE once head has its line (a listing longer than
# ls's first write, ~130 logs) would end the script here, the run done but not recorded
after=$(ls -1t .snakemake/log/*.snakemake.log 2>/dev/null | head -1 || true)
if [[ $status -ne 0 || "$after" == "$before" ]]; then
  echo "make run failed ($status); see $logs/make.log" >&2
  tail -30 "$logs/make.log" >&2
  exit 1
fi
cp "$after" "$logs/snakemake.log"
results=$(.venv/bin/python -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['results_dir'])" "$config")
build=$(readlink -f "$results/latest")
.venv/bin/python bench/scale_run.py --log "$logs/snakemake.log" --build "$build" --label "$label" \
  --time "$logs/time.txt" --sampled "$logs/rss.json" --note "$note"
echo "scale run '$label' done $(date -u +%H:%M:%S): build $(basename "$build")" >&2
