/*
 * FMI 2.0 co-simulation entry points of a TITOP FMU (binaries/linux64/<id>.so).
 *
 * The model runs in Python, behind pythonfmu's export library, which the FMU
 * ships next to this file as libpythonfmu-export.so. This layer forwards every
 * fmi2 call to it and adds what it lacks:
 *
 * 1. Loading in a host that is not a Python process. pythonfmu's library does
 *    not declare libpython (a C host fails with "undefined symbol:
 *    _Py_NoneStruct"), and declaring it as a needed library is not enough when
 *    the host loads the FMU with RTLD_LOCAL, as FMI tools do: Python's own
 *    extension modules (math, numpy) then cannot see the interpreter's symbols.
 *    So, at the first fmi2Instantiate, if the process has no Python symbols in
 *    its global scope, this layer loads the Python library with RTLD_GLOBAL:
 *    $TITOP_FMU_LIBPYTHON if set, else TITOP_LIBPYTHON (the soname of the
 *    Python that built the FMU, e.g. libpython3.11.so.1.0), found by the
 *    dynamic loader. In a Python process (FMPy, ...) nothing is loaded: the
 *    interpreter already running is used. The interpreter this layer starts
 *    gets its home from the library loaded (python_home): the installation
 *    holding it, where lib/python3.X/os.py is. Left to itself, an embedded
 *    interpreter looks for the python3 of PATH and takes that one's standard
 *    library, which may be another Python's: with the FMU documentation's
 *    LD_LIBRARY_PATH and PYTHONPATH and PATH=/usr/bin:/bin, a library of
 *    pyenv's then failed on Debian's library ("No module named '_struct'").
 *    PYTHONHOME, when set, is left to rule.
 *
 * 2. Error status. pythonfmu only reports a Python exception as fmi2Fatal,
 *    after releasing the instance (later calls would touch freed memory). The
 *    Python side therefore never lets an exception out: it logs the message
 *    with status fmi2Error and returns. This layer watches the messages
 *    logged during each call and returns the worst status logged (fmi2Warning,
 *    fmi2Error) when it is worse than the status of the call. If the library
 *    still returns fmi2Fatal, the instance is marked broken: later calls
 *    return fmi2Error without touching it and fmi2FreeInstance leaks it
 *    rather than crash.
 *
 * 3. Unloading, and process exit. One Python interpreter serves every TITOP
 *    FMU in the process. In a Python host it is the host's own, which no FMU
 *    ends. In another host, the first pythonfmu library to instantiate starts
 *    it (on a thread of its own) and finalises it when its interpreter state
 *    is released (finalizePythonInterpreter). Each FMU binary (one per model,
 *    and one per unzipped folder) is a library of its own with its own copy
 *    of pythonfmu's library. This layer releases that state from an exit
 *    handler (release_interpreter), and the exit handlers a library registers
 *    run when it is unloaded: so a host unloading the first-loaded TITOP FMU
 *    while others live (libcosim does at every teardown) ended the
 *    interpreter under them, and their next call crashed in
 *    PyGILState_Ensure. Nor can the interpreter end when the last TITOP FMU
 *    goes: started again, it cannot import numpy ("cannot load module more
 *    than once per process"). So the interpreter lives until the process
 *    exits:
 *    - this library is linked with -z nodelete (titop_fmu/fmu/build.py):
 *      dlclose never unloads it, so its exit handler runs at process exit
 *      only;
 *    - it opens pythonfmu's library with RTLD_NODELETE, and never closes it.
 *    A host may therefore free and unload any number of TITOP FMUs, of one
 *    model or several, from one unzipped folder or several, in any order, and
 *    load one again later: it uses the running interpreter. The price: an
 *    unloaded TITOP FMU stays mapped (its two libraries, < 0.5 MB) until the
 *    process exits. At exit, each copy's handler releases its interpreter
 *    state once (the copy that started the interpreter finalises it) before
 *    pythonfmu's own destructors run, which would release it twice and
 *    corrupt the heap ("free(): corrupted unsorted chunks", PythonFMU issue
 *    #228): see release_interpreter.
 *
 * 4. Logging. pythonfmu drops every message, errors included, when logging is
 *    off. This layer instantiates it with logging on and filters itself:
 *    messages of status fmi2Warning and worse always reach the host's logger,
 *    the others only when logging is on (and their category enabled). '%' is
 *    doubled, since the host's logger takes the message as a format.
 *
 * 5. fmi2GetDirectionalDerivative, which pythonfmu lacks (its function returns
 *    an error). This layer calls the Python slave's method
 *    _titop_directional_derivatives itself, so it needs the slave object, which
 *    pythonfmu keeps to itself. The slave hands it over: while this layer
 *    runs the inner fmi2Instantiate (and fmi2Reset, where pythonfmu makes a
 *    new slave object), it holds bind_lock and points `binding` at the
 *    instance; the slave's __init__ opens this very library (ctypes.PyDLL on
 *    <fmu>/binaries/linux64/<modelIdentifier>.so: the handle the host already
 *    has) and calls titop_fmu_bind(self), which keeps a reference to it in the
 *    instance (released by fmi2FreeInstance or a rebinding). A host thread
 *    that calls with the GIL held (ctypes.PyDLL) gives the GIL up while it
 *    waits for bind_lock: the thread holding bind_lock may be waiting for it. The call takes
 *    the GIL (PyGILState_Ensure), passes the addresses of the C arrays (the
 *    slave reads and writes them), and relays the messages the slave logged
 *    during the call, which it returns (pythonfmu relays them only after its
 *    own calls). The few CPython functions needed are found with dlsym in the
 *    process's global scope at the first binding, like Py_IsInitialized in
 *    point 1 (this library does not link libpython).
 *
 * 6. Two vendor functions of this project's (declared in the model
 *    description's VendorAnnotations, tool "titop-fmu"), answered by the
 *    Python slave as in point 5, each in one call:
 *    - titopGetTrialSteps: nTrials steps of communicationStepSize tried from
 *      the current state, the FMU left as it was. For trial j: the inputs
 *      vKnown_ref set to held[j*nKnown ..], a step, the same inputs set to
 *      end[], the outputs vUnknown_ref read into values[j*nUnknown ..]: what
 *      fmi2SetFMUstate, fmi2SetReal, fmi2DoStep, fmi2SetReal and fmi2GetReal
 *      give per trial (slave method _titop_trial_steps);
 *    - titopGetDirectionalDerivatives: fmi2GetDirectionalDerivative for nSeeds
 *      seeds, dvKnown[j*nKnown ..] giving dvUnknown[j*nUnknown ..] (the same
 *      slave method as point 5).
 *
 * 7. One Python thread state per host thread. pythonfmu's library wraps every
 *    call in PyGILState_Ensure/Release: on a thread the interpreter does not
 *    know (any thread of a C host), that creates a Python thread state and
 *    destroys it again at each call (about 12 us, and an mmap/munmap pair for
 *    the state's frame stack). So at each call, on a thread that has no Python
 *    thread state, this layer makes one (PyGILState_Ensure, then
 *    PyEval_SaveThread: the state stays registered as the thread's, without
 *    the GIL) and keeps it in thread-local storage; pythonfmu's
 *    PyGILState_Ensure/Release, and this layer's (points 5, 6), then only take
 *    and give back the GIL with it. A thread that already has one (a Python
 *    host's threads, or a thread another TITOP FMU's copy of this layer has
 *    equipped) is left alone: one state per thread whichever FMUs it calls.
 *    Several host threads each get their own; calls serialize on the GIL as
 *    before. The state is deleted when its thread exits (a thread-local
 *    destructor, with the GIL) while the interpreter lives; the interpreter's
 *    finalization at process exit (point 3) deletes the states of the threads
 *    still alive, after which this layer no longer touches them (this copy's
 *    exit handler has run, Py_IsInitialized is 0, or the interpreter is
 *    finalizing). Nothing is kept before the interpreter exists (the first
 *    fmi2Instantiate starts it) nor once it is gone.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#ifndef TITOP_LIBPYTHON
#define TITOP_LIBPYTHON "libpython3.so"
#endif
#define INNER_LIBRARY "libpythonfmu-export.so"
#define EXPORT __attribute__((visibility("default")))

#include "fmi2_types.h"    /* csrc/ */

