/*
 * A fuzzer of the FMI 2.0 API of one FMU binary: random call sequences, as a careless or hostile
 * host would make them, to prove that no sequence of calls crashes the FMU, hangs it, or makes it
 * touch memory it does not own (run under AddressSanitizer and UndefinedBehaviorSanitizer, or
 * valgrind: they report what the calls alone would not show).
 *
 * Each sequence instantiates the FMU (co-simulation, or Model Exchange when it has it; now and
 * then with a wrong GUID or type), makes CALLS calls drawn at random from every FMI function the
 * FMU exports (and its vendor functions) in any mode, with
 *   - value references valid, of the wrong kind (an output set, a parameter stepped) or out of range;
 *   - values usual, NaN, infinite, huge (1e300), negative zero, and parameters moved a little or a lot;
 *   - NULL arrays, wrong counts, step sizes negative, NaN, zero or long, times not finite;
 *   - FMU states got, set, freed, serialized and read back, as they are or corrupted: the mode or
 *     has_unit of the blob set to another value, a byte flipped, a double made NaN, cut short;
 * then frees the instance. The sequences depend on SEED and their index only: "-f INDEX -v" replays
 * one, printing each call.
 *
 * Checked besides the absence of a crash (which the sanitizer or the signal handler reports with
 * the sequence's index):
 *   - a call that fails leaves the instance as it was: its serialized FMU state is the same bytes
 *     before and after (not for fmi2SetReal, fmi2SetInteger: parameters are set in turn, as the
 *     pythonfmu FMU sets them; nor for the calls that read values: in initialization mode the first
 *     output read builds the model, whatever fails after);
 *   - a message's category fits its status (logStatusWarning for fmi2Warning, logStatusError for
 *     fmi2Error, ...);
 *   - no call lasts more than LIMIT seconds (SIGALRM: a hang).
 *
 * usage: fmu_fuzz LIBRARY GUID NP NI NO NL ME [-s SEQUENCES] [-c CALLS] [-r SEED] [-f FIRST] [-t LIMIT] [-v]
 *   LIBRARY  the FMU's binary (binaries/linux64/<id>.so, or the same sources built with sanitizers)
 *   NP NI NO NL  the numbers of parameters, inputs, outputs and locals (states and their derivatives):
 *            value references 0.. in that order (the TITOP FMUs' layout)
 *   ME       1 if the FMU also declares Model Exchange
 * Prints "sequences N calls M ok A warning W error E; states set S, blobs read back B (corrupted C,
 * accepted K)" and exits 0, or prints "FAILED ..." and exits 1.
 */

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmi2_host.h"

typedef int fmi2Boolean;
typedef struct {
    fmi2Boolean newDiscreteStatesNeeded, terminateSimulation, nominalsOfContinuousStatesChanged,
        valuesOfContinuousStatesChanged, nextEventTimeDefined;
    double nextEventTime;
} fmi2EventInfo;

/* ---- the FMU's functions ---- */

