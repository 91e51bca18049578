//! The fast path's reading of a compute span's `args`: `{}`, or the buffers it declared
//! (`{"reads":[{"name":...,"buf":...,"len":...},...],"writes":[...]}`, as the writer
//! lays out a `SpanBuffers`). Anything else declines, and the serde path reads it.

use std::sync::Arc;

use overlap_format::schema::{BufferUse, SpanBuffers};

use super::numbers::unsigned;
use super::{eat, string_body};

/// Reads a compute span's args after their `{`, up to and including the event's closing
/// `}`: none (`}}`), or the buffers.
#[inline]
pub(super) fn compute_args(s: &mut &[u8]) -> Option<Option<Arc<SpanBuffers>>> {
    if eat(s, b"}}").is_some() {
        return Some(None);
    }
    eat(s, b"\"reads\":[")?;
    let reads = uses(s)?;
    eat(s, b",\"writes\":[")?;
    let writes = uses(s)?;
    eat(s, b"}}")?;
    Some(Some(Arc::new(SpanBuffers { reads, writes })))
}

/// The entries of a list after its `[`, up to and including its `]`.
fn uses(s: &mut &[u8]) -> Option<Vec<BufferUse>> {
    let mut out = Vec::new();
    if eat(s, b"]").is_some() {
        return Some(out);
    }
    loop {
        eat(s, b"{\"name\":\"")?;
        let name = std::str::from_utf8(string_body(s)?).ok()?.to_owned();
        eat(s, b",\"buf\":")?;
        let buf = unsigned(s)?;
        eat(s, b",\"len\":")?;
        let len = unsigned(s)?;
        eat(s, b"}")?;
        out.push(BufferUse { name, buf, len });
        match s.split_first() {
            Some((b',', rest)) => *s = rest,
            Some((b']', rest)) => {
                *s = rest;
                return Some(out);
            }
            _ => return None,
        }
    }
}
