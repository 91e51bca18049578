//! Behaviour of the `overlap` binary: real MPI runs under `mpiexec`, merging, and the
//! errors a user sees.

mod analyze;
mod buffers;
mod confirm;
mod crash;
mod f08;
mod failures;
mod gate;
mod gpu_pipeline;
mod hang;
mod identity;
mod inputs;
mod kernel_options;
mod launcher;
mod merge;
mod microbench;
mod mpis;
mod network;
mod onesided_f;
mod outputs;
mod preload_calls;
mod preload_fork;
mod preload_thread_time;
mod preload_threads;
mod run;
mod slurm;
mod suggest;
mod toeplitz;
mod trace;
mod traces;
mod tui;
mod util;
mod verdicts;
mod watch;
mod whatif;
mod which_mpi;
