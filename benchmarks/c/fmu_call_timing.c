/*
 * Per-call cost of an FMI 2.0 co-simulation FMU in a C host (run by benchmarks/c_host_calls.py).
 *
 * Loads the FMU binary as FMI tools do (dlopen with RTLD_NOW | RTLD_LOCAL), instantiates,
 * initializes with the default parameters, then for each CALL given times N calls in a row:
 *
 *   set    fmi2SetReal of the inputs -i (two input vectors in turn)
 *   get    fmi2GetReal of the outputs -o
 *   step   fmi2DoStep of -h seconds
 *
 * and prints "CALL MICROSECONDS_PER_CALL" per CALL; then frees the instance.
 * With N = 0 it only loads, initializes and frees (the baseline of a syscall count).
 *
 * usage: fmu_call_timing DIR MODEL_ID GUID N [-i VR,VR,...] [-o VR,VR,...] [-h STEP] CALL...
 * Exit status 0 if every call returned fmi2OK, 1 otherwise, 2 if the FMU could not be loaded.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmi2_host.h" /* tests/fmu/c */

#define MAXN 512
static fmi2ValueReference ivr[MAXN], ovr[MAXN];
static double u[2][MAXN], y[MAXN];
static size_t ni, no;

static size_t parse_list(const char *arg, fmi2ValueReference *vr) {
    size_t n = 0;
    for (const char *p = arg; *p && n < MAXN; n++) {
        char *end;
        vr[n] = (fmi2ValueReference)strtoul(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s DIR MODEL_ID GUID N [-i VRS] [-o VRS] [-h STEP] CALL...\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *id = argv[2], *guid = argv[3];
    long n = atol(argv[4]);
    double step = 1e-3;
    int first_call = argc;
    for (int k = 5; k < argc; k++) {
        if (!strcmp(argv[k], "-i") && k + 1 < argc) ni = parse_list(argv[++k], ivr);
        else if (!strcmp(argv[k], "-o") && k + 1 < argc) no = parse_list(argv[++k], ovr);
        else if (!strcmp(argv[k], "-h") && k + 1 < argc) step = strtod(argv[++k], NULL);
        else {
            first_call = k;
            break;
        }
    }
    for (size_t j = 0; j < ni; j++) u[1][j] = 1e-3 * (double)(j + 1);

    char resources[4096];
    fmi2Functions f;
    void *h = open_fmu(dir, id, resources, sizeof resources, &f);
    if (!h) return 2;

    static fmi2CallbackFunctions cb = {print_log, calloc, free, NULL, NULL};
    fmi2Component c = f.Instantiate("timing", 1 /* fmi2CoSimulation */, guid, resources, &cb, 0, 0);
    if (!c) return 2;
    int bad = f.SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) | f.EnterInit(c) | f.ExitInit(c);
    double t = 0.0;
    for (int k = first_call; k < argc && !bad && n > 0; k++) {
        const char *call = argv[k];
        double t0 = now();
        for (long i = 0; i < n && !bad; i++) {
            if (!strcmp(call, "set")) bad = f.SetReal(c, ivr, ni, u[i & 1]);
            else if (!strcmp(call, "get")) bad = f.GetReal(c, ovr, no, y);
            else if (!strcmp(call, "step")) bad = f.DoStep(c, t, step, 1), t += step;
            else {
                fprintf(stderr, "unknown call %s\n", call);
                return 2;
            }
        }
        printf("%s %.3f\n", call, 1e6 * (now() - t0) / (double)n);
    }
    f.FreeInstance(c);
    if (bad) printf("a call failed\n");
    return bad ? 1 : 0;
}
