#!/usr/bin/env bash
# Runs a set of bench/sdk_ddp_bench.py configurations side by side, each its own job, and keeps
# each report: for a machine with many cores or a GPU. The GPU numbers in docs/performance.md
# and docs/gpu-validation.md came from these two sets, on one H200, with --device cuda:
#   bench/sdk_ddp_sweep.sh ranks OUTDIR 380 python3 --device cuda   # 2 ranks, gloo
#   bench/sdk_ddp_sweep.sh long  OUTDIR 330 python3 --device cuda   # 1 process, long runs
# Usage: bench/sdk_ddp_sweep.sh SET OUTDIR LIMIT_S PYTHON [options for every job]. A job that
# runs past LIMIT_S is stopped; its report then holds the progress lines (rank 0's loss).
set -u
if [ $# -lt 4 ]; then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
set_name=$1 out=$2 limit=$3 py=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/../sdk/python${PYTHONPATH:+:$PYTHONPATH}"
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo}
lm="--task lm --steps 2000 --warmup 100 --decay cos"
case $set_name in
  ranks) JOBS=(
    "lm-sgd0.1-p5    $lm --start-iter 100 --powersgd-ranks 2,4"
    "lm-sgd0.3-p5    $lm --start-iter 100 --lr 0.3"
    "lm-adam-p5      $lm --start-iter 100 --optimizer adam --powersgd-ranks 2,4"
    "lm-sgd0.1-p10   $lm --start-iter 200"
    "learn-4000-p7.5 --task learn --steps 4000 --decay cos --start-iter 300"
    "learn-2000-p10  --task learn --steps 2000 --decay cos") ;;
  long) JOBS=(
    "learn8k    --one-process --task learn --steps 8000 --start-iter 400 --decay cos"
    "learn16k   --one-process --task learn --steps 16000 --start-iter 800 --decay cos"
    "lm-adam5k  --one-process --task lm --optimizer adam --steps 5000 --warmup 100 --start-iter 250 --decay cos"
    "lm-sgd5k   --one-process --task lm --steps 5000 --warmup 100 --start-iter 250 --decay cos") ;;
  *) echo "unknown set '$set_name': ranks or long" >&2; exit 2 ;;
esac
mkdir -p "$out"
pids=()
for j in "${JOBS[@]}"; do
  read -r name opts <<<"$j"
  # shellcheck disable=SC2086
  timeout "$limit" "$py" "$here/sdk_ddp_bench.py" $opts "$@" >"$out/$name.txt" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
for f in "$out"/*.txt; do
  echo "== $f"
  grep -E "^(loss check|bytes check|\| (SGD|Adam))" "$f" || tail -4 "$f"
done
exit $rc
