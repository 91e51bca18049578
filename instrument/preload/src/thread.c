/* The preload's per-thread words, in initial-exec TLS.
 *
 * A Rust thread_local in a shared library uses the general-dynamic TLS model: every
 * access calls __tls_get_addr. These words are read and written on every wrapped MPI
 * call, so they are declared here with the initial-exec model instead: an access is one
 * load of the variable's offset from the GOT and one %fs-relative access. That model
 * needs the library in the process's static TLS block, which holds for a library loaded
 * with LD_PRELOAD (or linked into the program); glibc also keeps a reserve for a few
 * such libraries opened later with dlopen.
 *
 * The entry trampolines (entry.rs) store the caller's return address in `site`; the
 * wrappers read it and `state`, the thread's ThreadState (thread.rs), through inline
 * assembly against this symbol. The buffer watch's libc trampolines store theirs in
 * `libc_site`, and its fault handler keeps `fault_retry` (both read and written in
 * signal context too, which initial-exec TLS allows).
 */
#include <stdint.h>

struct overlap_preload_thread {
    uint64_t site;
    void *state;
    /* The buffer watch (watch/): the return address of the last interposed libc call
     * (its own trampolines, so that a libc call inside an MPI wrapper never overwrites
     * `site`), and the address of a fault let through once to be retried. */
    uint64_t libc_site;
    uint64_t fault_retry;
    /* The Fortran bindings' site-only trampolines (fortran_sites/): the return address
     * and stack pointer of the last binding of the MPI's that the program entered, read
     * when a C entry point is called from inside that binding. */
    uint64_t outer_site;
    uint64_t outer_sp;
};

__attribute__((visibility("hidden"), tls_model("initial-exec")))
__thread struct overlap_preload_thread overlap_preload_thread;
