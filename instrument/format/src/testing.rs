//! Builders of hand-made trace events, for the tests and benchmarks of every crate that
//! reads traces (the analyzer's unit and integration tests, its benchmarks, the command
//! line's tests): one definition of a call event instead of a copy in each test file.

use crate::schema::{CallArgs, CallEvent, Event, Nanos, Op};

/// A call `op` of thread 0 from `start` to `end` (ns since the rank's epoch), with its
/// arguments.
pub fn call(op: Op, start: u64, end: u64, args: CallArgs) -> Event {
    Event::Call(CallEvent {
        tid: 0,
        start: Nanos(start),
        end: Nanos(end),
        op,
        args,
    })
}
