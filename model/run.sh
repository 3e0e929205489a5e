#!/usr/bin/env bash
# Checks the SPIN models of the cross-process waiting protocol (model/waiting.pml) and of
# readers and writers on one lock item (model/read-write.pml), see model/README.md. Every
# configuration marked "pass" must verify without an error; every broken variant marked "fail"
# must be caught (so the checks are known to bite). Exits non-zero on any other outcome.
#
# Usage: model/run.sh [--deep] [--jobs N] [--keep] [name ...]
#   --deep    also run the larger configurations (minutes; not part of `npm run model`)
#   --jobs N  verifiers run at once (default: 2, at most the number of CPUs)
#   --keep    keep the work directory (pan sources, trails)
#   name ...  run only these configurations
# Needs spin (Debian package `spin`) and a C compiler.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

deep=0 keep=0 jobs=2
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --deep) deep=1 ;;
    --keep) keep=1 ;;
    --jobs) jobs="$2"; shift ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) only+=("$1") ;;
  esac
  shift
done
cpus=$(nproc 2>/dev/null || echo 1)
[ "$jobs" -gt "$cpus" ] && jobs=$cpus
[ "$jobs" -lt 1 ] && jobs=1

for tool in spin gcc; do
  command -v "$tool" >/dev/null 2>&1 || { echo "model: '$tool' is missing (apt-get install spin gcc libc6-dev)" >&2; exit 2; }
done

