# Fault cases: inputs that are hostile or damaged (issue 37, items 8, 10, 11, 12). A
# path inside a trace naming a fifo, a device as a baseline, one bad event in a
# single-line merged file, a run description or clock reading no run can have,
# baselines with impossible values, and the words said of files that are no trace,
# corrupt, or given where a directory was expected. Sourced by scripts/faults.sh, which
# sets $OVERLAP, $SMALL and $FAULT_ROOT.

# The crafted inputs, all made once from the small trace into $CRAFT.
CRAFT=$FAULT_ROOT/inputs.craft
mkdir -p "$CRAFT"
mkfifo "$CRAFT/fifo"
"$OVERLAP" baseline "$SMALL" --out "$CRAFT/base.json" >/dev/null 2>&1
python3 - "$SMALL" "$CRAFT" <<'PY'
import json, os, struct, sys
small, out = sys.argv[1], sys.argv[2]
ranks = small[:-len('.json')] + '.ranks'

# The binary rank format: a 16-byte opening, then frames of a 16-byte header (length
# u32, kind u8, 3 reserved, tid u32, checksum u32) and their payload.
K, M = 0x517cc1b727220a95, (1 << 64) - 1
def checksum(p):
    h = len(p) ^ 0x9e3779b97f4a7c15
    for i in range(0, len(p), 8):
        w = int.from_bytes(p[i:i + 8].ljust(8, b'\0'), 'little')
        h = ((((h << 5) | (h >> 59)) & M ^ w) * K) & M
    return (h ^ (h >> 32)) & 0xffffffff
def frames(b):
    at, out = 16, []
    while at + 16 <= len(b):
        ln, kind = struct.unpack_from('<IB', b, at)
        out.append([kind, struct.unpack_from('<I', b, at + 8)[0], b[at + 16:at + 16 + ln]])
        at += 16 + ln
    return b[:16], out
def build(opening, fr):
    o = bytearray(opening)
    for kind, tid, p in fr:
        o += struct.pack('<IB3sII', len(p), kind, b'\0\0\0', tid, checksum(p)) + p
    return bytes(o)
def rank_file(r):
    return open(os.path.join(ranks, f'rank-{r}.ovlp'), 'rb').read()
