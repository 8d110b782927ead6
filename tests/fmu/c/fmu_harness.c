/*
 * A minimal FMI 2.0 co-simulation host in C, to prove that the TITOP FMUs load
 * and run outside Python. It loads the FMU binary the way FMI tools do
 * (dlopen with RTLD_NOW | RTLD_LOCAL on Linux, binaries/linux64/<id>.so; LoadLibrary on
 * Windows, built with MinGW-w64, binaries/win64/<id>.dll) and runs
 *
 *   fmi2Instantiate -> fmi2SetupExperiment -> fmi2SetReal (parameters)
 *   -> fmi2EnterInitializationMode -> fmi2SetReal (inputs)
 *   -> fmi2ExitInitializationMode -> fmi2GetReal (outputs)
 *   -> n x (fmi2DoStep, fmi2GetReal) -> fmi2GetDirectionalDerivative (with -u)
 *   -> titopGetTrialSteps (with -u, -k: one step tried with the knowns moved by 1e-3 seed,
 *      against fmi2GetFMUstate, fmi2SetReal, fmi2DoStep, fmi2SetReal, fmi2GetReal, fmi2SetFMUstate)
 *   -> fmi2GetFMUstate, fmi2DoStep, fmi2SetFMUstate, fmi2DoStep (same outputs?)
 *   -> fmi2Terminate -> fmi2FreeInstance
 *
 * usage: fmu_harness DIR MODEL_ID GUID [-p VR=VALUE]... [-i VR=VALUE]... [-o VR]... [-n STEPS] [-h STEP]
 *                    [-u VR]... [-k VR=SEED]... [-- DIR MODEL_ID GUID ...]...
 *   DIR       the unzipped FMU; MODEL_ID its model identifier; GUID its guid
 *   -p        a Real parameter, set before initialization
 *   -i        a Real input, set in initialization mode ("nan" is accepted)
 *   -o        a Real output to print
 *   -u, -k    the unknowns and the knowns (with the seed) of a directional derivative
 *
 * Output lines: "log STATUS CATEGORY: MESSAGE" (the FMU's logger),
 * "call NAME STATUS", "y TIME VR VALUE", "dy VR VALUE", "trial_steps ok|FAILED",
 * "state_roundtrip ok|FAILED".
 * Several FMUs, separated by "--", run one after the other in one process (each
 * introduced by a line "fmu MODEL_ID"): one start of the host (under Wine, slow) for all.
 * "fmu_harness @FILE" reads the arguments from FILE, one a line (a Windows command line
 * holds at most 32767 characters).
 * Exit status: 0 if every call returned fmi2OK or fmi2Warning, 1 if a call
 * failed (the instance is then freed), 2 if the FMU could not be loaded; the
 * largest over the FMUs.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2_host.h"

static void logger(void *env, const char *instance, fmi2Status status, const char *category, const char *message,
                   ...) {
    char buf[4096];
    va_list ap;
    (void)env, (void)instance;
    va_start(ap, message);
    vsnprintf(buf, sizeof buf, message, ap);
    va_end(ap);
    printf("log %s %s: %s\n", status <= fmi2Pending ? status_name[status] : "?", category ? category : "", buf);
    fflush(stdout);
}

#define MAXN 256
static fmi2ValueReference pvr[MAXN], ivr[MAXN], ovr[MAXN], uvr[MAXN], kvr[MAXN];
static double pval[MAXN], ival[MAXN], y[MAXN], y_again[MAXN], kseed[MAXN], dy[MAXN], held[MAXN], end[MAXN];
static size_t np, ni, no, nu, nk;

static int parse_pair(const char *arg, fmi2ValueReference *vr, double *value) {
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    if (*end != '=') return 0;
    *vr = (fmi2ValueReference)v;
    *value = strtod(end + 1, &end);
    return *end == 0;
}

#define LOAD(var, name)                                                      \
    *(void **)&var = symbol(h, name);                                        \
    if (!var) {                                                              \
        printf("missing %s: %s\n", name, library_error());                   \
        return 2;                                                            \
    }

#define CALL(name, expr)                                      \
    do {                                                      \
        fmi2Status st_ = (expr);                              \
        printf("call %s %s\n", name, status_name[st_]);      \
        fflush(stdout);                                       \
        if (st_ > fmi2Warning) {                              \
            failed = 1;                                       \
            goto cleanup;                                     \
        }                                                     \
    } while (0)

/* one FMU: argv[0..argc) = DIR MODEL_ID GUID options */
static int run(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fmu_harness DIR MODEL_ID GUID [-p VR=V] [-i VR=V] [-o VR] [-n N] [-h H]\n");
        return 2;
    }
    const char *dir = argv[0], *id = argv[1], *guid = argv[2];
    int steps = 3;
    double step = 1e-3;
    np = ni = no = nu = nk = 0;
    printf("fmu %s\n", id);
    for (int k = 3; k < argc; k++) {
        int ok = k + 1 < argc && np < MAXN && ni < MAXN && no < MAXN && nu < MAXN && nk < MAXN;
        if (ok && !strcmp(argv[k], "-p")) ok = parse_pair(argv[++k], &pvr[np], &pval[np]), np++;
        else if (ok && !strcmp(argv[k], "-i")) ok = parse_pair(argv[++k], &ivr[ni], &ival[ni]), ni++;
        else if (ok && !strcmp(argv[k], "-o")) ovr[no++] = (fmi2ValueReference)strtoul(argv[++k], NULL, 10);
        else if (ok && !strcmp(argv[k], "-u")) uvr[nu++] = (fmi2ValueReference)strtoul(argv[++k], NULL, 10);
        else if (ok && !strcmp(argv[k], "-k")) ok = parse_pair(argv[++k], &kvr[nk], &kseed[nk]), nk++;
        else if (ok && !strcmp(argv[k], "-n")) steps = atoi(argv[++k]);
        else if (ok && !strcmp(argv[k], "-h")) step = strtod(argv[++k], NULL);
        else ok = 0;
        if (!ok) {
            fprintf(stderr, "bad argument %s\n", argv[k]);
            return 2;
        }
    }

    char resources[4096];
    fmi2Functions f;
    library h = open_fmu(dir, id, resources, sizeof resources, &f);
    if (!h) return 2;
    fmi2Status (*GetDirectionalDerivative)(fmi2Component, const fmi2ValueReference *, size_t,
                                           const fmi2ValueReference *, size_t, const double *, double *);
    LOAD(GetDirectionalDerivative, "fmi2GetDirectionalDerivative")
    fmi2Status (*GetTrialSteps)(fmi2Component, double, double, const fmi2ValueReference *, size_t, size_t,
                                const double *, const double *, const fmi2ValueReference *, size_t, double *);
    LOAD(GetTrialSteps, "titopGetTrialSteps")

    static fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = f.Instantiate("harness", 1 /* fmi2CoSimulation */, guid, resources, &cb, 0, 0);
    printf("call fmi2Instantiate %s\n", c ? "OK" : "NULL");
    if (!c) return 2;

    int failed = 0;
    fmi2FMUstate state = NULL;
    double t = 0.0;
    CALL("fmi2SetupExperiment", f.SetupExperiment(c, 0, 0.0, t, 0, 0.0));
    if (np) CALL("fmi2SetReal(parameters)", f.SetReal(c, pvr, np, pval));
    CALL("fmi2EnterInitializationMode", f.EnterInit(c));
    if (ni) CALL("fmi2SetReal(inputs)", f.SetReal(c, ivr, ni, ival));
    CALL("fmi2ExitInitializationMode", f.ExitInit(c));
    for (int k = 0; k <= steps; k++) {
        if (k) {
            CALL("fmi2DoStep", f.DoStep(c, t, step, 1));
            t += step;
        }
        if (no) CALL("fmi2GetReal", f.GetReal(c, ovr, no, y));
        for (size_t j = 0; j < no; j++) printf("y %.6g %u %.17g\n", t, ovr[j], y[j]);
    }
    if (nu) {
        CALL("fmi2GetDirectionalDerivative", GetDirectionalDerivative(c, uvr, nu, kvr, nk, kseed, dy));
        for (size_t j = 0; j < nu; j++) printf("dy %u %.17g\n", uvr[j], dy[j]);
    }
    if (nu && nk) {     /* one trial step, then the same by the standard calls */
        CALL("fmi2GetReal(knowns)", f.GetReal(c, kvr, nk, end));
        for (size_t j = 0; j < nk; j++) held[j] = end[j] + 1e-3 * kseed[j];
        CALL("titopGetTrialSteps", GetTrialSteps(c, t, step, kvr, nk, 1, held, end, uvr, nu, y));
        CALL("fmi2GetFMUstate", f.GetFMUstate(c, &state));
        CALL("fmi2SetReal(held)", f.SetReal(c, kvr, nk, held));
        CALL("fmi2DoStep", f.DoStep(c, t, step, 0));
        CALL("fmi2SetReal(end)", f.SetReal(c, kvr, nk, end));
        CALL("fmi2GetReal", f.GetReal(c, uvr, nu, y_again));
        CALL("fmi2SetFMUstate", f.SetFMUstate(c, state));
        CALL("fmi2FreeFMUstate", f.FreeFMUstate(c, &state));
        printf("trial_steps %s\n", memcmp(y, y_again, nu * sizeof(double)) ? "FAILED" : "ok");
    }
    /* state round trip: save, step, restore, step again: the same outputs */
    CALL("fmi2GetFMUstate", f.GetFMUstate(c, &state));
    CALL("fmi2DoStep", f.DoStep(c, t, step, 0));
    if (no) CALL("fmi2GetReal", f.GetReal(c, ovr, no, y));
    CALL("fmi2SetFMUstate", f.SetFMUstate(c, state));
    CALL("fmi2DoStep", f.DoStep(c, t, step, 0));
    if (no) CALL("fmi2GetReal", f.GetReal(c, ovr, no, y_again));
    printf("state_roundtrip %s\n", no && memcmp(y, y_again, no * sizeof(double)) ? "FAILED" : "ok");
    CALL("fmi2FreeFMUstate", f.FreeFMUstate(c, &state));
    CALL("fmi2Terminate", f.Terminate(c));
cleanup:
    f.FreeInstance(c);
    printf("call fmi2FreeInstance done\n");
    return failed;
}

/* the arguments in the file path, one a line, as argv[1..] (argv[0] NULL), their number in *argc */
static char **read_arguments(const char *path, int *argc) {
    FILE *f = fopen(path, "rb");
    static char line[4096];
    char **argv = NULL;
    int n = 1;
    if (!f) return NULL;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char **more = realloc(argv, (n + 1) * sizeof(char *));
        if (!more || !(more[n] = malloc(strlen(line) + 1))) exit(2);
        argv = more;
        argv[0] = NULL;
        strcpy(argv[n++], line);
    }
    fclose(f);
    *argc = n;
    return argv;
}

int main(int argc, char **argv) {
    int worst = 0;
    if (argc == 2 && argv[1][0] == '@' && !(argv = read_arguments(argv[1] + 1, &argc))) {
        fprintf(stderr, "cannot read the arguments\n");
        return 2;
    }
    for (int start = 1, k = 1; k <= argc; k++)
        if (k == argc || !strcmp(argv[k], "--")) {
            int status = run(k - start, argv + start);
            worst = status > worst ? status : worst;
            start = k + 1;
        }
    return worst;
}
