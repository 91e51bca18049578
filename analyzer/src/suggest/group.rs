//! A group of ranks' part of the suggestion: its moves in words with their gains and
//! verdicts, what was left out, the moves a permissive order adds ("possible if"), and
//! the iteration before and after.

use crate::dag::RankOrder;
use crate::ops::Knowledge;
use crate::replay::Replay;

use super::describe::Namer;
use super::moves::Pattern;
use super::tell::{assumed, lines, positions, tell};
use super::{Group, LeftOut, MoveReport, PossibleMove, Verdict};

/// What a group's part is made of.
pub(super) struct Parts<'a> {
    /// Each rank slot's order and move patterns.
    pub ranked: &'a [(RankOrder, Vec<Pattern>)],
    /// Each rank slot's gain per pattern.
    pub gains: &'a [Vec<Option<i64>>],
    /// The model's uncertainty on a gain, ns.
    pub uncertainty_ns: u64,
    /// Each rank slot's suggested order.
    pub suggested_orders: &'a [Vec<usize>],
    /// The moves within the uncertainty are suggested, as they gain more than it
    /// together.
    pub together: bool,
    /// The moves a permissive order adds, per rank slot (empty: none computed).
    pub possible: &'a [Vec<PossibleMove>],
    /// No network is known and the order stands: every move is suggested, its gain
    /// unknown ([`Verdict::NoNetwork`]), but those whose most is too short.
    pub no_network: bool,
    /// Each rank slot's most per pattern, whatever the network ([`super::at_most`]; set
    /// without a network), and the least worth suggesting, ns (none: every move stands).
    pub at_most: &'a [Vec<Option<u64>>],
    pub floor_ns: Option<u64>,
    /// The measured order replayed, and the suggested one (none without a network).
    pub measured: Option<&'a Replay>,
    pub suggested: Option<&'a Replay>,
}

/// One group's part of the suggestion.
pub(super) fn group(namer: &Namer, slots: &[usize], parts: &Parts) -> Group {
    let first = slots[0];
    let rank = &namer.program.ranks[first];
    let (order, patterns) = &parts.ranked[first];
    let period = order.period;
    let position = positions(rank, &order.consensus.order);
    let mut knowledge = Knowledge::new(namer.program, rank);
    let mut left_out = LeftOut::default();
    let moves = patterns
        .iter()
        .zip(&parts.gains[first])
        .enumerate()
        .map(|(k, (p, gain))| {
            let told = tell(namer, rank, &p.shown, period);
            let at_most = (parts.at_most.get(first)).and_then(|m| m.get(k).copied().flatten());
            let verdict = match Verdict::of(*gain, parts.uncertainty_ns) {
                Verdict::BelowUncertainty if parts.together => Verdict::GainsTogether,
                Verdict::Unknown if parts.no_network => match at_most {
                    Some(most) if parts.floor_ns.is_some_and(|f| most <= f) => Verdict::TooShort,
                    _ => Verdict::NoNetwork,
                },
                v => v,
            };
            match verdict {
                Verdict::Gains | Verdict::GainsTogether | Verdict::NoNetwork => {}
                Verdict::BelowUncertainty => left_out.within_uncertainty += 1,
                Verdict::Costs => left_out.costs += 1,
                Verdict::Unknown => left_out.not_evaluated += 1,
                Verdict::TooShort => left_out.too_short += 1,
            }
            MoveReport {
                text: told.text,
                what: told.what,
                from_after: told.from_after,
                to_before: told.to_before,
                next_iteration: told.next_iteration,
                iterations: p.instances.len(),
                gain_ns: *gain,
                at_most_ns: at_most,
                verdict,
                assumptions: assumed(namer, &mut knowledge, rank, &p.shown, &position),
            }
        })
        .collect();
    let (before, after) = match period {
        Some(per) => {
            let k = 1 + per.iterations as u32 / 2;
            let before: Vec<usize> = (0..rank.ops.len()).filter(|&i| per.scope(i) == k).collect();
            let after: Vec<usize> = parts.suggested_orders[first]
                .iter()
                .copied()
                .filter(|&i| per.scope(i) == k)
                .collect();
            (lines(namer, rank, &before), lines(namer, rank, &after))
        }
        None => (Vec::new(), Vec::new()),
    };
    let ends = parts.measured.map_or_else(Vec::new, |measured| {
        slots
            .iter()
            .map(|&s| {
                let start = measured.start_ns;
                let m = (measured.ranks.get(s)).map_or(0, |r| r.end_ns.saturating_sub(start));
                let a = (parts.suggested.and_then(|x| x.ranks.get(s)))
                    .map_or(m, |r| r.end_ns.saturating_sub(start));
                (namer.program.ranks[s].rank, m, a)
            })
            .collect()
    });
    Group {
        ranks: slots.iter().map(|&s| namer.program.ranks[s].rank).collect(),
        period: period.map(|p| (p.length, p.iterations)),
        moves,
        left_out,
        possible: parts.possible.get(first).cloned().unwrap_or_default(),
        before,
        after,
        ends,
    }
}

