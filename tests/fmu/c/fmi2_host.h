/* The FMI 2.0 types a C host of the tests (and benchmarks/c) needs (fmi2TypesPlatform.h,
   fmi2FunctionTypes.h), and what they all do: open an unzipped FMU's binary (on Linux, or on
   Windows built with MinGW-w64), print its messages. */
#ifndef FMI2_HOST_H
#define FMI2_HOST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* loading a shared library: the one difference between the platforms */
#ifdef _WIN32
#include <windows.h>
#define PLATFORM "win64"
#define SUFFIX ".dll"
typedef HMODULE library;
__attribute__((unused)) static library open_library(const char *path) { return LoadLibraryA(path); }
__attribute__((unused)) static void *symbol(library h, const char *name) { return (void *)GetProcAddress(h, name); }
__attribute__((unused)) static const char *library_error(void) {
    static char buf[64];
    snprintf(buf, sizeof buf, "Windows error %lu", (unsigned long)GetLastError());
    return buf;
}
#else
#include <dlfcn.h>
#define PLATFORM "linux64"
#define SUFFIX ".so"
typedef void *library;
__attribute__((unused)) static library open_library(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
__attribute__((unused)) static void *symbol(library h, const char *name) { return dlsym(h, name); }
__attribute__((unused)) static const char *library_error(void) { return dlerror(); }
#endif

typedef void *fmi2Component;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef struct {
    void (*logger)(void *, const char *, fmi2Status, const char *, const char *, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(void *, fmi2Status);
    void *componentEnvironment;
} fmi2CallbackFunctions;

static const char *status_name[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};

/* the FMI 2.0 co-simulation functions the hosts call */
typedef struct {
    fmi2Component (*Instantiate)(const char *, int, const char *, const char *, const fmi2CallbackFunctions *, int,
                                 int);
    void (*FreeInstance)(fmi2Component);
    fmi2Status (*SetupExperiment)(fmi2Component, int, double, double, int, double);
    fmi2Status (*EnterInit)(fmi2Component), (*ExitInit)(fmi2Component), (*Terminate)(fmi2Component);
    fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference *, size_t, const double *);
    fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference *, size_t, double *);
    fmi2Status (*DoStep)(fmi2Component, double, double, int);
    fmi2Status (*GetFMUstate)(fmi2Component, fmi2FMUstate *), (*SetFMUstate)(fmi2Component, fmi2FMUstate);
    fmi2Status (*FreeFMUstate)(fmi2Component, fmi2FMUstate *);
} fmi2Functions;

/* the functions of the FMU binary h into f; 0, the missing one printed, if one is missing */
__attribute__((unused)) static int load_functions(library h, fmi2Functions *f) {
#define FMI2_LOAD(var, name)                                    \
    if (!(*(void **)&f->var = symbol(h, name))) {               \
        printf("missing %s: %s\n", name, library_error());      \
        return 0;                                               \
    }
    FMI2_LOAD(Instantiate, "fmi2Instantiate") FMI2_LOAD(FreeInstance, "fmi2FreeInstance")
    FMI2_LOAD(SetupExperiment, "fmi2SetupExperiment") FMI2_LOAD(EnterInit, "fmi2EnterInitializationMode")
    FMI2_LOAD(ExitInit, "fmi2ExitInitializationMode") FMI2_LOAD(Terminate, "fmi2Terminate")
    FMI2_LOAD(SetReal, "fmi2SetReal") FMI2_LOAD(GetReal, "fmi2GetReal") FMI2_LOAD(DoStep, "fmi2DoStep")
    FMI2_LOAD(GetFMUstate, "fmi2GetFMUstate") FMI2_LOAD(SetFMUstate, "fmi2SetFMUstate")
    FMI2_LOAD(FreeFMUstate, "fmi2FreeFMUstate")
#undef FMI2_LOAD
    return 1;
}

/* the binary of the FMU unzipped in dir opened as FMI tools do (dlopen with RTLD_NOW | RTLD_LOCAL,
   binaries/linux64/<id>.so; LoadLibrary, binaries/win64/<id>.dll), and its functions into f;
   its resource location (a file:// URI) written to resources[n]; NULL, the reason printed, if
   it fails */
__attribute__((unused)) static library open_fmu(const char *dir, const char *id, char *resources, size_t n,
                                                 fmi2Functions *f) {
    char path[4096];
    snprintf(path, sizeof path, "%s/binaries/" PLATFORM "/%s" SUFFIX, dir, id);
    snprintf(resources, n, "file://%s/resources", dir);
    library h = open_library(path);
    if (!h) printf("loading %s failed: %s\n", path, library_error());
    return h && load_functions(h, f) ? h : NULL;
}

/* an FMI logger printing "log INSTANCE STATUS CATEGORY: MESSAGE" */
__attribute__((unused)) static void print_log(void *env, const char *instance, fmi2Status status,
                                              const char *category, const char *message, ...) {
    char buf[4096];
    va_list ap;
    (void)env;
    va_start(ap, message);
    vsnprintf(buf, sizeof buf, message, ap);
    va_end(ap);
    printf("log %s %s %s: %s\n", instance ? instance : "", status <= fmi2Pending ? status_name[status] : "?",
           category ? category : "", buf);
    fflush(stdout);
}

#endif
