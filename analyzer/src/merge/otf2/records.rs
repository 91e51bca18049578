//! One rank's calls and compute spans as OTF2 records, thread by thread: each event an
//! `Enter` and a `Leave` of its region (nested as they nest on the thread), with the
//! MPI records OTF2 defines for the call inside (posts at its entry, completions at its
//! exit) and the call's arguments as overlap's attributes on its `Enter`.
//!
//! ```text
//!  Isend(to 1, req 7)   Enter(MPI_Isend) MpiIsend(1, comm, tag, bytes, 7) Leave
//!  Waitall(7, 8)        Enter(MPI_Waitall) MpiIsendComplete(7) MpiIrecv(from 3, .., 8) Leave
//!  Allreduce            Enter(MPI_Allreduce) MpiCollectiveBegin MpiCollectiveEnd(ALLREDUCE, ..) Leave
//! ```
//!
//! Calls on windows have OTF2's RMA records ([`super::rma`]).

use std::collections::HashMap;

use overlap_format::schema::{CallArgs, CallEvent, Event, Op, OpClass, RequestKind};
use overlap_otf2::{Attr, AttrValue, EventWriter, Record};

use super::defs::{Builder, RegionKey, SOURCE_CODE_LOCATION_ATTR};
use super::named::Named;
use super::rma::{Records, RmaThread};
use crate::import::otf2::vocabulary::{collective_op_of, CallAttr};
use crate::Result;

/// What a request's post said, for the records of its completion: the arguments
/// those records name, not the post's whole arguments (a rank of many requests holds
/// one of these per request).
#[derive(Clone, Copy, Debug)]
pub(super) struct Posted {
    kind: RequestKind,
    op: Op,
    comm: Option<u32>,
    peer: Option<i32>,
    tag: Option<i32>,
    bytes: Option<u64>,
    root: Option<i32>,
    send_bytes: Option<u64>,
    recv_bytes: Option<u64>,
    win: Option<u32>,
}

impl Posted {
    /// What the post `c` said, when it posts (or initialises) a request.
    pub fn of(c: &CallEvent) -> Option<(u64, Posted)> {
        let (kind, request) = (c.op.request_kind()?, c.args.request?);
        let a = &c.args;
        let posted = Posted {
            kind,
            op: c.op,
            comm: a.comm,
            peer: a.peer,
            tag: a.tag,
            bytes: a.bytes,
            root: a.root,
            send_bytes: a.send_bytes,
            recv_bytes: a.recv_bytes,
            win: a.win,
        };
        Some((request, posted))
    }
}

/// What writing a rank found it could not write as it was.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Losses {
    /// Events that crossed an enclosing one's end (cut at it: OTF2's regions nest).
    pub crossing: u64,
    /// GPU events (not written).
    pub gpu: u64,
    /// Completions of requests no recorded call posted (written as send completions,
    /// their status not kept).
    pub unposted: u64,
    /// Buffer uses learned (`overlap trace --buffers`): not written.
    pub learned: u64,
}

/// A region open on the thread: its end and what to write at its end.
struct Open {
    end: u64,
    region: u32,
    at_end: Records,
}

/// Whose thread is written: its rank, the epoch (ns of its clock) its events' times
/// count from, and the source code locations of its calls' sites.
#[derive(Clone, Copy, Debug)]
pub(super) struct Whose<'a> {
    pub rank: u32,
    pub epoch: u64,
    pub places: &'a HashMap<u64, u32>,
}

/// One thread's events being written to its location, handed over in their order:
/// by start, an enclosing event before those it encloses (the order of
/// `(start, Reverse(end))`); times in ticks from its rank's epoch.
pub(super) struct ThreadWriter<'a> {
    whose: Whose<'a>,
    /// The rank's requests' posts.
    posted: &'a HashMap<u64, Posted>,
    stack: Vec<Open>,
    first: u64,
    last: u64,
    rma: RmaThread,
}

