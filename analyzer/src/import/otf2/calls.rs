//! One location's records into overlap's events: an MPI call is what happens between
//! the `Enter` and the `Leave` of its region, its arguments taken from the MPI records
//! inside (ranks of communicators made world ranks) and, in overlap's own archives,
//! from the attributes on its `Enter`; the program's own regions are compute spans.
//!
//! Compute in another writer's archive is the exclusive time of its regions: a region
//! that encloses MPI calls (`main`, a solver's loop) computes only between them, each
//! piece named by the innermost region open.
//!
//! ```text
//!  records   Enter(main) Enter(MPI_Isend) Leave Enter(solve) Leave Enter(MPI_Wait) Leave Leave(main)
//!  events    |main|      |MPI_Isend|      |main||solve|    |main||MPI_Wait|     |main|
//! ```
//!
//! In overlap's own archives each region is one span, as the rank file had it.

use std::collections::HashMap;
use std::sync::Arc;

use overlap_format::schema::{
    CallArgs, CallEvent, Completion, ComputeEvent, Event, Nanos, Op, SourceSite, SpanBuffers,
    Started,
};
use overlap_otf2::{Attr, AttrValue, Record};

use super::clocks::Bend;
use super::layout::{Layout, RegionKind};
use super::rma::{self, InCall, Issued};
use super::vocabulary::CallAttr;

/// A region open on the location.
enum Open {
    Call {
        op: Op,
        start: u64,
        // Boxed: the other kinds are small, and one call is open at a time.
        args: Box<CallArgs>,
        kept: bool,
    },
    Compute {
        name: String,
        start: u64,
        buffers: Option<Arc<SpanBuffers>>,
    },
    Other,
}

/// The rank's events being read, with what spans its threads.
pub(super) struct RankEvents {
    /// The rank.
    pub rank: u32,
    /// Its events, thread after thread.
    pub events: Vec<Event>,
    /// Receives and non-blocking collectives posted whose completion has not been read
    /// (other writers' archives: the post takes the peer, tag and size, or the
    /// communicator, root and bytes, of its completion), by request.
    posted: HashMap<u64, usize>,
    /// MPI functions overlap does not model, with their calls.
    pub unrecorded: std::collections::BTreeMap<String, u64>,
    /// Regions left open at the end of a location, or left out of order.
    pub unbalanced: u64,
    /// The buffers its compute spans declared (overlap's archives), by place.
    pub span_buffers: Vec<Arc<SpanBuffers>>,
    /// The groups its window calls named (overlap's archives), by place.
    pub groups: Vec<Vec<i32>>,
    /// The regions its Pcontrol calls named (overlap's archives), by place.
    pub regions: Vec<String>,
    /// The source locations its calls were made at (other writers' archives), each a
    /// site of the rank, its id from 1.
    pub sites: Vec<SourceSite>,
    /// Their ids, by source code location definition.
    site_ids: HashMap<u32, u64>,
}

impl RankEvents {
    pub fn new(rank: u32) -> RankEvents {
        RankEvents {
            rank,
            events: Vec::new(),
            posted: HashMap::new(),
            unrecorded: Default::default(),
            unbalanced: 0,
            span_buffers: Vec::new(),
            groups: Vec::new(),
            regions: Vec::new(),
            sites: Vec::new(),
            site_ids: HashMap::new(),
        }
    }
}

/// One location (thread) being read.
pub(super) struct Thread<'a> {
    layout: &'a Layout,
    rank: &'a mut RankEvents,
    tid: u32,
    epoch: u64,
    stack: Vec<Open>,
    /// Where the innermost compute region's current piece began (other writers).
    piece: u64,
    /// Its one-sided operations not completed yet.
    issued: Issued,
    /// What its clock offsets between the first and the last say of its times.
    bend: Option<Bend>,
}

