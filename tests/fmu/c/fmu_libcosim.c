/*
 * TITOP FMUs in libcosim (the Open Simulation Platform's C++ co-simulation
 * library, through its C API libcosimc), in a C process without Python: the
 * executions are built, run and torn down in libcosim's own order.
 *
 * usage: fmu_libcosim LIBCOSIMC SCENARIO FMU_A FMU_B
 *   LIBCOSIMC  the libcosimc shared library (e.g. the one in the libcosimpy wheel)
 *   together   one execution with both FMUs: 10 steps of 10 ms, destroyed
 *              (libcosim frees the instances and unloads the FMUs itself)
 *   separate   one execution per FMU, both stepped; the first one (the first
 *              FMU loaded) destroyed, the second stepped again, then destroyed
 *   sequence   one execution per FMU, one after the other: each runs 0.1 s and
 *              is destroyed (its FMU unloaded, its unzipped folder deleted)
 *              before the next is created
 *
 * Output: "ok <what>" or "fail <what>: <libcosim's message>". Exit status 0
 * iff all went well (a crash is a signal, a hang is killed after 120 s).
 */

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct cosim_execution_s cosim_execution;
typedef struct cosim_slave_s cosim_slave;

static cosim_execution *(*execution_create)(int64_t start, int64_t step);
static int (*execution_add_slave)(cosim_execution *, cosim_slave *);
static int (*execution_simulate_until)(cosim_execution *, int64_t);
static int (*execution_step)(cosim_execution *, int64_t);
static int (*execution_destroy)(cosim_execution *);
static cosim_slave *(*local_slave_create)(const char *fmu, const char *name);
static int (*local_slave_destroy)(cosim_slave *);
static const char *(*last_error_message)(void);
static int (*log_setup_simple_console_logging)(void);
static void (*log_set_output_level)(int);

#define STEP 10000000LL /* 10 ms in ns */

static int check(int ok, const char *what) {
    if (ok) printf("ok %s\n", what);
    else printf("fail %s: %s\n", what, last_error_message ? last_error_message() : "");
    fflush(stdout);
    return ok;
}

static cosim_execution *with(const char *fmu, const char *name, cosim_slave **slave) {
    cosim_execution *e = execution_create(0, STEP);
    if (!check(e != NULL, "cosim_execution_create")) return NULL;
    *slave = local_slave_create(fmu, name);
    if (!check(*slave != NULL, "cosim_local_slave_create")) return NULL;
    if (!check(execution_add_slave(e, *slave) >= 0, "cosim_execution_add_slave")) return NULL;
    return e;
}

#define RESOLVE(var, name)                                              \
    if (!(*(void **)&var = dlsym(lib, name))) {                         \
        printf("fail dlsym %s: %s\n", name, dlerror());                 \
        return 2;                                                       \
    }

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s LIBCOSIMC together|separate|sequence FMU_A FMU_B\n", argv[0]);
        return 2;
    }
    alarm(120);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("fail dlopen libcosimc: %s\n", dlerror());
        return 2;
    }
    RESOLVE(execution_create, "cosim_execution_create") RESOLVE(execution_add_slave, "cosim_execution_add_slave")
    RESOLVE(execution_simulate_until, "cosim_execution_simulate_until") RESOLVE(execution_step, "cosim_execution_step")
    RESOLVE(execution_destroy, "cosim_execution_destroy") RESOLVE(local_slave_create, "cosim_local_slave_create")
    RESOLVE(local_slave_destroy, "cosim_local_slave_destroy") RESOLVE(last_error_message, "cosim_last_error_message")
    RESOLVE(log_setup_simple_console_logging, "cosim_log_setup_simple_console_logging")
    RESOLVE(log_set_output_level, "cosim_log_set_output_level")
    log_setup_simple_console_logging();
    log_set_output_level(3 /* warning */);

    const char *a = argv[3], *b = argv[4];
    if (!strcmp(argv[2], "together")) {
        cosim_execution *e = execution_create(0, STEP);
        if (!check(e != NULL, "cosim_execution_create")) return 1;
        cosim_slave *sa = local_slave_create(a, "a"), *sb = local_slave_create(b, "b");
        if (!check(sa && sb, "cosim_local_slave_create")) return 1;
        if (!check(execution_add_slave(e, sa) >= 0 && execution_add_slave(e, sb) >= 0, "cosim_execution_add_slave"))
            return 1;
        if (!check(execution_simulate_until(e, 10 * STEP) != -1, "cosim_execution_simulate_until 0.1 s")) return 1;
        if (!check(execution_destroy(e) == 0, "cosim_execution_destroy")) return 1;
        if (!check(local_slave_destroy(sa) == 0 && local_slave_destroy(sb) == 0, "cosim_local_slave_destroy"))
            return 1;
    } else if (!strcmp(argv[2], "separate")) {
        cosim_slave *sa, *sb;
        cosim_execution *ea = with(a, "a", &sa), *eb = ea ? with(b, "b", &sb) : NULL;
        if (!ea || !eb) return 1;
        if (!check(execution_simulate_until(ea, 5 * STEP) != -1, "execution a: cosim_execution_simulate_until 0.05 s"))
            return 1;
        if (!check(execution_simulate_until(eb, 5 * STEP) != -1, "execution b: cosim_execution_simulate_until 0.05 s"))
            return 1;
        if (!check(execution_destroy(ea) == 0 && local_slave_destroy(sa) == 0, "execution a destroyed")) return 1;
        if (!check(execution_step(eb, 5) == 0, "execution b: 5 more steps")) return 1;
        if (!check(execution_destroy(eb) == 0 && local_slave_destroy(sb) == 0, "execution b destroyed")) return 1;
    } else if (!strcmp(argv[2], "sequence")) {
        const char *fmus[] = {a, b}, *names[] = {"a", "b"};
        for (int k = 0; k < 2; k++) {
            cosim_slave *sk;
            cosim_execution *ek = with(fmus[k], names[k], &sk);
            if (!ek) return 1;
            if (!check(execution_simulate_until(ek, 10 * STEP) != -1, "cosim_execution_simulate_until 0.1 s")) return 1;
            if (!check(execution_destroy(ek) == 0 && local_slave_destroy(sk) == 0, "execution destroyed")) return 1;
        }
    } else {
        fprintf(stderr, "unknown scenario %s\n", argv[2]);
        return 2;
    }
    printf("done\n");
    fflush(stdout);
    return 0;
}