impl<'a> ThreadWriter<'a> {
    /// The writer of a thread of `whose`, whose rank posted `posted`.
    pub fn new(whose: Whose<'a>, posted: &'a HashMap<u64, Posted>) -> ThreadWriter<'a> {
        ThreadWriter {
            whose,
            posted,
            stack: Vec::new(),
            first: u64::MAX,
            last: 0,
            rma: RmaThread::new(whose.rank),
        }
    }

    /// Writes the next event (a call or a compute span: GPU work is not written).
    pub fn event(
        &mut self,
        w: &mut EventWriter<'_>,
        b: &mut Builder,
        e: &Event,
        named: &mut Named,
        losses: &mut Losses,
    ) -> Result<()> {
        let epoch = self.whose.epoch;
        let start = epoch + e.start().0;
        let mut end = epoch + e.end().0;
        while let Some(top) = self.stack.last() {
            if top.end > start {
                break;
            }
            close(w, self.stack.pop())?;
        }
        if let Some(top) = self.stack.last() {
            if top.end < end {
                losses.crossing += 1;
                end = top.end;
            }
        }
        self.first = self.first.min(start);
        self.last = self.last.max(end);
        match e {
            Event::Call(c) => {
                let region = b.region(RegionKey::Call(c.op));
                let mut attrs = attributes(&c.args);
                if !c.args.group.is_empty() {
                    let place = named.groups.place(&c.args.group);
                    attrs.push(Attr {
                        attribute: attr_ref(CallAttr::Group),
                        value: AttrValue::U64(place),
                    });
                }
                if let Some(&place) = c.args.site.and_then(|s| self.whose.places.get(&s)) {
                    attrs.push(Attr {
                        attribute: SOURCE_CODE_LOCATION_ATTR,
                        value: AttrValue::SourceCodeLocation(place),
                    });
                }
                if let Some(region) = &c.args.region {
                    let place = named.regions.place(region);
                    attrs.push(Attr {
                        attribute: attr_ref(CallAttr::Region),
                        value: AttrValue::U64(place),
                    });
                }
                w.write(start, &Record::Enter { region }, &attrs)?;
                let (mut at_start, mut at_end) = call_records(b, c, self.posted, losses);
                if let Some((rma_start, rma_end)) = self.rma.records(b, c) {
                    at_start.extend(rma_start);
                    at_end.extend(rma_end);
                }
                for (r, attrs) in at_start {
                    w.write(start, &r, &attrs)?;
                }
                self.stack.push(Open {
                    end,
                    region,
                    at_end,
                });
            }
            Event::Compute(c) => {
                let region = b.region(RegionKey::Compute(c.name.clone()));
                let attrs: Vec<Attr> = c
                    .buffers
                    .as_deref()
                    .map(|bufs| Attr {
                        attribute: attr_ref(CallAttr::SpanBuffers),
                        value: AttrValue::U64(named.buffers.place(bufs)),
                    })
                    .into_iter()
                    .collect();
                w.write(start, &Record::Enter { region }, &attrs)?;
                self.stack.push(Open {
                    end,
                    region,
                    at_end: Vec::new(),
                });
            }
            Event::Gpu(_) => losses.gpu += 1,
        }
        Ok(())
    }

    /// Closes what is still open, and says the thread's span of time to the
    /// definitions.
    pub fn finish(mut self, w: &mut EventWriter<'_>, b: &mut Builder) -> Result<()> {
        while let Some(open) = self.stack.pop() {
            close(w, Some(open))?;
        }
        if self.first <= self.last {
            b.saw(self.first, self.last);
        }
        Ok(())
    }
}

fn close(w: &mut EventWriter<'_>, open: Option<Open>) -> Result<()> {
    let Some(o) = open else { return Ok(()) };
    for (r, attrs) in &o.at_end {
        w.write(o.end, r, attrs)?;
    }
    w.write(o.end, &Record::Leave { region: o.region }, &[])?;
    Ok(())
}

/// The call's arguments as overlap's attributes.
fn attributes(a: &CallArgs) -> Vec<Attr> {
    let signed = |x: Option<i32>| x.map(|v| AttrValue::I64(i64::from(v)));
    let unsigned = |x: Option<u64>| x.map(AttrValue::U64);
    let fields = [
        (CallAttr::Peer, signed(a.peer)),
        (CallAttr::Tag, signed(a.tag)),
        (CallAttr::Bytes, unsigned(a.bytes)),
        (CallAttr::Comm, unsigned(a.comm.map(u64::from))),
        (CallAttr::Buf, unsigned(a.buf)),
        (CallAttr::BufLen, unsigned(a.buf_len)),
        (CallAttr::Request, unsigned(a.request)),
        (CallAttr::RecvPeer, signed(a.recv_peer)),
        (CallAttr::RecvTag, signed(a.recv_tag)),
        (CallAttr::RecvBuf, unsigned(a.recv_buf)),
        (CallAttr::RecvBufLen, unsigned(a.recv_buf_len)),
        (CallAttr::SendBytes, unsigned(a.send_bytes)),
        (CallAttr::RecvBytes, unsigned(a.recv_bytes)),
        (CallAttr::Root, signed(a.root)),
        (CallAttr::Site, unsigned(a.site)),
        (CallAttr::Win, unsigned(a.win.map(u64::from))),
        (CallAttr::Exclusive, unsigned(a.exclusive.map(u64::from))),
        (CallAttr::Flag, unsigned(a.flag.map(u64::from))),
        (CallAttr::Level, signed(a.level)),
    ];
    fields
        .into_iter()
        .filter_map(|(which, value)| {
            value.map(|value| Attr {
                attribute: attr_ref(which),
                value,
            })
        })
        .collect()
}

/// A receive's status source that OTF2 cannot name as a rank of the communicator
/// (`sender` undefined: `MPI_PROC_NULL`), kept as overlap's attribute on the record.
fn unnamed_source(sender: u32, source: Option<i32>) -> Vec<Attr> {
    match source {
        Some(s) if sender == u32::MAX => vec![Attr {
            attribute: attr_ref(CallAttr::Source),
            value: AttrValue::I64(i64::from(s)),
        }],
        _ => vec![],
    }
}

fn attr_ref(a: CallAttr) -> u32 {
    CallAttr::ALL.iter().position(|x| *x == a).unwrap_or(0) as u32
}