typedef fmi2Status (*Fc)(fmi2Component);
typedef fmi2Status (*Fvr)(fmi2Component, const fmi2ValueReference *, size_t, void *);
static struct {
    fmi2Component (*Instantiate)(const char *, int, const char *, const char *, const fmi2CallbackFunctions *, int,
                                 int);
    void (*FreeInstance)(fmi2Component);
    fmi2Status (*SetDebugLogging)(fmi2Component, int, size_t, const char *const *);
    fmi2Status (*SetupExperiment)(fmi2Component, int, double, double, int, double);
    Fc EnterInit, ExitInit, Terminate, Reset, CancelStep, EnterEventMode, EnterContinuousTimeMode;
    Fvr GetReal, SetReal, GetInteger, SetInteger, GetBoolean, SetBoolean, GetString, SetString;
    fmi2Status (*GetFMUstate)(fmi2Component, fmi2FMUstate *), (*SetFMUstate)(fmi2Component, fmi2FMUstate);
    fmi2Status (*FreeFMUstate)(fmi2Component, fmi2FMUstate *);
    fmi2Status (*SerializedSize)(fmi2Component, fmi2FMUstate, size_t *);
    fmi2Status (*Serialize)(fmi2Component, fmi2FMUstate, char *, size_t);
    fmi2Status (*DeSerialize)(fmi2Component, const char *, size_t, fmi2FMUstate *);
    fmi2Status (*GetDirectionalDerivative)(fmi2Component, const fmi2ValueReference *, size_t,
                                           const fmi2ValueReference *, size_t, const double *, double *);
    fmi2Status (*DoStep)(fmi2Component, double, double, int);
    fmi2Status (*GetStatus)(fmi2Component, int, fmi2Status *), (*GetRealStatus)(fmi2Component, int, double *);
    fmi2Status (*GetIntegerStatus)(fmi2Component, int, int *), (*GetBooleanStatus)(fmi2Component, int, int *);
    fmi2Status (*GetStringStatus)(fmi2Component, int, const char **);
    fmi2Status (*SetRealInputDerivatives)(fmi2Component, const fmi2ValueReference *, size_t, const int *,
                                          const double *);
    fmi2Status (*GetRealOutputDerivatives)(fmi2Component, const fmi2ValueReference *, size_t, const int *,
                                           double *);
    /* vendor functions (titop_fmu/fmu/shim.c, point 6) */
    fmi2Status (*Derivatives)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2ValueReference *, size_t,
                              size_t, const double *, double *);
    fmi2Status (*TrialSteps)(fmi2Component, double, double, const fmi2ValueReference *, size_t, size_t,
                             const double *, const double *, const fmi2ValueReference *, size_t, double *);
    /* Model Exchange (NULL without it) */
    fmi2Status (*SetTime)(fmi2Component, double);
    fmi2Status (*SetContinuousStates)(fmi2Component, const double *, size_t);
    fmi2Status (*GetContinuousStates)(fmi2Component, double *, size_t);
    fmi2Status (*GetDerivatives)(fmi2Component, double *, size_t);
    fmi2Status (*GetEventIndicators)(fmi2Component, double *, size_t);
    fmi2Status (*GetNominals)(fmi2Component, double *, size_t);
    fmi2Status (*NewDiscreteStates)(fmi2Component, fmi2EventInfo *);
    fmi2Status (*CompletedIntegratorStep)(fmi2Component, int, int *, int *);
} F;

