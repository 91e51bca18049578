//! What the launch command of `overlap trace` runs, said where the launcher's own words
//! would mislead: an MPI program given without a launcher (it then runs as a single
//! rank, MPI's singleton start, which is legal but rarely meant), and a program file
//! that is not there (the launcher fails to start it, and no rank leaves a trace: the
//! file is named, not the MPI questioned).
//!
//! Which word of a launch command is the program depends on the launcher's options
//! (`mpiexec -f hosts -n 4 ./app`), so a file is named as missing only once the run
//! left no trace at all, and only a word written as a path (`./app`, `/x/app`).

use std::path::Path;

use crate::which_mpi::linked_mpi;

/// What to tell before running `command` when its first word is an MPI program rather
/// than a launcher: it runs as a single rank, and how to give it more.
pub fn without_launcher(command: &[String]) -> Option<String> {
    let first = command.first()?;
    let mpi = linked_mpi(first)?;
    let library = mpi.library.file_name().map_or_else(
        || mpi.library.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let rest = command[1..].join(" ");
    let sep = if rest.is_empty() { "" } else { " " };
    Some(format!(
        "{first} links {} ({library}) and is run without a launcher: it runs as a single \
         rank (MPI's singleton start); for more ranks give the launcher: \
         `overlap trace -- mpiexec -n 4 {first}{sep}{rest}`",
        mpi.family
    ))
}

/// The first word of `command` after the launcher that is written as a path (it holds a
/// `/` and is no option) and names nothing here: the program the launcher could not
/// start, when the run left no trace.
pub fn missing_program(command: &[String]) -> Option<&str> {
    command
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|a| !a.starts_with('-') && a.contains('/'))
        .find(|a| !Path::new(a).exists())
}

/// True when `dir` holds no rank file (`rank-N.ovlp`): no rank started recording.
pub fn no_rank_file(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    !entries.filter_map(Result::ok).any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with("rank-") && name.ends_with(".ovlp")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_missing_program_is_the_first_path_that_names_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let hosts = dir.path().join("hosts");
        std::fs::write(&hosts, "localhost\n").expect("write");
        let cmd = words(&format!(
            "mpiexec -f {} -n 2 ./does-not-exist --out ./x",
            hosts.display()
        ));
        assert_eq!(missing_program(&cmd), Some("./does-not-exist"));
        assert_eq!(missing_program(&words("mpiexec -n 2 /bin/true")), None);
        assert_eq!(
            missing_program(&words("mpiexec -n 2 app")),
            None,
            "a bare name may be found in PATH by the launcher"
        );
        assert_eq!(missing_program(&words("/no/such/mpiexec")), None);
    }

    #[test]
    fn a_program_that_links_no_mpi_is_no_unlaunched_mpi_program() {
        assert_eq!(without_launcher(&words("/bin/true")), None);
        assert_eq!(without_launcher(&words("mpiexec -n 2 /bin/true")), None);
    }

    #[test]
    fn a_directory_without_rank_files_left_no_trace() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(no_rank_file(dir.path()));
        assert!(no_rank_file(&dir.path().join("absent")));
        std::fs::write(dir.path().join("rank-0.ovlp"), b"").expect("write");
        assert!(!no_rank_file(dir.path()));
    }
}
