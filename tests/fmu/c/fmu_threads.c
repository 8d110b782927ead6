/*
 * A TITOP FMU called from several threads of a C host: one Python thread state per host thread,
 * kept from call to call, deleted when its thread exits, and a clean exit of the process.
 *
 * The main thread loads the FMU binary as FMI tools do (dlopen, RTLD_NOW | RTLD_LOCAL),
 * instantiates and initializes one instance (this starts the Python interpreter) and steps it.
 * Then THREADS threads each instantiate their own instance, set the input -i, and do CALLS times
 * fmi2DoStep and fmi2GetReal of the outputs -o; after every call each thread looks up its Python
 * thread state (PyGILState_GetThisThreadState, from the Python library the FMU loaded with global
 * symbols). They wait for each other (a barrier) while the main thread counts the interpreter's
 * thread states, then free their instances and exit; the main thread counts them again, steps
 * its own instance and frees it, and returns from main (the exit handlers finalize Python).
 *
 * usage: fmu_threads DIR MODEL_ID GUID THREADS CALLS [-i VR=VALUE] [-o VR]... [-h STEP]
 * Output lines:
 *   "states before N"       thread states once the main thread has called the FMU
 *   "states alive N"        with the THREADS threads alive, after their calls
 *   "states after N"        after the threads exited
 *   "thread K kept yes|no"  thread K had the same Python thread state after each of its calls
 *   "thread K y VR VALUE"   its outputs after its last step
 *   "log ...", "fail ..."   the FMU's messages; a call that did not return fmi2OK
 * Exit status 0 if every call returned fmi2OK, 1 otherwise, 2 if the FMU could not be loaded.
 */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2_host.h"

#define MAXT 16
#define MAXN 256

static fmi2CallbackFunctions callbacks = {print_log, calloc, free, NULL, NULL};
static const char *dir, *id, *guid;
static char resources[4096];
static int calls;
static double step = 0.01;
static fmi2ValueReference ivr, ovr[MAXN];
static double ival;
static int has_input;
static size_t no;
static pthread_barrier_t alive, counted;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static fmi2Functions f;
/* CPython, in the process's global scope once the FMU has loaded it */
static void *(*ThisThreadState)(void);
static void *(*InterpreterMain)(void);
static void *(*ThreadHead)(void *);
static void *(*ThreadNext)(void *);

static int ok(const char *who, const char *call, fmi2Status st) {
    if (st == fmi2OK) return 1;
    pthread_mutex_lock(&out_lock);
    printf("fail %s %s %s\n", who, call, status_name[st]);
    pthread_mutex_unlock(&out_lock);
    return 0;
}

/* the interpreter's thread states (read while no other thread runs Python) */
static int count_states(void) {
    int n = 0;
    for (void *t = ThreadHead(InterpreterMain()); t; t = ThreadNext(t)) n++;
    return n;
}

static fmi2Component start(const char *name) {
    fmi2Component c = f.Instantiate(name, 1 /* fmi2CoSimulation */, guid, resources, &callbacks, 0, 0);
    if (!c) return NULL;
    if (!ok(name, "init", f.SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0)) || !ok(name, "init", f.EnterInit(c)) ||
        (has_input && !ok(name, "init", f.SetReal(c, &ivr, 1, &ival))) || !ok(name, "init", f.ExitInit(c))) {
        f.FreeInstance(c);
        return NULL;
    }
    return c;
}

typedef struct {
    int k, failed;
} Job;

static void *worker(void *arg) {
    Job *job = arg;
    char name[32];
    snprintf(name, sizeof name, "thread%d", job->k);
    fmi2Component c = start(name);
    double y[MAXN], t = 0.0;
    void *kept = NULL;
    int same = 1;
    job->failed = !c;
    for (int i = 0; c && i < calls && !job->failed; i++, t += step) {
        job->failed = !ok(name, "fmi2DoStep", f.DoStep(c, t, step, 1));
        void *state = ThisThreadState();
        same &= state != NULL && (i == 0 || state == kept);
        kept = state;
        job->failed |= !ok(name, "fmi2GetReal", f.GetReal(c, ovr, no, y));
        same &= ThisThreadState() == kept;
    }
    pthread_barrier_wait(&alive);
    pthread_barrier_wait(&counted);
    pthread_mutex_lock(&out_lock);
    printf("thread %d kept %s\n", job->k, same ? "yes" : "no");
    for (size_t j = 0; c && j < no; j++) printf("thread %d y %u %.17g\n", job->k, ovr[j], y[j]);
    pthread_mutex_unlock(&out_lock);
    if (c) f.FreeInstance(c);
    return NULL;
}

#define LOAD(h, var, name)                                     \
    *(void **)&var = dlsym(h, name);                           \
    if (!var) {                                                \
        printf("missing %s: %s\n", name, dlerror());           \
        return 2;                                              \
    }

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s DIR MODEL_ID GUID THREADS CALLS [-i VR=V] [-o VR]... [-h STEP]\n", argv[0]);
        return 2;
    }
    dir = argv[1], id = argv[2], guid = argv[3];
    int threads = atoi(argv[4]);
    calls = atoi(argv[5]);
    for (int k = 6; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "-i")) {
            char *end;
            ivr = (fmi2ValueReference)strtoul(argv[k + 1], &end, 10);
            ival = strtod(end + 1, NULL);
            has_input = 1;
        } else if (!strcmp(argv[k], "-o") && no < MAXN) ovr[no++] = (fmi2ValueReference)strtoul(argv[k + 1], NULL, 10);
        else if (!strcmp(argv[k], "-h")) step = strtod(argv[k + 1], NULL);
    }
    if (threads < 1 || threads > MAXT) return 2;

    if (!open_fmu(dir, id, resources, sizeof resources, &f)) return 2;

    fmi2Component c = start("main");
    if (!c) return 2;
    LOAD(RTLD_DEFAULT, ThisThreadState, "PyGILState_GetThisThreadState")
    LOAD(RTLD_DEFAULT, InterpreterMain, "PyInterpreterState_Main")
    LOAD(RTLD_DEFAULT, ThreadHead, "PyInterpreterState_ThreadHead")
    LOAD(RTLD_DEFAULT, ThreadNext, "PyThreadState_Next")
    double y[MAXN], t = 0.0;
    int failed = !ok("main", "fmi2DoStep", f.DoStep(c, t, step, 1));
    t += step;
    printf("states before %d\n", count_states());

    pthread_t tid[MAXT];
    Job jobs[MAXT];
    pthread_barrier_init(&alive, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&counted, NULL, (unsigned)threads + 1);
    for (int k = 0; k < threads; k++) {
        jobs[k] = (Job){k, 0};
        pthread_create(&tid[k], NULL, worker, &jobs[k]);
    }
    pthread_barrier_wait(&alive);
    printf("states alive %d\n", count_states());
    fflush(stdout);
    pthread_barrier_wait(&counted);
    for (int k = 0; k < threads; k++) {
        pthread_join(tid[k], NULL);
        failed |= jobs[k].failed;
    }
    printf("states after %d\n", count_states());
    for (int i = 0; i < calls && !failed; i++, t += step)
        failed = !ok("main", "fmi2DoStep", f.DoStep(c, t, step, 1)) ||
                 !ok("main", "fmi2GetReal", f.GetReal(c, ovr, no, y));
    f.FreeInstance(c);
    printf("done\n");
    return failed;
}