static int load(library h, int me) {
#define REQUIRE(var, name)                                          \
    if (!(*(void **)&F.var = symbol(h, name))) {                   \
        printf("FAILED: missing %s: %s\n", name, library_error()); \
        return 0;                                                   \
    }
    REQUIRE(Instantiate, "fmi2Instantiate") REQUIRE(FreeInstance, "fmi2FreeInstance")
    REQUIRE(SetDebugLogging, "fmi2SetDebugLogging") REQUIRE(SetupExperiment, "fmi2SetupExperiment")
    REQUIRE(EnterInit, "fmi2EnterInitializationMode") REQUIRE(ExitInit, "fmi2ExitInitializationMode")
    REQUIRE(Terminate, "fmi2Terminate") REQUIRE(Reset, "fmi2Reset") REQUIRE(CancelStep, "fmi2CancelStep")
    REQUIRE(GetReal, "fmi2GetReal") REQUIRE(SetReal, "fmi2SetReal") REQUIRE(GetInteger, "fmi2GetInteger")
    REQUIRE(SetInteger, "fmi2SetInteger") REQUIRE(GetBoolean, "fmi2GetBoolean") REQUIRE(SetBoolean, "fmi2SetBoolean")
    REQUIRE(GetString, "fmi2GetString") REQUIRE(SetString, "fmi2SetString")
    REQUIRE(GetFMUstate, "fmi2GetFMUstate") REQUIRE(SetFMUstate, "fmi2SetFMUstate")
    REQUIRE(FreeFMUstate, "fmi2FreeFMUstate") REQUIRE(SerializedSize, "fmi2SerializedFMUstateSize")
    REQUIRE(Serialize, "fmi2SerializeFMUstate") REQUIRE(DeSerialize, "fmi2DeSerializeFMUstate")
    REQUIRE(GetDirectionalDerivative, "fmi2GetDirectionalDerivative") REQUIRE(DoStep, "fmi2DoStep")
    REQUIRE(GetStatus, "fmi2GetStatus") REQUIRE(GetRealStatus, "fmi2GetRealStatus")
    REQUIRE(GetIntegerStatus, "fmi2GetIntegerStatus") REQUIRE(GetBooleanStatus, "fmi2GetBooleanStatus")
    REQUIRE(GetStringStatus, "fmi2GetStringStatus")
    REQUIRE(SetRealInputDerivatives, "fmi2SetRealInputDerivatives")
    REQUIRE(GetRealOutputDerivatives, "fmi2GetRealOutputDerivatives")
    REQUIRE(TrialSteps, "titopGetTrialSteps")
    *(void **)&F.Derivatives = symbol(h, "titopGetDirectionalDerivatives");   /* not in every FMU */
    if (me) {
        REQUIRE(SetTime, "fmi2SetTime") REQUIRE(SetContinuousStates, "fmi2SetContinuousStates")
        REQUIRE(GetContinuousStates, "fmi2GetContinuousStates") REQUIRE(GetDerivatives, "fmi2GetDerivatives")
        REQUIRE(GetEventIndicators, "fmi2GetEventIndicators")
        REQUIRE(GetNominals, "fmi2GetNominalsOfContinuousStates")
        REQUIRE(EnterEventMode, "fmi2EnterEventMode") REQUIRE(NewDiscreteStates, "fmi2NewDiscreteStates")
        REQUIRE(EnterContinuousTimeMode, "fmi2EnterContinuousTimeMode")
        REQUIRE(CompletedIntegratorStep, "fmi2CompletedIntegratorStep")
    }
#undef REQUIRE
    return 1;
}

/* ---- the run: counts, the sequence being run, failures ---- */

static const char *guid;
static int np, ni, no, nl, me, verbose, limit = 60;
static long sequence = -1, calls, statuses[6], states_set, blobs, corrupted, accepted;
static const char *current = "";      /* the call being made */
static int failed;

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("FAILED (sequence %ld, %s): ", sequence, current);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    failed = 1;
}

/* a crash, a sanitizer's report (abort_on_error=1: SIGABRT) or a hang: say where, then die of it */
static void on_signal(int sig) {
    char buf[200];
    int n = snprintf(buf, sizeof buf, "FAILED (sequence %ld, %s): %s\n", sequence, current,
                     sig == SIGALRM ? "the call lasted too long (a hang?)" : sig == SIGABRT ? "aborted (the report above)"
                                                                            : "signal");
    if (write(1, buf, (size_t)n) < 0) _exit(3);
    signal(sig, SIG_DFL), signal(SIGABRT, SIG_DFL);
    raise(sig == SIGALRM ? SIGABRT : sig);
}

/* the categories each status may be logged under (a category of the FMU's own, none of these, is
   not checked) */
static void logger(void *env, const char *instance, fmi2Status status, const char *category, const char *message,
                   ...) {
    static const char *const categories[] = {"logStatusWarning", "logStatusDiscard", "logStatusError",
                                             "logStatusFatal", "logStatusPending"};
    static const fmi2Status fits[] = {fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending};
    char buf[8192];
    va_list ap;
    (void)env, (void)instance;
    va_start(ap, message);
    vsnprintf(buf, sizeof buf, message ? message : "(NULL)", ap);
    va_end(ap);
    if ((unsigned)status > fmi2Pending) fail("a message of status %d: %s", (int)status, buf);
    for (int k = 0; k < 5 && category; k++)
        if (!strcmp(category, categories[k]) && status != fits[k])
            fail("a message of status %s in the category %s: %s", status_name[status], category, buf);
    if (verbose) printf("  log %s %s: %s\n", status <= fmi2Pending ? status_name[status] : "?", category, buf);
}

