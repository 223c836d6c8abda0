#!/usr/bin/env bash
# End-to-end: the real trainyard binary replays a Slurm accounting trace (sacct --parsable2) on
# a cluster read from slurm.conf, reports what it did not replay, and refuses a bad row with
# file:line:column unless --skip-bad-rows.
set -uo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

trace="$src/tests/data/sacct-sample.txt"
conf="$src/examples/clusters/slurm.conf"
"$bin" simulate --trace "$trace" --cluster "$conf" --policy fifo,backfill --out "$tmp/out" \
  >"$tmp/stdout" 2>"$tmp/stderr" || fail "simulate exited $? : $(cat "$tmp/stderr")"
grep -q "14 jobs from" "$tmp/stderr" || fail "job count: $(cat "$tmp/stderr")"
grep -q "not replayed: 2 CPU-only jobs, 3 job steps, 1 never started, 3 still pending or running" \
  "$tmp/stderr" || fail "not-replayed counts: $(cat "$tmp/stderr")"
grep -q "7 nodes, 40 GPUs" "$tmp/stderr" || fail "cluster size: $(cat "$tmp/stderr")"
for p in fifo backfill; do
  grep -qE "^$p " "$tmp/stdout" || fail "no table row for $p"
  [ "$(wc -l <"$tmp/out/jobs-$p.csv")" -eq 15 ] || fail "jobs-$p.csv should have 14 jobs"
done
grep -q "unfinished" "$tmp/stdout" && fail "every sample job fits the example cluster"

# A bad row: located error and exit 2; --skip-bad-rows counts it.
{ cat "$trace"
  echo "2001|zoe|vision|gpu|2024-01-02T15:00:00|2024-01-02T15:00:00|2024-01-02T16:00:00|COMPLETED|gres/gpu=lots||01:00:00|1"
} >"$tmp/bad.txt"
"$bin" simulate --trace "$tmp/bad.txt" --cluster "$conf" --policy fifo --out "$tmp/o2" 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad row should exit 2"
grep -q "bad.txt:25:9: column 'AllocTRES': expected a GPU count" "$tmp/err" || fail "row error: $(cat "$tmp/err")"
"$bin" simulate --trace "$tmp/bad.txt" --cluster "$conf" --skip-bad-rows --policy fifo \
  --out "$tmp/o3" >/dev/null 2>"$tmp/err" || fail "--skip-bad-rows should succeed: $(cat "$tmp/err")"
grep -q "14 jobs from .* (1 bad rows skipped)" "$tmp/err" || fail "skipped row not reported: $(cat "$tmp/err")"

# slurm.conf errors: an unmapped GRES type says how to map it, and the mapping works.
printf 'NodeName=m[1-2] Gres=gpu:mi250:8 CPUs=64\n' >"$tmp/amd.conf"
"$bin" simulate --trace "$trace" --cluster "$tmp/amd.conf" --out "$tmp/o4" 2>"$tmp/err"
[ $? -eq 2 ] || fail "unmapped GRES type should exit 2"
grep -q "amd.conf:1: NodeName=m\[1-2\]: GRES type 'mi250' has no mapping" "$tmp/err" || fail "gres error: $(cat "$tmp/err")"
"$bin" simulate --trace "$trace" --cluster "$tmp/amd.conf" --slurm-gres-map mi250=A100-80GB \
  --policy fifo --allow-unfinished --out "$tmp/o5" >/dev/null 2>"$tmp/err" || fail "--slurm-gres-map: $(cat "$tmp/err")"
echo "simulate slurm smoke test passed"
