/* Page protection or userfaultfd write-protect for the buffer watch: what each costs to
 * arm over a buffer, to take the program's first write, and to end (docs/buffers.md,
 * "Why page protection"). Single process, no MPI.
 *
 *   mprotect   arm: mprotect(PROT_READ); first write: a SIGSEGV whose handler restores
 *              PROT_READ|PROT_WRITE (what the watch does); end untouched: mprotect back.
 *   uffd-async arm: UFFDIO_WRITEPROTECT over a range registered once in write-protect
 *              mode with UFFD_FEATURE_WP_ASYNC (Linux 6.7): a write is resolved by the
 *              kernel, nothing runs in the program; the watch would learn of it only by
 *              PAGEMAP_SCAN (Linux 6.7) at its next check: its cost is "check".
 *
 *   watch_uffd [ROUNDS]    prints one line per mode and size: median ns per operation.
 *
 * The kernel headers of older distributions lack the asynchronous mode and PAGEMAP_SCAN:
 * their values are spelled out below, from Linux 6.7's uapi headers.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
struct pm_scan_arg_ {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct page_region_ {
    uint64_t start, end, categories;
};
#define PAGEMAP_SCAN_ _IOWR('f', 16, struct pm_scan_arg_)
#define PAGE_IS_WRITTEN_ (1 << 1)

static long page;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

static char *watched_lo, *watched_hi;

static void on_segv(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)ctx;
    char *a = info->si_addr;
    if (a >= watched_lo && a < watched_hi) {
        syscall(SYS_mprotect, watched_lo, watched_hi - watched_lo, PROT_READ | PROT_WRITE);
        return;
    }
    signal(SIGSEGV, SIG_DFL);
}

static void with_mprotect(char *buf, size_t len, int rounds) {
    uint64_t *arm = calloc(rounds, 8), *touch = calloc(rounds, 8), *end = calloc(rounds, 8);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    watched_lo = buf, watched_hi = buf + len;
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = now_ns();
        mprotect(buf, len, PROT_READ);
        uint64_t t1 = now_ns();
        buf[len / 2] = (char)r; /* the first write: a fault */
        uint64_t t2 = now_ns();
        mprotect(buf, len, PROT_READ);
        uint64_t t3 = now_ns();
        mprotect(buf, len, PROT_READ | PROT_WRITE); /* ended untouched */
        uint64_t t4 = now_ns();
        arm[r] = t1 - t0, touch[r] = t2 - t1, end[r] = t4 - t3;
    }
    printf("mprotect    %8zu B  arm %7lu ns  first write %7lu ns  end untouched %7lu ns\n", len,
           (unsigned long)median(arm, rounds), (unsigned long)median(touch, rounds),
           (unsigned long)median(end, rounds));
    free(arm), free(touch), free(end);
}

static int with_uffd(char *buf, size_t len, int rounds) {
    int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        perror("userfaultfd");
        return 1;
    }
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED};
    if (ioctl(fd, UFFDIO_API, &api) < 0) {
        perror("UFFDIO_API (asynchronous write-protect needs Linux 6.7)");
        return 1;
    }
    struct uffdio_register reg = {.range = {(uintptr_t)buf, len},
                                  .mode = UFFDIO_REGISTER_MODE_WP};
    if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
        perror("UFFDIO_REGISTER");
        return 1;
    }
    int pagemap = open("/proc/self/pagemap", O_RDONLY);
    uint64_t *arm = calloc(rounds, 8), *touch = calloc(rounds, 8), *check = calloc(rounds, 8);
    struct page_region_ regions[8];
    for (int r = 0; r < rounds; r++) {
        struct uffdio_writeprotect wp = {.range = {(uintptr_t)buf, len},
                                         .mode = UFFDIO_WRITEPROTECT_MODE_WP};
        uint64_t t0 = now_ns();
        if (ioctl(fd, UFFDIO_WRITEPROTECT, &wp) < 0) {
            perror("UFFDIO_WRITEPROTECT");
            return 1;
        }
        uint64_t t1 = now_ns();
        buf[len / 2] = (char)r; /* the first write: resolved by the kernel */
        uint64_t t2 = now_ns();
        struct pm_scan_arg_ scan = {.size = sizeof scan,
                                    .start = (uintptr_t)buf,
                                    .end = (uintptr_t)buf + len,
                                    .vec = (uintptr_t)regions,
                                    .vec_len = 8,
                                    .category_mask = PAGE_IS_WRITTEN_,
                                    .return_mask = PAGE_IS_WRITTEN_};
        long found = ioctl(pagemap, PAGEMAP_SCAN_, &scan);
        uint64_t t3 = now_ns();
        if (found < 0) {
            perror("PAGEMAP_SCAN (Linux 6.7)");
            return 1;
        }
        arm[r] = t1 - t0, touch[r] = t2 - t1, check[r] = t3 - t2;
    }
    printf("uffd-async  %8zu B  arm %7lu ns  first write %7lu ns  check %7lu ns\n", len,
           (unsigned long)median(arm, rounds), (unsigned long)median(touch, rounds),
           (unsigned long)median(check, rounds));
    close(pagemap);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    page = sysconf(_SC_PAGESIZE);
    size_t sizes[] = {4096, 65536, 1 << 20};
    for (int k = 0; k < 3; k++) {
        size_t len = sizes[k];
        char *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        memset(a, 1, len), memset(b, 1, len);
        with_mprotect(a, len, rounds);
        if (with_uffd(b, len, rounds) != 0)
            printf("uffd-async  %8zu B  unavailable here\n", len);
        munmap(a, len), munmap(b, len);
    }
    return 0;
}