/* ---- the library this layer forwards to ---- */
static struct {
    int loaded;
    void (*finalize)(void);
    fmi2Component (*Instantiate)(fmi2String, fmi2Type, fmi2String, fmi2String, const fmi2CallbackFunctions *,
                                 fmi2Boolean, fmi2Boolean);
    void (*FreeInstance)(fmi2Component);
    fmi2Status (*SetupExperiment)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real);
    fmi2Status (*EnterInitializationMode)(fmi2Component);
    fmi2Status (*ExitInitializationMode)(fmi2Component);
    fmi2Status (*Terminate)(fmi2Component);
    fmi2Status (*Reset)(fmi2Component);
    fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference[], size_t, fmi2Real[]);
    fmi2Status (*GetInteger)(fmi2Component, const fmi2ValueReference[], size_t, fmi2Integer[]);
    fmi2Status (*GetBoolean)(fmi2Component, const fmi2ValueReference[], size_t, fmi2Boolean[]);
    fmi2Status (*GetString)(fmi2Component, const fmi2ValueReference[], size_t, fmi2String[]);
    fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference[], size_t, const fmi2Real[]);
    fmi2Status (*SetInteger)(fmi2Component, const fmi2ValueReference[], size_t, const fmi2Integer[]);
    fmi2Status (*SetBoolean)(fmi2Component, const fmi2ValueReference[], size_t, const fmi2Boolean[]);
    fmi2Status (*SetString)(fmi2Component, const fmi2ValueReference[], size_t, const fmi2String[]);
    fmi2Status (*GetFMUstate)(fmi2Component, fmi2FMUstate *);
    fmi2Status (*SetFMUstate)(fmi2Component, fmi2FMUstate);
    fmi2Status (*FreeFMUstate)(fmi2Component, fmi2FMUstate *);
    fmi2Status (*SerializedFMUstateSize)(fmi2Component, fmi2FMUstate, size_t *);
    fmi2Status (*SerializeFMUstate)(fmi2Component, fmi2FMUstate, fmi2Byte[], size_t);
    fmi2Status (*DeSerializeFMUstate)(fmi2Component, const fmi2Byte[], size_t, fmi2FMUstate *);
    fmi2Status (*DoStep)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
    fmi2Status (*CancelStep)(fmi2Component);
    fmi2Status (*GetStatus)(fmi2Component, const fmi2StatusKind, fmi2Status *);
    fmi2Status (*GetRealStatus)(fmi2Component, const fmi2StatusKind, fmi2Real *);
    fmi2Status (*GetIntegerStatus)(fmi2Component, const fmi2StatusKind, fmi2Integer *);
    fmi2Status (*GetBooleanStatus)(fmi2Component, const fmi2StatusKind, fmi2Boolean *);
    fmi2Status (*GetStringStatus)(fmi2Component, const fmi2StatusKind, fmi2String *);
} inner;

