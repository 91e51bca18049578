/* MPI calls made while a thread's locals are being destroyed, which the preload must
 * trace, not abort on:
 * - MPI_Iprobe from a pthread key destructor, run as a worker thread that made calls
 *   ends;
 * - MPI_Finalize from an atexit handler (as a C++ global's destructor would call it), by
 *   when exit has destroyed the main thread's thread-locals. */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_key_t key;

static void probe_at_thread_exit(void *value) {
    int flag;
    (void)value;
    MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

static void *worker(void *arg) {
    int flag;
    /* A call first, so the thread's recording state exists and is torn down at exit. */
    MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    pthread_setspecific(key, arg);
    return NULL;
}

static void finalize(void) { MPI_Finalize(); }

int main(int argc, char **argv) {
    int provided;
    pthread_t t;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    atexit(finalize);
    pthread_key_create(&key, probe_at_thread_exit);
    pthread_create(&t, NULL, worker, &key);
    pthread_join(t, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}
