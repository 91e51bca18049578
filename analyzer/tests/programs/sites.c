/* Prints two return addresses, one of a call made from main and one of a call made
 * from a function inlined into main, then the process's executable mappings as
 * `start-end offset path` lines: what the preload records, without MPI, for the
 * analyzer's symbolization tests (analyzer/tests/sites.rs). */
#include <stdio.h>
#include <string.h>

#ifdef OTHER_BUILD
volatile int other_build = 1; /* another build, so another build-id */
#endif

__attribute__((noinline)) void report(void) {
    printf("%p\n", __builtin_return_address(0));
    __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void helper(void) {
    report(); /* SITE-INLINED */
}

int main(void) {
    report(); /* SITE-MAIN */
    helper();
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && fgets(line, sizeof line, maps)) {
        char range[128], perms[8], offset[32], dev[16], path[3000] = "";
        unsigned long inode;
        if (sscanf(line, "%127s %7s %31s %15s %lu %2999[^\n]", range, perms, offset, dev,
                   &inode, path) >= 5 &&
            strchr(perms, 'x') && path[0] == '/') {
            char *p = path;
            while (*p == ' ') p++;
            printf("%s %s %s\n", range, offset, p);
        }
    }
    return 0;
}