static pthread_mutex_t inner_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    fmi2Component inner;
    fmi2CallbackFunctions to_inner; /* handed to the inner library, which keeps a pointer to it */
    fmi2CallbackFunctions host;
    char *name;
    int logging_on;
    size_t n_categories;
    char **categories;
    fmi2Status worst; /* worst status logged during the current call */
    int broken;
    void *slave; /* the Python slave object (a reference of ours), see point 5 above */
} Instance;

/* ---- the CPython functions fmi2GetDirectionalDerivative needs (point 5 above) ---- */
typedef void PyObject;
static struct {
    int resolved;
    int (*IsInitialized)(void);
    int (*GILState_Check)(void);
    void *(*SaveThread)(void);
    void (*RestoreThread)(void *);
    int (*GILState_Ensure)(void);
    void (*GILState_Release)(int);
    void *(*GILState_GetThisThreadState)(void);
    void (*ThreadState_Clear)(void *);
    void (*ThreadState_DeleteCurrent)(void);
    int (*IsFinalizing)(void); /* optional: _Py_IsFinalizing (3.10-3.12) or Py_IsFinalizing (3.13) */
    void (*IncRef)(PyObject *);
    void (*DecRef)(PyObject *);
    PyObject *(*CallMethod)(PyObject *, const char *, const char *, ...);
    void (*Err_Clear)(void);
    ptrdiff_t (*List_Size)(PyObject *);
    PyObject *(*List_GetItem)(PyObject *, ptrdiff_t);
    int (*Arg_ParseTuple)(PyObject *, const char *, ...);
} py;

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static void *binding; /* the Instance whose slave is being made, while bind_lock is held */

static int category_enabled(const Instance *s, fmi2String category) {
    if (!s->logging_on) return 0;
    if (s->n_categories == 0) return 1;
    for (size_t i = 0; i < s->n_categories; i++)
        if (!strcmp(s->categories[i], "logAll") || (category && !strcmp(s->categories[i], category))) return 1;
    return 0;
}

static void emit(Instance *s, fmi2Status status, fmi2String category, fmi2String message) {
    if (!s->host.logger) return;
    size_t n = strlen(message), k = 0;
    char *escaped = malloc(2 * n + 1);
    if (!escaped) return;
    for (size_t i = 0; i < n; i++) {
        escaped[k++] = message[i];
        if (message[i] == '%') escaped[k++] = '%';
    }
    escaped[k] = 0;
    s->host.logger(s->host.componentEnvironment, s->name, status, category ? category : "", escaped);
    free(escaped);
}

