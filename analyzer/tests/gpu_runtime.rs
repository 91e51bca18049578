//! Which GPU runtime the analysis names when a rank recorded no GPU work: a runtime the
//! program itself loaded is named as the program's, one only MPI's components loaded
//! (MPICH's hwloc opens libOpenCL.so inside MPI_Init) is not, and a trace that did not
//! record the program's own files names every runtime mapped, saying it cannot tell.

// A failed step of a test is a failed test: unwrap says where.
#![allow(clippy::unwrap_used)]

use crate::common::*;
use overlap_analyzer::analysis;
use overlap_instrument::schema::SyncPhase;

#[test]
fn a_gpu_runtime_without_recorded_gpu_work_leaves_the_verdicts_unknown() {
    use overlap_analyzer::gpu::Loader;
    use overlap_instrument::schema::{ParamValue, PROGRAM_OBJECTS_PARAM};
    // Two ranks whose headers list `maps` (every executable mapping) and, when given,
    // the files the program loaded itself.
    let traces = |maps: &str, own: Option<&str>| {
        let traces = [
            vec![with_buf(isend(0, 10, 1, 0, 8, 1), 0xA000)],
            vec![recv(0, 20, 0, 0, 8)],
        ]
        .into_iter()
        .enumerate()
        .map(|(r, events)| {
            let mut h = header(r as u32, 2, 0, "one-clock");
            h.params
                .insert("code_maps".into(), ParamValue::Text(maps.to_string()));
            if let Some(own) = own {
                h.params.insert(
                    PROGRAM_OBJECTS_PARAM.into(),
                    ParamValue::Text(own.to_string()),
                );
            }
            rank_trace(h, vec![sync(SyncPhase::Init, 0, 0, 0)], events)
        })
        .collect();
        overlap_analyzer::merge::merge(traces).to_trace(std::path::Path::new("t.json"))
    };
    let unrecorded = |t: &overlap_analyzer::model::Trace| {
        analysis::analyze(t, &Default::default())
            .0
            .run
            .gpu_unrecorded
    };
    // The program links the CUDA runtime: named, as the program's.
    let cudart = "/usr/local/cuda/lib64/libcudart.so.12.4.127";
    let cuda = traces(
        &format!("55d0-55e0 00000000 /home/u/app\n7f00-7f10 00001000 {cudart}"),
        Some(&format!("/home/u/app\n{cudart}")),
    );
    let (report, _) = analysis::analyze(&cuda, &Default::default());
    assert!(report.gpu.is_none());
    let g = report
        .run
        .gpu_unrecorded
        .as_ref()
        .expect("the runtime is named");
    assert_eq!(
        (g.rank, g.library.as_str(), g.by),
        (0, "libcudart.so.12.4.127", Loader::Program)
    );
    let text = overlap_analyzer::report::render(&report, Default::default());
    assert!(
        text.contains(
            "GPU work not recorded: rank 0's program loads libcudart.so.12.4.127 itself, but \
             the trace holds no copy or kernel"
        ),
        "{text}"
    );
    // MPICH's hwloc opened libOpenCL inside MPI_Init: mapped, but not the program's.
    let opencl = "7f00-7f10 00001000 /usr/lib/x86_64-linux-gnu/libOpenCL.so.1.0.0";
    let hwloc = traces(
        &format!("55d0-55e0 00000000 /home/u/app\n{opencl}"),
        Some("/home/u/app\n/lib/libc.so.6"),
    );
    assert_eq!(unrecorded(&hwloc), None);
    // A trace from before the list: mapped is all it says, and the note says so.
    let old = traces(&format!("55d0-55e0 00000000 /home/u/app\n{opencl}"), None);
    let g = unrecorded(&old).expect("named, who loaded it unknown");
    assert_eq!(
        (g.library.as_str(), g.by),
        ("libOpenCL.so.1.0.0", Loader::Unknown)
    );
    assert!(g
        .said()
        .contains("(by the program or by its MPI: a trace this old does not say which)"));
    let plain = traces(
        "55d0-55e0 00000000 /home/u/app\n7f00-7f10 00001000 /lib/libc.so.6",
        None,
    );
    assert_eq!(unrecorded(&plain), None);
}