# name | kind (safety: assertions and end states; live: the LTL property under weak fairness) |
# expected outcome | macros | what it shows
configs=(
  "safety-2p|safety|pass|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=1 -DABANDONS=1 -DHANDOVERS=1|2 processes x 2 acquisitions; a lost answer, a late duplicate write, a waiter giving up (it leaves the line), a hand-over; pauses anywhere"
  "safety-2p-leases|safety|pass|-DN=2 -DROUNDS=2 -DL0=2 -DL1=4 -DLOSS=1 -DDUPS=1 -DABANDONS=1|as above with leases of 2 and 4 ticks (the watcher uses the holder's lease)"
  "safety-3p-loss|safety|pass|-DN=3 -DROUNDS=1 -DLOSS=1 -DDUPS=0 -DABANDONS=1|3 processes; a lost answer (any write, the leave and the pass of left tickets too), a waiter leaving; pauses anywhere"
  "safety-3p-dup|safety|pass|-DN=3 -DROUNDS=1 -DLOSS=0 -DDUPS=1 -DABANDONS=1|3 processes; a late duplicate write (ghost ticket, ghost holder, or a leave), a waiter leaving"
  "safety-2p-leave|safety|pass|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=1 -DABANDONS=2 -DTAKEOVERS=1|2 processes x 2 acquisitions; two waiters leaving, a lost answer or a late copy of any write (a leave's too), a later caller taking over a ticket that may have left; a set of 1"
  "safety-3p-leave|safety|pass|-DN=3 -DROUNDS=1 -DLOSS=0 -DDUPS=1 -DABANDONS=2 -DLEFT_MAX=2|3 processes, two leaving: a run of left tickets passed in one write, a pass from an old view; a set of 2"
  "safety-3p-leave-full|safety|pass|-DN=3 -DROUNDS=1 -DLOSS=0 -DDUPS=1 -DABANDONS=2 -DLEFT_MAX=1|3 processes, two leaving, a set of 1: the second leave refused (full), its waiter quiet"
  "live-2p|live|pass|-DN=2 -DROUNDS=2 -DTOKS=5 -DMAXT=9 -DLOSS=1 -DDUPS=1 -DABANDONS=1 -DHANDOVERS=1|every waiter is served: 2 processes x 2 acquisitions, no crash, no pause past a tick; a left head is never passed as silent"
  "live-3p|live|pass|-DN=3 -DROUNDS=1 -DLOSS=1 -DDUPS=1 -DABANDONS=1|every waiter is served: 3 processes, no crash, no pause past a tick; a left head is never passed as silent"
  "live-2p-leave|live|pass|-DN=2 -DROUNDS=2 -DTOKS=5 -DMAXT=9 -DLOSS=1 -DDUPS=1 -DABANDONS=2 -DTAKEOVERS=1 -DHANDOVERS=1|as live-2p with two waiters leaving and a later caller taking over a ticket that may have left"
  "live-3p-leave|live|pass|-DN=3 -DROUNDS=1 -DLOSS=1 -DDUPS=1 -DABANDONS=2 -DLEFT_MAX=2|as live-3p with two waiters leaving (a run of left tickets), a set of 2"
  "bug-lease-from-head-read|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=0 -DBUG_LEASE_FROM_HEAD_READ|broken: a promoted head counts its lease from the read that showed it head"
  "bug-enqueue-head-from-send|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=0 -DBUG_ENQ_HEAD_FROM_SEND|broken: an enqueue that finds the item free counts the lease from its own send"
  "bug-skip-without-rvn|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=0 -DBUG_SKIP_NO_RVN|broken: the skip is conditioned on head and tail, not on the record version"
  "bug-unclaimed-head-not-watched|live|fail|-DN=2 -DROUNDS=2 -DTOKS=4 -DMAXT=8 -DLOSS=0 -DDUPS=1 -DABANDONS=0 -DBUG_NO_SKIP_UNCLAIMED|broken: nobody skips a head that never claims (a ghost ticket blocks the queue)"
  "bug-eventual-refreshes-view|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=0 -DBUG_EVENTUAL_REFRESHES_VIEW|broken: an eventually consistent read showing another head counts as a recent answer (an old copy refreshes a promoted lease)"
  "finding-ticket-misattribution|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=0 -DABANDONS=0 -DFINDING_TICKET_MISATTRIBUTION|finding (README): a retried enqueue adopts a free acquirer's ticket; if it answers the roll-call, that ticket is granted twice"
  "finding-ticket-misattribution-fixed|safety|pass|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=1 -DABANDONS=0 -DFINDING_TICKET_MISATTRIBUTION -DFIX_FREE_SETS_TAILTOKEN|the same with the fix: a free acquire also sets tailToken"
  "bug-leave-held-by-ticket|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=0 -DABANDONS=1 -DBUG_LEAVE_HELD_BY_TICKET|broken: holding by ticket (the write's condition and the waiter's view) ignores left"
  "bug-leave-at-head|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=1 -DBUG_LEAVE_AT_HEAD|broken: a leave lands on the ticket head serves (head <= ticket)"
  "bug-skip-before-pass-left|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=1 -DBUG_SKIP_BEFORE_PASS_LEFT|broken: a waiter that sees the head left waits for it as for a silent head (the pass of a silent head comes first)"
  "bug-pass-left-keeps-version|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=0 -DABANDONS=1 -DBUG_PASS_LEFT_KEEPS_RVN|broken: the pass of left tickets keeps the record version"
  "bug-pass-left-no-head-check|safety|fail|-DN=2 -DROUNDS=2 -DLOSS=0 -DDUPS=0 -DABANDONS=1 -DBUG_PASS_LEFT_NO_HEAD_CHECK|broken: the pass of left tickets is conditioned on no token only, not on the head it saw"
)
# Readers and writers (model/read-write.pml): 1 writer and 2 readers unless said, every reader
# 1 acquisition in safety runs, for ever in liveness runs.
rw_configs=(
  "rw-safety|safety|pass|-DNW=1 -DNR=2 -DLOSS=1 -DDUPS=1|1 writer, 2 readers: a lost answer (start, join or release), a late copy of a start or join (a ghost entry); pauses anywhere"
  "rw-safety-leases|safety|pass|-DNW=1 -DNR=2 -DLR0=2 -DLR1=4 -DLOSS=1 -DDUPS=1|as rw-safety with reader leases of 2 and 4 ticks (the group lease is the largest)"
  "rw-safety-2w|safety|pass|-DNW=2 -DNR=1 -DLOSS=1 -DDUPS=1|2 writers, 1 reader: a group between writers, a writer passing a silent group or writer"
  "cover-readers-overlap|safety|fail|-DNW=1 -DNR=2 -DLOSS=0 -DDUPS=0 -DCOVER_READERS_OVERLAP|reachability: asserting that two readers never hold at once must fail (readers do share)"
  "rw-live-writer|live|pass|-DNW=1 -DNR=2 -DWROUNDS=2 -DRROUNDS=0 -DLOSS=0 -DDUPS=0|writer preference: a writer that wants the lock holds (twice) while 2 readers re-acquire for ever"
  "rw-live-writer-crash|live|pass|-DNW=1 -DNR=2 -DWROUNDS=1 -DRROUNDS=0 -DLOSS=1 -DDUPS=0 -DCRASHES=1|as rw-live-writer with a reader crashing while it holds, and a lost answer"
  "bug-rw-join-ignores-line|live|fail|-DNW=1 -DNR=2 -DRROUNDS=0 -DLOSS=0 -DDUPS=0 -DBUG_RW_JOIN_IGNORES_LINE|broken: a join not conditioned on head and tail as seen (a waiting writer does not block it): the writer starves"
  "bug-rw-join-while-writer|safety|fail|-DNW=1 -DNR=2 -DLOSS=0 -DDUPS=0 -DBUG_RW_JOIN_WHILE_WRITER|broken: a join not conditioned on token = R (a reader joins a writer that holds)"
  "bug-rw-pass-without-version|safety|fail|-DNW=1 -DNR=2 -DLOSS=0 -DDUPS=0 -DBUG_RW_PASS_WITHOUT_VERSION|broken: the pass of a dead reader entry conditioned on its presence, not its version"
  "bug-rw-heartbeat-keeps-rvn|safety|fail|-DNW=1 -DNR=2 -DLOSS=0 -DDUPS=0 -DBUG_RW_HEARTBEAT_KEEPS_RVN|broken: a reader heartbeat keeps the record version (a writer passes a live group)"
  "bug-rw-group-lease-not-max|safety|fail|-DNW=1 -DNR=2 -DLR0=4 -DLR1=2 -DLOSS=0 -DDUPS=0 -DBUG_RW_GROUP_LEASE_NOT_MAX|broken: the group lease is the last reader write's, not the largest (leases 4 and 2)"
  "rw-live-readers-dead-writer|live|pass|-DNW=1 -DNR=2 -DRROUNDS=1 -DLOSS=0 -DDUPS=0 -DWCRASHES=1 -DLIVE_READERS|a writer crashes while it holds or waits; no other writer comes: the readers pass it (the mutex skip, one ticket on) and hold"
  "bug-rw-reader-never-passes-writer|live|fail|-DNW=1 -DNR=2 -DRROUNDS=1 -DLOSS=0 -DDUPS=0 -DWCRASHES=1 -DLIVE_READERS -DBUG_RW_READER_NEVER_PASSES_WRITER|broken (the finding of README): readers never pass a silent writer: they poll for ever behind a dead one"
)
rw_deep_configs=(
  "deep-rw-2rounds|safety|pass|-DNW=1 -DNR=2 -DRROUNDS=2 -DLOSS=0 -DDUPS=1|1 writer, 2 readers x 2 acquisitions, a late copy (a ghost entry of an older acquisition)"
  "deep-rw-safety-dups|safety|pass|-DNW=1 -DNR=2 -DLOSS=1 -DDUPS=1 -DWCRASHES=1|rw-safety with a writer crash, a lost answer and a late copy"
  "deep-rw-live-writer-dup|live|pass|-DNW=1 -DNR=2 -DWROUNDS=1 -DRROUNDS=0 -DLOSS=0 -DDUPS=1 -DCRASHES=1|writer preference with a reader crash and a late copy (a ghost entry or group)"
)
declare -A model_of=()
for c in "${rw_configs[@]}" "${rw_deep_configs[@]}"; do model_of[${c%%|*}]=read-write.pml; done
deep_configs=(
  "deep-3p-all|safety|pass|-DN=3 -DROUNDS=1 -DLOSS=1 -DDUPS=1 -DABANDONS=1|3 processes; a lost answer, a late duplicate and a waiter giving up in one run"
  "deep-3p-2rounds|safety|pass|-DN=3 -DROUNDS=2 -DTOKS=4 -DLOSS=0 -DDUPS=0 -DABANDONS=1|3 processes x 2 acquisitions, a waiter giving up"
  "deep-live-3p-2rounds|live|pass|-DN=3 -DROUNDS=2 -DTOKS=5 -DMAXT=9 -DLOSS=1 -DDUPS=1 -DABANDONS=1|every waiter is served: 3 processes x 2 acquisitions"
  "deep-3p-2rounds-leave|safety|pass|-DN=3 -DROUNDS=2 -DTOKS=4 -DLOSS=0 -DDUPS=1 -DABANDONS=2 -DTAKEOVERS=1 -DLEFT_MAX=1|3 processes x 2 acquisitions, two leaving, a take-over: a late copy of a refused leave lands once the set has room"
  "deep-pass-left-without-no-token|safety|pass|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=1 -DABANDONS=2 -DTAKEOVERS=1 -DDROP_PASS_LEFT_NO_TOKEN|safety-2p-leave with the pass of left tickets not conditioned on no token (README: implied)"
  "deep-pass-left-without-in-left|safety|pass|-DN=2 -DROUNDS=2 -DLOSS=1 -DDUPS=1 -DABANDONS=2 -DTAKEOVERS=1 -DDROP_PASS_LEFT_IN_LEFT|safety-2p-leave with the pass of left tickets not conditioned on the tickets passed being in left (README: implied)"
)
# Searches of more than about 5 s (compiled with more optimisation, see run_one).
declare -A long_search=([safety-2p]=1 [safety-2p-leases]=1 [safety-3p-loss]=1 [safety-2p-leave]=1
  [deep-3p-all]=1 [deep-3p-2rounds]=1 [deep-live-3p-2rounds]=1 [deep-3p-2rounds-leave]=1
  [deep-pass-left-without-no-token]=1 [deep-pass-left-without-in-left]=1
  [rw-safety]=1 [rw-safety-leases]=1 [deep-rw-2rounds]=1 [deep-rw-safety-dups]=1 [deep-rw-live-writer-dup]=1)
