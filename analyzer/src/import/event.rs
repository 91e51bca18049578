//! A wire event's typed form: a complete (`X`) event as an MPI call, a compute span or
//! GPU work, a `buffer` instant as what a rank learned of a buffer, and the args of a
//! metadata record, with errors that say what is wrong.

use std::sync::Arc;

use overlap_format::schema::wire::Category;
use overlap_format::schema::{
    CallArgs, CallEvent, ComputeEvent, Event, GpuArgs, LearnedArgs, LearnedUse, Nanos, Op,
    SpanBuffers, Unwatched,
};
use serde_json::Value;

use super::RawEvent;

/// Converts a complete (`X`) event into a typed event.
pub(crate) fn complete_event(raw: &RawEvent<'_>) -> std::result::Result<Event, String> {
    let start = raw.ts.ok_or("complete event without \"ts\"")?.0;
    let dur = raw.dur.ok_or("complete event without \"dur\"")?.0;
    let end = Nanos(
        start
            .0
            .checked_add(dur.0)
            .ok_or("complete event ends past the largest time")?,
    );
    match raw.cat {
        Some(Category::Mpi) => {
            let op = Op::from_mpi_name(&raw.name)
                .ok_or_else(|| format!("unknown MPI call {:?}", raw.name))?;
            let args: CallArgs = match &raw.args {
                Some(v) => serde_json::from_value(v.clone())
                    .map_err(|e| format!("{}: bad args: {e}", raw.name))?,
                None => CallArgs::default(),
            };
            Ok(Event::Call(CallEvent {
                tid: raw.tid,
                start,
                end,
                op,
                args,
            }))
        }
        Some(Category::Compute) => Ok(Event::Compute(ComputeEvent {
            tid: raw.tid,
            start,
            end,
            name: raw.name.to_string(),
            buffers: compute_buffers(raw)?,
        })),
        Some(Category::Gpu) => {
            let args: GpuArgs = match &raw.args {
                Some(v) => serde_json::from_value(v.clone())
                    .map_err(|e| format!("{}: bad GPU args: {e}", raw.name))?,
                None => return Err(format!("GPU event {:?} without args", raw.name)),
            };
            Ok(Event::Gpu(
                args.into_event(start, end)
                    .map_err(|e| format!("{}: {e}", raw.name))?,
            ))
        }
        other => Err(format!(
            "complete event {:?} has category {other:?}, expected mpi, compute or gpu",
            raw.name
        )),
    }
}

/// The buffers a compute span's `args` declare: none for `{}` (or no args), as every
/// version before 6 wrote.
fn compute_buffers(raw: &RawEvent<'_>) -> std::result::Result<Option<Arc<SpanBuffers>>, String> {
    match &raw.args {
        None => Ok(None),
        Some(Value::Object(m)) if m.is_empty() => Ok(None),
        Some(v) => serde_json::from_value::<SpanBuffers>(v.clone())
            .map(|b| Some(Arc::new(b)))
            .map_err(|e| format!("{}: bad args: {e}", raw.name)),
    }
}

pub(crate) fn meta_args<T: serde::de::DeserializeOwned>(
    raw: &RawEvent<'_>,
) -> std::result::Result<T, String> {
    let v = raw
        .args
        .clone()
        .ok_or_else(|| format!("{} without args", raw.name))?;
    serde_json::from_value(v).map_err(|e| format!("{}: bad args: {e}", raw.name))
}

/// What a `buffer` instant of a merged file says: a watch, or an unwatched completion.
pub(crate) fn learned_args(
    raw: &RawEvent<'_>,
) -> std::result::Result<std::result::Result<LearnedUse, Unwatched>, String> {
    let args: LearnedArgs = meta_args(raw)?;
    Ok(args.into_learned())
}