/* ---- random numbers: xorshift64*, one stream per sequence ---- */

static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}
static int below(int n) { return n > 0 ? (int)(next() % (uint64_t)n) : 0; }
static int chance(int percent) { return below(100) < percent; }
static double uniform(void) { return (double)(next() >> 11) / 9007199254740992.0; }

/* a value as a careless host gives it */
static double value(double usual) {
    switch (below(20)) {
    case 0: return NAN;
    case 1: return chance(50) ? INFINITY : -INFINITY;
    case 2: return chance(50) ? 1e300 : -1e300;
    case 3: return -0.0;
    case 4: return usual * (1 + 10 * (uniform() - 0.5));
    case 5: return (uniform() - 0.5) * 1e6;
    default: return usual + 0.1 * (uniform() - 0.5);
    }
}

/* a value reference: mostly one of [lo, hi), else any variable or none */
static fmi2ValueReference vr_in(int lo, int hi) {
    int n = np + ni + no + nl;
    switch (below(12)) {
    case 0: return (fmi2ValueReference)(n + below(5));
    case 1: return (fmi2ValueReference)(chance(50) ? 0xFFFFFFFFu : 0x7FFFFFFFu);
    case 2: return (fmi2ValueReference)below(n);
    default: return (fmi2ValueReference)(hi > lo ? lo + below(hi - lo) : below(n + 1));
    }
}

/* ---- the instance, its snapshots and FMU states ---- */

#define MAXV 4096
static fmi2Component c;
static double start[MAXV];           /* the parameters' start values */
static fmi2FMUstate slots[3];
static char *blob;                   /* the last serialized state */
static size_t blob_size;

/* the instance's serialized FMU state into *out (malloc'ed, *n bytes), or 0 if it cannot be got */
static int snapshot(char **out, size_t *n) {
    fmi2FMUstate st = NULL;
    *out = NULL;
    if (F.GetFMUstate(c, &st) || F.SerializedSize(c, st, n) || !(*out = malloc(*n)) || F.Serialize(c, st, *out, *n)) {
        F.FreeFMUstate(c, &st);
        free(*out);
        *out = NULL;
        return 0;
    }
    F.FreeFMUstate(c, &st);
    return 1;
}

/* a call made: its status counted; a failed call must have left the instance's state as it was */
static char *before;
static size_t before_n;

static void begin(const char *name) {
    current = name;
    calls++;
    if (verbose) printf("%s\n", name), fflush(stdout);
    if (!snapshot(&before, &before_n)) before = NULL;
    alarm((unsigned)limit);
}

static void done(fmi2Status status, int atomic) {
    alarm(0);
    if ((unsigned)status > fmi2Pending) fail("status %d", (int)status);
    else statuses[status]++;
    if (verbose) printf("  -> %s\n", status <= fmi2Pending ? status_name[status] : "?");
    if (status >= fmi2Error && atomic && before) {
        char *after;
        size_t n;
        if (!snapshot(&after, &n)) fail("the FMU state cannot be got after a failed call");
        else if (n != before_n || memcmp(after, before, n)) fail("a failed call changed the instance");
        free(after);
    }
    free(before);
    before = NULL;
    current = "";
}

#define CALL(name, expr, atomic)        \
    do {                                \
        begin(name);                    \
        fmi2Status status_ = (expr);    \
        done(status_, atomic);          \
    } while (0)

/* ---- the calls ---- */

static fmi2ValueReference vr[64], vr2[64];
static double vals[64 * 8], out[64 * 8];
static int ints[64];