/* the logger the inner library calls */
static void relay(fmi2ComponentEnvironment env, fmi2String instanceName, fmi2Status status, fmi2String category,
                  fmi2String message, ...) {
    Instance *s = (Instance *)env;
    (void)instanceName;
    if (!s || !message) return;
    if (status >= fmi2Warning && status <= fmi2Fatal && status > s->worst) s->worst = status;
    if ((status >= fmi2Warning && status <= fmi2Fatal) || category_enabled(s, category))
        emit(s, status, category, message);
}

static void report(Instance *s, fmi2Status status, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    emit(s, status, status >= fmi2Error ? "logStatusError" : "logAll", buf);
}

/* the combined status of a forwarded call */
static fmi2Status finish(Instance *s, fmi2Status status) {
    fmi2Status logged = s->worst;
    if (status == fmi2Fatal || logged == fmi2Fatal) {
        s->broken = 1;
        report(s, fmi2Error, "the Python instance is unusable after this error; free the instance");
        return fmi2Error;
    }
    return logged > status && status != fmi2Pending ? logged : status;
}

#define BEGIN(c)                                                                           \
    Instance *s = (Instance *)(c);                                                         \
    if (!s) return fmi2Error;                                                              \
    if (s->broken) {                                                                       \
        report(s, fmi2Error, "%s: the instance is unusable after an earlier error", __func__); \
        return fmi2Error;                                                                  \
    }                                                                                      \
    keep_thread_state();                                                                   \
    s->worst = fmi2OK

