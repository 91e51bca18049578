//! The GPU pipeline kernel's options (the kernel: `crate::gpu_pipeline`).

/// How the halo packets are staged through the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Each packet's Isend fires as soon as its own D2H copy is done, each H2D starts
    /// as soon as its receive is (the seven phases).
    Pipelined,
    /// All D2H, synchronize, all Isends, Waitall, all H2D: the common naive version.
    Bulk,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 2] = [Variant::Pipelined, Variant::Bulk];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Pipelined => "pipelined",
            Variant::Bulk => "bulk",
        }
    }
}

/// Which device runs the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// `cuda` when the CUDA driver library and NVRTC load and a device exists, else
    /// `host`.
    Auto,
    /// An NVIDIA GPU through the CUDA driver (device code compiled at run time).
    Cuda,
    /// Host threads standing in for streams, `memcpy` for copies.
    Host,
}

impl BackendChoice {
    /// Every choice.
    pub const ALL: [BackendChoice; 3] = [
        BackendChoice::Auto,
        BackendChoice::Cuda,
        BackendChoice::Host,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Host => "host",
        }
    }
}

/// A byte count on the command line: a number, optionally followed by K, M or G (or
/// KiB, MiB, GiB: the same, powers of 1024).
pub(crate) fn byte_size(value: &str) -> Result<usize, String> {
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let n: usize = digits
        .parse()
        .map_err(|_| format!("'{value}' is not a byte count (like 65536, 64K or 1MiB)"))?;
    let scale: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        other => return Err(format!("'{value}': unknown unit '{other}' (K, M or G)")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("'{value}' is too large"))
}

/// Options of the GPU pipeline kernel: their flags, help and defaults (see
/// [`crate::args`]).
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
#[non_exhaustive]
pub struct Options {
    /// How packets are staged: pipelined (each Isend as soon as its packet's D2H is
    /// done, each H2D as soon as its receive is) or bulk (all D2H, synchronize, all
    /// Isends, Waitall, all H2D).
    #[arg(long, value_enum, default_value_t = Variant::Pipelined)]
    pub variant: Variant,
    /// The device: auto (cuda when the NVIDIA driver, NVRTC and a GPU are there, else
    /// host), cuda, or host (threads stand in for streams; the trace says
    /// host-emulated).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Bytes per packet, its 8-byte checksum trailer included (K, M, G accepted).
    #[arg(long, value_name = "BYTES", default_value = "64K", value_parser = byte_size)]
    pub packet_bytes: usize,
    /// Packets per halo face: each of the six faces is split into this many packets,
    /// for a deeper pipeline.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub chunks: u32,
    /// Halo exchanges to run.
    #[arg(long = "iters", value_name = "N", default_value_t = 10)]
    pub iterations: usize,
    /// Cells of the interior computation (8-byte values).
    #[arg(long, value_name = "N", default_value_t = 1 << 16)]
    pub interior_cells: usize,
    /// Passes of the interior computation over its cells per exchange.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub interior_sweeps: u32,
    /// Smoke test: run packet sizes 4 KiB, 64 KiB, 1 MiB and 16 MiB (up to
    /// --smoke-max), check every packet, and report copy and MPI bandwidth against the
    /// peaks measured here, flagging any below 50 %.
    #[arg(long)]
    pub smoke: bool,
    /// The largest packet size the smoke test runs.
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = byte_size)]
    pub smoke_max: usize,
    /// Testing aid: on the last rank, swap two received packets in host memory before
    /// their H2D copies, which the verification must catch.
    #[arg(long)]
    pub inject_swap: bool,
}

impl Default for Options {
    fn default() -> Self {
        crate::args::defaults()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn byte_sizes_take_binary_units() {
        assert_eq!(byte_size("65536"), Ok(65536));
        assert_eq!(byte_size("64K"), Ok(64 << 10));
        assert_eq!(byte_size("1MiB"), Ok(1 << 20));
        assert_eq!(byte_size("16m"), Ok(16 << 20));
        assert!(byte_size("4X").unwrap_err().contains("unknown unit 'x'"));
        assert!(byte_size("K").unwrap_err().contains("not a byte count"));
    }

    #[test]
    fn defaults() {
        let o = Options::default();
        assert_eq!(o.variant, Variant::Pipelined);
        assert_eq!(o.backend, BackendChoice::Auto);
        assert_eq!((o.packet_bytes, o.chunks, o.iterations), (64 << 10, 1, 10));
        assert_eq!(o.smoke_max, 16 << 20);
        assert!(!o.smoke && !o.inject_swap);
    }
}