static void set_reals(void) {
    size_t n = (size_t)below(6);
    for (size_t i = 0; i < n; i++) {
        vr[i] = chance(50) ? vr_in(np, np + ni) : vr_in(0, np);
        vals[i] = value(vr[i] < (unsigned)np ? start[vr[i]] : 0.0);
    }
    CALL("fmi2SetReal", F.SetReal(c, chance(3) ? NULL : vr, n, chance(3) ? NULL : vals), 0);
}

static void get_reals(void) {
    size_t n = (size_t)below(8);
    for (size_t i = 0; i < n; i++) vr[i] = vr_in(0, np + ni + no + nl);
    CALL("fmi2GetReal", F.GetReal(c, chance(3) ? NULL : vr, n, chance(3) ? NULL : out), 0);
}

static void integers(void) {
    size_t n = (size_t)below(3);
    for (size_t i = 0; i < n; i++) vr[i] = vr_in(0, np), ints[i] = chance(50) ? (int)start[vr[i] % MAXV] : below(5) - 2;
    if (chance(50)) CALL("fmi2SetInteger", F.SetInteger(c, vr, n, ints), 0);
    else CALL("fmi2GetInteger", F.GetInteger(c, vr, n, ints), 0);
}

static void no_variables(void) {
    const char *strings[1] = {"x"};
    int booleans[1] = {1};
    size_t n = (size_t)below(2);
    vr[0] = vr_in(0, np);
    switch (below(4)) {
    case 0: CALL("fmi2GetBoolean", F.GetBoolean(c, vr, n, booleans), 1); break;
    case 1: CALL("fmi2SetBoolean", F.SetBoolean(c, vr, n, booleans), 1); break;
    case 2: CALL("fmi2GetString", F.GetString(c, vr, n, (void *)strings), 1); break;
    default: CALL("fmi2SetString", F.SetString(c, vr, n, (void *)strings), 1);
    }
}

static double step_size(void) {
    switch (below(16)) {
    case 0: return NAN;
    case 1: return -0.01;
    case 2: return 0.0;
    case 3: return INFINITY;
    case 4: return 1.0 + 4 * uniform();
    default: return 0.001 + 0.05 * uniform();
    }
}

static double t_now(void) {
    double t = 0;
    if (F.GetRealStatus(c, 2 /* fmi2LastSuccessfulTime */, &t)) t = 0;   /* not counted: a helper */
    return chance(90) ? t : value(t);
}

static void derivatives(int vendor) {
    size_t nu = (size_t)below(5), nk = (size_t)below(5), ns = vendor ? (size_t)below(4) : 1;
    int all = np + ni + no + nl;
    for (size_t i = 0; i < nu; i++) vr[i] = vr_in(np + ni, all);
    for (size_t i = 0; i < nk; i++) vr2[i] = chance(70) ? vr_in(np, np + ni) : vr_in(np + ni + no, all);
    for (size_t i = 0; i < nk * ns; i++) vals[i] = chance(90) ? uniform() - 0.5 : value(0.0);
    if (!vendor)
        CALL("fmi2GetDirectionalDerivative", F.GetDirectionalDerivative(c, vr, nu, vr2, nk, vals, out), 0);
    else if (F.Derivatives)
        CALL("titopGetDirectionalDerivatives", F.Derivatives(c, vr, nu, vr2, nk, ns, vals, out), 0);
}

static void trial_steps(void) {
    size_t nk = (size_t)below(4), nt = (size_t)below(4), nu = (size_t)below(4);
    for (size_t i = 0; i < nk; i++) vr[i] = vr_in(np, np + ni);
    for (size_t i = 0; i < nu; i++) vr2[i] = vr_in(np + ni, np + ni + no);
    for (size_t i = 0; i < nk * (nt + 1); i++) vals[i] = chance(95) ? 0.1 * (uniform() - 0.5) : value(0.0);
    CALL("titopGetTrialSteps",
         F.TrialSteps(c, t_now(), step_size(), vr, nk, nt, vals, vals + nk * nt, vr2, nu, chance(3) ? NULL : out), 0);
}