configs+=("${rw_configs[@]}")
deep_configs+=("${rw_deep_configs[@]}")
[ "$deep" -eq 1 ] && configs+=("${deep_configs[@]}")
if [ ${#only[@]} -gt 0 ]; then
  selected=()
  for c in "${configs[@]}" "${deep_configs[@]}"; do
    for n in "${only[@]}"; do [ "${c%%|*}" = "$n" ] && selected+=("$c"); done
  done
  [ ${#selected[@]} -gt 0 ] || { echo "model: no configuration named ${only[*]}" >&2; exit 2; }
  configs=("${selected[@]}")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dynamo-lock-model.XXXXXX")
if [ "$keep" -eq 1 ]; then echo "model: work directory $work"; else trap 'rm -rf "$work"' EXIT; fi

now_ms() { date +%s%3N; }

# The trail of a counterexample, one line per protocol step, with true time in ticks.
summarise_trail() {
  awk '
    /MSC: tick/ { t++; next }
    /MSC: / { sub(/^.*MSC: /, ""); gsub(/ +: /, ": "); printf("      t=%-3d %s\n", t, $0); next }
    /START OF CYCLE/ { printf("      t=%-3d -- from here the run repeats forever: time passes, nobody else is served --\n", t); next }
    /assertion violated/ { sub(/^[ \t]*/, ""); printf("      t=%-3d %s\n", t, $0); next }
  '
}

# Runs one configuration in its own directory; writes "result" (one line) and "details" there.
run_one() {
  local name=$1 kind=$2 expect=$3 defs=$4
  local dir="$work/$name" started rc outcome file=${model_of[$name]:-waiting.pml}
  mkdir -p "$dir"
  cp "$here/$file" "$dir/"
  started=$(now_ms)
  (
    cd "$dir"
    # Compiling pan.c (one huge function) costs more than most searches: broken variants (searched
    # for the shortest counterexample, tiny) are compiled without optimisation, small configurations
    # with -O1, the long searches with -O2 less the passes that take most of gcc's time on that
    # function (a few per cent slower searches, a third of the compile time).
    local live_def="" cflags="-DMEMLIM=6144" panflags="-m20000"
    if [ "$expect" = fail ]; then
      cflags="$cflags -O0"
    elif [ -n "${long_search[$name]:-}" ]; then
      cflags="$cflags -O2 -fno-gcse -fno-tree-pre -fno-tree-vrp -fno-tree-dominator-opts"
      # The deep ones need more states than MEMLIM holds uncompressed.
      case "$name" in deep-*) cflags="$cflags -DCOLLAPSE" ;; esac
    else
      cflags="$cflags -O1"
    fi
    if [ "$kind" = live ]; then
      live_def="-DLIVE"
      cflags="$cflags -DNFAIR=4"
      panflags="$panflags -a -f -w24"
    elif [ "$expect" = fail ]; then
      cflags="$cflags -DSAFETY -DREACH"
      panflags="$panflags -i -w20"
    else
      cflags="$cflags -DSAFETY"
      panflags="$panflags -w25"
    fi
    # shellcheck disable=SC2086
    spin -a $defs $live_def "$file" >spin.out 2>&1 || { echo "spin -a failed: $(head -3 spin.out)" >error; exit 0; }
    # shellcheck disable=SC2086
    gcc $cflags -o pan pan.c >gcc.out 2>&1 || { echo "gcc failed: $(head -3 gcc.out)" >error; exit 0; }
    rc=0
    # shellcheck disable=SC2086
    timeout "${MODEL_TIMEOUT:-300}" ./pan $panflags >pan.out 2>&1 || rc=$?
    [ "$rc" -eq 124 ] && echo "timed out after ${MODEL_TIMEOUT:-300} s" >error
    if [ -f "$file.trail" ]; then
      # shellcheck disable=SC2086
      spin -t $defs $live_def "$file" 2>&1 | summarise_trail >trail.txt || true
    fi
  )
  local secs states depth errors violation
  secs=$(awk -v a="$started" -v b="$(now_ms)" 'BEGIN { printf("%.1f", (b - a) / 1000) }')
  states=$(awk '/states, stored/ { print $1; exit }' "$dir/pan.out" 2>/dev/null || true)
  depth=$(grep -oE 'depth reached [0-9]+' "$dir/pan.out" 2>/dev/null | awk '{ print $3 }' | tail -1 || true)
  errors=$(grep -oE 'errors: [0-9]+' "$dir/pan.out" 2>/dev/null | awk '{ print $2 }' | tail -1 || true)
  # The last one found: the search for the shortest counterexample (-i) wrote its trail last.
  violation=$(grep -E '^pan:[0-9]+: .*(assertion violated|acceptance cycle|invalid end state|never claim)' "$dir/pan.out" 2>/dev/null |
    tail -1 | sed -E 's/^pan:[0-9]*: *//; s/ \(at depth [0-9]+\)//' || true)
  if [ -f "$dir/error" ]; then
    outcome="error: $(cat "$dir/error")"
  elif grep -qE 'max search depth too small|out of memory' "$dir/pan.out"; then
    outcome="error: $(grep -E 'max search depth too small|out of memory' "$dir/pan.out" | head -1)"
  elif [ "${errors:-0}" = 0 ] && grep -qE 'reached -DMEMLIM bound|Search not completed' "$dir/pan.out"; then
    # pan stops at the memory bound with "errors: 0": not a verification.
    outcome="error: search not completed ($(grep -oE 'reached -DMEMLIM bound|Search not completed' "$dir/pan.out" | head -1))"
  elif [ -z "$errors" ]; then
    outcome="error: no verdict from pan"
  elif [ "$errors" -eq 0 ]; then
    outcome="verified"
  else
    outcome="violated: ${violation:-error}"
  fi
  local stats
  stats=$(printf "%s states, depth %s, %s errors, %s s" "$(printf "%'d" "${states:-0}" 2>/dev/null || echo "${states:-?}")" "${depth:-?}" "${errors:-?}" "$secs")
  local verdict
  case "$expect:$outcome" in
    pass:verified) verdict="PASS  $name: verified ($stats)" ;;
    fail:violated*) verdict="PASS  $name: FAILS AS REQUIRED, ${outcome#violated: } (${stats/, $errors errors/})" ;;
    pass:violated*) verdict="FAIL  $name: must verify but SPIN found: ${outcome#violated: } ($stats)" ;;
    fail:verified) verdict="FAIL  $name: broken variant was NOT caught ($stats)" ;;
    *) verdict="FAIL  $name: $outcome ($stats)" ;;
  esac
  echo "$verdict" >"$dir/result"
}

