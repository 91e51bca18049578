//! The fast path against the serde path: the examples, every field, the writer's own
//! output, key order and time limits. The malformed and edge inputs are in `edges`.

use super::*;
use overlap_format::schema::wire::{event_to_wire, Phase};
use overlap_format::schema::{BufferUse, SpanBuffers};

use serde_json::Value;

use crate::import::{complete_event, RawEvent};

/// What the serde path makes of the event at the start of `line`: pid, event, and
/// bytes consumed; or why it fails.
fn via_serde(line: &[u8]) -> Result<(u32, Event, usize), String> {
    let mut stream = serde_json::Deserializer::from_slice(line).into_iter::<RawEvent>();
    let raw = stream
        .next()
        .ok_or("no value")?
        .map_err(|e| e.to_string())?;
    if raw.ph != Phase::Complete {
        return Err(format!("phase {:?}", raw.ph));
    }
    let consumed = stream.byte_offset();
    Ok((raw.pid, complete_event(&raw)?, consumed))
}

fn via_fast(line: &[u8]) -> Option<(u32, Event, usize)> {
    parse_complete(line).map(|(f, n)| (f.pid, f.event, n))
}

/// The fast path reads `line`, and exactly as the serde path does.
fn assert_same(line: &str) -> (u32, Event) {
    let fast = via_fast(line.as_bytes());
    let serde = via_serde(line.as_bytes());
    let Some(fast) = fast else {
        panic!("fast path declined {line}\n(serde: {serde:?})");
    };
    assert_eq!(Ok(&fast), serde.as_ref(), "{line}");
    (fast.0, fast.1)
}

/// The fast path declines `line`, without panicking.
fn assert_declined(line: &[u8]) {
    assert!(
        via_fast(line).is_none(),
        "fast path accepted {:?}",
        String::from_utf8_lossy(line)
    );
}

