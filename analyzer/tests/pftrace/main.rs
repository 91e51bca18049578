//! The protobuf trace holds the same run as the JSON: for recorded runs (the rank
//! directories of `tests/data/reports`: C programs under the preload, threads, one-sided
//! and non-blocking collectives, GPU staging, the bundled kernels) and a hand-built one
//! with a clock-suspect message, both files are written from the same rank files, read
//! back (the protobuf with [`decode`], which knows only the wire format), and compared
//! slice by slice, request by request, instant by instant and flow by flow.

#[path = "../common/mod.rs"]
mod common;
mod decode;
mod window;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use decode::{decode, Decoded, Slice};
use serde_json::{Map, Value};

/// A slice as both files can name it: rank, thread, name, category, start, end (ns).
type Key = (u32, u32, String, String, u64, u64);

fn ns(v: &Value) -> u64 {
    (v.as_f64().expect("a time") * 1000.0).round() as u64
}

fn u(v: &Value) -> u32 {
    v.as_u64().expect("a number") as u32
}

/// Args, as JSON.
type Args = Map<String, Value>;
/// A request's slice: rank, name, start, end.
type RequestKey = (u32, String, u64, u64);
/// An instant: rank, thread, name, time.
type InstantKey = (u32, u32, String, u64);
/// Where a flow's event is: rank, thread, time.
type Point = (u32, u32, u64);

/// What the JSON holds, by kind.
#[derive(Default)]
struct Json {
    slices: Vec<(Key, Map<String, Value>)>,
    requests: Vec<(RequestKey, Args)>,
    instants: Vec<(InstantKey, Args)>,
    /// flow id -> (start: rank, thread, time), (end: rank, thread, time).
    flows: BTreeMap<u64, [Option<Point>; 2]>,
    threads: Vec<(u32, u32, String)>,
    processes: Vec<(u32, String)>,
    /// Calls with a symbolized site (`src`).
    sited: usize,
}

/// `args` without what a debug annotation cannot hold: empty lists and dictionaries,
/// nulls (the protobuf leaves such a field out).
fn without_empty(args: Map<String, Value>) -> Map<String, Value> {
    fn keep(v: Value) -> Option<Value> {
        match v {
            Value::Null => None,
            Value::Array(a) if a.is_empty() => None,
            Value::Object(o) => {
                let o = without_empty(o);
                (!o.is_empty()).then_some(Value::Object(o))
            }
            Value::Array(a) => Some(Value::Array(a.into_iter().filter_map(keep).collect())),
            other => Some(other),
        }
    }
    args.into_iter()
        .filter_map(|(k, v)| Some((k, keep(v)?)))
        .collect()
}

