# The program unchanged by tracing, its time counted once (issue 37, "Nothing
# overwritten, nothing lost, the program unchanged"), sourced by scripts/faults.sh:
#
#   program-fork-child-exit    a rank forks a child that calls exit(5): traced, the
#                              parent still sees "exited:5" (it exits 3 otherwise), and
#                              the trace merges with the parent's calls.
#   program-threads-wait-share four threads of a rank wait at once: analyze's wait
#                              states must stay within 100 % of all rank time (the case
#                              fails with exit 3, saying the share, when they do not),
#                              and the merge summary's compute must be analyze's useful.
mpicc -g -O1 -Wno-stringop-overflow -o "$FAULT_ROOT/fork_exit" \
    "$REPO/tests/programs/fork_exit.c" 2>/dev/null
mpicc -g -O1 -Wno-stringop-overflow -pthread -o "$FAULT_ROOT/threads_wait" \
    "$REPO/tests/programs/threads_wait.c" 2>/dev/null

fault program-fork-child-exit 0 '' -- \
    "$OVERLAP" trace --out T.json -- mpiexec -n 2 "$FAULT_ROOT/fork_exit"
[ "$(grep -c 'child=exited:5 system=exited:7' "$FD/out")" = 2 ] ||
    lost program-fork-child-exit "a child did not end as untraced"
[ -s "$FD/T.json" ] || lost program-fork-child-exit "no merged trace"

fault program-threads-wait-share 0 '' -- bash -c '
    overlap=$1 program=$2
    "$overlap" trace --out T.json -- mpiexec -n 2 "$program" 2>summary.txt || exit 2
    "$overlap" analyze T.json --full >report.txt || exit 2
    share=$(sed -n "s/^Wait states: .*(\([0-9.]*\)% of all rank time)$/\1/p" report.txt)
    [ -n "$share" ] || { echo "no wait share in the report" >&2; exit 3; }
    if awk -v s="$share" "BEGIN { exit !(s > 100) }"; then
        echo "wait states are $share % of all rank time, more than all of it" >&2
        exit 3
    fi
    # The merge summary`s compute share is the report`s useful share, rank by rank.
    compute=$(awk "\$1 ~ /^[0-9]+\$/ { for (i = 2; i <= NF; i++) if (\$i ~ /%\$/) { print \$1, \$i; break } }" summary.txt | sort)
    useful=$(sed -n "/^Time per rank/,/^Wait states/p" report.txt |
        awk "\$1 ~ /^[0-9]+\$/ { for (i = 2; i <= NF; i++) if (\$i ~ /%\$/) { print \$1, \$i; break } }" | sort)
    if [ "$compute" != "$useful" ]; then
        echo "merge summary compute ($compute) is not analyze useful ($useful)" >&2
        exit 3
    fi
' _ "$OVERLAP" "$FAULT_ROOT/threads_wait"
