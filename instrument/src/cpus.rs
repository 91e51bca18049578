//! The CPUs this process may run on, for its header: its affinity
//! (`sched_getaffinity`) and the host's online CPU count, as the params
//! [`CPU_AFFINITY_PARAM`] and [`ONLINE_CPUS_PARAM`]. Both recording layers (the preload
//! and `TraceSession`) write them; the analyzer tells from them whether a host ran more
//! ranks than it had CPUs for, where no replay can model the scheduler.

use crate::schema::{cpu_list, ParamValue, Params, CPU_AFFINITY_PARAM, ONLINE_CPUS_PARAM};

/// Adds this process's CPUs to `params`; a figure the system does not give is left out
/// (unknown), never written as 0.
pub fn add_params(params: &mut Params) {
    if let Some(cpus) = affinity() {
        params.insert(CPU_AFFINITY_PARAM.into(), ParamValue::Text(cpu_list(&cpus)));
    }
    // SAFETY: sysconf reads a system value.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if online > 0 {
        params.insert(ONLINE_CPUS_PARAM.into(), ParamValue::Int(online as i64));
    }
}

/// The CPUs this process's affinity allows; none when it cannot be read (or is empty).
pub fn affinity() -> Option<Vec<u32>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid out-pointer of `size` bytes; 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return None;
    }
    let cpus: Vec<u32> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .map(|cpu| cpu as u32)
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The affinity read is this test's own (`taskset` could narrow it), never empty,
    /// and within the online CPUs' count of the machine or fewer ids.
    #[test]
    fn this_process_has_cpus_and_they_are_written_as_a_list() {
        let cpus = affinity().expect("Linux gives the affinity");
        assert!(!cpus.is_empty());
        let mut params = Params::new();
        add_params(&mut params);
        let Some(ParamValue::Text(list)) = params.get(CPU_AFFINITY_PARAM) else {
            panic!("{params:?}");
        };
        assert_eq!(crate::schema::parse_cpu_list(list), Some(cpus.clone()));
        let Some(ParamValue::Int(online)) = params.get(ONLINE_CPUS_PARAM) else {
            panic!("{params:?}");
        };
        assert!(*online >= 1);
    }
}
