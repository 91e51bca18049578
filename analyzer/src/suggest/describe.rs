//! Operations and moves in words, for people: every operation named by its call and its
//! symbolized call site (`file:line`) where one was recorded, and the assumptions a
//! move of a permissive order needs where nothing says what its compute touches.
//!
//! ```text
//!  move the completion of MPI_Isend to rank 1 (tag 17, 1.0 MiB) out of MPI_Waitall
//!  (calls.c:22) from after MPI_Waitall (recv, calls.c:22) to before MPI_Irecv
//!  (calls.c:18) of the next iteration
//!  possible if the compute between calls.c:22 and calls.c:18 does not write the send
//!  buffer [0x7f12..., +1.0 MiB)
//! ```

use std::num::NonZeroU64;

use serde::Serialize;

use crate::dependence::Effect;
use crate::model::Trace;
use crate::ops::{
    CallSites, CompactIndex, Knowledge, LearnedOp, OpKind, Operation, Program, RankProgram,
    RequestRole, Touch,
};
use crate::sites::{Site, SiteTable};
use crate::units::{bytes, duration};

/// Names operations of a trace's program.
pub struct Namer<'a> {
    /// The trace (for call sites).
    pub trace: &'a Trace,
    /// The program.
    pub program: &'a Program,
    /// Symbolized call sites.
    pub sites: &'a SiteTable,
}

/// The trace's call sites, and its touches' symbolized lines: the keys the iteration
/// finder gives a part of a gap that starts at a learned touch.
impl CallSites for Namer<'_> {
    fn site(&self, rank: u32, op: &Operation) -> Option<NonZeroU64> {
        self.trace.site(rank, op)
    }

    fn touch_site(&self, rank: u32, ip: NonZeroU64) -> Option<u64> {
        use std::hash::{Hash, Hasher};
        let place = self.sites.touch(rank, ip.get())?.place();
        let mut h = crate::fxhash::FxHasher::default();
        place.hash(&mut h);
        Some(h.finish())
    }
}