#[cfg(test)]
mod tests {
    use super::super::moves::Move;
    use std::num::NonZeroU64;
    use std::path::Path;

    use overlap_format::schema::{
        ByteRange, CallArgs, Completion, Event, LearnedUse, Nanos, Op, Outcome, Touch,
    };

    use super::*;
    use crate::sites::{Resolution, Site, SiteTable};

    fn call(op: Op, (start, end): (u64, u64), site: u64, args: CallArgs) -> Event {
        let args = CallArgs {
            site: Some(site),
            ..args
        };
        overlap_format::testing::call(op, start, end, args)
    }

    /// A receive's wait moved to the first read of its buffer inside a gap, said by the
    /// touch's line; a touch inside a library's function (`memcpy`) by the function and
    /// the call after which it came:
    ///
    /// ```text
    ///  |Irecv 0-1 (0x1111)|Wait 1-10 (0x2222)|.. gap 10-40, read at 20 ..|Barrier 40-41|
    ///  ops  Post Complete Compute 10-20 Compute 20-40 (from the read) Barrier
    /// ```
    #[test]
    fn a_move_to_a_touch_is_said_by_its_line_or_its_function() {
        let buf = CallArgs {
            peer: Some(1),
            tag: Some(5),
            bytes: Some(4096),
            comm: Some(0),
            buf: Some(0x20000),
            buf_len: Some(4096),
            request: Some(1),
            ..CallArgs::default()
        };
        let done = CallArgs {
            completed: vec![Completion {
                request: Some(1),
                source: Some(1),
                tag: Some(5),
                bytes: Some(4096),
            }],
            ..CallArgs::default()
        };
        let barrier = CallArgs {
            comm: Some(0),
            ..CallArgs::default()
        };
        let events = vec![
            call(Op::Irecv, (0, 1), 0x1111, buf),
            call(Op::Wait, (1, 10), 0x2222, done),
            call(Op::Barrier, (40, 41), 0x3333, barrier),
        ];
        let mut trace = crate::merge::from_events("t", Path::new("t"), vec![events]);
        let range = Some(ByteRange {
            addr: 0x20000,
            len: 4096,
        });
        trace.ranks[0].learned = vec![LearnedUse {
            request: 1,
            from: Nanos(10),
            reads: range,
            writes: range,
            outcome: Outcome::Used {
                earliest: Nanos(20),
                latest: Nanos(20),
                touch: Touch::Read,
                addr: 0x20000,
                ip: NonZeroU64::new(0x9999),
            },
        }];
        let program = crate::ops::extract(&trace).expect("a program");
        let rank = &program.ranks[0];
        assert!(rank.cut_at(3).is_some(), "{:#?}", rank.ops);
        let m = Move {
            ops: vec![1],
            after: Some(0),
            before: Some(3),
            now_after: Some(2),
        };
        let mut sites = SiteTable::build(&trace);
        let told = |sites: &SiteTable| {
            let namer = Namer {
                trace: &trace,
                program: &program,
                sites,
            };
            tell(&namer, rank, &m, None).text
        };
        let waited = "move MPI_Wait (the MPI_Irecv from rank 1 (tag 5, 4.0 KiB), 0x1111) at 0x2222";
        assert_eq!(
            told(&sites),
            format!("{waited} to just before 0x9999 (the first read of the receive buffer)")
        );
        let memcpy = Site {
            label: "libc.so.6+0x1a2b3c (__memmove_avx_unaligned_erms)".into(),
            file: None,
            line: None,
            function: Some("__memmove_avx_unaligned_erms".into()),
            inlined_into: Vec::new(),
            callers: Vec::new(),
            object: Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into()),
            offset: Some(0x1a2b3c),
            resolution: Resolution::SymbolTable,
            unavailable: None,
        };
        sites.name_touch(0, 0x9999, memcpy);
        assert_eq!(
            told(&sites),
            format!(
                "{waited} to just before __memmove_avx_unaligned_erms in libc.so.6 (the \
                 first read of the receive buffer), called after 0x2222"
            )
        );
    }
}