/// Whatever `line` is, the fast path either declines it or agrees with serde.
fn assert_sound(line: &[u8]) {
    if let Some(fast) = via_fast(line) {
        let serde = via_serde(line);
        assert_eq!(
            Ok(&fast),
            serde.as_ref(),
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
}

const EXAMPLES: &[&str] = &[
    r#"{"name":"pack","cat":"compute","ph":"X","ts":25416.586,"dur":2208.241,"pid":0,"tid":0,"args":{}}"#,
    r#"{"name":"MPI_Irecv","cat":"mpi","ph":"X","ts":27629.059,"dur":70.86,"pid":0,"tid":0,"args":{"peer":1,"tag":17,"bytes":131072,"comm":0,"buf":140566629883920,"buf_len":131072,"request":1}}"#,
    r#"{"name":"MPI_Waitall","cat":"mpi","ph":"X","ts":27718.411,"dur":207.614,"pid":0,"tid":0,"args":{"completed":[{"request":1,"source":1,"tag":17,"bytes":131072}]}}"#,
    r#"{"name":"MPI_Barrier","cat":"mpi","ph":"X","ts":70554.995,"dur":17806.905,"pid":0,"tid":0,"args":{"comm":0}}"#,
    r#"{"name":"MPI_Sendrecv","cat":"mpi","ph":"X","ts":5,"dur":0,"pid":3,"tid":2,"args":{"peer":2,"tag":-1,"bytes":8,"comm":4294967295,"buf":1,"buf_len":8,"recv_peer":-2,"recv_tag":2147483647,"recv_buf":18446744073709551615,"recv_buf_len":0,"completed":[{"source":0,"tag":7,"bytes":8}]}}"#,
    r#"{"name":"MPI_Test","cat":"mpi","ph":"X","ts":0,"dur":0.001,"pid":4294967295,"tid":4294967295,"args":{"request":7,"flag":1,"completed":[{"request":7}]}}"#,
    r#"{"name":"MPI_Test","cat":"mpi","ph":"X","ts":0.5,"dur":0.25,"pid":1,"tid":0,"args":{"request":7,"flag":0}}"#,
    r#"{"name":"MPI_Test","cat":"mpi","ph":"X","ts":0.5,"dur":0.25,"pid":1,"tid":0,"args":{"flag":255}}"#,
    r#"{"name":"MPI_Waitall","cat":"mpi","ph":"X","ts":1.2,"dur":3.45,"pid":1,"tid":0,"args":{"completed":[{"request":1,"source":-2147483648,"tag":-5,"bytes":0},{"request":2},{},{"bytes":3,"tag":4,"source":5,"request":6}]}}"#,
    r#"{"name":"MPI_Allreduce","cat":"mpi","ph":"X","ts":100.01,"dur":1000,"pid":7,"tid":1,"args":{"comm":3,"send_bytes":64,"bytes":64}}"#,
    r#"{"name":"MPI_Isend","cat":"mpi","ph":"X","ts":10.1,"dur":0.02,"pid":2,"tid":0,"args":{"request":99,"buf_len":4,"buf":4096,"comm":0,"bytes":4,"tag":0,"peer":0}}"#,
    r#"{"name":"MPI_Send","cat":"mpi","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{}}"#,
    r#"{"name":"MPI_Recv","cat":"mpi","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{"peer":-2,"tag":-1,"completed":[{"source":3,"tag":9,"bytes":12}]}}"#,
    r#"{"name":"MPI_Wait","cat":"mpi","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{"completed":[]}}"#,
    r#"{"name":"","cat":"compute","ph":"X","ts":0,"dur":0,"pid":0,"tid":0,"args":{}}"#,
    r#"{"name":"pack","cat":"compute","ph":"X","ts":45965.893,"dur":5662.255,"pid":0,"tid":0,"args":{"reads":[{"name":"data","buf":94491346101120,"len":131072}],"writes":[{"name":"sendbuf","buf":139770749894672,"len":1048576}]}}"#,
    r#"{"name":"delay","cat":"compute","ph":"X","ts":1,"dur":2,"pid":3,"tid":1,"args":{"reads":[],"writes":[]}}"#,
    r#"{"name":"b","cat":"compute","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{"reads":[{"name":"halo_l","buf":0,"len":18446744073709551615},{"name":"ü","buf":7,"len":0}],"writes":[]}}"#,
    r#"{"name":"überlapp ✓ 重叠","cat":"compute","ph":"X","ts":2251799813685.247,"dur":0,"pid":0,"tid":0,"args":{}}"#,
    r#"{"name":"MPI_Barrier","cat":"mpi","ph":"X","ts":1125899906842.623,"dur":1125899906842.623,"pid":0,"tid":0,"args":{}}"#,
];

#[test]
fn examples_read_as_serde_reads_them() {
    for line in EXAMPLES {
        assert_same(line);
    }
}

#[test]
fn consumes_only_the_object() {
    for line in EXAMPLES {
        for tail in [",\n", "\n", ",", "", "]", "\n]\n", "}garbage"] {
            let text = format!("{line}{tail}");
            let (_, consumed) = parse_complete(text.as_bytes()).expect("reads");
            assert_eq!(consumed, line.len(), "{text}");
        }
    }
}

#[test]
fn reads_every_field() {
    let (pid, event) = assert_same(EXAMPLES[4]);
    assert_eq!(pid, 3);
    let Event::Call(call) = event else {
        panic!("not a call")
    };
    assert_eq!(call.op, Op::Sendrecv);
    assert_eq!(call.tid, 2);
    assert_eq!((call.start, call.end), (Nanos(5000), Nanos(5000)));
    let expected = CallArgs {
        peer: Some(2),
        tag: Some(-1),
        bytes: Some(8),
        comm: Some(u32::MAX),
        buf: Some(1),
        buf_len: Some(8),
        request: None,
        recv_peer: Some(-2),
        recv_tag: Some(i32::MAX),
        recv_buf: Some(u64::MAX),
        recv_buf_len: Some(0),
        send_bytes: None,
        recv_bytes: None,
        root: None,
        site: None,
        src: None,
        win: None,
        group: vec![],
        exclusive: None,
        flag: None,
        started: vec![],
        completed: vec![Completion {
            request: None,
            source: Some(0),
            tag: Some(7),
            bytes: Some(8),
        }],
        level: None,
        region: None,
    };
    assert_eq!(call.args, expected);
    let (_, event) = assert_same(EXAMPLES[0]);
    assert_eq!(
        event,
        Event::Compute(ComputeEvent {
            tid: 0,
            start: Nanos(25_416_586),
            end: Nanos(25_416_586 + 2_208_241),
            name: "pack".into(),
            buffers: None,
        })
    );
}

#[test]
fn times_with_zero_to_three_decimals() {
    for (ts, ns) in [
        ("0", 0),
        ("5", 5000),
        ("0.0", 0),
        ("0.001", 1),
        ("0.01", 10),
        ("0.1", 100),
        ("7.5", 7500),
        ("7.25", 7250),
        ("7.125", 7125),
        ("10.000", 10_000),
        ("123456789.987", 123_456_789_987),
    ] {
        let line = format!(
            r#"{{"name":"x","cat":"compute","ph":"X","ts":{ts},"dur":{ts},"pid":0,"tid":0,"args":{{}}}}"#
        );
        let (_, event) = assert_same(&line);
        assert_eq!((event.start(), event.end()), (Nanos(ns), Nanos(2 * ns)));
    }
}

/// A small deterministic generator (SplitMix64), to keep the tests free of dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    /// A number of any magnitude, small ones and edge values more often.
    fn u64(&mut self) -> u64 {
        match self.below(6) {
            0 => self.below(10),
            1 => self.below(100_000),
            2 => u64::MAX - self.below(3),
            3 => self.next() >> self.below(64),
            _ => self.next(),
        }
    }

    fn i32(&mut self) -> i32 {
        match self.below(5) {
            0 => [i32::MIN, i32::MAX, -1, 0, -2][self.below(5) as usize],
            1 => self.below(64) as i32 - 32,
            _ => self.next() as i32,
        }
    }

    /// A time below 2^51 ns, round values more often.
    fn nanos(&mut self) -> u64 {
        let ns = self.next() >> (13 + self.below(51));
        match self.below(4) {
            0 => ns / 1000 * 1000,
            1 => ns / 10 * 10,
            _ => ns,
        }
    }

    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        (!self.chance(2)).then(|| f(self))
    }
}

