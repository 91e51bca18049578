//! A suggestion confirmed, or not, by hand-built runs of the original program and of the
//! changed one: the measured gain (difference of medians) against the predicted one, and
//! the verdict's preconditions (enough runs, a core per rank).

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::dag::{BuiltIn, Options as DagOptions};
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::Program;
use overlap_analyzer::replay::{NetworkFit, ProgressMode};
use overlap_analyzer::sites::SiteTable;
use overlap_analyzer::suggest::{
    confirm, program_of, suggest, Confirmation, GainVerdict, Namer, Options, Run, Suggestion,
    Unconfirmable,
};
use overlap_instrument::schema::{BufferUse, ComputeEvent, Event, Nanos, Op, SpanBuffers};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Compute that reads and writes the array `field` only (never a message's buffer).
fn work(start: u64, end: u64) -> Event {
    let field = BufferUse {
        name: "field".into(),
        buf: 0x9000_0000,
        len: 4096,
    };
    Event::Compute(ComputeEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        name: "work".into(),
        buffers: Some(
            SpanBuffers {
                reads: vec![field.clone()],
                writes: vec![field],
            }
            .into(),
        ),
    })
}

/// The exchange's calls on one rank from `t`: Irecv, Isend (8 bytes, tag 5), and the two
/// waits when `waits` (the receive's ends when the partner's send is `sent`).
fn exchange(t: u64, peer: i32, sent: u64) -> Vec<Event> {
    let done = sent.max(t + 20 * US) + 10 * US;
    vec![
        with_buf(irecv(t, t + 10 * US, peer, 5, 8, 1), 0x1000),
        with_buf(isend(t + 10 * US, t + 20 * US, peer, 5, 8, 2), 0x2000),
        complete(Op::Wait, t + 20 * US, done, &[(1, Some((peer, 5)))]),
        complete(Op::Wait, done, done + 10 * US, &[(2, None)]),
    ]
}

/// The original: rank 0 works `w` then exchanges; rank 1 exchanges at once, waits for
/// rank 0's send, then works `w`. Run time about 2w.
///
/// ```text
///  rank 0  |work 0-w|Irecv|Isend|Wait r|Wait s|
///  rank 1  |Irecv|Isend|Wait r ......... w+|Wait s|work w+ - 2w+|
/// ```
fn original(w: u64, name: &str) -> Trace {
    let sent = w + 20 * US; // rank 0's Isend ends
    let r0 = [vec![work(0, w)], exchange(w, 1, 20 * US)].concat();
    let mut r1 = exchange(0, 0, sent);
    let end = match r1.last() {
        Some(Event::Call(c)) => c.end.0,
        _ => unreachable!(),
    };
    r1.push(work(end, end + w));
    named(run(vec![r0, r1]), name)
}

/// Changed as suggested: rank 1 works between its posts and its waits. Run time about w.
///
/// ```text
///  rank 0  |work 0-w|Irecv|Isend|Wait r|Wait s|
///  rank 1  |Irecv|Isend|work 20us - w+20us|Wait r|Wait s|
/// ```
fn changed(w: u64, name: &str) -> Trace {
    let r0 = [vec![work(0, w)], exchange(w, 1, w + 20 * US)].concat();
    let posts = exchange(0, 0, w + 20 * US);
    let r1 = vec![
        posts[0].clone(),
        posts[1].clone(),
        work(20 * US, w + 20 * US),
        complete(Op::Wait, w + 20 * US, w + 50 * US, &[(1, Some((0, 5)))]),
        complete(Op::Wait, w + 50 * US, w + 60 * US, &[(2, None)]),
    ];
    named(run(vec![r0, r1]), name)
}

/// `trace` read from `name`, both ranks on host "vm" with CPUs 0 and 1 for each.
fn named(trace: Trace, name: &str) -> Trace {
    on_cpus(trace, name, Some("0-1"))
}

/// `trace` read from `name`, both ranks on host "vm", each with the CPUs `cpus` (as a
/// header's `cpu_affinity` says them; none: not recorded).
fn on_cpus(mut trace: Trace, name: &str, cpus: Option<&str>) -> Trace {
    trace.source = name.into();
    for r in &mut trace.ranks {
        r.host = "vm".into();
    }
    for r in &mut trace.info.ranks {
        r.host = "vm".into();
        r.cpu_affinity = cpus.map(str::to_string);
        r.online_cpus = cpus.map(|_| 2);
    }
    trace
}

fn suggestion(trace: &Trace, program: &Program) -> Suggestion {
    let options = Options {
        dag: DagOptions {
            policies: BuiltIn::DEFAULT.iter().map(|b| b.policy()).collect(),
            ..DagOptions::default()
        },
        progress: ProgressMode::InMpi,
        conservative: false,
    };
    // The runs' two messages cannot fit a network: 1 µs and 1 GB/s are given.
    let fit = NetworkFit::from_trace(trace, None)
        .or_else(|unknown| unknown.with_given(Some(1_000.0), Some(1e9)))
        .unwrap();
    suggest(trace, program, fit, &options).unwrap()
}