def rank_dir(name, edit0=None, edit1=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for r, edit in ((0, edit0), (1, edit1)):
        b = rank_file(r)
        open(os.path.join(d, f'rank-{r}.ovlp'), 'wb').write(edit(b) if edit else b)

# Merged files: the opening's otherData, the events one value each.
lines = open(small).read().split('\n')
info = json.loads(lines[0].rstrip(',') + '}')['otherData']
events = [json.loads(l.rstrip(',')) for l in lines if l.startswith('{"name"')]
def merged(name, info, events, one_line=False):
    sep = ',' if one_line else ',\n'
    texts = [e if isinstance(e, str) else json.dumps(e, separators=(',', ':')) for e in events]
    with open(os.path.join(out, name), 'w') as f:
        f.write('{"otherData":' + json.dumps(info) + sep + '"traceEvents":[' + sep.join(texts) + ']}\n')
def copy(x):
    return json.loads(json.dumps(x))
first = next(i for i, e in enumerate(events)
             if e.get('ph') == 'X' and e['pid'] == 0 and e['args'].get('peer', -1) >= 0)

# 8: a code map naming the fifo, and a call whose site only it can symbolize.
i, e = copy(info), copy(events)
i['ranks'][0]['code_maps'] = '0-ffffffff 0 ' + os.path.join(out, 'fifo') + '\n'
e[first]['args']['site'] = 0x123456
merged('fifo-maps.json', i, e)
# 10: one bad event in a single-line merged file (and the same file whole).
e = copy(events)
e[first] = '{"name":"MPI_Send","cat":"mpi","ph":"X","ts":"soon","dur":1,"pid":0,"tid":0,"args":{}}'
merged('one-line-bad.json', info, e, one_line=True)
merged('one-line.json', info, events, one_line=True)
# 11: a world of no ranks, a pid beyond the world, a peer of 999.
i = copy(info); i['world_size'] = 0
merged('world0.json', i, events)
e = copy(events); e[first]['pid'] = 7
merged('pid7.json', info, e)
e = copy(events); e[first]['args']['peer'] = 999
merged('peer999.json', info, e)
# 11: a calibration reading wrapped round, under a valid checksum.
def wrap_last_calibration(b):
    opening, fr = frames(b)
    cal = [f for f in fr if f[0] == 5][-1]
    tsc, _ = struct.unpack('<QQ', cal[2])
    cal[2] = struct.pack('<QQ', tsc, M - 4)
    return build(opening, fr)
rank_dir('wrapped', edit0=wrap_last_calibration)
# 11: baselines with impossible values.
base = json.load(open(os.path.join(out, 'base.json')))
b = copy(base); b['metrics'][0]['value'] = -3
json.dump(b, open(os.path.join(out, 'neg.json'), 'w'))
b = copy(base); b['metrics'][1]['value'] = 1e308
json.dump(b, open(os.path.join(out, 'huge.json'), 'w'))
b = copy(base); b['metrics'].append(b['metrics'][0])
json.dump(b, open(os.path.join(out, 'dup.json'), 'w'))
# 12: random bytes, alone and as a rank file; a frame failing its checksum mid-file.
random = bytes((i * 7919 + 13) % 251 for i in range(4096))
open(os.path.join(out, 'random.ovlp'), 'wb').write(random)
rank_dir('random-rank', edit0=lambda b: random)
def flip_in_late_page(b):
    opening, fr = frames(b)
    b, at, calibrations = bytearray(b), 16, 0
    for kind, _, p in fr:
        calibrations += kind == 5
        if kind == 4 and calibrations >= 2 and len(p) > 40:
            b[at + 16 + 20] ^= 0xff
            break
        at += 16 + len(p)
    return bytes(b)
rank_dir('corrupt', edit1=flip_in_late_page)
PY

# Events of a merged file, from analyze's summary line.
events_of() { grep -oE '[0-9]+ events' "$1" | head -1 | cut -d' ' -f1; }

# 8: a trace naming a fifo must neither hang analyze nor check.
FAULT_TIMEOUT=20 fault fifo-named-in-trace-analyze 0 '' -- "$OVERLAP" analyze "$CRAFT/fifo-maps.json" --full
grep -q "not symbolized: a fifo, not an object file" "$FD/out" || unclear fifo-named-in-trace-analyze "fifo not named"
FAULT_TIMEOUT=20 fault fifo-named-in-trace-check 0 '' -- "$OVERLAP" check "$CRAFT/fifo-maps.json" --baseline "$CRAFT/base.json"
FAULT_TIMEOUT=20 fault baseline-dev-zero 2 '/dev/zero: not a regular file \(a character device\)' -- "$OVERLAP" check "$SMALL" --baseline /dev/zero

# 10: one bad event in a single-line merged file loses itself only.
fault one-line-merged-bad-event 0 'event [0-9]+ \(byte offset [0-9]+\): not a valid trace event, skipped' -- "$OVERLAP" analyze "$CRAFT/one-line-bad.json"
"$OVERLAP" analyze "$CRAFT/one-line.json" >"$FAULT_ROOT/one-line.out" 2>/dev/null
[ "$(events_of "$FD/out")" = $(( $(events_of "$FAULT_ROOT/one-line.out") - 1 )) ] || lost one-line-merged-bad-event "events beyond the bad one"
grep -q "cut short" "$FD/err" && unclear one-line-merged-bad-event "blamed on a cut"
fault one-line-merged-bad-event-check 2 'not a valid trace event, skipped' -- "$OVERLAP" check "$CRAFT/one-line-bad.json" --baseline "$CRAFT/base.json"

# 11: nonsense refused, skipped or flagged.
fault world-size-0 1 'world0.json: not a readable merged trace: its world_size is 0' -- "$OVERLAP" analyze "$CRAFT/world0.json"
fault pid-beyond-world 0 'its rank \(pid\) 7 is beyond the world of 2 rank' -- "$OVERLAP" analyze "$CRAFT/pid7.json"
grep -q "3 of 2 ranks" "$FD/out" && unclear pid-beyond-world "3 of 2 ranks"
fault peer-999 0 'name a peer outside the world of 2 rank' -- "$OVERLAP" analyze "$CRAFT/peer999.json"
fault wrapped-calibration 0 'not a time of this run, left out' -- "$OVERLAP" analyze "$CRAFT/wrapped"
grep -qE 'run [0-9]{7,}(\.[0-9]+)? s' "$FD/out" && unclear wrapped-calibration "a run of centuries"
fault baseline-negative-count 2 'neg.json: not a usable baseline: false_overlap.findings: its value -3 is a count below 0' -- "$OVERLAP" check "$SMALL" --baseline "$CRAFT/neg.json"
fault baseline-huge-fraction 2 'huge.json: not a usable baseline: pop.parallel_efficiency: .* is a fraction outside 0 to 1' -- "$OVERLAP" check "$SMALL" --baseline "$CRAFT/huge.json"
fault baseline-duplicate-metric 2 'dup.json: not a usable baseline: false_overlap.findings: the metric is listed twice' -- "$OVERLAP" check "$SMALL" --baseline "$CRAFT/dup.json"

# 12: the right words.
fault random-bytes-ovlp 1 'random.ovlp: not an overlap trace: no "OVLPRANK" magic' -- "$OVERLAP" analyze "$CRAFT/random.ovlp"
fault random-bytes-rank-file 0 'rank-0.ovlp: skipped: not an overlap trace: no "OVLPRANK" magic' -- "$OVERLAP" analyze "$CRAFT/random-rank"
fault path-said-once 0 'skipped: ' -- "$OVERLAP" analyze "$CRAFT/random-rank"
[ "$(grep -o 'rank-0.ovlp' "$FD/err" | wc -l)" = 1 ] || unclear path-said-once "the path twice"
fault checksum-is-corruption 0 'a frame fails its checksum: the file is corrupt' -- "$OVERLAP" analyze "$CRAFT/corrupt"
grep -q "died or was killed" "$FD/err" && unclear checksum-is-corruption "read as a death"
fault analyze-one-ovlp 0 '' -- "$OVERLAP" analyze "${SMALL%.json}.ranks/rank-0.ovlp"
grep -q "1 of 2 ranks traced" "$FD/out" || unclear analyze-one-ovlp "not analyzed"
fault merge-help-names-ovlp 0 '' -- "$OVERLAP" merge --help
{ grep -q "rank-N.ovlp" "$FD/out" && ! grep -q "rank-N.json" "$FD/out"; } || unclear merge-help-names-ovlp "rank-N.json"
if command -v script >/dev/null; then
    # On a terminal (script gives one), TERM=dumb and NO_COLOR each mean no escapes.
    fault term-dumb-no-colour 0 '' -- script -qec "TERM=dumb '$OVERLAP' analyze '$SMALL'" /dev/null
    grep -q $'\x1b' "$FD/out" && unclear term-dumb-no-colour "ESC sent"
    fault no-color-no-colour 0 '' -- script -qec "NO_COLOR=1 '$OVERLAP' analyze '$SMALL'" /dev/null
    grep -q $'\x1b' "$FD/out" && unclear no-color-no-colour "ESC sent"
fi