static void statuses_of_step(void) {
    int kind = below(5);
    fmi2Status st;
    double r;
    int i;
    const char *s;
    switch (below(5)) {
    case 0: CALL("fmi2GetStatus", F.GetStatus(c, kind, chance(5) ? NULL : &st), 1); break;
    case 1: CALL("fmi2GetRealStatus", F.GetRealStatus(c, kind, &r), 1); break;
    case 2: CALL("fmi2GetIntegerStatus", F.GetIntegerStatus(c, kind, &i), 1); break;
    case 3: CALL("fmi2GetBooleanStatus", F.GetBooleanStatus(c, kind, &i), 1); break;
    default: CALL("fmi2GetStringStatus", F.GetStringStatus(c, kind, &s), 1);
    }
}

/* a serialized state corrupted as the host did it, or otherwise; 1 if corrupted */
static int corrupt(char *b, size_t n) {
    size_t header = 8 + 4 + 4 + strlen(guid);        /* then mode, has_unit, the three counts */
    if (n < header + 20 || chance(40)) return 0;
    int32_t v;
    switch (below(8)) {
    case 0:                                            /* has_unit */
        v = below(3) - (chance(20) ? 5 : 0);
        memcpy(b + header + 4, &v, 4);
        break;
    case 1: {                                          /* the mode: another one, or none */
        static const int32_t modes[] = {1, 2, 4, 8, 16, 32, 0, 3, 63, -1};
        memcpy(b + header, &modes[below(10)], 4);
        break;
    }
    case 2: {                                          /* a double NaN, infinite or huge */
        size_t k = header + 20 + 8 * (size_t)below((int)((n - header - 20) / 8));
        double d = chance(50) ? NAN : chance(50) ? INFINITY : -1e300;
        memcpy(b + k, &d, 8);
        break;
    }
    case 3: b[below((int)n)] ^= (char)(1 << below(8)); break;
    case 4: memcpy(b + header + 8 + 4 * below(3), &(int32_t){below(4) - 1 + 1000 * chance(20)}, 4); break;
    default: {                                         /* has_unit 0 with the mode kept (the blob) */
        v = 0;
        memcpy(b + header + 4, &v, 4);
    }
    }
    return 1;
}

static void fmu_states(void) {
    fmi2FMUstate *slot = &slots[below(3)];
    switch (below(8)) {
    case 0:
        CALL("fmi2GetFMUstate", F.GetFMUstate(c, chance(3) ? NULL : slot), 1);
        break;
    case 1:
    case 2:
        states_set++;
        CALL("fmi2SetFMUstate", F.SetFMUstate(c, *slot), 1);
        break;
    case 3:
        CALL("fmi2FreeFMUstate", F.FreeFMUstate(c, chance(5) ? NULL : slot), 1);
        break;
    case 4: {
        size_t n = 0;
        CALL("fmi2SerializedFMUstateSize", F.SerializedSize(c, *slot, &n), 1);
        if (!*slot || !n || n > (1u << 24)) break;
        char *b = malloc(n);
        size_t given = chance(10) ? n / 2 : n;
        begin("fmi2SerializeFMUstate");
        fmi2Status st = F.Serialize(c, *slot, b, given);
        done(st, 1);
        if (st == fmi2OK) free(blob), blob = b, blob_size = n;
        else free(b);
        break;
    }
    default: {
        if (!blob && !snapshot(&blob, &blob_size)) break;      /* the instance's, if none was serialized */
        char *b = malloc(blob_size);
        memcpy(b, blob, blob_size);
        blobs++;
        int bad = corrupt(b, blob_size);
        corrupted += bad;
        size_t n = chance(5) ? blob_size - 1 - (size_t)below((int)blob_size) : blob_size;
        fmi2FMUstate *into = chance(50) ? slot : &(fmi2FMUstate){NULL};
        begin("fmi2DeSerializeFMUstate");
        fmi2Status st = F.DeSerialize(c, b, n, into);
        done(st, 1);
        accepted += bad && st == fmi2OK;
        if (st == fmi2OK && chance(80)) {              /* and set it: the crash */
            states_set++;
            CALL("fmi2SetFMUstate", F.SetFMUstate(c, *into), 1);
        }
        if (into != slot) F.FreeFMUstate(c, into);
        free(b);
    }
    }
}

