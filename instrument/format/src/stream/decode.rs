//! Taking a thread's records apart: the inverse of the encoders in [`super::codec`],
//! field by field in the same order, updating the same [`Deltas`]. Bytes the writer
//! cannot have produced are an error, never a panic.

use super::buffers::{names, BUFFER_NAMES_BYTES_MAX, BUFFER_NAMES_MAX};
use super::codec::{Deltas, GpuRecord, Record, Tag, MEMBERS_PER_RECORD, STRING_MAX};
use super::varint::{DecodeError, Reader};
use crate::call_data::{Access, CallData, Collective, Transfer};
use crate::region::{RegionName, REGION_NAME_MAX};
use crate::schema::{ClockSync, CommId, Completion, GpuOp, Op, RequestId, Started, SyncPhase};

/// Why a record could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The first byte is no known tag.
    #[error("unknown record tag {0}")]
    UnknownTag(u8),
    /// A call names an op code this build does not know.
    #[error("unknown call code {0}")]
    UnknownOp(u64),
    /// A field's value is not one the writer can produce.
    #[error("bad value in a {0:?} record")]
    BadValue(Tag),
    /// The bytes end inside the record.
    #[error("the record is cut short")]
    Truncated,
    /// An integer out of range.
    #[error("an integer out of range")]
    Overflow,
}

impl From<DecodeError> for RecordError {
    fn from(e: DecodeError) -> Self {
        match e {
            DecodeError::Truncated => RecordError::Truncated,
            DecodeError::Overflow => RecordError::Overflow,
        }
    }
}

fn option_bool(r: &mut Reader<'_>, tag: Tag) -> Result<Option<bool>, RecordError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(false)),
        2 => Ok(Some(true)),
        _ => Err(RecordError::BadValue(tag)),
    }
}

fn option_i32(r: &mut Reader<'_>, tag: Tag) -> Result<Option<i32>, RecordError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(r.signed_i32()?)),
        _ => Err(RecordError::BadValue(tag)),
    }
}

fn request(r: &mut Reader<'_>, d: &mut Deltas) -> Result<u64, RecordError> {
    let v = r.delta(d.request)?;
    d.request = v;
    Ok(v)
}

fn transfer(r: &mut Reader<'_>, d: &mut Deltas) -> Result<Transfer, RecordError> {
    let peer = r.signed_i32()?;
    let tag = r.signed_i32()?;
    let bytes = r.var()?;
    let comm = CommId(r.var_u32()?);
    let buf = r.delta(d.buf)?;
    d.buf = buf;
    let buf_len = r.delta(bytes)?;
    Ok(Transfer {
        peer,
        tag,
        bytes,
        comm,
        buf,
        buf_len,
    })
}

fn collective(r: &mut Reader<'_>, tag: Tag) -> Result<Collective, RecordError> {
    Ok(Collective {
        comm: CommId(r.var_u32()?),
        send_bytes: r.var()?,
        recv_bytes: r.var()?,
        root: option_i32(r, tag)?,
    })
}

fn call_data(r: &mut Reader<'_>, d: &mut Deltas, tag: Tag) -> Result<CallData, RecordError> {
    Ok(match tag {
        Tag::CallPlain => CallData::Plain,
        Tag::CallStart => CallData::Start,
        Tag::CallPost => CallData::Post {
            transfer: transfer(r, d)?,
            request: RequestId(request(r, d)?),
        },
        Tag::CallBlocking => CallData::Blocking {
            transfer: transfer(r, d)?,
        },
        Tag::CallSendrecv => CallData::Sendrecv {
            send: transfer(r, d)?,
            recv: transfer(r, d)?,
        },
        Tag::CallSendrecvPost => CallData::SendrecvPost {
            send: transfer(r, d)?,
            recv: transfer(r, d)?,
            request: RequestId(request(r, d)?),
        },
        Tag::CallComplete => CallData::Complete {
            flag: option_bool(r, tag)?,
        },
        Tag::CallCollective => CallData::Collective(collective(r, tag)?),
        Tag::CallCollectivePost => CallData::CollectivePost {
            collective: collective(r, tag)?,
            request: RequestId(request(r, d)?),
        },
        Tag::CallQuery => CallData::Query {
            transfer: transfer(r, d)?,
            flag: match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(RecordError::BadValue(tag)),
            },
        },
        Tag::CallFree => CallData::Free {
            request: RequestId(request(r, d)?),
        },
        Tag::CallOneSided => {
            let target = r.signed_i32()?;
            let bytes = r.var()?;
            let win = r.var_u32()?;
            let buf = r.delta(d.buf)?;
            d.buf = buf;
            let buf_len = r.delta(bytes)?;
            let request = match r.u8()? {
                0 => None,
                1 => Some(RequestId(request(r, d)?)),
                _ => return Err(RecordError::BadValue(tag)),
            };
            CallData::OneSided {
                access: Access {
                    target,
                    bytes,
                    win,
                    buf,
                    buf_len,
                },
                request,
            }
        }
        Tag::CallWindowCollective => CallData::WindowCollective {
            win: r.var_u32()?,
            comm: CommId(r.var_u32()?),
        },
        Tag::CallWindowSync => CallData::WindowSync {
            win: r.var_u32()?,
            target: option_i32(r, tag)?,
            exclusive: option_bool(r, tag)?,
            flag: option_bool(r, tag)?,
        },
        Tag::CallPcontrol => {
            let level = r.signed_i32()?;
            let len = r.var()?;
            if len > REGION_NAME_MAX as u64 {
                return Err(RecordError::BadValue(tag));
            }
            let bytes = r.take(len as usize)?;
            let name = if bytes.is_empty() {
                RegionName::NONE
            } else {
                RegionName::new(bytes).ok_or(RecordError::BadValue(tag))?
            };
            CallData::Pcontrol { level, name }
        }
        _ => return Err(RecordError::BadValue(tag)),
    })
}

