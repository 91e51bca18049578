//! The Toeplitz kernel's options (the kernel: `crate::toeplitz`).

/// How the local product is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Direct band sums: `(lambda + 1) * m` multiply-adds per row.
    Direct,
    /// FFT overlap-save.
    Fft,
}

impl Method {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Method::Direct => "direct",
            Method::Fft => "fft",
        }
    }
}

/// How the halo is exchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Two `MPI_Sendrecv`.
    Blocking,
    /// `MPI_Irecv`/`MPI_Isend` both ways, then four `MPI_Wait` (false overlap).
    Nonblocking,
    /// The interior product runs between the posts and the waits.
    Overlapped,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 3] = [Variant::Blocking, Variant::Nonblocking, Variant::Overlapped];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Blocking => "blocking",
            Variant::Nonblocking => "nonblocking",
            Variant::Overlapped => "overlapped",
        }
    }
}

/// Which product to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductChoice {
    /// FFT from `toeplitz::FFT_FROM_LAMBDA` on, direct below.
    Auto,
    /// Always this one.
    Fixed(Method),
}

impl ProductChoice {
    /// Every choice.
    pub const ALL: [ProductChoice; 3] = [
        ProductChoice::Auto,
        ProductChoice::Fixed(Method::Direct),
        ProductChoice::Fixed(Method::Fft),
    ];

    /// The name on the command line (`auto`, `direct`, `fft`).
    pub fn name(self) -> &'static str {
        match self {
            ProductChoice::Auto => "auto",
            ProductChoice::Fixed(m) => m.name(),
        }
    }
}

/// Options of the Toeplitz kernel: their flags, help and defaults (see [`crate::args`]).
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
#[non_exhaustive]
pub struct Options {
    /// How the halo is exchanged: blocking (two MPI_Sendrecv), nonblocking (Irecv/Isend
    /// both ways, then four MPI_Wait, then the product: false overlap) or overlapped
    /// (the interior product runs between the posts and the waits).
    #[arg(long, value_enum, default_value_t = Variant::Nonblocking)]
    pub variant: Variant,
    /// n: global size (rows of the matrix and of each vector).
    #[arg(long, value_name = "N", default_value_t = 1 << 18)]
    pub size: usize,
    /// lambda: half-bandwidth of the band (rows exchanged with each neighbour).
    #[arg(long, value_name = "L", default_value_t = 1024)]
    pub lambda: usize,
    /// m: vectors multiplied at once (m_rowwise).
    #[arg(long, value_name = "M", default_value_t = 8)]
    pub vectors: usize,
    /// Iterations (one exchange and one product each).
    #[arg(long = "iters", value_name = "N", default_value_t = 20)]
    pub iterations: usize,
    /// How the local product is computed: auto (FFT for a wide band, direct below: the
    /// crossover measured on x86-64), direct (band sums) or fft (overlap-save).
    #[arg(long, value_enum, default_value_t = ProductChoice::Auto)]
    pub product: ProductChoice,
    /// Testing aid: this rank corrupts one received halo value in every iteration.
    #[arg(long, hide = true)]
    pub fault_rank: Option<i32>,
}

impl Default for Options {
    fn default() -> Self {
        crate::args::defaults()
    }
}