static void model_exchange(void) {
    int n = nl / 2, ok = chance(80);
    size_t k = (size_t)(ok ? n : below(n + 3));
    double x[MAXV];
    int a, b;
    fmi2EventInfo info;
    if (!F.SetTime) return;
    for (int i = 0; i < (int)k && i < MAXV; i++) x[i] = 0.0;
    switch (below(10)) {
    case 0: CALL("fmi2SetTime", F.SetTime(c, value(1.0)), 1); break;
    case 1:
        if (F.GetContinuousStates(c, x, k) == fmi2OK)  /* moved a little, or made not finite */
            for (size_t i = 0; i < k; i++) x[i] = chance(95) ? x[i] + 1e-3 * (uniform() - 0.5) : value(x[i]);
        CALL("fmi2SetContinuousStates", F.SetContinuousStates(c, chance(3) ? NULL : x, k), 1);
        break;
    case 2: CALL("fmi2GetContinuousStates", F.GetContinuousStates(c, x, k), 0); break;
    case 3: CALL("fmi2GetDerivatives", F.GetDerivatives(c, chance(3) ? NULL : x, k), 0); break;
    case 4: CALL("fmi2GetEventIndicators", F.GetEventIndicators(c, x, (size_t)below(2)), 1); break;
    case 5: CALL("fmi2GetNominalsOfContinuousStates", F.GetNominals(c, x, k), 1); break;
    case 6: CALL("fmi2EnterEventMode", F.EnterEventMode(c), 1); break;
    case 7: CALL("fmi2NewDiscreteStates", F.NewDiscreteStates(c, chance(5) ? NULL : &info), 1); break;
    case 8: CALL("fmi2EnterContinuousTimeMode", F.EnterContinuousTimeMode(c), 1); break;
    default: CALL("fmi2CompletedIntegratorStep", F.CompletedIntegratorStep(c, 1, &a, chance(5) ? NULL : &b), 1);
    }
}

static void one_call(void) {
    static const char *const categories[] = {"logAll", "logStatusWarning", "logStatusError", "nonsense", NULL};
    switch (below(25)) {
    case 0: CALL("fmi2SetupExperiment", F.SetupExperiment(c, chance(50), value(1e-6), value(0.0), chance(50), 10), 1);
        break;
    case 1: CALL("fmi2EnterInitializationMode", F.EnterInit(c), 1); break;
    case 2: case 3: CALL("fmi2ExitInitializationMode", F.ExitInit(c), 1); break;
    case 4: CALL("fmi2Terminate", F.Terminate(c), 1); break;
    case 5: if (chance(30)) CALL("fmi2Reset", F.Reset(c), 1); break;
    case 6: case 7: set_reals(); break;
    case 8: case 9: get_reals(); break;
    case 10: integers(); break;
    case 11: no_variables(); break;
    case 12: case 13: case 14: CALL("fmi2DoStep", F.DoStep(c, t_now(), step_size(), chance(50)), 1); break;
    case 15: derivatives(0); break;
    case 16: derivatives(1); break;
    case 17: trial_steps(); break;
    case 18: statuses_of_step(); break;
    case 19: case 20: case 21: fmu_states(); break;
    case 22: CALL("fmi2SetDebugLogging", F.SetDebugLogging(c, chance(50), (size_t)below(4), chance(5) ? NULL
                                                                                                : categories), 1);
        break;
    case 23: {
        int order[2] = {1, 1};
        vr[0] = vr_in(np, np + ni);
        if (chance(50)) CALL("fmi2SetRealInputDerivatives", F.SetRealInputDerivatives(c, vr, 1, order, vals), 1);
        else CALL("fmi2GetRealOutputDerivatives", F.GetRealOutputDerivatives(c, vr, 1, order, out), 1);
        break;
    }
    default: model_exchange();
    }
}