/// Decodes the next record, updating `d` as the encoder did.
pub fn decode<'a>(r: &mut Reader<'a>, d: &mut Deltas) -> Result<Record<'a>, RecordError> {
    let byte = r.u8()?;
    let tag = Tag::from_byte(byte).ok_or(RecordError::UnknownTag(byte))?;
    Ok(match tag {
        Tag::Completed => {
            let present = r.u8()?;
            if present > 0b1111 {
                return Err(RecordError::BadValue(tag));
            }
            let request = if present & 1 != 0 {
                Some(request(r, d)?)
            } else {
                None
            };
            let source = (present & 2 != 0).then(|| r.signed_i32()).transpose()?;
            let ctag = (present & 4 != 0).then(|| r.signed_i32()).transpose()?;
            let bytes = (present & 8 != 0).then(|| r.var()).transpose()?;
            Record::Completed(Completion {
                request,
                source,
                tag: ctag,
                bytes,
            })
        }
        Tag::Started => {
            let request = request(r, d)?;
            let persistent = r.delta(request)?;
            Record::Started(Started {
                request,
                persistent,
            })
        }
        Tag::Members => {
            let n = r.var()?;
            if n > MEMBERS_PER_RECORD as u64 {
                return Err(RecordError::BadValue(tag));
            }
            let ranks = (0..n).map(|_| r.signed_i32()).collect::<Result<_, _>>()?;
            Record::Members(ranks)
        }
        Tag::Compute => {
            let name = r.var_u32()?;
            let start = r.delta(d.start)?;
            d.start = start;
            let end = start.wrapping_add(r.var()?);
            Record::Compute { name, start, end }
        }
        Tag::Sync => Record::Sync(ClockSync {
            phase: match r.u8()? {
                0 => SyncPhase::Init,
                1 => SyncPhase::Final,
                _ => return Err(RecordError::BadValue(tag)),
            },
            local_ns: r.var()?,
            offset_ns: r.signed()?,
            error_ns: r.var()?,
            rtt_ns: r.var()?,
            rounds: r.var_u32()?,
        }),
        Tag::StringDef => {
            let id = r.var_u32()?;
            let len = r.var()?;
            if len > STRING_MAX as u64 {
                return Err(RecordError::BadValue(tag));
            }
            Record::StringDef {
                id,
                text: r.take(len as usize)?,
            }
        }
        Tag::ComputeBuffers => {
            let name = r.var_u32()?;
            let start = r.delta(d.start)?;
            d.start = start;
            let end = start.wrapping_add(r.var()?);
            let buffers = r.var_u32()?;
            Record::ComputeBuffers {
                name,
                start,
                end,
                buffers,
            }
        }
        Tag::BuffersDef => {
            let id = r.var_u32()?;
            let (reads, writes, len) = (r.var()?, r.var()?, r.var()?);
            let limit = BUFFER_NAMES_MAX as u64;
            if reads > limit || writes > limit || len > BUFFER_NAMES_BYTES_MAX as u64 {
                return Err(RecordError::BadValue(tag));
            }
            let bytes = r.take(len as usize)?;
            let (reads, writes) =
                names(bytes, reads as usize, writes as usize).ok_or(RecordError::BadValue(tag))?;
            Record::BuffersDef { id, reads, writes }
        }
        Tag::Gpu => {
            let op = GpuOp::from_code(r.u8()?).ok_or(RecordError::BadValue(tag))?;
            let device = r.var_u32()?;
            let stream = r.var_u32()?;
            let issued = r.var()?;
            let start = issued.wrapping_add(r.signed()? as u64);
            let end = start.wrapping_add(r.var()?);
            Record::Gpu(GpuRecord {
                op,
                device,
                stream,
                issued,
                start,
                end,
                bytes: r.var()?,
                src: r.var()?,
                dst: r.var()?,
                packet: r.var_u32()?,
                name: r.var_u32()?,
                clock_error: r.var()?,
            })
        }
        Tag::SiteDef => Record::SiteDef {
            word: r.var()?,
            file: r.var_u32()?,
            line: r.var_u32()?,
            column: r.var_u32()?,
            function: None,
        },
        Tag::FunctionSiteDef => Record::SiteDef {
            word: r.var()?,
            file: r.var_u32()?,
            line: r.var_u32()?,
            column: r.var_u32()?,
            function: Some(r.var_u32()?),
        },
        call => {
            let code = r.var()?;
            let op = u16::try_from(code)
                .ok()
                .and_then(Op::from_code)
                .ok_or(RecordError::UnknownOp(code))?;
            let start = r.delta(d.start)?;
            d.start = start;
            let end = start.wrapping_add(r.var()?);
            let site = r.delta(d.site)?;
            d.site = site;
            let follow = r.var_u32()?;
            let data = call_data(r, d, call)?;
            Record::Call {
                op,
                start,
                end,
                site,
                data,
                follow,
            }
        }
    })
}