impl Namer<'_> {
    /// The call site of the call behind a span, if one was recorded.
    pub fn site(&self, rank: u32, span: usize) -> Option<String> {
        self.sites.label_of_call(self.trace, rank, span)
    }

    fn at(&self, rank: u32, span: usize) -> String {
        self.site(rank, span)
            .map_or(String::new(), |s| format!(" at {s}"))
    }

    /// A short name: the call or compute, and where (for the side-by-side order).
    pub fn short(&self, rank: &RankProgram, i: usize) -> String {
        let op = &rank.ops[i];
        let site = self.site(rank.rank, op.span as usize);
        let with_site = |what: String| match &site {
            Some(s) => format!("{what} ({s})"),
            None => what,
        };
        match &op.kind {
            OpKind::Compute { .. } => {
                format!("{} [{}]", self.compute(rank, i), duration(op.cost_ns))
            }
            OpKind::Post { request } | OpKind::Complete { request } => {
                let r = &self.program.requests[*request];
                let call = op.call.map_or("MPI call", |c| c.mpi_name());
                let what = match (r.role, r.peer()) {
                    _ if r.proc_null && r.role == RequestRole::Recv => {
                        "recv from MPI_PROC_NULL".to_string()
                    }
                    (RequestRole::Send, Some(p)) if p < 0 => "send to MPI_PROC_NULL".to_string(),
                    (RequestRole::Send, Some(p)) => format!("send to {p}"),
                    (RequestRole::Recv, Some(p)) if p >= 0 => format!("recv from {p}"),
                    (RequestRole::Recv, _) => "recv".to_string(),
                    (RequestRole::Collective, _) => "collective".to_string(),
                    _ => "request".to_string(),
                };
                with_site(format!("{call}[{what}]"))
            }
            _ => with_site(op.call.map_or("MPI call", |c| c.mpi_name()).to_string()),
        }
    }

    /// A compute operation in words: its span's name, or for a gap the calls around it
    /// (`the compute between halo.c:40 and halo.c:52`), for a part of a gap cut at a
    /// learned touch the touch where it starts or ends (`the compute from halo.c:72
    /// (first read of the receive buffer of MPI_Irecv halo.c:40) to halo.c:80`); empty
    /// for another operation.
    pub fn compute(&self, rank: &RankProgram, i: usize) -> String {
        let op = &rank.ops[i];
        match &op.kind {
            OpKind::Compute { inferred: true, .. } => self.inferred(rank, i),
            OpKind::Compute { name, .. } => format!("compute \"{}\"", self.program.name(*name)),
            _ => String::new(),
        }
    }

    /// The call at `span` of `rank`, by its site (its name when it has none).
    fn call_place(&self, rank: u32, span: usize) -> String {
        self.site(rank, span).unwrap_or_else(|| {
            let call = self.trace.rank(rank).and_then(|t| t.call(span));
            call.map_or("?", |(op, _)| op.mpi_name()).to_string()
        })
    }

    /// The inferred compute `i`: between the calls around its gap, or the touches that
    /// cut it.
    fn inferred(&self, rank: &RankProgram, i: usize) -> String {
        let op = &rank.ops[i];
        let OpKind::Compute { until_span, .. } = op.kind else {
            return String::new();
        };
        let until = until_span.map(CompactIndex::get);
        // Where the part ends: a touch that cut the gap further on, or its call.
        let end = match (rank.cut_at(i + 1), until) {
            (Some(next), _) => Some(self.touch_place(rank, next)),
            (None, Some(u)) => Some(self.call_place(rank.rank, u)),
            (None, None) => None,
        };
        match (rank.cut_at(i), end) {
            (Some(from), end) => format!(
                "the compute from {} ({}) to {}",
                self.touch_place(rank, from),
                self.touch_words(from),
                end.as_deref().unwrap_or("the end")
            ),
            (None, Some(end)) => format!(
                "the compute between {} and {end}",
                self.call_place(rank.rank, op.span as usize)
            ),
            (None, None) => format!(
                "the compute after {}",
                self.call_place(rank.rank, op.span as usize)
            ),
        }
    }

    /// Where the first touch of learned use `l` of `rank` is in the source
    /// ([`crate::sites::Site::place`]): `halo.c:72 (main)`, or a library's function; its
    /// address when not symbolized, `an unrecorded instruction` when not recorded (an
    /// edge byte found changed).
    pub fn touch_place(&self, rank: &RankProgram, l: &LearnedOp) -> String {
        match l.ip {
            Some(ip) => (self.sites.touch(rank.rank, ip.get()))
                .map_or_else(|| format!("{ip:#x}"), Site::place),
            None => "an unrecorded instruction".to_string(),
        }
    }

    /// Whether the first touch of `l` of `rank` is in a shared library's function
    /// (`memcpy`).
    pub fn touch_in_library(&self, rank: &RankProgram, l: &LearnedOp) -> bool {
        let site = l.ip.and_then(|ip| self.sites.touch(rank.rank, ip.get()));
        site.is_some_and(|s| s.library_function().is_some())
    }

    /// What the first touch of `l` is: `first read of the receive buffer`.
    pub fn touch_what(&self, l: &LearnedOp) -> String {
        let kind = match l.touched().map(|t| t.1) {
            Some(Touch::Read) => "first read",
            _ => "first write",
        };
        let role = self.program.requests.get(l.request()).map(|r| r.role);
        format!("{kind} of {}", role.map_or("a buffer", buffer_words))
    }

    /// [`Self::touch_what`] with the request's post: `first read of the receive buffer
    /// of MPI_Irecv halo.c:40 (main)`.
    pub fn touch_words(&self, l: &LearnedOp) -> String {
        let what = self.touch_what(l);
        let Some(r) = self.program.requests.get(l.request()) else {
            return what;
        };
        let post = self.program.rank(r.rank).and_then(|p| p.ops.get(r.post()));
        let call = post
            .and_then(|p| p.call)
            .map_or("MPI call", |c| c.mpi_name());
        let site = post
            .and_then(|p| self.site(r.rank, p.span as usize))
            .map_or(String::new(), |s| format!(" {s}"));
        format!("{what} of {call}{site}")
    }

    /// A name that is the same for the same operation in another run of the program:
    /// what it is and its symbolized call site (a compute: its name, or the calls around
    /// the gap), without its duration.
    pub fn key(&self, rank: &RankProgram, i: usize) -> String {
        let op = &rank.ops[i];
        match &op.kind {
            OpKind::Compute {
                name,
                inferred: true,
                ..
            } => format!("{} {}", self.program.name(*name), self.inferred(rank, i)),
            OpKind::Compute { name, .. } => format!("compute \"{}\"", self.program.name(*name)),
            _ => self.short(rank, i),
        }
    }

    /// What the operation is and where the program made it, without its peer: the same
    /// for the same code on every rank (ranks running one program are grouped by it).
    pub fn code_key(&self, rank: &RankProgram, i: usize) -> String {
        let op = &rank.ops[i];
        match &op.kind {
            OpKind::Post { request } | OpKind::Complete { request } => {
                let role = self.program.requests[*request].role;
                let call = op.call.map_or("MPI call", |c| c.mpi_name());
                let site = self.site(rank.rank, op.span as usize).unwrap_or_default();
                format!("{call} {role:?} {site}")
            }
            _ => self.key(rank, i),
        }
    }

    /// A full name: what the operation does and where.
    pub fn long(&self, rank: &RankProgram, i: usize) -> String {
        let op = &rank.ops[i];
        match &op.kind {
            OpKind::Post { request } => {
                let r = &self.program.requests[*request];
                let call = op.call.map_or("MPI call", |c| c.mpi_name());
                format!(
                    "{call} {}{}",
                    self.request_words(*request),
                    self.at(r.rank, op.span as usize)
                )
            }
            OpKind::Complete { request } => {
                let r = &self.program.requests[*request];
                let call = op.call.map_or("MPI call", |c| c.mpi_name());
                let post = &self.program.rank(r.rank).map(|p| &p.ops[r.post()]);
                let posted = post
                    .and_then(|p| p.call)
                    .map_or("request", |c| c.mpi_name());
                let post_site = post
                    .and_then(|p| self.site(r.rank, p.span as usize))
                    .map_or(String::new(), |s| format!(", {s}"));
                format!(
                    "{call} (the {posted} {}{post_site}){}",
                    self.request_words(*request),
                    self.at(r.rank, op.span as usize)
                )
            }
            _ => self.short(rank, i),
        }
    }

    fn request_words(&self, request: usize) -> String {
        let r = &self.program.requests[request];
        let peer = match (r.role, r.peer()) {
            _ if r.proc_null && r.role == RequestRole::Recv => "from MPI_PROC_NULL".to_string(),
            (RequestRole::Send, Some(p)) if p < 0 => "to MPI_PROC_NULL".to_string(),
            (RequestRole::Send, Some(p)) => format!("to rank {p}"),
            (RequestRole::Send, None) => "to an unrecorded rank".to_string(),
            (RequestRole::Recv, Some(p)) if p >= 0 => format!("from rank {p}"),
            (RequestRole::Recv, _) => "from any rank".to_string(),
            (RequestRole::Collective, _) => "of a collective".to_string(),
            (RequestRole::Other, _) => "one-sided".to_string(),
        };
        // A point-to-point request's size is recorded; a collective's or a one-sided
        // request's is not always: it is not shown rather than shown as 0.
        let size = matches!(r.role, RequestRole::Send | RequestRole::Recv).then(|| bytes(r.bytes));
        let tag = r.tag().map(|t| format!("tag {t}"));
        let detail: Vec<String> = tag.into_iter().chain(size).collect();
        if detail.is_empty() {
            peer
        } else {
            format!("{peer} ({})", detail.join(", "))
        }
    }
}