fn tag_of(t: Option<i32>) -> u32 {
    t.map_or(u32::MAX, |t| t as u32)
}

/// The MPI records of a call, each with its attributes: those at its entry, and those
/// at its exit.
fn call_records(
    b: &Builder,
    c: &CallEvent,
    posted: &HashMap<u64, Posted>,
    losses: &mut Losses,
) -> (Records, Records) {
    let a = &c.args;
    let (mut at_start, mut at_end) = (Vec::new(), Vec::new());
    let bytes = a.bytes.unwrap_or(u64::MAX);
    let comm = a.comm.unwrap_or(0);
    let op = c.op;
    let receiver = b.comm_rank(a.comm, a.peer);
    match op {
        Op::Send | Op::Ssend | Op::Bsend | Op::Rsend | Op::Sendrecv | Op::SendrecvReplace => {
            at_start.push((
                Record::MpiSend {
                    receiver,
                    comm,
                    tag: tag_of(a.tag),
                    bytes,
                },
                vec![],
            ));
        }
        Op::Isend | Op::Issend | Op::Ibsend | Op::Irsend => {
            if let Some(request) = a.request {
                at_start.push((
                    Record::MpiIsend {
                        receiver,
                        comm,
                        tag: tag_of(a.tag),
                        bytes,
                        request,
                    },
                    vec![],
                ));
            }
        }
        Op::Irecv | Op::Imrecv | Op::Isendrecv | Op::IsendrecvReplace => {
            if let Some(request) = a.request {
                at_start.push((Record::MpiIrecvRequest { request }, vec![]));
            }
        }
        Op::Start | Op::Startall => {
            for s in &a.started {
                let attrs = vec![Attr {
                    attribute: attr_ref(CallAttr::Persistent),
                    value: AttrValue::U64(s.persistent),
                }];
                let request = s.request;
                let record = match posted.get(&s.persistent) {
                    Some(p) if p.kind == RequestKind::Send => {
                        let pa = p;
                        Record::MpiIsend {
                            receiver: b.comm_rank(pa.comm, pa.peer),
                            comm: pa.comm.unwrap_or(0),
                            tag: tag_of(pa.tag),
                            bytes: pa.bytes.unwrap_or(u64::MAX),
                            request,
                        }
                    }
                    Some(p) if p.kind == RequestKind::Collective => {
                        Record::NonBlockingCollectiveRequest { request }
                    }
                    _ => Record::MpiIrecvRequest { request },
                };
                at_start.push((record, attrs));
            }
        }
        _ if op.is_collective_post() => {
            if let Some(request) = a.request {
                at_start.push((Record::NonBlockingCollectiveRequest { request }, vec![]));
            }
        }
        _ => {}
    }
    if op.class() == OpClass::Collective {
        if let Some(cop) = collective_op_of(op) {
            at_start.push((Record::MpiCollectiveBegin, vec![]));
            let root = b.comm_rank(a.comm, a.root);
            let (sent, received) = (a.send_bytes.unwrap_or(0), a.recv_bytes.unwrap_or(0));
            let end = Record::MpiCollectiveEnd {
                op: cop,
                comm,
                root,
                sent,
                received,
            };
            at_end.push((end, vec![]));
        }
    }
    for done in &a.completed {
        let Some(request) = done.request else {
            // A blocking receive's status.
            let sender = b.comm_rank(a.comm, done.source);
            let status = Record::MpiRecv {
                sender,
                comm,
                tag: tag_of(done.tag),
                bytes: done.bytes.unwrap_or(u64::MAX),
            };
            at_end.push((status, unnamed_source(sender, done.source)));
            continue;
        };
        let Some(p) = posted.get(&request) else {
            // Posted before the trace, or by a call overlap does not record: a
            // completion without a status (what it received, if anything, is lost).
            losses.unposted += 1;
            at_end.push((Record::MpiIsendComplete { request }, vec![]));
            continue;
        };
        let pa = p;
        let pcomm = pa.comm.unwrap_or(0);
        let sender = b.comm_rank(pa.comm, done.source);
        at_end.push(match p.kind {
            RequestKind::OneSided => match pa.win {
                Some(win) => (
                    Record::RmaOpCompleteNonBlocking {
                        win,
                        matching_id: request,
                    },
                    vec![],
                ),
                None => (Record::MpiIsendComplete { request }, vec![]),
            },
            RequestKind::Send => (Record::MpiIsendComplete { request }, vec![]),
            RequestKind::Recv => (
                Record::MpiIrecv {
                    sender,
                    comm: pcomm,
                    tag: tag_of(done.tag),
                    bytes: done.bytes.unwrap_or(u64::MAX),
                    request,
                },
                unnamed_source(sender, done.source),
            ),
            RequestKind::Collective => (
                Record::NonBlockingCollectiveComplete {
                    op: collective_op_of(p.op).unwrap_or(0),
                    comm: pcomm,
                    root: b.comm_rank(pa.comm, pa.root),
                    sent: pa.send_bytes.unwrap_or(0),
                    received: pa.recv_bytes.unwrap_or(0),
                    request,
                },
                vec![],
            ),
        });
    }
    (at_start, at_end)
}
