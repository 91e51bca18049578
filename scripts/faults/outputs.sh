# Fault cases: outputs, run directories, runs cut short and full disks (issue 37, items
# 1, 2, 4, 5, 6, 7). Links planted where temporary files and rank files go, two runs on
# one --out, a signal during the merge, ranks that crash or abort early, a full disk,
# outputs refused for room. Sourced by scripts/faults.sh, which sets $OVERLAP, $SMALL,
# $REPO and $FAULT_ROOT.

PROGS=$FAULT_ROOT/outputs.progs
mkdir -p "$PROGS"
for p in spin many abort killed; do
    mpicc -O1 -w "$REPO/tests/programs/$p.c" -o "$PROGS/$p"
done
# Rank 1 dies of SIGSEGV at once, after 20 exchanges (within the first flush).
cat > "$PROGS/segv.c" <<'C'
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, x = 1, y;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 20; i++)
        MPI_Sendrecv(&x, 1, MPI_INT, 1 - rank, 0, &y, 1, MPI_INT, 1 - rank, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 1) *(volatile int *)0 = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
C
mpicc -O1 -w "$PROGS/segv.c" -o "$PROGS/segv"

# Symbolic links to a victim at every name the temporary files used to take (the next
# 400 process ids, counters 0 and 1): the victim must keep its content.
plant() { # plant DIR NAME VICTIM
    local pid
    for pid in $(seq $$ $(($$ + 400))); do
        ln -sf "$3" "$1/.$2.tmp-$pid-0"
        ln -sf "$3" "$1/.$2.tmp-$pid-1"
    done
}
victim_kept() { # victim_kept CASE VICTIM
    [ "$(cat "$2")" = precious ] || lost "$1" "the victim was written through a planted link"
}

V=$FAULT_ROOT/victim
echo precious > "$V"
mkdir -p "$FAULT_ROOT/planted"
plant "$FAULT_ROOT/planted" gate.json "$V"
fault baseline-planted-links 0 '' -- "$OVERLAP" baseline "$SMALL" --out "$FAULT_ROOT/planted/gate.json"
victim_kept baseline-planted-links "$V"
plant "$FAULT_ROOT/planted" m.json "$V"
fault merge-planted-links 0 '' -- "$OVERLAP" merge "${SMALL%.json}.ranks" --out "$FAULT_ROOT/planted/m.json"
victim_kept merge-planted-links "$V"
plant "$FAULT_ROOT/planted" j.xml "$V"
fault junit-planted-links 0 '' -- "$OVERLAP" check "$SMALL" --baseline "$FAULT_ROOT/planted/gate.json" --junit "$FAULT_ROOT/planted/j.xml"
victim_kept junit-planted-links "$V"
mkdir -p "$FAULT_ROOT/planted/tables"
plant "$FAULT_ROOT/planted/tables" ranks.csv "$V"
fault csv-planted-links 0 '' -- "$OVERLAP" analyze "$SMALL" --csv "$FAULT_ROOT/planted/tables"
victim_kept csv-planted-links "$V"

# A link planted at T.ranks: refused, its target's rank files kept.
mkdir -p "$FAULT_ROOT/precious"
echo precious > "$FAULT_ROOT/precious/rank-0.ovlp"
mkdir -p "$FAULT_ROOT/ranks-link"
ln -s "$FAULT_ROOT/precious" "$FAULT_ROOT/ranks-link/t.ranks"
fault ranks-dir-link 1 't.ranks is a symbolic link' -- "$OVERLAP" trace --out "$FAULT_ROOT/ranks-link/t.json" -- mpiexec -n 2 "$PROGS/many" 10
[ -e "$FAULT_ROOT/precious/rank-0.ovlp" ] || lost ranks-dir-link "the link's target lost its rank file"

# Two runs on one --out: the second is refused while the first runs; the first keeps
# its run.
TWO=$FAULT_ROOT/two
mkdir -p "$TWO"
"$OVERLAP" trace --out "$TWO/t.json" -- mpiexec -n 2 "$PROGS/spin" >"$TWO/first.out" 2>"$TWO/first.err" &
first=$!
for _ in $(seq 100); do
    [ "$(stat -c %s "$TWO/t.ranks/rank-1.ovlp" 2>/dev/null || echo 0)" -gt 8192 ] && break
    sleep 0.2
done
fault same-out-twice 1 'is in use by another run \(pid [0-9]+: overlap trace -- mpiexec -n 2 .*spin\)' -- "$OVERLAP" trace --out "$TWO/t.json" -- mpiexec -n 2 "$PROGS/many" 10
kill -TERM "$first"
wait "$first"
"$OVERLAP" analyze "$TWO/t.json" 2>/dev/null | grep -q "2 of 2 ranks traced" || lost same-out-twice "the first run's trace is not whole"

