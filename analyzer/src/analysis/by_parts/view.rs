//! What the second pass of a block of the run's ranks reads of the run's columns, cut
//! out of them ([`ViewOf`]) so that a worker holding only its block's files makes
//! that block's figures: the messages with an end among the block's ranks (in the run's
//! order, renumbered from 0, with their indices among the run's), their ends, the last
//! posts of its requests' non-blocking collectives, its ranks' shared wait candidates,
//! the descheduled time of the ranks its calls wait on, the models and the site table.
//! (Its ranks' compute and requests the worker kept from the first pass, and gathers
//! what their rows read of the run from these.)
//!
//! ```text
//!  run's messages   0:(0→1) 1:(2→3) 2:(1→2) 3:(3→0)      block of ranks 2..=3
//!  the block's      0:(2→3)=1  1:(1→2)=2  2:(3→0)=3      their ends, ...
//! ```
//!
//! A figure reads a message only through an index its own columns give, so the view's
//! numbering serves as the run's does; what the folds keep of a message by index (the
//! GPU staging) is renumbered back before the folds leave the worker
//! ([`super::folds::Partial::renumber`]).

use std::ops::Range;

use overlap_format::schema::MergedInfo;
use rayon::prelude::*;

use super::super::pass_order::Models;
use crate::exchange::wire::chunked::mapped;
use crate::exchange::wire::Each;
use crate::metrics::descheduled::DescheduledTime;
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::requests::LastPosts;
use crate::metrics::wait_kind::Candidate;
use crate::model::compact::index_u32;
use crate::model::{Message, Trace};
use crate::sites::SiteTable;

/// A block of the run's ranks: its files (indices among the run's, in rank order) and
/// the ranks it answers for, those `r` with `after < r <= up_to` (`None`: no bound),
/// ranks without a file among them. Consecutive blocks' ranks tile the run's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub files: Range<usize>,
    pub after: Option<u32>,
    pub up_to: Option<u32>,
}

impl Block {
    /// The block of every file: all ranks.
    pub(crate) fn whole(files: usize) -> Block {
        Block {
            files: 0..files,
            after: None,
            up_to: None,
        }
    }

    /// The blocks of `shares` (consecutive ranges of files whose ranks are `ranks`):
    /// each answers for the ranks after the last file of the blocks before it, up to its
    /// own last file's (the last block with a file: every rank after).
    pub(crate) fn of_shares(shares: &[Range<usize>], ranks: &[u32]) -> Vec<Block> {
        let n = ranks.len();
        shares
            .iter()
            .map(|files| Block {
                files: files.clone(),
                after: files.start.checked_sub(1).map(|i| ranks[i]),
                up_to: match files.end < n {
                    true => files.end.checked_sub(1).map(|i| ranks[i]),
                    false => None,
                },
            })
            .collect()
    }

    /// True for a rank the block answers for (none, for a block without a file).
    pub(crate) fn holds(&self, rank: u32) -> bool {
        let within = self.after.is_none_or(|a| rank > a) && self.up_to.is_none_or(|u| rank <= u);
        !self.files.is_empty() && within
    }
}

/// The run's columns as the second pass of one block reads them (see the module),
/// written by position ([`crate::exchange::scatter`]) but for the fields of types that
/// must be written by name.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct View {
    #[serde(with = "crate::exchange::wire::named")]
    pub info: MergedInfo,
    /// The messages with an end among the block's ranks, in the run's order.
    #[serde(with = "crate::exchange::wire::chunked")]
    pub messages: Vec<Message>,
    /// The index of each among the run's messages.
    pub global: Vec<u32>,
    pub ends: MessageEnds,
    /// Of the block's requests (numbered from its first).
    pub last_posts: LastPosts,
    /// The shared wait candidates of the block's ranks.
    pub shared: Vec<Candidate>,
    /// The descheduled time of the block's ranks and of every rank they wait on.
    pub descheduled: DescheduledTime,
    #[serde(with = "crate::exchange::wire::named")]
    pub models: Models,
    #[serde(with = "crate::exchange::wire::named")]
    pub sites: SiteTable,
}