fn random_args(rng: &mut Rng) -> CallArgs {
    let completed = (0..[0, 0, 1, 2, 5][rng.below(5) as usize])
        .map(|_| Completion {
            request: rng.opt(Rng::u64),
            source: rng.opt(Rng::i32),
            tag: rng.opt(Rng::i32),
            bytes: rng.opt(Rng::u64),
        })
        .collect();
    CallArgs {
        peer: rng.opt(Rng::i32),
        tag: rng.opt(Rng::i32),
        bytes: rng.opt(Rng::u64),
        comm: rng.opt(|r| r.u64() as u32),
        buf: rng.opt(Rng::u64),
        buf_len: rng.opt(Rng::u64),
        request: rng.opt(Rng::u64),
        recv_peer: rng.opt(Rng::i32),
        recv_tag: rng.opt(Rng::i32),
        recv_buf: rng.opt(Rng::u64),
        recv_buf_len: rng.opt(Rng::u64),
        send_bytes: rng.opt(Rng::u64),
        recv_bytes: rng.opt(Rng::u64),
        root: rng.opt(Rng::i32),
        site: rng.opt(Rng::u64),
        src: rng.opt(|r| format!("calls.c:{} (main) ← a.c:9", r.below(1000))),
        win: rng.opt(|r| r.u64() as u32),
        group: (0..[0, 0, 0, 1, 3][rng.below(5) as usize])
            .map(|_| rng.i32())
            .collect(),
        exclusive: rng.opt(|r| r.u64() as u8),
        flag: rng.opt(|r| r.u64() as u8),
        completed,
        started: (0..[0, 0, 0, 1, 3][rng.below(5) as usize])
            .map(|_| Started {
                request: rng.u64(),
                persistent: rng.u64(),
            })
            .collect(),
        level: None,
        region: None,
    }
}

fn random_event(rng: &mut Rng) -> Event {
    let tid = rng.u64() as u32;
    let start = rng.nanos();
    let end = start + rng.nanos().min(super::MAX_EXACT_NS - 1 - start);
    let (start, end) = (Nanos(start), Nanos(end));
    if rng.chance(4) {
        let names = [
            "pack",
            "unpack",
            "",
            "stencil 3d",
            "ünïcödé ✓",
            "tab\tquote\"",
        ];
        let buffers = rng.chance(2).then(|| {
            let list = |rng: &mut Rng| {
                let n = rng.below(4);
                (0..n)
                    .map(|i| BufferUse {
                        name: ["data", "halo_l", "ü ✓", "x"][i as usize].into(),
                        buf: rng.u64(),
                        len: rng.u64(),
                    })
                    .collect()
            };
            let reads = list(rng);
            std::sync::Arc::new(SpanBuffers {
                reads,
                writes: list(rng),
            })
        });
        Event::Compute(ComputeEvent {
            tid,
            start,
            end,
            name: names[rng.below(names.len() as u64) as usize].into(),
            buffers,
        })
    } else {
        Event::Call(CallEvent {
            tid,
            start,
            end,
            op: Op::ALL[rng.below(Op::ALL.len() as u64) as usize],
            args: random_args(rng),
        })
    }
}