static void locate_self(char *dir, size_t n) {
    Dl_info info;
    dir[0] = 0;
    if (dladdr((void *)&locate_self, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) snprintf(dir, n, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
    }
}

#define RESOLVE(f)                                                                  \
    if (!(*(void **)&inner.f = dlsym(h, "fmi2" #f))) {                              \
        snprintf(err, n, "%s has no function fmi2" #f, path);                       \
        goto done;                                                                  \
    }

static int released; /* this copy's exit handler has run (point 7) */

/* at process exit (never earlier: this library is never unloaded, see point 3 above), before the
   inner library's own static destructors */
static void release_interpreter(void) {
    __atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
    if (inner.finalize) inner.finalize();
}

#define PY_RESOLVE(f, name) \
    if (!(*(void **)&py.f = dlsym(RTLD_DEFAULT, name))) goto done;

/* the CPython functions, from the process's global scope (the interpreter running the slave) */
static int resolve_python(void) {
    pthread_mutex_lock(&inner_lock);
    if (!py.resolved) {
        do {
            PY_RESOLVE(IsInitialized, "Py_IsInitialized") PY_RESOLVE(GILState_Check, "PyGILState_Check")
            PY_RESOLVE(SaveThread, "PyEval_SaveThread") PY_RESOLVE(RestoreThread, "PyEval_RestoreThread")
            PY_RESOLVE(GILState_Ensure, "PyGILState_Ensure") PY_RESOLVE(GILState_Release, "PyGILState_Release")
            PY_RESOLVE(GILState_GetThisThreadState, "PyGILState_GetThisThreadState")
            PY_RESOLVE(ThreadState_Clear, "PyThreadState_Clear")
            PY_RESOLVE(ThreadState_DeleteCurrent, "PyThreadState_DeleteCurrent")
            PY_RESOLVE(IncRef, "Py_IncRef") PY_RESOLVE(DecRef, "Py_DecRef")
            PY_RESOLVE(CallMethod, "PyObject_CallMethod") PY_RESOLVE(Err_Clear, "PyErr_Clear")
            PY_RESOLVE(List_Size, "PyList_Size") PY_RESOLVE(List_GetItem, "PyList_GetItem")
            PY_RESOLVE(Arg_ParseTuple, "PyArg_ParseTuple")
            *(void **)&py.IsFinalizing = dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
            if (!py.IsFinalizing) *(void **)&py.IsFinalizing = dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
            __atomic_store_n(&py.resolved, 1, __ATOMIC_RELEASE);
        } while (0);
    }
done:
    pthread_mutex_unlock(&inner_lock);
    return py.resolved;
}

/* ---- one Python thread state per host thread (point 7 above) ---- */
static pthread_key_t thread_state_key;
static pthread_once_t thread_state_once = PTHREAD_ONCE_INIT;

/* the interpreter runs and is not being finalized: a thread state may be made or deleted */
static int interpreter_alive(void) {
    return !__atomic_load_n(&released, __ATOMIC_SEQ_CST) && py.IsInitialized() &&
           !(py.IsFinalizing && py.IsFinalizing());
}

/* at the exit of a thread this layer equipped: its state deleted, with the GIL (taken with the
   state, given back by the deletion). Not by PyGILState_Release: the thread's exit may already
   have cleared Python's thread-local pointer to its state (glibc clears every thread-local key
   before calling the destructors of those that have one). */
static void delete_thread_state(void *state) {
    if (state && interpreter_alive()) {
        py.RestoreThread(state);
        py.ThreadState_Clear(state);
        py.ThreadState_DeleteCurrent();
    }
}

static void make_thread_state_key(void) {
    if (pthread_key_create(&thread_state_key, delete_thread_state)) thread_state_key = (pthread_key_t)-1;
}

/* give the calling thread a Python thread state that outlives the call, if it has none */
static void keep_thread_state(void) {
    if (!__atomic_load_n(&py.resolved, __ATOMIC_ACQUIRE) && !resolve_python()) return;
    if (!interpreter_alive() || py.GILState_GetThisThreadState()) return;
    pthread_once(&thread_state_once, make_thread_state_key);
    if (thread_state_key == (pthread_key_t)-1) return;
    py.GILState_Ensure();                   /* a new state, this thread's, with the GIL */
    void *state = py.SaveThread();          /* the GIL given back, the state kept */
    pthread_setspecific(thread_state_key, state);
}

/* the home of the Python library `python` (a dlopen handle), for the interpreter this layer starts (point 1):
   the folder above the library's whose lib/python3.X/os.py exists, X from the library's name (a pyenv or
   --prefix build: <prefix>/lib/libpython3.X.so; Debian's: /usr/lib/<triplet>/...), given to
   Py_SetPythonHome (or, without that function, PYTHONHOME); nothing if PYTHONHOME is set or none is found */
static void python_home(void *python) {
    static char home[4096];
    static wchar_t whome[4096];
    Dl_info info;
    void *symbol = dlsym(python, "Py_GetVersion");
    struct stat st;
    const char *name, *version;
    if (getenv("PYTHONHOME") || !symbol || !dladdr(symbol, &info) || !info.dli_fname ||
        !realpath(info.dli_fname, home) || !(name = strrchr(home, '/')) || !(version = strstr(name, "python3.")))
        return;
    char landmark[4096 + 64];
    size_t digits = strspn(version + 8, "0123456789");
    for (int up = 0; up < 3; up++) {
        *strrchr(home, '/') = 0;                 /* the library's folder, then those above */
        snprintf(landmark, sizeof landmark, "%s/lib/python3.%.*s/os.py", home, (int)digits, version + 8);
        if (!stat(landmark, &st)) {
            void (*set_home)(const wchar_t *);
            *(void **)&set_home = dlsym(python, "Py_SetPythonHome");
            if (!set_home) setenv("PYTHONHOME", home, 0);
            else if (mbstowcs(whome, home, sizeof whome / sizeof *whome) < sizeof whome / sizeof *whome)
                set_home(whome);
            return;
        }
        if (!strrchr(home, '/') || strrchr(home, '/') == home) return;
    }
}

static int load_inner(char *err, size_t n) {
    pthread_mutex_lock(&inner_lock);
    if (inner.loaded) {
        pthread_mutex_unlock(&inner_lock);
        return 1;
    }
    int ok = 0;
    char path[4096];
    if (!dlsym(RTLD_DEFAULT, "Py_IsInitialized")) {
        /* not a Python process: load the interpreter, its symbols global */
        const char *lib = getenv("TITOP_FMU_LIBPYTHON");
        if (!lib || !*lib) lib = TITOP_LIBPYTHON;
        void *python = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
        if (!python) {
            snprintf(err, n,
                     "cannot load the Python library %s (%s). The FMU needs a Python with its shared library "
                     "and numpy; see the FMU documentation (set TITOP_FMU_LIBPYTHON or LD_LIBRARY_PATH)",
                     lib, dlerror());
            goto done;
        }
        python_home(python);
    }
    locate_self(path, sizeof path);
    if (!path[0]) {
        snprintf(err, n, "cannot find the FMU's binary directory");
        goto done;
    }
    strncat(path, "/" INNER_LIBRARY, sizeof path - strlen(path) - 1);
    /* never unloaded: it holds the interpreter's state, see point 3 above */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        snprintf(err, n, "cannot load %s: %s", path, dlerror());
        goto done;
    }
    do {
        RESOLVE(Instantiate) RESOLVE(FreeInstance) RESOLVE(SetupExperiment) RESOLVE(EnterInitializationMode)
        RESOLVE(ExitInitializationMode) RESOLVE(Terminate) RESOLVE(Reset) RESOLVE(GetReal) RESOLVE(GetInteger)
        RESOLVE(GetBoolean) RESOLVE(GetString) RESOLVE(SetReal) RESOLVE(SetInteger) RESOLVE(SetBoolean)
        RESOLVE(SetString) RESOLVE(GetFMUstate) RESOLVE(SetFMUstate) RESOLVE(FreeFMUstate)
        RESOLVE(SerializedFMUstateSize) RESOLVE(SerializeFMUstate) RESOLVE(DeSerializeFMUstate) RESOLVE(DoStep)
        RESOLVE(CancelStep) RESOLVE(GetStatus) RESOLVE(GetRealStatus) RESOLVE(GetIntegerStatus)
        RESOLVE(GetBooleanStatus) RESOLVE(GetStringStatus)
    } while (0);
    /* pythonfmu 0.7 releases its interpreter state twice when the process exits (a global shared_ptr
       destroyed by its static destructor, then assigned by a library destructor), which corrupts the
       heap. Releasing it once, before either runs, avoids that: atexit handlers run in reverse order of
       registration, and this one is registered after the inner library's static destructor. */
    *(void **)&inner.finalize = dlsym(h, "finalizePythonInterpreter");
    if (inner.finalize) atexit(release_interpreter);
    inner.loaded = ok = 1;
done:
    pthread_mutex_unlock(&inner_lock);
    return ok;
}

/* called by the Python slave's __init__ (ctypes.PyDLL: with the GIL) while this layer instantiates
   it: keep a reference to it in the instance being instantiated, releasing the one kept before
   (fmi2Reset makes a new slave). 1 if bound. */
EXPORT int titop_fmu_bind(PyObject *slave) {
    Instance *s = (Instance *)binding;
    if (!s || !slave || !resolve_python()) return 0;
    py.IncRef(slave);
    if (s->slave) py.DecRef(s->slave);
    s->slave = slave;
    return 1;
}

/* bind_lock, waited for without the GIL: the thread holding bind_lock may be waiting for the GIL
   (the Python slave's __init__ runs under it), so a host thread that calls with the GIL held
   (ctypes.PyDLL, or any caller inside the interpreter) gives it up while it waits, and takes it
   back before the inner call. Before the interpreter is initialized nobody holds the GIL. */
static void lock_binding(void) {
    void *state = NULL;
    if (resolve_python() && py.IsInitialized() && py.GILState_Check()) state = py.SaveThread();
    pthread_mutex_lock(&bind_lock);
    if (state) py.RestoreThread(state);
}

/* the inner call that makes the Python slave, with `binding` pointing at s */
#define BINDING(s, call)                 \
    lock_binding();                      \
    binding = (s);                       \
    call;                                \
    binding = NULL;                      \
    pthread_mutex_unlock(&bind_lock)

static void release_slave(Instance *s) {
    if (!s->slave) return;
    int g = py.GILState_Ensure();
    py.DecRef(s->slave);
    py.GILState_Release(g);
    s->slave = NULL;
}

static void free_instance(Instance *s) {
    release_slave(s);
    for (size_t i = 0; i < s->n_categories; i++) free(s->categories[i]);
    free(s->categories);
    free(s->name);
    free(s);
}

/* ---- FMI 2.0 functions ---- */

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn) {
    Instance *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (functions) s->host = *functions;
    s->name = strdup(instanceName ? instanceName : "");
    s->logging_on = loggingOn;
    s->to_inner.logger = relay;
    s->to_inner.allocateMemory = calloc;
    s->to_inner.freeMemory = free;
    s->to_inner.componentEnvironment = s;
    if (fmuType != fmi2CoSimulation) {
        report(s, fmi2Error, "fmi2Instantiate: this FMU supports co-simulation only");
        free_instance(s);
        return NULL;
    }
    if (!fmuResourceLocation) {
        report(s, fmi2Error, "fmi2Instantiate: no resource location given");
        free_instance(s);
        return NULL;
    }
    char err[4096];
    if (!load_inner(err, sizeof err)) {
        report(s, fmi2Error, "fmi2Instantiate: %s", err);
        free_instance(s);
        return NULL;
    }
    keep_thread_state();
    BINDING(s, s->inner = inner.Instantiate(instanceName, fmuType, fmuGUID, fmuResourceLocation, &s->to_inner,
                                            visible, 1));
    if (!s->inner) {
        report(s, fmi2Error, "fmi2Instantiate: the Python model could not be instantiated (see the messages above)");
        free_instance(s);
        return NULL;
    }
    return s;
}

EXPORT void fmi2FreeInstance(fmi2Component c) {
    Instance *s = (Instance *)c;
    if (!s) return;
    keep_thread_state();
    if (!s->broken) inner.FreeInstance(s->inner);
    free_instance(s);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[]) {
    Instance *s = (Instance *)c;
    if (!s) return fmi2Error;
    for (size_t i = 0; i < s->n_categories; i++) free(s->categories[i]);
    free(s->categories);
    s->categories = NULL;
    s->n_categories = 0;
    s->logging_on = loggingOn;
    if (nCategories && categories) {
        s->categories = calloc(nCategories, sizeof(char *));
        if (!s->categories) return fmi2Error;
        for (size_t i = 0; i < nCategories; i++) s->categories[i] = strdup(categories[i] ? categories[i] : "");
        s->n_categories = nCategories;
    }
    return fmi2OK;
}

#define FORWARD(name, params, args)          \
    EXPORT fmi2Status fmi2##name params {    \
        BEGIN(c);                            \
        return finish(s, inner.name args);   \
    }

FORWARD(SetupExperiment, (fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance, fmi2Real startTime,
                          fmi2Boolean stopTimeDefined, fmi2Real stopTime),
        (s->inner, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime))
FORWARD(EnterInitializationMode, (fmi2Component c), (s->inner))
FORWARD(ExitInitializationMode, (fmi2Component c), (s->inner))
FORWARD(Terminate, (fmi2Component c), (s->inner))

/* pythonfmu makes a new slave object: bound again (point 5 above) */
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
    BEGIN(c);
    fmi2Status status;
    BINDING(s, status = inner.Reset(s->inner));
    return finish(s, status);
}
FORWARD(GetReal, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[]),
        (s->inner, vr, nvr, value))
