#!/usr/bin/env bash
# End-to-end: the real trainyard binary simulates a small trace, writes the report and plots,
# and refuses bad input with a located message and exit code 2.
set -uo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/cluster.yaml" <<'Y'
pools:
  - name: a
    gpu: A100-80GB
    gpusPerNode: 8
    nodes: 2
Y
head -401 "$src/tests/data/philly-sample.csv" >"$tmp/trace.csv"
"$bin" simulate --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --plot --out "$tmp/out" \
  >"$tmp/stdout" 2>"$tmp/stderr" || fail "simulate exited $? : $(cat "$tmp/stderr")"
for p in fifo backfill srtf tiresias fair priority; do
  grep -qE "^$p " "$tmp/stdout" || fail "no table row for $p"
  [ -s "$tmp/out/jobs-$p.csv" ] || fail "no jobs-$p.csv"
  [ "$(wc -l <"$tmp/out/jobs-$p.csv")" -eq 401 ] || fail "jobs-$p.csv should have 400 jobs"
done
for f in summary.json jct-cdf.svg gpu-allocation.svg queue-length.svg; do
  [ -s "$tmp/out/$f" ] || fail "missing $f"
done
grep -q '"fifo"' "$tmp/out/summary.json" || fail "summary.json lacks fifo"

# Bad cluster file: located error, exit 2.
printf 'pools:\n  - name: a\n    gpu: H100\n    gpusPerNode: eight\n    nodes: 1\n' >"$tmp/bad.yaml"
"$bin" simulate --trace "$tmp/trace.csv" --cluster "$tmp/bad.yaml" --out "$tmp/o2" 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad cluster should exit 2"
grep -q "bad.yaml:4:18: pools\[0\].gpusPerNode must be a whole number" "$tmp/err" || fail "unlocated error: $(cat "$tmp/err")"

# Bad trace row: file:line:column, and --skip-bad-rows counts it.
{ head -3 "$tmp/trace.csv"; echo "2017-10-09 07:01:55,abc,1,1.0,11cb48"; } >"$tmp/badtrace.csv"
"$bin" simulate --trace "$tmp/badtrace.csv" --cluster "$tmp/cluster.yaml" --out "$tmp/o3" 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad trace should exit 2"
grep -q "badtrace.csv:4:2: column 'duration': expected a number, got 'abc'" "$tmp/err" || fail "trace error: $(cat "$tmp/err")"
"$bin" simulate --trace "$tmp/badtrace.csv" --cluster "$tmp/cluster.yaml" --skip-bad-rows --policy fifo \
  --out "$tmp/o4" >/dev/null 2>"$tmp/err" || fail "--skip-bad-rows should succeed"
grep -q "1 bad rows skipped" "$tmp/err" || fail "skipped rows not reported"

# Unknown policy.
"$bin" simulate --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --policy lottery 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown policy should exit 2"
grep -q "unknown policy 'lottery'" "$tmp/err" || fail "policy error: $(cat "$tmp/err")"
echo "simulate smoke test passed"
