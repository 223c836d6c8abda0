#!/usr/bin/env bash
# Errors of the command line itself: an unknown verb names the one meant (kubectl and Slurm
# habits, typos), and every parse error starts with "trainyard <verb>:" and exits 2.
# Usage: errors_smoke.sh TRAINYARD_BINARY
set -u
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

expect() {  # expect "args" exit-code "text that stderr must contain"
  local args=$1 code=$2 text=$3 err rc
  # shellcheck disable=SC2086
  err=$("$bin" $args 2>&1 >/dev/null)
  rc=$?
  [[ $rc == "$code" ]] || fail "trainyard $args: exit $rc, expected $code ($err)"
  [[ $err == *"$text"* ]] || fail "trainyard $args: stderr lacks '$text': $err"
}

expect "describe 3" 2 "trainyard: unknown command 'describe'; did you mean 'show'?"
expect "scancel 3" 2 "did you mean 'cancel'?"
expect "shwo 3" 2 "did you mean 'show'?"
expect "frobnicate" 2 "trainyard: unknown command 'frobnicate'"
expect "ls --bogus" 2 "trainyard ls: The following argument was not expected: --bogus"
expect "simulate --trace" 2 "trainyard simulate: --trace"
expect "simulate --trace synthetic:5 --cluster x.yaml --min-runtime -1" 2 "trainyard simulate: --min-runtime"
expect "" 2 "trainyard: A subcommand is required"
"$bin" --help >/dev/null || fail "--help exits non-zero"
"$bin" ls --help >/dev/null || fail "ls --help exits non-zero"
echo "errors_smoke: ok"