/// The line the writer writes for `event` on `pid`.
fn written(pid: u32, event: &Event) -> String {
    serde_json::to_string(&event_to_wire(pid, event)).expect("serializes")
}

#[test]
fn reads_back_what_the_writer_writes() {
    let mut rng = Rng(1);
    for _ in 0..20_000 {
        let event = random_event(&mut rng);
        let pid = rng.u64() as u32;
        let line = written(pid, &event);
        if let Event::Compute(c) = &event {
            if c.name.contains(['\t', '"']) {
                // Escaped names are the serde path's business.
                assert_declined(line.as_bytes());
                assert_sound(line.as_bytes());
                continue;
            }
        }
        let (got_pid, got) = assert_same(&line);
        assert_eq!((got_pid, &got), (pid, &event), "{line}");
    }
}

#[test]
fn reads_a_whole_file_as_the_array_writer_writes_it() {
    let mut rng = Rng(6);
    let events: Vec<(u32, Event)> = (0..2_000)
        .map(|_| (rng.below(4) as u32, random_event(&mut rng)))
        .filter(|(_, e)| !matches!(e, Event::Compute(c) if c.name.contains(['\t', '"'])))
        .collect();
    let mut writer = overlap_format::schema::wire::ArrayWriter::new(Vec::new()).expect("vec");
    for (pid, event) in &events {
        writer.write(&event_to_wire(*pid, event)).expect("vec");
    }
    let file = writer.finish().expect("vec");
    // As the importer walks a file: past `[`, then event, separator, event...
    let mut pos = 2;
    let mut read = Vec::new();
    while let Some((fast, used)) = file.get(pos..).and_then(parse_complete) {
        read.push((fast.pid, fast.event));
        pos += used;
        if file.get(pos..pos + 2) == Some(b",\n") {
            pos += 2;
        }
    }
    assert_eq!(file.get(pos..), Some(&b"\n]\n"[..]));
    assert_eq!(read, events);
}

#[test]
fn args_keys_in_any_order() {
    let mut rng = Rng(2);
    for _ in 0..5_000 {
        let args = random_args(&mut rng);
        let Value::Object(map) = serde_json::to_value(&args).expect("serializes") else {
            panic!("args are an object")
        };
        let mut members: Vec<(String, Value)> = map.into_iter().collect();
        for i in (1..members.len()).rev() {
            members.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), v))
            .collect();
        let line = format!(
            r#"{{"name":"MPI_Wait","cat":"mpi","ph":"X","ts":1.5,"dur":2,"pid":1,"tid":0,"args":{{{}}}}}"#,
            body.join(",")
        );
        let (_, event) = assert_same(&line);
        let Event::Call(call) = event else {
            panic!("not a call")
        };
        assert_eq!(call.args, args);
    }
}

#[test]
fn times_agree_with_serde_up_to_the_limit() {
    let mut rng = Rng(3);
    let edges = [0, 1, 999, 1000, 1001, MAX_EXACT_NS - 1, MAX_EXACT_NS - 1000];
    let randoms = (0..50_000).map(|_| rng.nanos());
    for ns in edges.into_iter().chain(randoms) {
        let event = Event::Compute(ComputeEvent {
            tid: 0,
            start: Nanos(ns),
            end: Nanos(ns),
            name: "t".into(),
            buffers: None,
        });
        let line = written(0, &event);
        let (_, got) = assert_same(&line);
        assert_eq!(got, event, "{line}");
    }
    // At and beyond the limit the fast path steps aside.
    for ns in [MAX_EXACT_NS, MAX_EXACT_NS + 1, 1 << 53, u64::MAX / 2] {
        let event = Event::Compute(ComputeEvent {
            tid: 0,
            start: Nanos(ns),
            end: Nanos(ns),
            name: "t".into(),
            buffers: None,
        });
        assert_declined(written(0, &event).as_bytes());
    }
}

#[test]
fn truncated_lines_are_declined() {
    for line in EXAMPLES {
        for cut in 0..line.len() {
            assert_declined(&line.as_bytes()[..cut]);
        }
    }
}

/// `EXAMPLES[1]` with `from` replaced by `to`.
mod edges;
