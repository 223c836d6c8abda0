#!/usr/bin/env bash
# End-to-end: `trainyard simulate` on a cloud cluster runs the four capacity scenarios side by
# side on catalog prices, with a seeded rate and with replayed spot traces; the showback equals
# the bill; the sensitivity table has a row per rate; a bad rate is refused with exit code 2.
set -uo pipefail
bin=$1
src=$2
shared=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

head -201 "$src/tests/data/philly-sample.csv" >"$tmp/trace.csv"
"$bin" simulate --trace "$tmp/trace.csv" --cluster "$src/examples/clusters/cloud-v100.yaml" \
  --catalog "$shared/catalog" --throughputs "$shared/traces/gavel/simulation_throughputs.json" \
  --rates 0.01,0.5 --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr" ||
  fail "simulate exited $?: $(cat "$tmp/stderr")"
cat "$tmp/stdout"
for s in on-demand spot-restart spot-young mixed; do
  grep -qE "^$s " "$tmp/stdout" || fail "no table row for $s"
  [ -s "$tmp/out/cost-$s.csv" ] || fail "no cost-$s.csv"
done
grep -q "showback (jobs + idle) equals the bill in every scenario" "$tmp/stdout" || fail "books"
grep -qE "^0\.010 " "$tmp/stdout" && grep -qE "^0\.500 " "$tmp/stdout" || fail "sensitivity rows"
for f in cost-summary.json cost-over-time.svg fleet-size.svg; do
  [ -s "$tmp/out/$f" ] || fail "missing $f"
done
# on-demand is never interrupted; the spot scenarios are.
awk '$1=="on-demand" && $11!=0 {exit 1}' "$tmp/stdout" || fail "on-demand was interrupted"

trace="$shared/traces/spot/skypilot-spot-traces/preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json"
"$bin" simulate --trace "$tmp/trace.csv" --cluster "$src/examples/clusters/cloud-v100.yaml" \
  --catalog "$shared/catalog" --throughputs "" --spot-trace "$trace" --out "$tmp/out2" >"$tmp/stdout2" \
  2>"$tmp/stderr" || fail "replay exited $?: $(cat "$tmp/stderr")"
grep -q "spot reclaims replayed from" "$tmp/stdout2" || fail "replay not named"
grep -q "equals the bill" "$tmp/stdout2" || fail "books (replay)"
# Bamboo's GCP count series (a .txt), told apart by content.
"$bin" simulate --trace "$tmp/trace.csv" --cluster "$src/examples/clusters/cloud-v100.yaml" \
  --catalog "$shared/catalog" --throughputs "" --scenarios spot-young --rates "" \
  --spot-trace "$src/tests/data/bamboo-gcp-sample.txt" --out "$tmp/out4" >"$tmp/stdout4" \
  2>"$tmp/stderr" || fail "GCP replay exited $?: $(cat "$tmp/stderr")"
grep -q "replayed from .*bamboo-gcp-sample.txt" "$tmp/stdout4" || fail "GCP replay not named"

"$bin" simulate --trace "$tmp/trace.csv" --cluster "$src/examples/clusters/cloud-v100.yaml" \
  --catalog "$shared/catalog" --throughputs "" --rates 0.1,fast --out "$tmp/o3" 2>"$tmp/err"
[ $? -eq 2 ] || fail "a bad rate should exit 2"
grep -q "'fast' is not a rate" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"
echo "ok"
