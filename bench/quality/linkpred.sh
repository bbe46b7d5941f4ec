#!/bin/sh
# The recommendation-quality table of the README: held-out link prediction on the four real
# graphs, 5 seeds each, hiding 10% of the edges, 1,000 sampled users per seed. Reports go to
# bench/results/linkpred-*.{md,json}. Run bench/quality/data/fetch.sh first. Runs at low priority.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
data="$root/bench/quality/data"
out="$root/bench/results"
relgraph="nice -n 15 node $root/dist/src/cli/main.js eval linkpred --seeds 5 --hide 0.1 --k 10 --users ${USERS:-1000}"
mkdir -p "$out"
for name in email-Enron hep-th pgp-strong-2009 cond-mat-2005; do
  $relgraph --data "$data/$name.jsonl" --json "$out/linkpred-$name.json" | tee "$out/linkpred-$name.md"
done
$relgraph --follows --data "$data/nostr.jsonl" --json "$out/linkpred-nostr.json" | tee "$out/linkpred-nostr.md"