fn read_json(path: &Path) -> (Value, Json) {
    let v: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    let mut j = Json::default();
    let mut open: HashMap<u64, (u32, String, u64, Map<String, Value>)> = HashMap::new();
    for e in v["traceEvents"].as_array().expect("events") {
        let (pid, tid) = (u(&e["pid"]), u(&e["tid"]));
        let name = e["name"].as_str().expect("name").to_string();
        let cat = e["cat"].as_str().unwrap_or("").to_string();
        let mut args = without_empty(e["args"].as_object().cloned().unwrap_or_default());
        if cat == "mpi" && args.remove("src").is_some() {
            // A call's site and its label: the protobuf's source location instead.
            args.remove("site");
            j.sited += 1;
        }
        match e["ph"].as_str().expect("ph") {
            "X" => {
                let ts = ns(&e["ts"]);
                j.slices
                    .push(((pid, tid, name, cat, ts, ts + ns(&e["dur"])), args));
            }
            "b" => {
                let id = e["id"].as_u64().expect("id");
                open.insert(id, (pid, name, ns(&e["ts"]), args));
            }
            "e" => {
                let (pid, name, start, args) =
                    open.remove(&e["id"].as_u64().expect("id")).expect("begun");
                j.requests.push(((pid, name, start, ns(&e["ts"])), args));
            }
            "i" => j.instants.push(((pid, tid, name, ns(&e["ts"])), args)),
            "s" | "f" => {
                let end = usize::from(e["ph"] == "f");
                let id = e["id"].as_u64().expect("id");
                let slot = &mut j.flows.entry(id).or_default()[end];
                assert!(slot.is_none(), "flow {id} {} twice", e["ph"]);
                *slot = Some((pid, tid, ns(&e["ts"])));
            }
            "M" if name == "thread_name" => {
                j.threads
                    .push((pid, tid, args["name"].as_str().expect("name").into()));
            }
            "M" if name == "process_name" => {
                j.processes
                    .push((pid, args["name"].as_str().expect("name").into()));
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "async slices never ended");
    (v, j)
}

/// The innermost slice of `slices` on (rank, thread) holding time `at`.
fn holding(slices: &[(Key, Map<String, Value>)], (pid, tid, at): (u32, u32, u64)) -> Key {
    slices
        .iter()
        .map(|s| &s.0)
        .filter(|k| k.0 == pid && k.1 == tid && k.4 <= at && at <= k.5)
        .max_by_key(|k| (k.4, std::cmp::Reverse(k.5)))
        .cloned()
        .unwrap_or_else(|| panic!("no slice on {pid}/{tid} holds {at}"))
}

/// Sorts `v` by key, then by args (equal keys happen: two requests a Startall made).
fn sorted<K: Ord + Clone>(mut v: Vec<(K, Map<String, Value>)>) -> Vec<(K, Map<String, Value>)> {
    v.sort_by_cached_key(|(k, a)| (k.clone(), Value::Object(a.clone()).to_string()));
    v
}

fn compare(name: &str, json_path: &Path, proto_path: &Path) {
    let (json_value, j) = read_json(json_path);
    let d: Decoded = decode(&std::fs::read(proto_path).expect("read"));
    let thread_of = |track: u64| {
        let t = &d.tracks[&track];
        t.tid.map(|tid| (t.pid.expect("pid"), tid))
    };
    let process_of = |track: u64| {
        let parent = d.tracks[&track].parent?;
        d.tracks[&parent].pid
    };
    let key = |s: &Slice| -> Option<Key> {
        let (pid, tid) = thread_of(s.begin.track)?;
        Some((
            pid,
            tid,
            s.begin.name.clone(),
            s.begin.cat.clone(),
            s.begin.ts,
            s.end,
        ))
    };
    let slices = d.slices();
    // Slices of threads and GPU streams, with their args.
    let proto: Vec<(Key, Map<String, Value>)> = sorted(
        slices
            .iter()
            .filter_map(|s| Some((key(s)?, s.begin.args.clone())))
            .collect(),
    );
    let json = sorted(j.slices.clone());
    assert_eq!(proto.len(), json.len(), "{name}: slices");
    for (p, js) in proto.iter().zip(&json) {
        assert_eq!(p, js, "{name}: a slice differs");
    }
    let sited = slices.iter().filter(|s| s.begin.source.is_some()).count();
    assert_eq!(sited, j.sited, "{name}: calls with a source location");
    // Requests: on the lanes of their rank.
    let requests: Vec<_> = slices
        .iter()
        .filter(|s| s.begin.cat == "request")
        .map(|s| {
            let pid = process_of(s.begin.track).expect("a lane under a rank");
            (
                (pid, s.begin.name.clone(), s.begin.ts, s.end),
                s.begin.args.clone(),
            )
        })
        .collect();
    let (requests, json_requests) = (sorted(requests), sorted(j.requests.clone()));
    assert_eq!(requests, json_requests, "{name}: requests");
    // Instants on threads (the run's metadata apart).
    let instants: Vec<_> = d
        .events
        .iter()
        .filter(|e| e.ty == 3 && e.cat != "run")
        .map(|e| {
            let (pid, tid) = thread_of(e.track).expect("an instant on a thread");
            ((pid, tid, e.name.clone(), e.ts), e.args.clone())
        })
        .collect();
    let (instants, json_instants) = (sorted(instants), sorted(j.instants.clone()));
    assert_eq!(instants, json_instants, "{name}: instants");
    let run = d
        .events
        .iter()
        .find(|e| e.cat == "run")
        .expect("the run's metadata");
    for field in ["world_size", "messages", "program", "run_id"] {
        assert_eq!(
            run.args.get(field),
            json_value["otherData"].get(field),
            "{name}: {field}"
        );
    }
    // Flows: from the same slice to the same slice, id by id.
    let mut flows: BTreeMap<u64, [Option<Key>; 2]> = BTreeMap::new();
    for s in &slices {
        for f in &s.begin.flows {
            flows.entry(*f).or_default()[0] = key(s);
        }
        for f in &s.ends_flows {
            flows.entry(*f).or_default()[1] = key(s);
        }
    }
    let json_flows: BTreeMap<u64, [Option<Key>; 2]> = j
        .flows
        .iter()
        .map(|(id, ends)| {
            (
                *id,
                ends.map(|p| Some(holding(&j.slices, p.expect("both ends")))),
            )
        })
        .collect();
    assert_eq!(flows, json_flows, "{name}: flows");
    // Names of ranks and threads.
    for (pid, tid, tname) in &j.threads {
        let found = d
            .tracks
            .values()
            .any(|t| t.pid == Some(*pid) && t.tid == Some(*tid) && &t.name == tname);
        assert!(found, "{name}: thread {pid}/{tid} {tname:?} has no track");
    }
    for (pid, pname) in &j.processes {
        let found = d
            .tracks
            .values()
            .any(|t| t.pid == Some(*pid) && t.tid.is_none() && &t.name == pname);
        assert!(found, "{name}: process {pid} {pname:?} has no track");
    }
    // The requests-in-flight counter peaks where the JSON's requests overlap most.
    for pid in j.processes.iter().map(|p| p.0) {
        let mut changes: Vec<(u64, i64)> = j
            .requests
            .iter()
            .filter(|r| r.0 .0 == pid)
            .flat_map(|r| [(r.0 .2, 1), (r.0 .3, -1)])
            .collect();
        changes.sort();
        let peak = changes
            .iter()
            .scan(0, |n, c| {
                *n += c.1;
                Some(*n)
            })
            .max()
            .unwrap_or(0);
        let counted = d
            .events
            .iter()
            .filter(|e| e.ty == 4 && d.tracks[&e.track].name == "requests in flight")
            .filter(|e| process_of(e.track) == Some(pid))
            .filter_map(|e| e.counter)
            .max()
            .unwrap_or(0);
        assert_eq!(counted, peak, "{name}: rank {pid}'s requests in flight");
    }
    eprintln!(
        "{name}: {} slices ({sited} with a source location), {} requests, {} instants, {} \
         flows alike",
        proto.len(),
        requests.len(),
        instants.len(),
        flows.len()
    );
}

/// Two ranks with what recorded runs rarely have: a message received before it was sent
/// once clocks are aligned (an instant, not an arrow), a send never received, requests
/// that overlap without nesting, calls inside a compute span, regions marked with
/// MPI_Pcontrol (one never left).
///
/// ```text
/// ns       0    100       200       300       400       500       600
/// regions 0       [step 80 ............................................630] [tail 640..
/// rank 0   [compute ...................................]  |Send t11|
///            |Is1|  |Is2|                |Waitall(1,2)|     600-610
/// rank 1   |Recv t11|  |Ir1|Ir2|    |Wait(2)|Wait(1)|      |Isend t77, never received|
///           20-30      50  70        390-420 430-450            |Barrier, in flight at the
///                                                                 dump at 900 .......|
/// ```
#[test]
fn the_protobuf_holds_the_json_s_events_for_a_hand_built_run() {
    use common::*;
    // An MPI_Pcontrol call entering (1) or leaving (-1) the region `name`.
    let region = |start, end, level, name: &str| {
        let args = overlap_instrument::schema::CallArgs {
            level: Some(level),
            region: Some(name.to_string()),
            ..Default::default()
        };
        call(overlap_instrument::schema::Op::Pcontrol, start, end, args)
    };
    use overlap_instrument::schema::{DumpReason, InFlightCall, InFlightDump, Op, SyncPhase};
    let r0 = rank_trace(
        header(0, 2, 10_000, "one"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            region(80, 85, 1, "step"),
            compute(90, 510, "solve"),
            isend(100, 110, 1, 5, 8, 1),
            isend(120, 130, 1, 5, 8, 2),
            complete(Op::Waitall, 400, 500, &[(1, None), (2, None)]),
            send(600, 610, 1, 11, 8),
            region(620, 630, -1, "step"),
            region(640, 650, 1, "tail"),
        ],
    );
    let r1 = rank_trace(
        header(1, 2, 10_000, "one"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            recv(20, 30, 0, 11, 8),
            irecv(50, 60, 0, 5, 8, 1),
            irecv(70, 80, 0, 5, 8, 2),
            complete(Op::Wait, 390, 420, &[(2, Some((0, 5)))]),
            complete(Op::Wait, 430, 450, &[(1, Some((0, 5)))]),
            isend(700, 710, 0, 77, 8, 3),
        ],
    );
    let mut r1 = r1;
    r1.in_flight.push(InFlightDump {
        reason: DumpReason::Stalled,
        at_ns: 900,
        unix_ns: 0,
        threads: 1,
        calls: vec![InFlightCall {
            tid: 0,
            call: Op::Barrier,
            start_ns: 720,
            site: None,
            comm: Some(0),
            peer: None,
            tag: None,
            recv_peer: None,
            recv_tag: None,
            root: None,
            requests: None,
        }],
    });
    let merged = overlap_analyzer::merge::merge(vec![r0, r1]);
    assert_eq!(merged.info.clock_suspect.len(), 1, "the message of tag 11");
    let tmp = tempfile::tempdir().expect("temp dir");
    let (json, proto) = (tmp.path().join("h.json"), tmp.path().join("h.pftrace"));
    overlap_analyzer::merge::write_merged(&merged, &json).expect("JSON");
    overlap_analyzer::merge::write_merged(&merged, &proto).expect("protobuf");
    compare("hand-built", &json, &proto);
    // Rank 0's regions, on its track of regions: `step` from 80 to 630, `tail` from
    // 640 to the rank's last moment (never left).
    let (_, j) = read_json(&json);
    let regions: Vec<_> = j
        .slices
        .iter()
        .filter(|(k, _)| k.3 == "region")
        .map(|(k, a)| (k.0, k.1, k.2.as_str(), k.4, k.5, a.get("open").is_some()))
        .collect();
    let tid = overlap_instrument::region::region_tid(0);
    assert_eq!(
        regions,
        vec![
            (0, tid, "step", 80, 630, false),
            (0, tid, "tail", 640, 650, true)
        ]
    );
}

#[test]
fn the_protobuf_holds_the_json_s_events_for_recorded_runs() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut runs = 0;
    for entry in std::fs::read_dir(&data).expect("reports") {
        let dir = entry.expect("entry").path();
        let ranks = dir.join("ranks");
        if !ranks.is_dir() {
            continue;
        }
        let name = dir.file_name().expect("name").to_string_lossy().to_string();
        let (json, proto) = (
            tmp.path().join(format!("{name}.json")),
            tmp.path().join(format!("{name}.pftrace")),
        );
        let mut estimates = Vec::new();
        for path in [&json, &proto] {
            let output = overlap_analyzer::merge::Output::of_path(path);
            let w =
                overlap_analyzer::summary::merge_to_file_if(&ranks, path, &output, |_, _, size| {
                    estimates.push(size.bytes);
                    Ok(())
                })
                .expect("merge");
            assert!(w.events > 0, "{name}: no events");
            // The size said before writing is the file's, give or take (runs of a
            // thousand events and more: below, the run's metadata weighs most).
            let counted: u64 = w.info.ranks.iter().map(|r| r.events).sum();
            let (said, got) = (
                *estimates.last().expect("estimated") as f64,
                std::fs::metadata(path).expect("written").len() as f64,
            );
            if counted >= 1000 {
                assert!(
                    (0.6..1.5).contains(&(said / got)),
                    "{name}: {said} B said, {got} B written"
                );
            }
        }
        compare(&name, &json, &proto);
        runs += 1;
    }
    assert!(
        runs >= 8,
        "only {runs} recorded runs found in {}",
        data.display()
    );
}