/// A request's buffer in words.
fn buffer_words(role: RequestRole) -> &'static str {
    match role {
        RequestRole::Send => "the send buffer",
        RequestRole::Recv => "the receive buffer",
        _ => "the buffer",
    }
}

/// What a move takes for granted about compute whose effect on its buffer is not known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Assumption {
    /// The compute, in words.
    pub compute: String,
    /// What it must not do.
    pub must_not: &'static str,
    /// The buffer: which request's.
    pub buffer: String,
    /// Its address and length, `[0x..., +N)`.
    pub range: String,
}

impl std::fmt::Display for Assumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} does not {} {} {}",
            self.compute, self.must_not, self.buffer, self.range
        )
    }
}

/// The assumptions of moving operation `m` of `rank` to its place in an order
/// (`position[i]`: where operation `i` is in it), which lies between program positions
/// `within.0` and `within.1` (the operation and where it lands): one per compute it
/// crosses whose effect on the request's buffer is not known (`knowledge`: what the
/// rank's declared and learned uses prove). A move of the proven order has none.
pub fn assumptions(
    namer: &Namer,
    knowledge: &mut Knowledge,
    rank: &RankProgram,
    m: usize,
    position: &[usize],
    within: (usize, usize),
) -> Vec<Assumption> {
    let op = &rank.ops[m];
    let request = match op.kind {
        OpKind::Post { request } | OpKind::Complete { request } => request,
        _ => return Vec::new(),
    };
    let r = &namer.program.requests[request];
    let buffer = buffer_words(r.role);
    let range = match r.buffer() {
        Some(b) => format!("[{:#x}, +{})", b.addr, bytes(b.len)),
        None => "(its address was not recorded)".to_string(),
    };
    let mut out = Vec::new();
    let (lo, hi) = (
        within.0.min(within.1),
        within.0.max(within.1).min(rank.ops.len() - 1),
    );
    for (x, other) in rank.ops.iter().enumerate().take(hi + 1).skip(lo) {
        if !matches!(other.kind, OpKind::Compute { .. }) {
            continue;
        }
        let crossed = (x < m && position[x] > position[m]) || (x > m && position[x] < position[m]);
        if !crossed || knowledge.effect(x, r) != Effect::Unknown {
            continue;
        }
        let compute = namer.compute(rank, x);
        let a = Assumption {
            compute,
            must_not: r.guard().verb(),
            buffer: buffer.to_string(),
            range: range.clone(),
        };
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}
