//! Which backend runs: `--backend auto` takes cuda when the CUDA driver library and
//! NVRTC load and a device exists, else host. Nothing of the driver is called before
//! the library is known to load (every driver call panics without it).

use super::device::Backend;
use crate::options::gpu_pipeline::BackendChoice;

/// The backend chosen, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The backend.
    pub backend: Backend,
    /// The device ordinal (cuda).
    pub ordinal: usize,
    /// The device's name.
    pub device: String,
    /// Why this backend (for `auto`).
    pub why: String,
}

fn host(why: impl Into<String>) -> Selection {
    Selection {
        backend: Backend::HostEmulated,
        ordinal: 0,
        device: "host threads".into(),
        why: why.into(),
    }
}

/// The backend for `choice` on a rank that is `local_rank` on its node (which picks
/// its device among the node's). `Err` names why `--backend cuda` cannot run.
pub fn select(choice: BackendChoice, local_rank: usize) -> Result<Selection, String> {
    match choice {
        BackendChoice::Host => Ok(host("--backend host")),
        BackendChoice::Auto => Ok(cuda(local_rank).unwrap_or_else(host)),
        BackendChoice::Cuda => cuda(local_rank).map_err(|why| format!("--backend cuda: {why}")),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda(_local_rank: usize) -> Result<Selection, String> {
    Err("this overlap-kernels was built without the `cuda` feature".into())
}

#[cfg(feature = "cuda")]
fn cuda(local_rank: usize) -> Result<Selection, String> {
    use overlap_instrument::gpu::cuda::{device_count, device_name, driver_present, nvrtc_present};
    if !driver_present() {
        return Err("the CUDA driver library (libcuda.so) cannot be loaded".into());
    }
    if !nvrtc_present() {
        return Err("NVRTC (libnvrtc.so), which compiles the device code, cannot be loaded".into());
    }
    let count = device_count().map_err(|e| e.to_string())?;
    if count == 0 {
        return Err("the CUDA driver sees no device".into());
    }
    let ordinal = local_rank % count;
    let device = device_name(ordinal).map_err(|e| e.to_string())?;
    Ok(Selection {
        backend: Backend::Cuda,
        ordinal,
        device,
        why: format!("CUDA device {ordinal} of {count}"),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn host_is_host_and_auto_always_finds_a_backend() {
        let s = select(BackendChoice::Host, 3).unwrap();
        assert_eq!(s.backend, Backend::HostEmulated);
        assert_eq!(s.backend.name(), "host-emulated");
        // Whatever this machine has, auto runs something.
        assert!(select(BackendChoice::Auto, 0).is_ok());
    }

    #[test]
    fn cuda_says_why_it_cannot_run() {
        // On a machine without the NVIDIA driver (CI), --backend cuda fails by name.
        if let Err(why) = select(BackendChoice::Cuda, 0) {
            assert!(why.starts_with("--backend cuda: "), "{why}");
        }
    }
}
