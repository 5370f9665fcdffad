#!/bin/bash
# The replay runs that are made again after a change to the fingerprinted code that should not move
# a figure ("Which code made which runs" in docs/benchmarks.md): the 255 load-100 runs (the engine
# and every baseline, plain and EASY, of the three variants) and the engine's 5 shipped-200 runs.
#
#     benchmarks/replay_sample.sh /tmp/fresh              # about 25 minutes on 2 cores
#     .venv/bin/python benchmarks/replay_restamp.py /tmp/fresh/runs docs/replay-results/runs [--stamp]
#
# Kept runs already under FRESH/runs are read back, not made again (`--runs-dir`), so a run cut
# short resumes; remove FRESH first to make every run anew.
set -euo pipefail
fresh=${1:?usage: benchmarks/replay_sample.sh FRESH_DIR}
cd "$(dirname "$0")/.."
T=${TRACES:-../shared/traces}
replay() {
  .venv/bin/mcsched replay --pods "$T/openb_pod_list_default.csv" --nodes "$T/openb_node_list_gpu_node.csv" \
    --fleet "$T/openb_fleet_split.csv" --scale 0.1 --seeds 5 --jobs 2 --format json "$@" > /dev/null
}
for v in shipped constrained multi-gpu; do
  replay --load 100 --policy all --variant "$v" --runs-dir "$fresh/runs/$v-100"
  replay --load 100 --policy all --variant "$v" --baseline-backfill --runs-dir "$fresh/runs/$v-100"
done
replay --load 200 --policy mcsched --variant shipped --runs-dir "$fresh/runs/shipped-200"
echo "$(find "$fresh/runs" -name '*-seed*.json' | wc -l) runs under $fresh/runs"