/* the calls that take a sequence to initialization and stepping, mostly in order: the random
   calls then land on every mode, not only on the instantiated one */
static void usual_start(void) {
    if (chance(70)) CALL("fmi2SetupExperiment", F.SetupExperiment(c, chance(30), 1e-8, 0.0, 0, 0), 1);
    if (chance(80)) CALL("fmi2EnterInitializationMode", F.EnterInit(c), 1);
    if (chance(80)) CALL("fmi2ExitInitializationMode", F.ExitInit(c), 1);
}

static void run_sequence(long k, long seed, int n_calls, const fmi2CallbackFunctions *cb) {
    sequence = k;
    rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)seed * 1000003u + (uint64_t)k * 2654435761u);
    for (int i = 0; i < 4; i++) next();
    int type = me && chance(40) ? 0 /* fmi2ModelExchange */ : 1;
    const char *g = chance(3) ? "{not-the-guid}" : guid;
    if (chance(2)) type = 7;
    current = "fmi2Instantiate";
    c = F.Instantiate("fuzz", type, g, "file:///nowhere", chance(2) ? NULL : cb, 0, chance(20));
    calls++;
    if (!c) {
        if (g == guid && type != 7) fail("fmi2Instantiate returned NULL");
        current = "";
        return;
    }
    F.GetReal(c, (fmi2ValueReference[]){0}, 0, start);
    for (int i = 0; i < np && i < MAXV; i++) F.GetReal(c, (fmi2ValueReference[]){(fmi2ValueReference)i}, 1, start + i);
    if (chance(85)) usual_start();
    for (int i = 0; i < n_calls && !failed; i++) one_call();
    for (int i = 0; i < 3; i++) F.FreeFMUstate(c, &slots[i]);
    current = "fmi2FreeInstance";
    F.FreeInstance(c);
    c = NULL;
    free(blob);
    blob = NULL;
    current = "";
}

int main(int argc, char **argv) {
    if (argc < 8) {
        printf("usage: fmu_fuzz LIBRARY GUID NP NI NO NL ME [-s SEQUENCES] [-c CALLS] [-r SEED] [-f FIRST] "
               "[-t LIMIT] [-v]\n");
        return 2;
    }
    long n_seq = 100, seed = 1, first = 0;
    int n_calls = 60;
    guid = argv[2];
    np = atoi(argv[3]), ni = atoi(argv[4]), no = atoi(argv[5]), nl = atoi(argv[6]), me = atoi(argv[7]);
    for (int i = 8; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "-s")) n_seq = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-c")) n_calls = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-r")) seed = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-f")) first = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-t")) limit = atoi(argv[++i]);
        else return printf("unknown argument %s\n", argv[i]), 2;
    }
    if (np + ni + no + nl > MAXV) return printf("too many variables\n"), 2;
    library h = open_library(argv[1]);
    if (!h) return printf("FAILED: loading %s: %s\n", argv[1], library_error()), 2;
    if (!load(h, me)) return 2;
    signal(SIGSEGV, on_signal), signal(SIGBUS, on_signal), signal(SIGFPE, on_signal), signal(SIGALRM, on_signal);
    signal(SIGABRT, on_signal);
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    for (long k = first; k < first + n_seq && !failed; k++) run_sequence(k, seed, n_calls, &cb);
    printf("sequences %ld calls %ld ok %ld warning %ld error %ld; states set %ld, blobs read back %ld (corrupted "
           "%ld, accepted %ld)\n", failed ? sequence - first + 1 : n_seq, calls, statuses[fmi2OK],
           statuses[fmi2Warning], statuses[fmi2Error], states_set, blobs, corrupted, accepted);
    return failed;
}
