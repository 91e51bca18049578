//! How a watch ended, as its slot holds it: one byte (the fault's or system call's
//! address and instruction beside it), written by whoever ended it, in any context.

use overlap_instrument::schema::{Touch, WatchEnd};

/// How a watch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The program touched a protected page (a fault) or a system call named the buffer.
    Touched { touch: Touch, addr: u64, ip: u64 },
    /// A checkpoint found an edge byte changed.
    Checked,
    /// Something else ended it (it may still have found a changed edge byte).
    Ended(WatchEnd),
}

const READ: u8 = 1;
const WRITE: u8 = 2;
const CHECKED: u8 = 3;
/// Plus the end's position in [`WatchEnd::ALL`].
const ENDED: u8 = 16;

impl Ending {
    /// Its byte.
    pub(crate) fn code(self) -> u8 {
        match self {
            Ending::Touched {
                touch: Touch::Read, ..
            } => READ,
            Ending::Touched {
                touch: Touch::Write,
                ..
            } => WRITE,
            Ending::Checked => CHECKED,
            Ending::Ended(w) => {
                ENDED + WatchEnd::ALL.iter().position(|e| *e == w).unwrap_or(0) as u8
            }
        }
    }

    /// The ending of byte `code`, with the address and instruction its slot kept.
    pub(crate) fn of_code(code: u8, addr: u64, ip: u64) -> Ending {
        match code {
            READ => Ending::Touched {
                touch: Touch::Read,
                addr,
                ip,
            },
            WRITE => Ending::Touched {
                touch: Touch::Write,
                addr,
                ip,
            },
            CHECKED => Ending::Checked,
            c => Ending::Ended(
                WatchEnd::ALL
                    .get(usize::from(c.saturating_sub(ENDED)))
                    .copied()
                    .unwrap_or(WatchEnd::Stopped),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ending_round_trips_through_its_byte() {
        let mut all = vec![
            Ending::Touched {
                touch: Touch::Read,
                addr: 8,
                ip: 9,
            },
            Ending::Touched {
                touch: Touch::Write,
                addr: 8,
                ip: 9,
            },
            Ending::Checked,
        ];
        all.extend(WatchEnd::ALL.map(Ending::Ended));
        for e in all {
            assert_eq!(Ending::of_code(e.code(), 8, 9), e);
        }
    }
}
