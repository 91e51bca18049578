//! The false-overlap kernel's options (the kernel: `crate::false_overlap`).

/// Where the send `MPI_Waitall` goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Right after the receive Waitall (false overlap).
    Naive,
    /// Just before the send buffer is packed again.
    Fixed,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 2] = [Variant::Naive, Variant::Fixed];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::Fixed => "fixed",
        }
    }
}

/// Options of the false-overlap kernel: their flags, help and defaults (see
/// [`crate::args`]).
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
#[non_exhaustive]
pub struct Options {
    /// Where the send Waitall goes: naive (right after the receives, before computing)
    /// or fixed (deferred until the send buffer is packed again).
    #[arg(long, value_enum, default_value_t = Variant::Naive)]
    pub variant: Variant,
    /// Small message size in 8-byte words.
    #[arg(long, value_name = "WORDS", default_value_t = 16 * 1024)]
    pub size: usize,
    /// The large message is SIZE*RATIO words.
    #[arg(long, default_value_t = 8)]
    pub ratio: usize,
    /// Iterations (each: two exchanges and a barrier).
    #[arg(long = "iters", value_name = "N", default_value_t = 20)]
    pub iterations: usize,
    /// Work per compute phase, in units of 1024 multiply-adds.
    #[arg(long, value_name = "UNITS", default_value_t = 2_000)]
    pub compute: u64,
    /// Testing aid: this rank kills itself (SIGKILL) at the start of `kill_at_iteration`.
    #[arg(long, hide = true)]
    pub kill_rank: Option<i32>,
    /// Testing aid: see `kill_rank`.
    #[arg(long, hide = true, default_value_t = 0)]
    pub kill_at_iteration: usize,
}

impl Default for Options {
    fn default() -> Self {
        crate::args::defaults()
    }
}