impl<'a> Thread<'a> {
    pub fn new(
        layout: &'a Layout,
        rank: &'a mut RankEvents,
        tid: u32,
        epoch: u64,
        bend: Option<Bend>,
    ) -> Thread<'a> {
        Thread {
            layout,
            rank,
            tid,
            epoch,
            stack: Vec::new(),
            piece: 0,
            issued: Issued::new(),
            bend,
        }
    }

    /// Takes one record at `ticks`.
    pub fn record(&mut self, ticks: u64, record: &Record, attrs: &[Attr]) {
        let ticks = self.bend.as_ref().map_or(ticks, |b| b.apply(ticks));
        let t = self.layout.ns(ticks, self.epoch);
        match *record {
            Record::Enter { region } => self.enter(t, region, attrs),
            Record::Leave { .. } => self.leave(t),
            ref mpi => self.mpi(mpi, attrs),
        }
    }

    /// The end of the location's records: what is still open was never left.
    pub fn finish(self) {
        self.rank.unbalanced += self.stack.len() as u64;
    }

    fn enter(&mut self, t: u64, region: u32, attrs: &[Attr]) {
        self.close_piece(t);
        let open = match self.layout.regions.get(&region) {
            Some(RegionKind::Call(op)) => {
                let (mut args, kept) = self.kept_args(attrs);
                if !kept {
                    args.site = self.source_site(attrs);
                }
                Open::Call {
                    op: *op,
                    start: t,
                    args: Box::new(args),
                    kept,
                }
            }
            Some(RegionKind::Compute(name)) => {
                self.piece = t;
                let buffers = self.declared(attrs);
                Open::Compute {
                    name: name.clone(),
                    start: t,
                    buffers,
                }
            }
            Some(RegionKind::Unrecorded(name)) => {
                *self.rank.unrecorded.entry(name.clone()).or_insert(0) += 1;
                Open::Other
            }
            Some(RegionKind::Other) | None => Open::Other,
        };
        self.stack.push(open);
    }

    fn leave(&mut self, t: u64) {
        let Some(open) = self.stack.pop() else {
            self.rank.unbalanced += 1;
            return;
        };
        match open {
            Open::Call {
                op,
                start,
                mut args,
                kept,
            } => {
                if !kept && op.is_test() && args.completed.is_empty() {
                    args.flag = Some(0);
                }
                if !kept && op == Op::WinTest && args.flag.is_none() {
                    // No `RmaGroupSync`: the exposure epoch had not ended.
                    args.flag = Some(0);
                }
                self.rank.events.push(Event::Call(CallEvent {
                    tid: self.tid,
                    start: Nanos(start),
                    end: Nanos(t),
                    op,
                    args: *args,
                }));
            }
            Open::Compute {
                name,
                start,
                buffers,
            } => {
                let start = if self.layout.ours { start } else { self.piece };
                self.push_compute(name, start, t, buffers);
            }
            Open::Other => {}
        }
        if matches!(self.stack.last(), Some(Open::Compute { .. })) {
            self.piece = t;
        }
    }

    /// Before a region opens inside a compute region of another writer, the piece
    /// computed so far.
    fn close_piece(&mut self, t: u64) {
        if self.layout.ours {
            return;
        }
        if let Some(Open::Compute { name, .. }) = self.stack.last() {
            let name = name.clone();
            self.push_compute(name, self.piece, t, None);
        }
    }

    fn push_compute(
        &mut self,
        name: String,
        start: u64,
        end: u64,
        buffers: Option<Arc<SpanBuffers>>,
    ) {
        if !self.layout.ours && end <= start {
            return;
        }
        self.rank.events.push(Event::Compute(ComputeEvent {
            tid: self.tid,
            start: Nanos(start),
            end: Nanos(end),
            name,
            buffers,
        }));
    }

    /// The site of a call of another writer: its source code location (OTF2's
    /// `SOURCE_CODE_LOCATION` attribute), listed as a source site of the rank.
    fn source_site(&mut self, attrs: &[Attr]) -> Option<u64> {
        let attribute = self.layout.source_attr?;
        let place = attrs.iter().find_map(|a| match a.value {
            AttrValue::SourceCodeLocation(r) if a.attribute == attribute => Some(r),
            _ => None,
        })?;
        let (file, line) = self.layout.places.get(&place)?;
        let sites = &mut self.rank.sites;
        let id = *self.rank.site_ids.entry(place).or_insert_with(|| {
            let id = sites.len() as u64 + 1;
            sites.push(SourceSite {
                id,
                file: file.clone(),
                line: *line,
                column: 0,
                function: None,
            });
            id
        });
        Some(id)
    }

    /// The buffers a compute span of overlap's declared, named by its attribute.
    fn declared(&self, attrs: &[Attr]) -> Option<Arc<SpanBuffers>> {
        attrs
            .iter()
            .find_map(|a| match (self.layout.attrs.get(&a.attribute), a.value) {
                (Some(CallAttr::SpanBuffers), AttrValue::U64(i)) => {
                    self.rank.span_buffers.get(i as usize).cloned()
                }
                _ => None,
            })
    }

    /// The arguments overlap's writer kept as attributes on the call's `Enter`.
    fn kept_args(&self, attrs: &[Attr]) -> (CallArgs, bool) {
        let mut a = CallArgs::default();
        let mut kept = false;
        for attr in attrs {
            let Some(which) = self.layout.attrs.get(&attr.attribute) else {
                continue;
            };
            let (u, i) = match attr.value {
                AttrValue::U64(u) => (u, u as i64),
                AttrValue::I64(i) => (i as u64, i),
                AttrValue::SourceCodeLocation(_) | AttrValue::Other => continue,
            };
            kept = true;
            let i32_ = i32::try_from(i).ok();
            let u32_ = u32::try_from(u).ok();
            match which {
                CallAttr::Peer => a.peer = i32_,
                CallAttr::Tag => a.tag = i32_,
                CallAttr::Bytes => a.bytes = Some(u),
                CallAttr::Comm => a.comm = u32_,
                CallAttr::Buf => a.buf = Some(u),
                CallAttr::BufLen => a.buf_len = Some(u),
                CallAttr::Request => a.request = Some(u),
                CallAttr::RecvPeer => a.recv_peer = i32_,
                CallAttr::RecvTag => a.recv_tag = i32_,
                CallAttr::RecvBuf => a.recv_buf = Some(u),
                CallAttr::RecvBufLen => a.recv_buf_len = Some(u),
                CallAttr::SendBytes => a.send_bytes = Some(u),
                CallAttr::RecvBytes => a.recv_bytes = Some(u),
                CallAttr::Root => a.root = i32_,
                CallAttr::Site => a.site = Some(u),
                CallAttr::Win => a.win = u32_,
                CallAttr::Exclusive => a.exclusive = u8::try_from(u).ok(),
                CallAttr::Flag => a.flag = u8::try_from(u).ok(),
                CallAttr::Level => a.level = i32_,
                CallAttr::Group => {
                    a.group = self
                        .rank
                        .groups
                        .get(u as usize)
                        .cloned()
                        .unwrap_or_default()
                }
                CallAttr::Region => a.region = self.rank.regions.get(u as usize).cloned(),
                CallAttr::Persistent | CallAttr::SpanBuffers | CallAttr::Source => {}
            }
        }
        (a, kept)
    }

    /// An MPI record inside the call open.
    fn mpi(&mut self, record: &Record, attrs: &[Attr]) {
        let me = self.rank.rank;
        let layout = self.layout;
        let persistent =
            attrs
                .iter()
                .find_map(|a| match (layout.attrs.get(&a.attribute), a.value) {
                    (Some(CallAttr::Persistent), AttrValue::U64(p)) => Some(p),
                    _ => None,
                });
        // A status source OTF2 could not name (MPI_PROC_NULL), kept by overlap's writer.
        let unnamed_source =
            attrs
                .iter()
                .find_map(|a| match (layout.attrs.get(&a.attribute), a.value) {
                    (Some(CallAttr::Source), AttrValue::I64(s)) => i32::try_from(s).ok(),
                    _ => None,
                });
        let Some(Open::Call { op, args, kept, .. }) = self.stack.last_mut() else {
            return;
        };
        let (op, kept) = (*op, *kept);
        if rma::is_rma(record) {
            let call = InCall { op, args, kept };
            rma::take(layout, me, &mut self.issued, call, record);
            return;
        }
        let starts = matches!(op, Op::Start | Op::Startall);
        let u = |v: u64| (v != u64::MAX).then_some(v);
        let tag = |t: u32| (t != u32::MAX).then_some(t as i32);
        match *record {
            Record::MpiSend {
                receiver,
                comm,
                tag: t,
                bytes,
            }
            | Record::MpiIsend {
                receiver,
                comm,
                tag: t,
                bytes,
                ..
            } => {
                if let Record::MpiIsend { request, .. } = *record {
                    if starts {
                        args.started.push(Started {
                            request,
                            persistent: persistent.unwrap_or(request),
                        });
                        return;
                    }
                    if !kept {
                        args.request = Some(request);
                    }
                }
                if !kept {
                    let (id, peer) = layout.world(comm, receiver, me);
                    (args.comm, args.peer, args.tag, args.bytes) = (id, peer, tag(t), u(bytes));
                }
            }
            Record::MpiIrecvRequest { request }
            | Record::NonBlockingCollectiveRequest { request } => {
                if starts {
                    args.started.push(Started {
                        request,
                        persistent: persistent.unwrap_or(request),
                    });
                } else if !kept {
                    args.request = Some(request);
                    // The post is pushed when the call is left: its index then.
                    let at = self.rank.events.len();
                    self.rank.posted.insert(request, at);
                }
            }
            Record::MpiRecv {
                sender,
                comm,
                tag: t,
                bytes,
            }
            | Record::MpiIrecv {
                sender,
                comm,
                tag: t,
                bytes,
                ..
            } => {
                let (id, source) = layout.world(comm, sender, me);
                let source = unnamed_source.or(source);
                let request = match *record {
                    Record::MpiIrecv { request, .. } => Some(request),
                    _ => None,
                };
                let done = Completion {
                    request,
                    source,
                    tag: tag(t),
                    bytes: u(bytes),
                };
                args.completed.push(done);
                if kept {
                    return;
                }
                match request {
                    None if args.peer.is_none() => {
                        (args.comm, args.peer, args.tag, args.bytes) =
                            (id, source, done.tag, done.bytes);
                    }
                    None => {
                        // A Sendrecv's receive half.
                        (args.recv_peer, args.recv_tag) = (source, done.tag);
                    }
                    Some(r) => {
                        if let Some(at) = self.rank.posted.remove(&r) {
                            if let Some(Event::Call(post)) = self.rank.events.get_mut(at) {
                                let p = &mut post.args;
                                p.comm = p.comm.or(id);
                                p.peer = p.peer.or(source);
                                p.tag = p.tag.or(done.tag);
                                p.bytes = p.bytes.or(done.bytes);
                            }
                        }
                    }
                }
            }
            Record::MpiIsendComplete { request } | Record::MpiRequestCancelled { request } => {
                args.completed.push(Completion {
                    request: Some(request),
                    source: None,
                    tag: None,
                    bytes: None,
                });
            }
            Record::NonBlockingCollectiveComplete {
                request,
                comm,
                root,
                sent,
                received,
                ..
            } => {
                args.completed.push(Completion {
                    request: Some(request),
                    source: None,
                    tag: None,
                    bytes: None,
                });
                if let Some(at) = self.rank.posted.remove(&request) {
                    if let Some(Event::Call(post)) = self.rank.events.get_mut(at) {
                        let (id, root) = layout.world(comm, root, me);
                        let p = &mut post.args;
                        p.comm = p.comm.or(id);
                        p.root = p.root.or(root);
                        p.send_bytes = p.send_bytes.or(u(sent));
                        p.recv_bytes = p.recv_bytes.or(u(received));
                    }
                }
            }
            Record::MpiCollectiveEnd {
                comm,
                root,
                sent,
                received,
                ..
            } if !kept => {
                let (id, root) = layout.world(comm, root, me);
                (args.comm, args.root, args.send_bytes, args.recv_bytes) =
                    (id, root, u(sent), u(received));
            }
            // Tests found not done, enter and leave (taken before), RMA records (taken
            // above) and records of other kinds.
            _ => {}
        }
    }
}
