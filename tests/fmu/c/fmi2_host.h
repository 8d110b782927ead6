/* The FMI 2.0 types a C host of the tests needs (fmi2TypesPlatform.h, fmi2FunctionTypes.h). */
#ifndef FMI2_HOST_H
#define FMI2_HOST_H

#include <stddef.h>

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

#endif
