//! A run read a part of its ranks at a time is judged as the run loaded whole: the same
//! problems, in the same words and order, and the same work per rank, on every kept run
//! and on kept runs damaged the ways a CI job meets them.

use std::path::Path;

use super::Judged;
use crate::analysis::analyze_dir;
use crate::metrics::Options;

/// The judgement of `dir` loaded whole and read in parts, compared.
fn judged_alike(dir: &Path) {
    let name = dir.display();
    let whole = Judged::whole(&crate::load::load_dir(dir, &mut |_, _| {}).expect("loads"));
    let run = analyze_dir(dir, &Options::default()).expect("reads in parts");
    let parts = Judged::of_parts(dir, &run);
    assert_eq!(parts.incomplete, whole.incomplete, "{name}: problems");
    assert_eq!(parts.work, whole.work, "{name}: work");
    assert_eq!((parts.window, whole.window), (None, None), "{name}");
}

#[test]
fn every_kept_run_is_judged_in_parts_as_whole() {
    for dir in crate::load::kept_run_dirs() {
        judged_alike(&dir);
    }
}

/// What is done to a copied run's rank file.
type Damage = fn(&Path);

/// A kept run of three ranks (the C ring) copied, then damaged: rank 1's file cut in
/// the middle of its events, or removed, or replaced by bytes that are no rank file;
/// each is a problem the whole path names (a rank cut short, a rank missing, a file
/// unreadable), and the parts name it alike.
#[test]
fn a_damaged_run_is_judged_in_parts_as_whole() {
    let damages: [(&str, Damage); 3] = [
        ("cut", |f| {
            let len = std::fs::metadata(f).expect("rank 1").len();
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(f)
                .expect("rank 1");
            file.set_len(len / 2).expect("cut");
        }),
        ("removed", |f| std::fs::remove_file(f).expect("removed")),
        ("not a rank file", |f| {
            std::fs::write(f, b"not a rank file").expect("written")
        }),
    ];
    for (what, damage) in damages {
        let dir = crate::load::kept_run_copy("c-ring");
        damage(&dir.path().join("rank-1.ovlp"));
        let whole =
            Judged::whole(&crate::load::load_dir(dir.path(), &mut |_, _| {}).expect("loads"));
        assert!(!whole.incomplete.is_empty(), "{what}: a problem");
        judged_alike(dir.path());
    }
}