total_started=$(now_ms)
echo "model: spin $(spin -V | awk '{ print $3 }'), ${#configs[@]} configurations, $jobs at a time"
running=0
for c in "${configs[@]}"; do
  IFS='|' read -r name kind expect defs _ <<<"$c"
  run_one "$name" "$kind" "$expect" "$defs" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
for c in "${configs[@]}"; do
  IFS='|' read -r name kind expect defs what <<<"$c"
  dir="$work/$name"
  result=$(cat "$dir/result" 2>/dev/null || echo "FAIL  $name: no result")
  echo "$result"
  echo "      [$kind] $what"
  case "$result" in FAIL*) failed=$((failed + 1)) ;; esac
  # Counterexamples: always for the broken variants (they prove the checks bite), and for any failure.
  if [ -s "$dir/trail.txt" ] && { [ "$expect" = fail ] || [ "${result%% *}" = FAIL ]; }; then
    echo "      counterexample (t = true time in ticks):"
    head -n 40 "$dir/trail.txt"
    [ "$(wc -l <"$dir/trail.txt")" -gt 40 ] && echo "      ... (run model/run.sh --keep $name for the whole trail)"
  fi
done
secs=$(awk -v a="$total_started" -v b="$(now_ms)" 'BEGIN { printf("%.1f", (b - a) / 1000) }')
if [ "$failed" -eq 0 ]; then
  echo "model: all ${#configs[@]} configurations as required (must-pass verified, broken variants caught) in $secs s"
else
  echo "model: $failed of ${#configs[@]} configurations NOT as required ($secs s)" >&2
  exit 1
fi