FORWARD(GetInteger, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[]),
        (s->inner, vr, nvr, value))
FORWARD(GetBoolean, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[]),
        (s->inner, vr, nvr, value))
FORWARD(GetString, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2String value[]),
        (s->inner, vr, nvr, value))
FORWARD(SetReal, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[]),
        (s->inner, vr, nvr, value))
FORWARD(SetInteger, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[]),
        (s->inner, vr, nvr, value))
FORWARD(SetBoolean, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[]),
        (s->inner, vr, nvr, value))
FORWARD(SetString, (fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[]),
        (s->inner, vr, nvr, value))
FORWARD(GetFMUstate, (fmi2Component c, fmi2FMUstate *state), (s->inner, state))
FORWARD(SetFMUstate, (fmi2Component c, fmi2FMUstate state), (s->inner, state))
FORWARD(FreeFMUstate, (fmi2Component c, fmi2FMUstate *state), (s->inner, state))
FORWARD(SerializedFMUstateSize, (fmi2Component c, fmi2FMUstate state, size_t *size), (s->inner, state, size))
FORWARD(SerializeFMUstate, (fmi2Component c, fmi2FMUstate state, fmi2Byte serializedState[], size_t size),
        (s->inner, state, serializedState, size))
FORWARD(DeSerializeFMUstate, (fmi2Component c, const fmi2Byte serializedState[], size_t size, fmi2FMUstate *state),
        (s->inner, serializedState, size, state))
