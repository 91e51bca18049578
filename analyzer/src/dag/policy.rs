//! Ordering policies: what an order should prefer, beyond what it must respect.
//!
//! As in the seed, a policy is a partial order given as a comparator over two
//! operations, or a total order on groups given as a sort key. Policies come in
//! priority order: [`super::consensus`] takes as many of their edges as it can without
//! contradicting a policy before them (data dependence always first).
//!
//! Built-ins, by default in this order:
//! - [`BuiltIn::PostsEarly`] (the seed's `mpi_send_wait_key`): posts `-1`, completions
//!   `+1`, everything else `0`: start transfers early, wait for them late;
//! - [`BuiltIn::LowerTagFirst`] (the seed's `mpi_tag_key`): a request's post and
//!   completion by its tag; it says nothing of other operations (the seed gives them
//!   `0`, which would order every compute before every request of a positive tag);
//! - program order, the last tie-break, always applied.
//!
//! [`BuiltIn::WaitsLate`] (not applied by default) is the completions' half of
//! posts-early: waits as late as they may go, posts left where the program put them.
//!
//! A user policy in Rust:
//!
//! ```
//! use overlap_analyzer::dag::{OpView, Policy};
//! // Receives before sends, among the posts.
//! // A key may leave operations out (`None`): it then says nothing about them.
//! let recv_first = Policy::key("recv-first", |op: &OpView| match op.request() {
//!     Some(r) if op.is_post() && r.role == overlap_analyzer::ops::RequestRole::Recv => Some(-1),
//!     Some(_) if op.is_post() => Some(0),
//!     _ => None,
//! });
//! // Never put compute "solve" before compute "assemble" (a comparator).
//! let assemble_first = Policy::comparator("assemble-first", |a: &OpView, b: &OpView| {
//!     match (a.compute_name(), b.compute_name()) {
//!         (Some("assemble"), Some("solve")) => std::cmp::Ordering::Less,
//!         (Some("solve"), Some("assemble")) => std::cmp::Ordering::Greater,
//!         _ => std::cmp::Ordering::Equal,
//!     }
//! });
//! # let _ = (recv_first, assemble_first);
//! ```

use std::cmp::Ordering;
use std::fmt;

use crate::ops::{OpKind, Operation, Program, RankProgram, RequestOp};

/// An operation as a policy sees it.
#[derive(Clone, Copy)]
pub struct OpView<'a> {
    /// The whole program.
    pub program: &'a Program,
    /// The rank's program.
    pub rank: &'a RankProgram,
    /// Index of the operation in the rank's program order.
    pub index: usize,
}

impl<'a> OpView<'a> {
    /// The operation.
    pub fn op(&self) -> &'a Operation {
        &self.rank.ops[self.index]
    }

    /// True for a post (Isend, Irecv, Start, Ibarrier...).
    pub fn is_post(&self) -> bool {
        matches!(self.op().kind, OpKind::Post { .. })
    }

    /// True for the completion of a request (part of a Wait or Test call).
    pub fn is_completion(&self) -> bool {
        matches!(self.op().kind, OpKind::Complete { .. })
    }

    /// The request a post or completion is about.
    pub fn request(&self) -> Option<&'a RequestOp> {
        match self.op().kind {
            OpKind::Post { request } | OpKind::Complete { request } => {
                self.program.requests.get(request)
            }
            _ => None,
        }
    }

    /// The tag of a point-to-point request's post or completion.
    pub fn tag(&self) -> Option<i32> {
        self.request().and_then(|r| r.tag())
    }

    /// The name of a compute.
    pub fn compute_name(&self) -> Option<&'a str> {
        match self.op().kind {
            OpKind::Compute { name, .. } => Some(self.program.name(name)),
            _ => None,
        }
    }
}

type KeyFn = dyn Fn(&OpView) -> Option<i64> + Send + Sync;
type CmpFn = dyn Fn(&OpView, &OpView) -> Ordering + Send + Sync;

/// A policy: a sort key (a total order on groups) or a comparator (a partial order).
pub enum Policy {
    /// Lower keys first; operations without a key are not ordered by it.
    Key {
        /// Its name, for reports.
        name: String,
        /// The key.
        key: Box<KeyFn>,
    },
    /// `Less`: the first operation should come before the second; `Greater`: after;
    /// `Equal`: no preference.
    Comparator {
        /// Its name, for reports.
        name: String,
        /// The comparator.
        cmp: Box<CmpFn>,
    },
}

impl Policy {
    /// A sort-key policy.
    pub fn key(name: &str, key: impl Fn(&OpView) -> Option<i64> + Send + Sync + 'static) -> Policy {
        Policy::Key {
            name: name.to_string(),
            key: Box::new(key),
        }
    }

    /// A comparator policy.
    pub fn comparator(
        name: &str,
        cmp: impl Fn(&OpView, &OpView) -> Ordering + Send + Sync + 'static,
    ) -> Policy {
        Policy::Comparator {
            name: name.to_string(),
            cmp: Box::new(cmp),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Policy::Key { name, .. } | Policy::Comparator { name, .. } => name,
        }
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Key { name, .. } => write!(f, "Policy::Key({name})"),
            Policy::Comparator { name, .. } => write!(f, "Policy::Comparator({name})"),
        }
    }
}

/// The built-in policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltIn {
    /// Posts early, completions late.
    PostsEarly,
    /// Requests with lower tags first.
    LowerTagFirst,
    /// Completions late, and nothing said of posts: the half of [`BuiltIn::PostsEarly`]
    /// that defers waits, for programs whose posts should stay where they are.
    WaitsLate,
}

impl BuiltIn {
    /// The built-ins applied by default, in their priority.
    pub const DEFAULT: [BuiltIn; 2] = [BuiltIn::PostsEarly, BuiltIn::LowerTagFirst];
    /// Every built-in.
    pub const ALL: [BuiltIn; 3] = [
        BuiltIn::PostsEarly,
        BuiltIn::LowerTagFirst,
        BuiltIn::WaitsLate,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BuiltIn::PostsEarly => "posts-early",
            BuiltIn::LowerTagFirst => "lower-tag-first",
            BuiltIn::WaitsLate => "waits-late",
        }
    }

    /// The built-in of a name.
    pub fn parse(name: &str) -> Option<BuiltIn> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The policy.
    pub fn policy(self) -> Policy {
        match self {
            BuiltIn::PostsEarly => Policy::key(self.name(), |op| {
                Some(if op.is_post() {
                    -1
                } else if op.is_completion() {
                    1
                } else {
                    0
                })
            }),
            BuiltIn::LowerTagFirst => Policy::key(self.name(), |op| op.tag().map(i64::from)),
            BuiltIn::WaitsLate => {
                Policy::key(self.name(), |op| Some(i64::from(op.is_completion())))
            }
        }
    }
}

/// The names of the built-ins, for help and errors.
pub fn built_in_names() -> String {
    BuiltIn::ALL
        .iter()
        .map(|b| b.name())
        .collect::<Vec<_>>()
        .join(", ")
}