/// The analysed trace's suggestion confirmed by `originals` and `changed`.
fn confirmed(analysed: &Trace, originals: &[Trace], changed: &[Trace]) -> Confirmation {
    let program = program_of(analysed).unwrap();
    let s = suggestion(analysed, &program);
    let sites = SiteTable::build(analysed);
    let namer = Namer {
        trace: analysed,
        program: &program,
        sites: &sites,
    };
    let programs = |runs: &[Trace]| -> Vec<(Trace, Program)> {
        runs.iter()
            .map(|t| (t.clone(), program_of(t).unwrap()))
            .collect()
    };
    let (o, c) = (programs(originals), programs(changed));
    confirm(&s, &namer, &pairs(&o), &pairs(&c)).unwrap()
}

fn pairs(runs: &[(Trace, Program)]) -> Vec<Run<'_>> {
    runs.iter().map(|(t, p)| (t, p)).collect()
}

#[test]
fn a_gain_the_runs_show_is_confirmed_and_one_they_do_not_is_not() {
    let analysed = original(10 * MS, "o1.json");
    let originals = [
        original(10_200 * US, "o2.json"),
        original(9_800 * US, "o3.json"),
    ];
    let fixed = [
        changed(10 * MS, "c1.json"),
        changed(10_100 * US, "c2.json"),
        changed(9_900 * US, "c3.json"),
    ];
    let c = confirmed(&analysed, &originals, &fixed);
    // The original runs take about 2w, the changed ones about w: the medians are the
    // runs with w = 10 ms, their difference w.
    assert_eq!(c.original.traces, ["o1.json", "o2.json", "o3.json"]);
    assert_eq!(c.original.median_ns, analysed_time(&analysed));
    assert_eq!(c.changed.median_ns, analysed_time(&fixed[0]));
    let m = &c.gain.measured;
    assert_eq!(
        m.ns,
        c.original.median_ns as i64 - c.changed.median_ns as i64
    );
    assert!((9 * MS as i64..11 * MS as i64).contains(&m.ns), "{c:#?}");
    // Three runs 0.4 ms apart (2 x 0.2 ms): interquartile range 0.4 ms; the changed
    // ones 0.1 ms apart: 0.1 ms. Spread 0.25 ms, noise floor 0.4 ms.
    assert_eq!(m.spread_ns, 250 * US);
    assert_eq!(m.noise_ns, 400 * US);
    // The replay predicts rank 1's work hidden behind rank 0's: a gain of about w.
    let p = c.gain.predicted.unwrap();
    assert!((9 * MS as i64..11 * MS as i64).contains(&p.ns), "{c:#?}");
    assert!(
        matches!(c.gain.verdict, GainVerdict::Confirmed { .. }),
        "{c:#?}"
    );
    // The same program again as the "changed" runs: nothing gained, where about 10 ms
    // was predicted, far beyond the noise: not confirmed.
    let same = [
        original(10 * MS, "s1.json"),
        original(10_100 * US, "s2.json"),
        original(9_900 * US, "s3.json"),
    ];
    let c = confirmed(&analysed, &originals, &same);
    assert_eq!(c.gain.measured.ns, 0);
    assert_eq!(c.gain.verdict, GainVerdict::NotConfirmed, "{c:#?}");
}

/// The measured run time of a hand-built trace.
fn analysed_time(t: &Trace) -> u64 {
    program_of(t).unwrap().measured_ns
}

#[test]
fn too_few_runs_or_too_few_cores_make_no_verdict() {
    let analysed = original(10 * MS, "o1.json");
    let fixed = [
        changed(10 * MS, "c1.json"),
        changed(10_100 * US, "c2.json"),
        changed(9_900 * US, "c3.json"),
    ];
    // The analysed trace alone for the original.
    let c = confirmed(&analysed, &[], &fixed);
    assert_eq!(
        c.gain.verdict,
        GainVerdict::NotConfirmable {
            why: Unconfirmable::TooFewRuns {
                original: 1,
                changed: 3
            }
        }
    );
    // Both ranks of the analysed run on one CPU of host "vm".
    let originals = [
        original(10_200 * US, "o2.json"),
        original(9_800 * US, "o3.json"),
    ];
    let crowded = on_cpus(original(10 * MS, "o1.json"), "o1.json", Some("0"));
    let c = confirmed(&crowded, &originals, &fixed);
    assert_eq!(
        c.gain.verdict,
        GainVerdict::NotConfirmable {
            why: Unconfirmable::Oversubscribed {
                trace: "o1.json".into(),
                host: "vm".into(),
                ranks: 2,
                cores: 1
            }
        }
    );
    // A run traced before the CPUs were recorded: not known, and the verdict is made.
    let old = on_cpus(original(10 * MS, "o1.json"), "o1.json", None);
    let c = confirmed(&old, &originals, &fixed);
    assert!(matches!(
        c.cores,
        overlap_analyzer::suggest::Cores::Unknown { .. }
    ));
    assert!(
        matches!(c.gain.verdict, GainVerdict::Confirmed { .. }),
        "{c:#?}"
    );
}