FORWARD(DoStep, (fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                 fmi2Boolean noSetFMUStatePriorToCurrentPoint),
        (s->inner, currentCommunicationPoint, communicationStepSize, noSetFMUStatePriorToCurrentPoint))
FORWARD(CancelStep, (fmi2Component c), (s->inner))
FORWARD(GetStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Status *value), (s->inner, kind, value))
FORWARD(GetRealStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Real *value), (s->inner, kind, value))
FORWARD(GetIntegerStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Integer *value), (s->inner, kind, value))
FORWARD(GetBooleanStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Boolean *value), (s->inner, kind, value))
FORWARD(GetStringStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2String *value), (s->inner, kind, value))

/* the slave is bound and the arrays given (points 5, 6); else an error reported */
static int slave_ready(Instance *s, const char *what, int arrays_given) {
    if (!s->slave) {
        report(s, fmi2Error, "%s: the Python model did not bind to the FMU's binary (it binds to "
                     "<fmu>/binaries/linux64/<modelIdentifier>.so next to its resources folder: was the binary "
                     "loaded from elsewhere?)", what);
        return 0;
    }
    if (!arrays_given) {
        report(s, fmi2Error, "%s: a NULL array", what);
        return 0;
    }
    return 1;
}

/* the messages a slave's method returned ([(status, category, message)]; NULL: the call failed)
   relayed, and the call's status; with the GIL */