/// What worker 0 gives each other worker for the second pass, `V` the view written
/// ([`ViewOf`]) or read ([`View`]). (An enum, not nested options: MessagePack writes
/// `Some(None)` as it writes `None`.)
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum Task<V> {
    /// This worker's block has no file: it has nothing to fold.
    NoFiles,
    /// Fold the parts of this worker's block over `view`, and make their rows for the
    /// tables worker 0 writes when `rows`.
    Fold { view: V, rows: bool },
}

/// What worker 0 writes for each worker for the second pass, and what the worker reads.
pub(super) type TaskWritten<'c> = Task<ViewOf<'c>>;
pub(super) type TaskRead = Task<Box<View>>;

/// The run's columns that [`ViewOf`] cuts a block's view out of.
pub(super) struct RunColumns<'c> {
    pub run: &'c Trace,
    pub ends: &'c MessageEnds,
    pub shared: &'c [Candidate],
    pub descheduled: &'c DescheduledTime,
    pub models: &'c Models,
    pub sites: &'c SiteTable,
}

/// The view of a block of the run whose columns are `columns`, as worker 0 writes it for
/// the worker of the block: each field made from the columns as it is written and
/// dropped before the next, none of the block's columns copied whole beside the run's
/// (read back as a [`View`]).
pub(super) struct ViewOf<'c> {
    pub block: &'c Block,
    /// Those of the block's requests.
    pub last_posts: &'c LastPosts,
    pub columns: &'c RunColumns<'c>,
}

impl serde::Serialize for ViewOf<'_> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (block, c, run) = (self.block, self.columns, self.columns.run);
        let global: Vec<u32> = (run.messages.iter().enumerate())
            .filter(|(_, m)| block.holds(m.send().rank) || block.holds(m.recv_post().rank))
            .map(|(mi, _)| index_u32(mi))
            .collect();
        let shared = || (c.shared.iter()).filter(|s| block.holds(s.at.rank));
        // The ranks the block's calls may wait on: its messages' ends, its candidates'
        // causes, and its own, marked among the run's ranks (no list of every end).
        let mut ranks: Vec<u32> = run.info.ranks.iter().map(|r| r.rank).collect();
        ranks.sort_unstable();
        type Marks = (Vec<bool>, Vec<u32>);
        let mark = |(mut marked, mut others): Marks, rank: u32| {
            match ranks.binary_search(&rank) {
                Ok(i) => marked[i] = true,
                Err(_) => others.push(rank),
            }
            (marked, others)
        };
        let none = || (vec![false; ranks.len()], Vec::new());
        let either = |(a, mut a_others): Marks, (b, b_others): Marks| {
            a_others.extend(b_others);
            (a.iter().zip(&b).map(|(a, b)| a | b).collect(), a_others)
        };
        // The block's messages' ends on the threads, then its candidates' causes.
        let ends = global.par_iter().map(|&mi| &run.messages[mi as usize]);
        let ends = ends.flat_map_iter(|m| [m.send().rank, m.recv_post().rank]);
        let marks = ends.fold(none, mark).reduce(none, either);
        let (marked, mut others) = shared().map(|s| s.cause.rank).fold(marks, mark);
        others.sort_unstable();
        others.dedup();
        let peer = |r: u32| match ranks.binary_search(&r) {
            Ok(i) => marked[i],
            Err(_) => others.binary_search(&r).is_ok(),
        };
        let mut view = to.serialize_struct("View", 9)?;
        view.serialize_field("info", &ByName(&run.info))?;
        let messages = mapped(&global, |&mi| &run.messages[mi as usize]);
        view.serialize_field("messages", &messages)?;
        view.serialize_field("global", &global)?;
        view.serialize_field("ends", &c.ends.select(&global))?;
        view.serialize_field("last_posts", self.last_posts)?;
        view.serialize_field("shared", &Each(shared))?;
        let waited_on = |r: u32| block.holds(r) || peer(r);
        view.serialize_field("descheduled", &c.descheduled.of_ranks(waited_on))?;
        view.serialize_field("models", &ByName(c.models))?;
        view.serialize_field("sites", &ByName(c.sites))?;
        view.end()
    }
}

/// A value written as [`crate::exchange::wire::named`] writes a field.
struct ByName<'v, T>(&'v T);

impl<T: serde::Serialize> serde::Serialize for ByName<'_, T> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        crate::exchange::wire::named::serialize(self.0, to)
    }
}
