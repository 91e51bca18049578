//! The CPUs a rank could run on, as its header says them (the params
//! [`CPU_AFFINITY_PARAM`] and [`ONLINE_CPUS_PARAM`], written by both recording layers)
//! and its merged [`super::RankClock`] keeps them: the analyzer tells from them whether a
//! host ran more ranks than it had CPUs for.
//!
//! A set of CPUs is written as Linux writes them (`/sys/.../cpulist`, `taskset -c`):
//! ascending ranges and single CPUs, comma-separated: `0-3,8`.

/// Header parameter: the CPUs the rank's affinity allowed at `MPI_Init`
/// (`sched_getaffinity`), as a CPU list (`0-3,8`).
pub const CPU_AFFINITY_PARAM: &str = "cpu_affinity";

/// Header parameter: the CPUs online on the rank's host (`sysconf(_SC_NPROCESSORS_ONLN)`).
pub const ONLINE_CPUS_PARAM: &str = "online_cpus";

/// `cpus` (any order, repeats allowed) as a CPU list: `[8, 0, 1, 2, 3]` is `0-3,8`.
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < sorted.len() {
        let first = sorted[k];
        let mut last = first;
        while k + 1 < sorted.len() && sorted[k + 1] == last + 1 {
            k += 1;
            last = sorted[k];
        }
        parts.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
        k += 1;
    }
    parts.join(",")
}

/// The CPUs of a CPU list, ascending; none when it is not one (empty, a part that is
/// not a number or a range, a range that runs backwards, more than 2^20 CPUs).
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    const MOST: usize = 1 << 20;
    let mut cpus: Vec<u32> = Vec::new();
    for part in text.trim().split(',') {
        let (first, last) = match part.trim().split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let one = part.trim().parse::<u32>().ok()?;
                (one, one)
            }
        };
        if last < first || cpus.len() + (last - first) as usize >= MOST {
            return None;
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_written_and_read_as_linux_writes_them() {
        assert_eq!(cpu_list(&[8, 0, 1, 2, 3, 3]), "0-3,8");
        assert_eq!(cpu_list(&[5]), "5");
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(parse_cpu_list("0-3,8"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse_cpu_list(" 2 , 0-1 "), Some(vec![0, 1, 2]));
        for bad in ["", "a", "3-1", "1-", "0-4294967295"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad:?}");
        }
        let all: Vec<u32> = (0..64).collect();
        assert_eq!(parse_cpu_list(&cpu_list(&all)), Some(all));
    }
}
