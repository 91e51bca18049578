# The fault suite's framework, sourced by scripts/faults.sh: each case runs one command
# as a hostile or careless user would, and is scored on what it did.
#
#   fault NAME WANT_EXIT STDERR_ERE -- COMMAND...
#       Runs COMMAND (timeout $FAULT_TIMEOUT s, stdin /dev/null) in the case's own
#       directory $FD (made fresh, and the current directory while it runs). WANT_EXIT
#       is the exit the command must give; STDERR_ERE (grep -E, may be '') what its
#       stderr must say. Its stdout and stderr stay in $FD/out and $FD/err.
#   lost NAME REASON      after a case: the case lost recorded data.
#   half NAME REASON      after a case: the case left a half-written output.
#   unclear NAME REASON   after a case: what it said (or printed) is not what it must.
#   no_temporaries NAME DIR
#       after a case: `half` for every temporary output (.NAME.tmp-*) left in DIR.
#
# A case is scored: panic (stderr says "panicked"), hang (killed by the timeout),
# wrong exit (not WANT_EXIT), unclear (an expected error whose stderr does not match),
# and by `lost` / `half`; "as expected" when none of these. fault_table prints the
# summary and returns non-zero when any column but the first two is non-zero.

FAULT_TIMEOUT=${FAULT_TIMEOUT:-60}
FAULT_ROOT=${FAULT_ROOT:-$(mktemp -d)}
declare -a FAULT_NAMES=()
declare -A FAULT_STATUS=()

fault() {
    local name=$1 want=$2 re=$3
    shift 3
    [ "$1" = "--" ] && shift
    FD="$FAULT_ROOT/$name"
    rm -rf "$FD"
    mkdir -p "$FD"
    local rc=0
    (cd "$FD" && exec timeout -k 5 "$FAULT_TIMEOUT" "$@" </dev/null >"$FD/out" 2>"$FD/err") || rc=$?
    FAULT_NAMES+=("$name")
    local status=""
    if grep -q "panicked" "$FD/err" "$FD/out"; then status+=" panic"; fi
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        status+=" hang"
    elif [ "$rc" != "$want" ]; then
        status+=" wrong-exit($rc!=$want)"
    fi
    if [ -n "$re" ] && ! grep -Eq -- "$re" "$FD/err"; then status+=" unclear"; fi
    FAULT_STATUS[$name]=$status
}

lost() { FAULT_STATUS[$1]+=" lost(${2// /_})"; }
half() { FAULT_STATUS[$1]+=" half(${2// /_})"; }
unclear() { FAULT_STATUS[$1]+=" unclear(${2// /_})"; }

no_temporaries() {
    local name=$1 dir=$2 t
    for t in "$dir"/.*.tmp-* "$dir"/.overlap-tmp-*; do
        [ -e "$t" ] || [ -L "$t" ] || continue
        half "$name" "left $(basename "$t")"
    done
}

fault_table() {
    local n=0 ok=0 panic=0 hang=0 wrong=0 unclear=0 lostn=0 halfn=0 name s
    for name in "${FAULT_NAMES[@]}"; do
        s=${FAULT_STATUS[$name]}
        n=$((n + 1))
        [ -z "$s" ] && ok=$((ok + 1))
        [[ $s == *panic* ]] && panic=$((panic + 1))
        [[ $s == *hang* ]] && hang=$((hang + 1))
        [[ $s == *wrong-exit* ]] && wrong=$((wrong + 1))
        [[ $s == *unclear* ]] && unclear=$((unclear + 1))
        [[ $s == *lost* ]] && lostn=$((lostn + 1))
        [[ $s == *half* ]] && halfn=$((halfn + 1))
        printf '%-44s %s\n' "$name" "${s:- ok}"
    done
    echo
    printf '%6s %12s %6s %6s %11s %8s %10s %12s\n' cases "as expected" panic hang "wrong exit" unclear "data lost" half-written
    printf '%6d %12d %6d %6d %11d %8d %10d %12d\n' "$n" "$ok" "$panic" "$hang" "$wrong" "$unclear" "$lostn" "$halfn"
    [ $((panic + hang + wrong + unclear + lostn + halfn)) -eq 0 ]
}
