//! Every call of the traced communicator once (on 2 ranks), for the tests that check
//! what lands in the trace: `mpiexec -n 2 traced_calls TRACE_DIR`.
//!
//! ```text
//! tag 1  rank 0 MPI_Send      -> rank 1 MPI_Recv
//! tag 2  both   MPI_Sendrecv  <-> (two messages)
//! tag 3  rank 0 MPI_Isend     -> rank 1 MPI_Irecv, each completed by MPI_Wait
//! tag 4  rank 1 MPI_Isend     -> rank 0 MPI_Irecv, each completed by MPI_Test (looped)
//! tag 5  on a communicator whose ranks are reversed (id 1): comm rank 0 (world 1)
//!        MPI_Send -> comm rank 1 (world 0) MPI_Recv; peers recorded as world ranks
//! then MPI_Allreduce (sum), MPI_Barrier, a guard compute span and a tracing span
//! ```

use mpi::collective::SystemOperation;
use mpi::request::scope;
use mpi::topology::{Color, Communicator};
use overlap_instrument::layer::ComputeLayer;
use overlap_instrument::mpi::{TraceConfig, TraceSession};
use overlap_instrument::schema::CommId;
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: traced_calls TRACE_DIR");
    let universe = mpi::initialize().expect("MPI initialises");
    let world = universe.world();
    assert_eq!(world.size(), 2, "run on 2 ranks");
    let me = world.rank();
    let other = 1 - me;
    let session =
        TraceSession::start(&world, TraceConfig::new(dir, "traced-calls")).expect("session");
    let comm = session.comm(&world, CommId::WORLD);

    let data = [me as u64 + 10; 4];
    let mut got = [0u64; 4];
    if me == 0 {
        comm.send(1, 1, &data[..]);
    } else {
        let status = comm.recv(0, 1, &mut got[..]);
        assert_eq!((status.source_rank(), got[0]), (0, 10));
    }

    comm.sendrecv(other, 2, &data[..], other, 2, &mut got[..]);
    assert_eq!(got[0], other as u64 + 10);

    scope(|s| {
        if me == 0 {
            let r = comm.isend(s, 1, 3, &data[..]);
            comm.wait(r);
        } else {
            let r = comm.irecv(s, 0, 3, &mut got[..]);
            comm.wait(r);
        }
    });

    scope(|s| {
        let mut pending = if me == 1 {
            comm.isend(s, 0, 4, &data[..])
        } else {
            comm.irecv(s, 1, 4, &mut got[..])
        };
        loop {
            match comm.test(pending) {
                Ok(_) => break,
                Err(r) => pending = r,
            }
        }
    });

    let reversed = world
        .split_by_color_with_key(Color::with_value(0), world.size() - 1 - me)
        .expect("in the split");
    let rcomm = session.comm(&reversed, CommId(1));
    if rcomm.rank() == 0 {
        rcomm.send(1, 5, &data[..]);
    } else {
        rcomm.recv(0, 5, &mut got[..]);
    }

    let mut sum = [0u64; 4];
    comm.all_reduce_into(&data[..], &mut sum[..], SystemOperation::sum());
    assert_eq!(sum[0], 21);
    comm.barrier();

    {
        let _g = session.recorder().compute("guard-span");
        std::hint::black_box(sum.iter().sum::<u64>());
    }
    let subscriber =
        tracing_subscriber::registry().with(ComputeLayer::new(session.recorder().clone()));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!("layer-span").in_scope(|| std::hint::black_box(1 + 1));
    });

    session.finish().expect("finish");
}
