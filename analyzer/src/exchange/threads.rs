//! Workers on threads of one process, exchanging through memory: the workers' path run
//! without MPI, by the tests. Every worker posts its parts, meets the others, takes
//! what was posted for it, and meets them again before the next exchange. A worker that
//! leaves (returns or panics) while another waits for it makes that exchange fail,
//! naming it: a worker's path that misses an exchange the others make fails its test,
//! where MPI would hang.

use std::sync::{Condvar, Mutex, MutexGuard};

use super::{Exchange, Parts};

/// Workers on threads of one process ([`Threads::run`]).
pub struct Threads {
    workers: usize,
    board: Mutex<Board>,
    /// Told whenever a meeting is complete or a worker leaves.
    changed: Condvar,
}

/// What the workers share.
struct Board {
    /// `posted[from][to]`: what `from` sent `to`, taken by `to`.
    posted: Vec<Vec<Vec<u8>>>,
    /// How many workers have come to the meeting under way.
    arrived: usize,
    /// How many meetings are complete.
    meetings: u64,
    /// The workers that have left, in the order they left.
    gone: Vec<usize>,
}

/// One worker of [`Threads`].
struct ThreadWorker<'b> {
    threads: &'b Threads,
    worker: usize,
}

/// Marks its worker gone when dropped: when the worker returns, or unwinds.
struct Leaving<'b>(ThreadWorker<'b>);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        let threads = self.0.threads;
        threads.board().gone.push(self.0.worker);
        threads.changed.notify_all();
    }
}

impl Threads {
    /// Runs `each` on `workers` workers, each on a thread of its own, and gives what each
    /// returned, in worker order.
    pub fn run<R: Send>(workers: usize, each: impl Fn(&dyn Exchange) -> R + Sync) -> Vec<R> {
        let workers = workers.max(1);
        let threads = Threads {
            workers,
            board: Mutex::new(Board {
                posted: vec![Vec::new(); workers],
                arrived: 0,
                meetings: 0,
                gone: Vec::new(),
            }),
            changed: Condvar::new(),
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|worker| {
                    let (threads, each) = (&threads, &each);
                    s.spawn(move || {
                        let leaving = Leaving(ThreadWorker { threads, worker });
                        each(&leaving.0)
                    })
                })
                .collect();
            (handles.into_iter())
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    fn board(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until every worker has come to this meeting, or fails if one has left.
    fn meet(&self, worker: usize) -> Result<(), String> {
        let mut board = self.board();
        let left = |board: &Board| match board.gone.first() {
            Some(w) => Err(format!(
                "worker {w} left without the exchange worker {worker} waits in"
            )),
            None => Ok(()),
        };
        left(&board)?;
        let meeting = board.meetings;
        board.arrived += 1;
        if board.arrived == self.workers {
            board.arrived = 0;
            board.meetings += 1;
            self.changed.notify_all();
            return Ok(());
        }
        loop {
            board = self.changed.wait(board).unwrap_or_else(|p| p.into_inner());
            if board.meetings != meeting {
                return Ok(());
            }
            left(&board)?;
        }
    }
}

impl Exchange for ThreadWorker<'_> {
    fn worker(&self) -> usize {
        self.worker
    }

    fn workers(&self) -> usize {
        self.threads.workers
    }

    fn all_to_all(&self, to: Parts) -> std::result::Result<Parts, String> {
        let threads = self.threads;
        if to.sizes.len() != threads.workers {
            let parts = to.sizes.len();
            return Err(format!("{parts} parts for {} workers", threads.workers));
        }
        let to: Vec<Vec<u8>> = to.parts().map(<[u8]>::to_vec).collect();
        threads.board().posted[self.worker] = to;
        threads.meet(self.worker)?;
        let got: Vec<Vec<u8>> = (threads.board().posted.iter_mut())
            .map(|from| std::mem::take(&mut from[self.worker]))
            .collect();
        threads.meet(self.worker)?;
        Ok(Parts::of_parts(got))
    }
}