# A signal during the merge: exit 143, nothing half-written, the way to merge again said.
SIG=$FAULT_ROOT/sig
mkdir -p "$SIG"
"$OVERLAP" trace --out "$SIG/t.json" -- mpiexec -n 2 "$PROGS/many" 300000 >/dev/null 2>&1
fault merge-sigterm 143 'interrupted by SIGTERM while merging into .*: nothing was written to it; the rank files in .* are intact: merge them with `overlap merge' -- bash -c "'$OVERLAP' merge '$SIG/t.ranks' --out '$SIG/m.json' & p=\$!; sleep 0.5; kill -TERM \$p; wait \$p"
no_temporaries merge-sigterm "$SIG"
[ -e "$SIG/m.json" ] && half merge-sigterm "m.json written"

# Ranks that end early: the launcher's status is overlap's, what was recorded is merged.
fault segv-first-flush 11 'what the ranks recorded is merged in' -- "$OVERLAP" trace --out "$FAULT_ROOT/segv.json" -- mpiexec -n 2 "$PROGS/segv"
grep -q "was it an MPI program" "$FD/err" && unclear segv-first-flush "asked whether it was an MPI program"
fault mpi-abort 3 'what the ranks recorded is merged in' -- "$OVERLAP" trace --out "$FAULT_ROOT/abort.json" -- mpiexec -n 2 "$PROGS/abort"
"$OVERLAP" analyze "$FAULT_ROOT/abort.json" 2>/dev/null | grep -q "2 of 2 ranks traced" || lost mpi-abort "a rank's calls are missing"
# A rank killed (SIGKILL): mpiexec says 9, and so does overlap, as untraced.
fault sigkill-rank 9 'what the ranks recorded is merged in' -- env OVERLAP_FLUSH_MS=20 "$OVERLAP" trace --out "$FAULT_ROOT/killed.json" -- mpiexec -n 2 "$PROGS/killed"

# merge --strict on a run with a rank cut short: refused before anything is written.
STRICT=$FAULT_ROOT/strict
mkdir -p "$STRICT/r"
cp "${SMALL%.json}.ranks"/rank-*.ovlp "$STRICT/r/"
truncate -s -30 "$STRICT/r/rank-1.ovlp"
fault merge-strict 1 'nothing written to' -- "$OVERLAP" merge "$STRICT/r" --out "$STRICT/m.json" --strict
[ -e "$STRICT/m.json" ] && half merge-strict "wrote its output, then failed"

# Outputs refused for room (a file-size limit of 0: EFBIG, as a full disk's ENOSPC).
ROOM=$FAULT_ROOT/room
mkdir -p "$ROOM"
# (The limit is the command's only: its stderr goes through a pipe to a `cat` without
# it, since the harness keeps stderr in a regular file.)
limited=(bash -c '( ulimit -f 0; exec "$@" ) 2>&1 >/dev/null | cat >&2; exit ${PIPESTATUS[0]}' limited)
fault room-baseline 2 'File too large' -- "${limited[@]}" "$OVERLAP" baseline "$SMALL" --out "$ROOM/gate.json"
fault room-junit 2 'File too large' -- "${limited[@]}" "$OVERLAP" check "$SMALL" --baseline "$FAULT_ROOT/planted/gate.json" --junit "$ROOM/j.xml"
fault room-csv 2 'File too large' -- "${limited[@]}" "$OVERLAP" analyze "$SMALL" --csv "$ROOM/csv"
fault room-parquet 2 'File too large' -- "${limited[@]}" "$OVERLAP" analyze "$SMALL" --parquet "$ROOM/parquet"
fault room-merge 2 'File too large' -- "${limited[@]}" "$OVERLAP" merge "${SMALL%.json}.ranks" --out "$ROOM/m.json"
[ -z "$(ls -A "$ROOM")" ] || half room-outputs "left: $(ls -A "$ROOM" | tr '\n' ' ')"

# A full disk under the ranks (a 3 MiB tmpfs, where this user may mount one): the
# full disk is named, what reached the files is kept, the merge says how to redo it.
FULL=$FAULT_ROOT/full
mkdir -p "$FULL"
if mount -t tmpfs -o size=3m tmpfs "$FULL" 2>/dev/null; then
    fault full-disk 2 'the file system holding .* is full' -- "$OVERLAP" trace --out "$FULL/t.json" -- mpiexec -n 2 "$PROGS/many" 100000
    grep -q "was it an MPI program" "$FD/err" && unclear full-disk "asked whether it was an MPI program"
    "$OVERLAP" merge "$FULL/t.ranks" --out "$FAULT_ROOT/full-merged.json" >/dev/null 2>&1 &&
        "$OVERLAP" analyze "$FAULT_ROOT/full-merged.json" 2>/dev/null | grep -qE "traced, [1-9][0-9]* events" ||
        lost full-disk "no event of the cut files is kept"
    umount "$FULL"
else
    echo "faults: full-disk skipped: cannot mount a tmpfs here (not root)" >&2
fi