static fmi2Status relay_messages(Instance *s, const char *what, PyObject *messages) {
    ptrdiff_t n = messages ? py.List_Size(messages) : -1;
    if (n < 0) {
        py.Err_Clear();
        s->worst = fmi2Error;
        report(s, fmi2Error, "%s: the Python model's call failed", what);
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        int status;
        const char *category, *message;
        if (py.Arg_ParseTuple(py.List_GetItem(messages, i), "iss", &status, &category, &message))
            relay(s, s->name, (fmi2Status)status, category, message);
        else {
            py.Err_Clear();
            s->worst = fmi2Error;
        }
    }
    if (messages) py.DecRef(messages);
    return finish(s, fmi2OK);
}

#define ADDRESS(p) ((unsigned long long)(size_t)(p))

/* the derivatives of the outputs vUnknown_ref along nSeeds seeds over the inputs vKnown_ref, for the
   function `what` (points 5, 6) */
static fmi2Status directional_derivatives(Instance *s, const char *what, const fmi2ValueReference vUnknown_ref[],
                                          size_t nUnknown, const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                          size_t nSeeds, const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
    if (!slave_ready(s, what, !(nUnknown && (!vUnknown_ref || (nSeeds && !dvUnknown))) &&
                                  !(nKnown && (!vKnown_ref || (nSeeds && !dvKnown)))))
        return fmi2Error;
    int g = py.GILState_Ensure();
    PyObject *messages = py.CallMethod(s->slave, "_titop_directional_derivatives", "(KnKnnKKs)", ADDRESS(vUnknown_ref),
                                       (ptrdiff_t)nUnknown, ADDRESS(vKnown_ref), (ptrdiff_t)nKnown, (ptrdiff_t)nSeeds,
                                       ADDRESS(dvKnown), ADDRESS(dvUnknown), what);
    fmi2Status status = relay_messages(s, what, messages);
    py.GILState_Release(g);
    return status;
}

/* point 5 above */
EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                               size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                               size_t nKnown, const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
    BEGIN(c);
    return directional_derivatives(s, __func__, vUnknown_ref, nUnknown, vKnown_ref, nKnown, 1, dvKnown, dvUnknown);
}

/* point 6 above */
EXPORT fmi2Status titopGetDirectionalDerivatives(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                                 size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                                 size_t nKnown, size_t nSeeds, const fmi2Real dvKnown[],
                                                 fmi2Real dvUnknown[]) {
    BEGIN(c);
    return directional_derivatives(s, __func__, vUnknown_ref, nUnknown, vKnown_ref, nKnown, nSeeds, dvKnown,
                                   dvUnknown);
}

/* point 6 above */
EXPORT fmi2Status titopGetTrialSteps(fmi2Component c, fmi2Real currentCommunicationPoint,
                                     fmi2Real communicationStepSize, const fmi2ValueReference vKnown_ref[],
                                     size_t nKnown, size_t nTrials, const fmi2Real held[], const fmi2Real end[],
                                     const fmi2ValueReference vUnknown_ref[], size_t nUnknown, fmi2Real values[]) {
    BEGIN(c);
    if (!slave_ready(s, __func__, !(nKnown && (!vKnown_ref || !end || (nTrials && !held))) &&
                                      !(nUnknown && (!vUnknown_ref || (nTrials && !values)))))
        return fmi2Error;
    int g = py.GILState_Ensure();
    PyObject *messages = py.CallMethod(s->slave, "_titop_trial_steps", "(ddKnnKKKnK)", currentCommunicationPoint,
                                       communicationStepSize, ADDRESS(vKnown_ref), (ptrdiff_t)nKnown,
                                       (ptrdiff_t)nTrials, ADDRESS(held), ADDRESS(end), ADDRESS(vUnknown_ref),
                                       (ptrdiff_t)nUnknown, ADDRESS(values));
    fmi2Status status = relay_messages(s, __func__, messages);
    py.GILState_Release(g);
    return status;
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                              const fmi2Integer order[], const fmi2Real value[]) {
    BEGIN(c);
    (void)vr, (void)nvr, (void)order, (void)value;
    report(s, fmi2Error, "fmi2SetRealInputDerivatives is not supported (canInterpolateInputs=false)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                               const fmi2Integer order[], fmi2Real value[]) {
    BEGIN(c);
    (void)vr, (void)nvr, (void)order, (void)value;
    report(s, fmi2Error, "fmi2GetRealOutputDerivatives is not supported (maxOutputDerivativeOrder=0)");
    return fmi2Error;
}
