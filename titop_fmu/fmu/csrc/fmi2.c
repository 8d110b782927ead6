/*
 * FMI 2.0 layer of a standalone TITOP FMU: C only, over the model of model.h (the kernel's
 * tree of the FMU's blocks, tree.c). The co-simulation contract is the pythonfmu FMU's
 * (titop_fmu/fmu/slave.py, shim.c), call for call:
 *
 * - modes instantiated -> initialization -> step -> terminated. Each function names the
 *   modes it is allowed in (MASK_ below); BEGIN rejects a call in another mode with
 *   fmi2Error and a message. From initialization on the instance has its model (WITH_MODEL:
 *   built at fmi2ExitInitializationMode), before it none; BEGIN checks that too, for every
 *   function. An error never breaks the instance: it is left as it was.
 *   An FMU whose model says so (an assembly) also answers Model Exchange: an instance of that
 *   type goes initialization -> event <-> continuous-time -> terminated (see "Model Exchange"
 *   at the end of this file).
 * - parameters are kept as values until the model is built from them (titop_model_new:
 *   the blocks' data and checks) at fmi2ExitInitializationMode, or at the first output read
 *   in initialization mode (built again if they changed); they are fixed afterwards.
 * - inputs are checked finite (all or nothing); outputs are computed on demand with direct
 *   feedthrough and kept until an input or the states change.
 * - fmi2DoStep: the kernel's DOPRI5 over the step with the inputs held, at the tolerances
 *   rtol/atol, or at the tolerance of fmi2SetupExperiment when the host defines one (a closed
 *   loop's step split at its events: time signals' breakpoints, discrete controllers' samples).
 * - directional derivatives as titop_fmu.unit.BlockUnit._directional_derivatives computes
 *   them: exact differences along the acceleration-level inputs, central differences along
 *   the twist/pose inputs, Euler-angle outputs wrapped; with the exposed states (a block FMU's
 *   x.<state>, der(x.<state>): read, never set) among them, exact on the forward-mode kernel
 *   (BlockUnit._state_space_derivatives; tree.c: titop_model_derivatives).
 * - two vendor functions (shim.c, point 6): titopGetTrialSteps, titopGetDirectionalDerivatives.
 * - the FMU state is everything that determines the future; it serializes to a versioned
 *   binary blob (STATE_MAGIC, STATE_VERSION, the GUID). A state read back is checked whole before
 *   it is accepted (its sizes, its mode and whether it has a model as the modes say, finite times,
 *   states and inputs: fmi2DeSerializeFMUstate), and fmi2SetFMUstate builds the model it needs
 *   before it changes anything: it succeeds, or leaves the instance as it was.
 * - messages read as the Python FMU's ("fmi2SetReal: SolverError: non-finite input(s)
 *   ['c1.w[2]']", floats as Python's repr). Those of status fmi2Warning and worse always
 *   reach the host's logger, the others only with logging on (and their category enabled);
 *   '%' is doubled, since the host's logger takes the message as a format. A parameter
 *   accepted but unusual is logged with status fmi2OK in the FMU's category logParameters (a
 *   warning status would stop the hosts that take any status but fmi2OK as fatal).
 */

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2_types.h"
#include "model.h"

#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif


/* ---- modes, and where each function is allowed ---- */
enum { INSTANTIATED = 1, INITIALIZATION = 2, STEP = 4, TERMINATED = 8, EVENT = 16, CONTINUOUS = 32, ANY = 63 };
/* the modes in which the instance has its model (in initialization mode it may have one) */
#define WITH_MODEL (STEP | TERMINATED | EVENT | CONTINUOUS)

static const char *mode_name(int mode) {     /* the Python slave's names */
    return mode == INSTANTIATED ? "instantiated" : mode == INITIALIZATION ? "initialization"
                                                 : mode == STEP           ? "step"
                                                 : mode == EVENT          ? "event"
                                                 : mode == CONTINUOUS     ? "continuous-time"
                                                                          : "terminated";
}

#define MASK_fmi2SetDebugLogging ANY
#define MASK_fmi2SetupExperiment INSTANTIATED
#define MASK_fmi2EnterInitializationMode INSTANTIATED
#define MASK_fmi2ExitInitializationMode INITIALIZATION
#define MASK_fmi2Terminate (STEP | EVENT | CONTINUOUS)
#define MASK_fmi2Reset ANY
#define MASK_fmi2GetReal ANY                /* parameters and inputs can always be read */
#define MASK_fmi2GetInteger ANY
#define MASK_fmi2GetBoolean ANY
#define MASK_fmi2GetString ANY
#define MASK_fmi2SetReal (INSTANTIATED | INITIALIZATION | STEP | EVENT | CONTINUOUS)
#define MASK_fmi2SetInteger (INSTANTIATED | INITIALIZATION | STEP | EVENT)
#define MASK_fmi2SetBoolean (INSTANTIATED | INITIALIZATION | STEP | EVENT)
#define MASK_fmi2SetString (INSTANTIATED | INITIALIZATION | STEP | EVENT)
#define MASK_fmi2GetFMUstate ANY
#define MASK_fmi2SetFMUstate ANY
#define MASK_fmi2FreeFMUstate ANY
#define MASK_fmi2SerializedFMUstateSize ANY
#define MASK_fmi2SerializeFMUstate ANY
#define MASK_fmi2DeSerializeFMUstate ANY
#define MASK_fmi2GetDirectionalDerivative ANY   /* the outputs say when they are available */
#define MASK_titopGetDirectionalDerivatives ANY
#define MASK_titopGetTrialSteps ANY             /* step mode, checked with the slave's message */
#define MASK_fmi2DoStep STEP
#define MASK_fmi2CancelStep 0                   /* no step is ever pending */
#define MASK_fmi2GetStatus (STEP | TERMINATED)
#define MASK_fmi2GetRealStatus (STEP | TERMINATED)
#define MASK_fmi2GetIntegerStatus (STEP | TERMINATED)
#define MASK_fmi2GetBooleanStatus (STEP | TERMINATED)
#define MASK_fmi2GetStringStatus (STEP | TERMINATED)
#define MASK_fmi2SetRealInputDerivatives ANY
#define MASK_fmi2GetRealOutputDerivatives ANY
/* Model Exchange */
#define MASK_fmi2SetTime (EVENT | CONTINUOUS)
#define MASK_fmi2SetContinuousStates CONTINUOUS
#define MASK_fmi2GetDerivatives (INITIALIZATION | EVENT | CONTINUOUS | TERMINATED)
#define MASK_fmi2GetEventIndicators (INITIALIZATION | EVENT | CONTINUOUS | TERMINATED)
#define MASK_fmi2GetContinuousStates (INITIALIZATION | EVENT | CONTINUOUS | TERMINATED)
#define MASK_fmi2GetNominalsOfContinuousStates (INSTANTIATED | INITIALIZATION | EVENT | CONTINUOUS | TERMINATED)
#define MASK_fmi2EnterEventMode (EVENT | CONTINUOUS)
#define MASK_fmi2NewDiscreteStates EVENT
#define MASK_fmi2EnterContinuousTimeMode EVENT
#define MASK_fmi2CompletedIntegratorStep CONTINUOUS

typedef struct {
    const TitopModelSpec *spec;
    fmi2CallbackFunctions host;
    char *name;
    int logging_on;
    size_t n_categories;
    char **categories;
    int mode;
    double *params;              /* n_params; an Integer's value as a double */
    double t0, tolerance;        /* fmi2SetupExperiment; tolerance 0: not defined */
    TitopModel *model;           /* the unit: built from unit_params, or NULL */
    double *unit_params;
    double t, h_guess;           /* h_guess 0: none */
    double *x, *u, *y;           /* states, inputs (also before the unit exists), outputs */
    double *z;                   /* discrete states (a closed loop's, titop_model_n_discrete) */
    int y_valid;
    int model_exchange;          /* an instance of type fmi2ModelExchange */
    double *xdot;                /* an FMU with Model Exchange: the state derivatives, valid with y */
} Instance;

/* ---- logging ---- */

static int category_enabled(const Instance *s, const char *category) {
    if (!s->logging_on) return 0;
    if (s->n_categories == 0) return 1;
    for (size_t i = 0; i < s->n_categories; i++)
        if (!strcmp(s->categories[i], "logAll") || !strcmp(s->categories[i], category)) return 1;
    return 0;
}

static void logv(const Instance *s, fmi2Status status, const char *category, const char *fmt, va_list ap) {
    if (!s->host.logger || (status < fmi2Warning && !category_enabled(s, category))) return;
    char msg[4096], escaped[8192];
    size_t k = 0;
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (const char *p = msg; *p; p++) {
        escaped[k++] = *p;
        if (*p == '%') escaped[k++] = '%';
    }
    escaped[k] = 0;
    s->host.logger(s->host.componentEnvironment, s->name, status, category, escaped);
}

static void log_message(const Instance *s, fmi2Status status, const char *category, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    logv(s, status, category, fmt, ap);
    va_end(ap);
}

/* an error of the function fn: "fn: message", logged; fmi2Error */
static fmi2Status error(const Instance *s, const char *fn, const char *fmt, ...) {
    char msg[3800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_message(s, fmi2Error, "logStatusError", "%s: %s", fn, msg);
    return fmi2Error;
}

/* every call begins so: the instance, the function's name (FN), the mode checked, and the model
   the mode implies */
#define BEGIN(function)                                                                     \
    Instance *s = (Instance *)c;                                                            \
    static const char FN[] = #function;                                                     \
    if (!s) return fmi2Error;                                                               \
    if (!(s->mode & MASK_##function))                                                       \
        return error(s, FN, "not allowed in mode %s", mode_name(s->mode));                  \
    if ((s->mode & WITH_MODEL) && !s->model)                                                \
        return error(s, FN, "the instance has no model in mode %s", mode_name(s->mode))

/* an argument array that must not be NULL (in the function fn) */
#define NOT_NULL(cond, fn) \
    if (!(cond)) return error(s, fn, "a NULL array")

/* ---- the unit ---- */

static void warn(void *env, const char *message) {
    log_message((Instance *)env, fmi2OK, "logParameters", "parameter warning: %s", message);
}

/* the model for the parameter values par, or NULL with the error of fn logged */
static TitopModel *new_model(Instance *s, const char *fn, const double *par) {
    char err[2048] = "";
    TitopModel *model = titop_model_new(s->spec, par, err, sizeof err, warn, s);
    if (!model) error(s, fn, strncmp(err, "parameter '", 11) ? "%s" : "invalid %s", err);
    return model;
}

/* 1 if the model is built from the parameter values par */
static int built_from(const Instance *s, const double *par) {
    return s->model && !memcmp(s->unit_params, par, s->spec->n_params * sizeof(double));
}

/* the unit for the current parameters, built (again) if they changed: 0, or 1 with the error of fn logged */
static int ensure_unit(Instance *s, const char *fn) {
    const TitopModelSpec *m = s->spec;
    if (built_from(s, s->params)) return 0;
    TitopModel *model = new_model(s, fn, s->params);
    if (!model) return 1;
    titop_model_free(s->model);
    s->model = model;
    memcpy(s->unit_params, s->params, m->n_params * sizeof(double));
    titop_model_initial_state(model, s->unit_params, s->t0, s->x, s->z);
    s->t = s->t0;
    s->h_guess = 0.0;
    s->y_valid = 0;
    return 0;
}

/* 0 if the unit exists (built in initialization mode), else 1 with the error of fn logged */
static int no_unit(Instance *s, const char *fn) {
    if (s->mode == INITIALIZATION) return ensure_unit(s, fn);
    if (!s->model) {
        error(s, fn, "outputs are available from fmi2EnterInitializationMode on");
        return 1;
    }
    return 0;
}

static fmi2Status kernel_error(const Instance *s, const char *fn, int code) {
    char buf[80];
    return error(s, fn, "KernelError: %s", titop_kernel_message(code, s->spec->max_steps, buf));
}

/* 1 if the FMU exposes its states and their derivatives (variables after the outputs: a block FMU
   with states, or an assembly with Model Exchange) */
static int exposes_states(const TitopModelSpec *m) {
    return m->n_variables > m->n_params + m->n_inputs + m->n_outputs;
}

/* the outputs at the current states and inputs (and, if it exposes its states, the state
   derivatives s->xdot), or NULL with the error of fn logged */
static const double *outputs(Instance *s, const char *fn) {
    if (no_unit(s, fn)) return NULL;
    if (!s->y_valid) {
        int code = titop_model_outputs(s->model, s->t, s->x, s->z, s->u, s->y,
                                       exposes_states(s->spec) ? s->xdot : NULL);
        if (code) {
            kernel_error(s, fn, code);
            return NULL;
        }
        s->y_valid = 1;
    }
    return s->y;
}

/* the names of the variables first + pos[i] (first + i if pos is NULL) whose values[i] are not finite,
   "'a', 'b'", into names (size chars: as many as fit); 0 if every value is finite */
static int non_finite(const Instance *s, int first, const int *pos, const double *values, size_t n, char *names,
                      size_t size) {
    size_t k = 0;
    int found = 0;
    names[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(values[i])) {
            const char *name = s->spec->variables[first + (pos ? pos[i] : (int)i)].name;
            if (k < size) k += snprintf(names + k, size - k, "%s'%s'", found ? ", " : "", name);
            found = 1;
        }
    return found;
}

/* 0 if every value is finite, else 1 with the error of fn naming the inputs pos[] logged */
static int check_finite(const Instance *s, const char *fn, const int *pos, const double *values, size_t n) {
    char names[3000];
    if (!non_finite(s, s->spec->n_params, pos, values, n, names, sizeof names)) return 0;
    error(s, fn, "SolverError: non-finite input(s) [%s]", names);
    return 1;
}

/* set the inputs at the positions pos[] (checked finite: all or nothing) */
static fmi2Status set_inputs(Instance *s, const char *fn, const int *pos, const double *values, size_t n) {
    if (check_finite(s, fn, pos, values, n)) return fmi2Error;
    for (size_t i = 0; i < n; i++) s->u[pos[i]] = values[i];
    if (n) s->y_valid = 0;
    return fmi2OK;
}

/* ---- value references ---- */

static const char *var_name(const Instance *s, fmi2ValueReference vr, char *buf) {
    if (vr < (unsigned)s->spec->n_variables) return s->spec->variables[vr].name;
    sprintf(buf, "<value reference %u>", vr);
    return buf;
}

static fmi2Status check_vr(const Instance *s, const char *fn, fmi2ValueReference vr, int integer) {
    if (vr >= (unsigned)s->spec->n_variables) return error(s, fn, "no variable has the value reference %u", vr);
    if ((s->spec->variables[vr].type == 'I') != integer)
        return error(s, fn, "%s is %san Integer variable", s->spec->variables[vr].name, integer ? "not " : "");
    return fmi2OK;
}

/* positions vr - lo of value references all in [lo, hi) into pos (0), else 1 */
static int positions(const fmi2ValueReference *vr, size_t n, int lo, int hi, int *pos) {
    for (size_t i = 0; i < n; i++) {
        if (vr[i] < (unsigned)lo || vr[i] >= (unsigned)hi) return 1;
        pos[i] = (int)vr[i] - lo;
    }
    return 0;
}

/* the inputs known[] and the outputs unknown[] as positions; else an error naming one that is not
   (the unknowns first), `why` saying what the call takes */
static fmi2Status in_out(const Instance *s, const char *fn, const fmi2ValueReference *known, size_t nk, int *in,
                         const fmi2ValueReference *unknown, size_t nu, int *out, const char *why) {
    const TitopModelSpec *m = s->spec;
    int in0 = m->n_params, out0 = in0 + m->n_inputs, end = out0 + m->n_outputs;
    char buf[40];
    for (size_t i = 0; i < nu; i++)
        if (positions(unknown + i, 1, out0, end, out + i))
            return error(s, fn, "%s is not an output: %s", var_name(s, unknown[i], buf), why);
    for (size_t i = 0; i < nk; i++)
        if (positions(known + i, 1, in0, out0, in + i))
            return error(s, fn, "%s is not an input: %s", var_name(s, known[i], buf), why);
    return fmi2OK;
}

/* in_out with states among the knowns and state derivatives among the unknowns (slave.py's
   _in_out_states): positions in [inputs, states] and in [outputs, state derivatives] */
static fmi2Status in_out_states(const Instance *s, const char *fn, const fmi2ValueReference *known, size_t nk,
                                int *in, const fmi2ValueReference *unknown, size_t nu, int *out) {
    const TitopModelSpec *m = s->spec;
    int in0 = m->n_params, out0 = in0 + m->n_inputs, x0 = out0 + m->n_outputs, dx0 = x0 + m->n_states;
    const char *why = "directional derivatives are given of outputs and state derivatives with respect to inputs "
                      "and states";
    char buf[40];
    for (size_t i = 0; i < nk; i++)
        if (positions(known + i, 1, in0, out0, in + i) && positions(known + i, 1, x0, dx0, in + i))
            return error(s, fn, "%s is not an input or a state: %s", var_name(s, known[i], buf), why);
        else if (known[i] >= (unsigned)x0)
            in[i] += m->n_inputs;
    for (size_t i = 0; i < nu; i++)
        if (positions(unknown + i, 1, out0, x0, out + i) && positions(unknown + i, 1, dx0, dx0 + m->n_states, out + i))
            return error(s, fn, "%s is not an output or a state derivative: %s", var_name(s, unknown[i], buf), why);
        else if (unknown[i] >= (unsigned)dx0)
            out[i] += m->n_outputs;
    return fmi2OK;
}

/* ---- the FMI functions ---- */

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

static void reset(Instance *s) {
    const TitopModelSpec *m = s->spec;
    titop_model_free(s->model);
    s->model = NULL;
    for (int i = 0; i < m->n_params; i++) s->params[i] = m->variables[i].start;
    for (int i = 0; i < m->n_inputs; i++) s->u[i] = m->variables[m->n_params + i].start;
    s->mode = INSTANTIATED;
    s->t0 = s->tolerance = s->t = s->h_guess = 0.0;
    s->y_valid = 0;
}

static void free_instance(Instance *s) {
    if (!s) return;
    titop_model_free(s->model);
    for (size_t i = 0; i < s->n_categories; i++) free(s->categories[i]);
    free(s->categories);
    free(s->name);
    free(s->params);
    free(s->unit_params);
    free(s->x);
    free(s->u);
    free(s->y);
    free(s->xdot);
    free(s->z);
    free(s);
}

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn) {
    const TitopModelSpec *m = &titop_model_spec;
    static const char FN[] = "fmi2Instantiate";
    Instance *s = calloc(1, sizeof *s);
    (void)fmuResourceLocation, (void)visible;
    if (!s) return NULL;
    s->spec = m;
    if (functions) s->host = *functions;
    s->logging_on = loggingOn;
    if (!(s->name = malloc(strlen(instanceName ? instanceName : "") + 1)) ||
        !(s->params = calloc(m->n_params + 1, sizeof(double))) ||
        !(s->unit_params = calloc(m->n_params + 1, sizeof(double))) ||
        !(s->x = calloc(m->n_states + 1, sizeof(double))) || !(s->u = calloc(m->n_inputs + 1, sizeof(double))) ||
        !(s->y = calloc(m->n_outputs + 1, sizeof(double))) || !(s->xdot = calloc(m->n_states + 1, sizeof(double))) ||
        !(s->z = calloc(titop_model_n_discrete(m) + 1, sizeof(double)))) {
        free_instance(s);
        return NULL;
    }
    strcpy(s->name, instanceName ? instanceName : "");
    if (fmuType != fmi2CoSimulation && !(fmuType == fmi2ModelExchange && m->model_exchange)) {
        error(s, FN, m->model_exchange ? "the FMU type must be fmi2ModelExchange or fmi2CoSimulation"
                                       : "this FMU supports co-simulation only");
        free_instance(s);
        return NULL;
    }
    s->model_exchange = fmuType == fmi2ModelExchange;
    if (fmuGUID && strcmp(fmuGUID, m->guid)) {
        error(s, FN, "the GUID %s is not this FMU's (%s): its model description and binary do not match",
              fmuGUID, m->guid);
        free_instance(s);
        return NULL;
    }
    reset(s);
    return s;
}

EXPORT void fmi2FreeInstance(fmi2Component c) { free_instance((Instance *)c); }

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[]) {
    BEGIN(fmi2SetDebugLogging);
    for (size_t i = 0; i < s->n_categories; i++) free(s->categories[i]);
    free(s->categories);
    s->categories = NULL;
    s->n_categories = 0;
    s->logging_on = loggingOn;
    if (nCategories && categories) {
        if (!(s->categories = calloc(nCategories, sizeof(char *)))) return fmi2Error;
        for (size_t i = 0; i < nCategories; i++) {
            const char *name = categories[i] ? categories[i] : "";
            if (!(s->categories[i] = malloc(strlen(name) + 1))) return fmi2Error;
            strcpy(s->categories[i], name);
            s->n_categories = i + 1;
        }
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                                      fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
    BEGIN(fmi2SetupExperiment);
    char r[32];
    (void)stopTimeDefined, (void)stopTime;
    if (toleranceDefined && !(isfinite(tolerance) && tolerance > 0))
        return error(s, FN, "tolerance must be a finite positive number, got %s", titop_repr(tolerance, r));
    if (!isfinite(startTime)) return error(s, FN, "the start time must be finite, got %s", titop_repr(startTime, r));
    s->tolerance = toleranceDefined ? tolerance : 0.0;
    s->t0 = startTime;
    return fmi2OK;
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    BEGIN(fmi2EnterInitializationMode);
    s->mode = INITIALIZATION;
    return fmi2OK;
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    BEGIN(fmi2ExitInitializationMode);
    if (ensure_unit(s, FN)) return fmi2Error;
    s->mode = s->model_exchange ? EVENT : STEP;
    return fmi2OK;
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c) {
    BEGIN(fmi2Terminate);
    s->mode = TERMINATED;
    return fmi2OK;
}

EXPORT fmi2Status fmi2Reset(fmi2Component c) {
    BEGIN(fmi2Reset);
    reset(s);
    return fmi2OK;
}

/* ---- getting and setting values ---- */

static fmi2Status get_values(Instance *s, const char *fn, const fmi2ValueReference vr[], size_t nvr, double *value,
                             int integer) {
    const TitopModelSpec *m = s->spec;
    int in0 = m->n_params, out0 = in0 + m->n_inputs, x0 = out0 + m->n_outputs;
    if (!nvr) return fmi2OK;
    NOT_NULL(vr && value, fn);
    for (size_t i = 0; i < nvr; i++) {
        if (check_vr(s, fn, vr[i], integer)) return fmi2Error;
        if (vr[i] < (unsigned)in0)
            value[i] = s->params[vr[i]];
        else if (vr[i] < (unsigned)out0)
            value[i] = s->u[vr[i] - in0];
        else {                                   /* an output, a state or a state derivative */
            const double *y = outputs(s, fn);
            if (!y) return fmi2Error;
            value[i] = vr[i] < (unsigned)x0                  ? y[vr[i] - out0]
                       : vr[i] < (unsigned)(x0 + m->n_states) ? s->x[vr[i] - x0]
                                                              : s->xdot[vr[i] - x0 - m->n_states];
        }
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[]) {
    BEGIN(fmi2GetReal);
    return get_values(s, FN, vr, nvr, value, 0);
}

EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[]) {
    BEGIN(fmi2GetInteger);
    double v;
    for (size_t i = 0; i < nvr; i++) {
        NOT_NULL(vr && value, FN);
        if (get_values(s, FN, vr + i, 1, &v, 1)) return fmi2Error;
        value[i] = (fmi2Integer)v;
    }
    return fmi2OK;
}

static fmi2Status set_values(Instance *s, const char *fn, const fmi2ValueReference vr[], size_t nvr,
                             const double *value, int integer) {
    const TitopModelSpec *m = s->spec;
    int in0 = m->n_params, out0 = in0 + m->n_inputs;
    if (!nvr) return fmi2OK;
    NOT_NULL(vr && value, fn);
    int *pos = malloc(nvr * sizeof(int));
    double *v = malloc(nvr * sizeof(double));
    size_t n = 0;
    fmi2Status status = fmi2OK;
    if (!pos || !v) status = error(s, fn, "out of memory");
    for (size_t i = 0; i < nvr && !status; i++) {       /* as the slave: parameters set in turn, */
        if ((status = check_vr(s, fn, vr[i], integer))) break;
        if (vr[i] >= (unsigned)out0)
            status = error(s, fn, m->variables[vr[i]].causality == 'o' ? "%s is an output and cannot be set"
                           : m->model_exchange
                               ? "%s is a state or a state derivative: fmi2SetContinuousStates sets the states"
                               : "%s is a state or its derivative (local) and cannot be set",
                           m->variables[vr[i]].name);
        else if (vr[i] >= (unsigned)in0) {
            pos[n] = (int)vr[i] - in0;
            v[n++] = value[i];
        } else if (!(s->mode & (INSTANTIATED | INITIALIZATION)))
            status = error(s, fn, "parameter %s is fixed: set it before fmi2ExitInitializationMode",
                           m->variables[vr[i]].name);
        else
            s->params[vr[i]] = value[i];
    }
    if (!status) status = set_inputs(s, fn, pos, v, n);  /* the inputs at once */
    free(pos);
    free(v);
    return status;
}

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[]) {
    BEGIN(fmi2SetReal);
    return set_values(s, FN, vr, nvr, value, 0);
}

EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                 const fmi2Integer value[]) {
    BEGIN(fmi2SetInteger);
    for (size_t i = 0; i < nvr; i++) {
        NOT_NULL(vr && value, FN);
        double v = value[i];
        if (set_values(s, FN, vr + i, 1, &v, 1)) return fmi2Error;
    }
    return fmi2OK;
}

#define NO_VARIABLES(function, type, what, value_type)                                          \
    EXPORT fmi2Status function(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, value_type value[]) { \
        BEGIN(function);                                                                        \
        (void)vr, (void)value;                                                                  \
        return nvr ? error(s, FN, "this FMU has no " what " variable") : fmi2OK;              \
    }
NO_VARIABLES(fmi2GetBoolean, Boolean, "Boolean", fmi2Boolean)
NO_VARIABLES(fmi2SetBoolean, Boolean, "Boolean", const fmi2Boolean)
NO_VARIABLES(fmi2GetString, String, "String", fmi2String)
NO_VARIABLES(fmi2SetString, String, "String", const fmi2String)

/* ---- stepping ---- */

static double rel_tol(const Instance *s) { return s->tolerance > 0 ? s->tolerance : s->unit_params[s->spec->rtol]; }
static double abs_tol(const Instance *s) { return s->tolerance > 0 ? s->tolerance : s->unit_params[s->spec->atol]; }

/* a step h from s->t of the states x, z with the inputs u held (the unit's do_step); 0 or a kernel code */
static int step(Instance *s, double *x, double *z, const double *u, double *h_guess, double h) {
    if (!s->spec->n_states && !titop_model_n_discrete(s->spec)) return 0;
    return titop_model_step(s->model, s->t, x, z, u, h, rel_tol(s), abs_tol(s), h_guess);
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                             fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
    BEGIN(fmi2DoStep);
    char r[32];
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!(isfinite(communicationStepSize) && communicationStepSize >= 0))
        return error(s, FN, "invalid communication step size %s", titop_repr(communicationStepSize, r));
    if (!isfinite(currentCommunicationPoint))
        return error(s, FN, "the communication point must be finite, got %s", titop_repr(currentCommunicationPoint, r));
    double t = s->t;
    s->t = currentCommunicationPoint;                /* the step reads it (a closed loop's signals) */
    int code = step(s, s->x, s->z, s->u, &s->h_guess, communicationStepSize);
    if (code) {
        s->t = t;                                    /* a failed step leaves the instance as it was */
        return kernel_error(s, FN, code);
    }
    s->t = currentCommunicationPoint + communicationStepSize;
    s->y_valid = 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c) {
    BEGIN(fmi2CancelStep);
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Status *value) {
    BEGIN(fmi2GetStatus);
    if (kind != fmi2DoStepStatus || !value) return error(s, FN, "only fmi2DoStepStatus is available");
    *value = fmi2OK;                        /* every step completes in its call */
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real *value) {
    BEGIN(fmi2GetRealStatus);
    if (kind != fmi2LastSuccessfulTime || !value) return error(s, FN, "only fmi2LastSuccessfulTime is available");
    *value = s->t;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Integer *value) {
    BEGIN(fmi2GetIntegerStatus);
    (void)kind, (void)value;
    return error(s, FN, "no integer status is available");
}

EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Boolean *value) {
    BEGIN(fmi2GetBooleanStatus);
    if (kind != fmi2Terminated || !value) return error(s, FN, "only fmi2Terminated is available");
    *value = 0;                             /* the FMU never asks to end the simulation */
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind kind, fmi2String *value) {
    BEGIN(fmi2GetStringStatus);
    (void)kind, (void)value;
    return error(s, FN, "no string status is available");
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                              const fmi2Integer order[], const fmi2Real value[]) {
    BEGIN(fmi2SetRealInputDerivatives);
    (void)vr, (void)nvr, (void)order, (void)value;
    return error(s, FN, "not supported (canInterpolateInputs=false)");
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                               const fmi2Integer order[], fmi2Real value[]) {
    BEGIN(fmi2GetRealOutputDerivatives);
    (void)vr, (void)nvr, (void)order, (void)value;
    return error(s, FN, "not supported (maxOutputDerivativeOrder=0)");
}

/* ---- directional derivatives ---- */

static double wrap(double a) {          /* cosim.numerics.wrap: (a + pi) % (2 pi) - pi, numpy's % */
    const double pi = 3.141592653589793, two_pi = 2.0 * pi;
    double r = fmod(a + pi, two_pi);
    if (r != 0.0 && r < 0.0) r += two_pi;
    else if (r == 0.0) r = 0.0;
    return r - pi;
}

/* the derivatives of the outputs out[nu] along ns seeds (seeds[j*nk + i] on the inputs in[i]) into
   dv[j*nu + r] (BlockUnit._directional_derivatives on the kernel) */
static fmi2Status derivatives(Instance *s, const char *fn, const int *in, size_t nk, const int *out, size_t nu,
                              size_t ns, const double *seeds, double *dv) {
    const TitopModelSpec *m = s->spec;
    int ni = m->n_inputs, no = m->n_outputs;
    const signed char *level = m->state_level;
    double *S = calloc(ns * ni + 1, sizeof(double)), *dY = calloc(ns * no + 1, sizeof(double));
    double *ku = malloc((ni + 1) * sizeof(double)), *y0 = malloc((no + 1) * sizeof(double));
    double *y1 = malloc((no + 1) * sizeof(double));
    fmi2Status status = fmi2OK;
    int code = 0;
    if (!S || !dY || !ku || !y0 || !y1) {
        status = error(s, fn, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < ns; j++)
        for (size_t i = 0; i < nk; i++) S[j * ni + in[i]] = seeds[j * nk + i];
    /* exact: the acceleration-level inputs at the seed less at 0, one seed at a time */
    int have_y0 = 0, any_state = 0;
    for (size_t j = 0; j < ns && !code; j++) {
        const double *Sj = S + j * ni;
        int exact = 0;
        for (int i = 0; i < ni; i++) {
            exact |= !level[i] && Sj[i] != 0.0;
            any_state |= level[i] && Sj[i] != 0.0;
        }
        if (!exact) continue;
        if (!have_y0) {
            for (int i = 0; i < ni; i++) ku[i] = level[i] ? s->u[i] : 0.0;
            if ((code = titop_model_outputs(s->model, s->t, s->x, s->z, ku, y0, NULL))) break;
            have_y0 = 1;
        }
        for (int i = 0; i < ni; i++)
            if (!level[i]) ku[i] = Sj[i];
        if ((code = titop_model_outputs(s->model, s->t, s->x, s->z, ku, y1, NULL))) break;
        for (int r = 0; r < no; r++) dY[j * no + r] = y1[r] - y0[r];
    }
    /* central differences along the twist/pose inputs, Euler angles wrapped */
    for (size_t j = 0; j < ns && any_state && !code; j++) {
        const double *Sj = S + j * ni;
        double scale = 0.0, smax = 0.0;
        for (int i = 0; i < ni; i++)
            if (level[i]) {
                scale = fmax(scale, fabs(s->u[i]));
                smax = fmax(smax, fabs(Sj[i]));
            }
        if (smax == 0.0) continue;
        double d = 1e-6 * fmax(1.0, scale) / smax;
        for (int i = 0; i < ni; i++) ku[i] = s->u[i] + d * (level[i] ? Sj[i] : 0.0);
        if ((code = titop_model_outputs(s->model, s->t, s->x, s->z, ku, y1, NULL))) break;
        for (int i = 0; i < ni; i++) ku[i] = s->u[i] - d * (level[i] ? Sj[i] : 0.0);
        if ((code = titop_model_outputs(s->model, s->t, s->x, s->z, ku, y0, NULL))) break;
        for (int r = 0; r < no; r++) {
            double dy = y1[r] - y0[r];
            if (m->angle[r]) dy = wrap(dy);
            dY[j * no + r] += dy / (2 * d);
        }
    }
    if (code) status = kernel_error(s, fn, code);
    for (size_t j = 0; j < ns && !status; j++)
        for (size_t r = 0; r < nu; r++) dv[j * nu + r] = dY[j * no + out[r]];
done:
    free(S), free(dY), free(ku), free(y0), free(y1);
    return status;
}

/* derivatives with states: of the outputs and state derivatives out[nu] (positions in [outputs, state
   derivatives]) along ns seeds on the inputs and states in[nk] (positions in [inputs, states]), exact
   (BlockUnit._state_space_derivatives: the forward-mode kernel, titop_model_derivatives) */
static fmi2Status state_space_derivatives(Instance *s, const char *fn, const int *in, size_t nk, const int *out,
                                          size_t nu, size_t ns, const double *seeds, double *dv) {
    const TitopModelSpec *m = s->spec;
    size_t nin = m->n_inputs + m->n_states, nout = m->n_outputs + m->n_states;
    double *S = calloc(ns * nin + 1, sizeof(double)), *dY = malloc((ns * nout + 1) * sizeof(double));
    fmi2Status status = fmi2OK;
    int code = 0;
    if (!S || !dY)
        status = error(s, fn, "out of memory");
    for (size_t j = 0; j < ns && !status; j++)
        for (size_t i = 0; i < nk; i++) S[j * nin + in[i]] = seeds[j * nk + i];
    if (!status && (code = titop_model_derivatives(s->model, s->x, s->u, ns, S, dY)))
        status = code < 0 ? error(s, fn, "out of memory")
                          : error(s, fn, "SolverError: the block's accelerations are singular or not finite at "
                                         "this state");
    for (size_t j = 0; j < ns && !status; j++)
        for (size_t r = 0; r < nu; r++) dv[j * nu + r] = dY[j * nout + out[r]];
    free(S), free(dY);
    return status;
}

/* fmi2GetDirectionalDerivative (one seed) and titopGetDirectionalDerivatives (shim.c, points 5, 6) */
static fmi2Status directional_derivatives(Instance *s, const char *fn, const fmi2ValueReference vUnknown_ref[],
                                          size_t nUnknown, const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                          size_t nSeeds, const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
    if (!s->spec->derivatives)
        return error(s, fn, "this FMU gives no directional derivatives (providesDirectionalDerivative is false)");
    NOT_NULL(!(nUnknown && (!vUnknown_ref || (nSeeds && !dvUnknown))) &&
             !(nKnown && (!vKnown_ref || (nSeeds && !dvKnown))), fn);
    const TitopModelSpec *m = s->spec;
    int *in = malloc((nKnown + 1) * sizeof(int)), *out = malloc((nUnknown + 1) * sizeof(int)), states = 0;
    for (size_t i = 0; i < nKnown + nUnknown; i++)       /* one beyond the outputs: the states' derivatives */
        states |= (i < nKnown ? vKnown_ref[i] : vUnknown_ref[i - nKnown]) >= (unsigned)(m->n_params + m->n_inputs
                                                                                          + m->n_outputs);
    fmi2Status status = fmi2OK;
    if (!in || !out) status = error(s, fn, "out of memory");
    if (!status)
        status = states ? in_out_states(s, fn, vKnown_ref, nKnown, in, vUnknown_ref, nUnknown, out)
                        : in_out(s, fn, vKnown_ref, nKnown, in, vUnknown_ref, nUnknown, out,
                                 "directional derivatives are given of outputs with respect to inputs");
    for (size_t i = 0; i < nKnown * nSeeds && !status; i++)
        if (!isfinite(dvKnown[i])) status = error(s, fn, "non-finite seed value(s)");
    if (!status && nUnknown && !outputs(s, fn)) status = fmi2Error;   /* the unit, or the mode's error */
    if (!status && nUnknown && !nKnown)
        for (size_t i = 0; i < nUnknown * nSeeds; i++) dvUnknown[i] = 0.0;
    else if (!status && nUnknown)
        status = (states ? state_space_derivatives : derivatives)(s, fn, in, nKnown, out, nUnknown, nSeeds, dvKnown,
                                                                  dvUnknown);
    free(in);
    free(out);
    return status;
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                               size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                               size_t nKnown, const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
    BEGIN(fmi2GetDirectionalDerivative);
    return directional_derivatives(s, FN, vUnknown_ref, nUnknown, vKnown_ref, nKnown, 1, dvKnown, dvUnknown);
}

EXPORT fmi2Status titopGetDirectionalDerivatives(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                                 size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                                 size_t nKnown, size_t nSeeds, const fmi2Real dvKnown[],
                                                 fmi2Real dvUnknown[]) {
    BEGIN(titopGetDirectionalDerivatives);
    return directional_derivatives(s, FN, vUnknown_ref, nUnknown, vKnown_ref, nKnown, nSeeds, dvKnown, dvUnknown);
}

/* ---- trial steps (shim.c, point 6; the unit's trial_steps) ---- */

EXPORT fmi2Status titopGetTrialSteps(fmi2Component c, fmi2Real currentCommunicationPoint,
                                     fmi2Real communicationStepSize, const fmi2ValueReference vKnown_ref[],
                                     size_t nKnown, size_t nTrials, const fmi2Real held[], const fmi2Real end[],
                                     const fmi2ValueReference vUnknown_ref[], size_t nUnknown, fmi2Real values[]) {
    BEGIN(titopGetTrialSteps);
    const TitopModelSpec *m = s->spec;
    char r[32];
    NOT_NULL(!(nKnown && (!vKnown_ref || !end || (nTrials && !held))) &&
             !(nUnknown && (!vUnknown_ref || (nTrials && !values))), FN);
    if (s->mode != STEP)
        return error(s, FN, "trial steps are only allowed after fmi2ExitInitializationMode (mode: %s)",
                     mode_name(s->mode));
    if (!(isfinite(communicationStepSize) && communicationStepSize >= 0))
        return error(s, FN, "invalid communication step size %s", titop_repr(communicationStepSize, r));
    int *in = malloc((nKnown + 1) * sizeof(int)), *out = malloc((nUnknown + 1) * sizeof(int));
    double *x = malloc((m->n_states + 1) * sizeof(double)), *u = malloc((m->n_inputs + 1) * sizeof(double));
    double *y = malloc((m->n_outputs + 1) * sizeof(double));
    double *z = malloc((titop_model_n_discrete(m) + 1) * sizeof(double)), t = s->t;
    fmi2Status status = fmi2OK;
    if (!in || !out || !x || !u || !y || !z) status = error(s, FN, "out of memory");
    if (!status)
        status = in_out(s, FN, vKnown_ref, nKnown, in, vUnknown_ref, nUnknown, out,
                        "trial steps set inputs and read outputs");
    for (size_t j = 0; j < nTrials && !status; j++)       /* the first trial with a non-finite value */
        if (check_finite(s, FN, in, held + j * nKnown, nKnown)) status = fmi2Error;
    if (!status && check_finite(s, FN, in, end, nKnown)) status = fmi2Error;
    for (size_t j = 0; j < nTrials && !status; j++) {      /* from the state found, which stays */
        double h_guess = s->h_guess;
        int code;
        memcpy(x, s->x, m->n_states * sizeof(double));
        memcpy(z, s->z, titop_model_n_discrete(m) * sizeof(double));
        memcpy(u, s->u, m->n_inputs * sizeof(double));
        for (size_t i = 0; i < nKnown; i++) u[in[i]] = held[j * nKnown + i];
        s->t = currentCommunicationPoint;
        code = step(s, x, z, u, &h_guess, communicationStepSize);
        s->t = t;
        if (code) {
            status = kernel_error(s, FN, code);
            break;
        }
        for (size_t i = 0; i < nKnown; i++) u[in[i]] = end[i];
        if (nUnknown && (code = titop_model_outputs(s->model, currentCommunicationPoint + communicationStepSize, x, z,
                                                    u, y, NULL))) {
            status = kernel_error(s, FN, code);
            break;
        }
        for (size_t k = 0; k < nUnknown; k++) values[j * nUnknown + k] = y[out[k]];
    }
    free(in), free(out), free(x), free(u), free(y), free(z);
    return status;
}

/* ---- FMU state ---- */

#define STATE_MAGIC "TITOPFMU"
#define STATE_VERSION 1u

typedef struct {
    const TitopModelSpec *spec;  /* the FMU's: a state of another FMU is refused */
    int mode, has_unit;
    double t0, tolerance, t, h_guess;
    double *params, *x, *u, *z;     /* in one block after the struct */
} State;

static State *new_state(const TitopModelSpec *m) {
    State *st = calloc(1, sizeof(State) + (2 * m->n_params + m->n_states + m->n_inputs + titop_model_n_discrete(m) + 1)
                              * sizeof(double));
    if (!st) return NULL;
    st->spec = m;
    st->params = (double *)(st + 1);
    st->x = st->params + m->n_params;
    st->u = st->x + m->n_states;
    st->z = st->u + m->n_inputs;
    return st;
}

/* the FMU state FMUstate of this FMU, or NULL with the error of fn logged */
static State *state_of(const Instance *s, const char *fn, fmi2FMUstate FMUstate) {
    State *st = (State *)FMUstate;
    if (!st) error(s, fn, "a NULL FMU state");
    else if (st->spec != s->spec) error(s, fn, "the FMU state is not one of this FMU's (%s)", s->spec->guid);
    else return st;
    return NULL;
}

static int all_finite(const double *v, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* NULL if st is a state an instance of this FMU can be in, else what is wrong: a mode, a model in the
   modes that have one (WITH_MODEL) and none before initialization, finite times, states and inputs */
static const char *inconsistent(const State *st) {
    const TitopModelSpec *m = st->spec;
    int mode = st->mode;
    if (mode != INSTANTIATED && mode != INITIALIZATION && mode != STEP && mode != TERMINATED && mode != EVENT &&
        mode != CONTINUOUS)
        return "no such mode";
    if (st->has_unit != 0 && st->has_unit != 1) return "has_unit is neither 0 nor 1";
    if ((mode & WITH_MODEL) && !st->has_unit) return "a model is needed in this mode, and the state has none";
    if (mode == INSTANTIATED && st->has_unit) return "a model before initialization";
    if (!(isfinite(st->t0) && isfinite(st->t) && isfinite(st->tolerance) && st->tolerance >= 0 &&
          isfinite(st->h_guess) && st->h_guess >= 0))
        return "a time, a tolerance or a step is not finite or negative";
    if (!all_finite(st->x, m->n_states) || !all_finite(st->u, m->n_inputs))
        return "a state or an input is not finite";
    return titop_model_discrete_invalid(m, st->z);
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate) {
    BEGIN(fmi2GetFMUstate);
    const TitopModelSpec *m = s->spec;
    NOT_NULL(FMUstate, FN);
    State *st = *FMUstate ? state_of(s, FN, *FMUstate) : new_state(m);
    if (!st) return *FMUstate ? fmi2Error : error(s, FN, "out of memory");
    st->mode = s->mode;
    /* the unit's states when it is built from the current parameters (the slave's _Snapshot) */
    st->has_unit = built_from(s, s->params);
    st->t0 = s->t0;
    st->tolerance = s->tolerance;
    st->t = s->t;
    st->h_guess = s->h_guess;
    memcpy(st->params, s->params, m->n_params * sizeof(double));
    memcpy(st->x, s->x, m->n_states * sizeof(double));
    memcpy(st->u, s->u, m->n_inputs * sizeof(double));
    memcpy(st->z, s->z, titop_model_n_discrete(m) * sizeof(double));
    *FMUstate = st;
    return fmi2OK;
}

/* the model the state needs is built (if it is not the instance's) before anything changes: the
   instance takes the state whole, or stays as it was */
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
    BEGIN(fmi2SetFMUstate);
    const TitopModelSpec *m = s->spec;
    const State *st = state_of(s, FN, FMUstate);
    if (!st) return fmi2Error;
    const char *why = inconsistent(st);
    if (why) return error(s, FN, "the FMU state is inconsistent: %s", why);
    if (!(st->mode & (s->model_exchange ? ~STEP : ~(EVENT | CONTINUOUS))))
        return error(s, FN, "the FMU state is of an instance of the other type (mode %s), this one is of type %s",
                     mode_name(st->mode), s->model_exchange ? "Model Exchange" : "co-simulation");
    TitopModel *model = NULL;
    if (st->has_unit && !built_from(s, st->params) && !(model = new_model(s, FN, st->params))) return fmi2Error;
    if (model || !st->has_unit) {            /* the model replaced, or none */
        titop_model_free(s->model);
        s->model = model;
        if (model) memcpy(s->unit_params, st->params, m->n_params * sizeof(double));
    }
    memcpy(s->params, st->params, m->n_params * sizeof(double));
    s->t0 = st->t0;
    s->tolerance = st->tolerance;
    s->t = st->t;
    s->h_guess = st->h_guess;
    memcpy(s->x, st->x, m->n_states * sizeof(double));
    memcpy(s->z, st->z, titop_model_n_discrete(m) * sizeof(double));
    memcpy(s->u, st->u, m->n_inputs * sizeof(double));
    s->y_valid = 0;
    s->mode = st->mode;
    return fmi2OK;
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate) {
    BEGIN(fmi2FreeFMUstate);
    if (FMUstate && *FMUstate) {
        if (!state_of(s, FN, *FMUstate)) return fmi2Error;
        free(*FMUstate);
        *FMUstate = NULL;
    }
    return fmi2OK;
}

/* the blob: magic (8), version, GUID length (uint32 each), the GUID, mode, has_unit, the numbers of
   parameters, states and inputs (int32 each), then t0, tolerance, t, h_guess, the parameters, the
   states, the inputs and the discrete states (doubles); in the machine's byte order */
static size_t header_size(const TitopModelSpec *m) { return 8 + 4 + 4 + strlen(m->guid) + 5 * 4; }

static size_t blob_size(const TitopModelSpec *m) {
    return header_size(m) + (4 + m->n_params + m->n_states + m->n_inputs + titop_model_n_discrete(m)) * sizeof(double);
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size) {
    BEGIN(fmi2SerializedFMUstateSize);
    NOT_NULL(size, FN);
    if (!state_of(s, FN, FMUstate)) return fmi2Error;
    *size = blob_size(s->spec);
    return fmi2OK;
}

static char *put(char *p, const void *v, size_t n) {
    memcpy(p, v, n);
    return p + n;
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                        size_t size) {
    BEGIN(fmi2SerializeFMUstate);
    const TitopModelSpec *m = s->spec;
    NOT_NULL(serializedState, FN);
    const State *st = state_of(s, FN, FMUstate);
    if (!st) return fmi2Error;
    if (size < blob_size(m))
        return error(s, FN, "the buffer has %lu bytes, the state needs %lu", (unsigned long)size,
                     (unsigned long)blob_size(m));
    uint32_t head[2] = {STATE_VERSION, (uint32_t)strlen(m->guid)};
    int32_t ints[5] = {st->mode, st->has_unit, m->n_params, m->n_states, m->n_inputs};
    double times[4] = {st->t0, st->tolerance, st->t, st->h_guess};
    char *p = put(serializedState, STATE_MAGIC, 8);
    p = put(p, head, sizeof head);
    p = put(p, m->guid, head[1]);
    p = put(p, ints, sizeof ints);
    p = put(p, times, sizeof times);
    p = put(p, st->params, m->n_params * sizeof(double));
    p = put(p, st->x, m->n_states * sizeof(double));
    p = put(p, st->u, m->n_inputs * sizeof(double));
    put(p, st->z, titop_model_n_discrete(m) * sizeof(double));
    return fmi2OK;
}

static const char *get(const char *p, void *v, size_t n) {
    memcpy(v, p, n);
    return p + n;
}

/* read whole, then checked (inconsistent) before *FMUstate is made or replaced */
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                          fmi2FMUstate *FMUstate) {
    BEGIN(fmi2DeSerializeFMUstate);
    const TitopModelSpec *m = s->spec;
    NOT_NULL(serializedState && FMUstate, FN);
    if (*FMUstate && !state_of(s, FN, *FMUstate)) return fmi2Error;
    uint32_t head[2];
    int32_t ints[5];
    if (size < 16 || memcmp(serializedState, STATE_MAGIC, 8))
        return error(s, FN, "the bytes are not a serialized TITOP FMU state");
    memcpy(head, serializedState + 8, sizeof head);
    if (head[0] != STATE_VERSION)
        return error(s, FN, "the state is of version %u, this FMU reads version %u", head[0], STATE_VERSION);
    if (head[1] != strlen(m->guid) || size < 16 + head[1] || memcmp(serializedState + 16, m->guid, head[1]))
        return error(s, FN, "the FMU state belongs to another FMU (not the GUID %s)", m->guid);
    if (size != blob_size(m))
        return error(s, FN, "the state has %lu bytes, %lu expected", (unsigned long)size, (unsigned long)blob_size(m));
    const char *p = get(serializedState + 16 + head[1], ints, sizeof ints);
    if (ints[2] != m->n_params || ints[3] != m->n_states || ints[4] != m->n_inputs)
        return error(s, FN, "the FMU state is inconsistent: its sizes are not this FMU's");
    State *st = new_state(m);
    if (!st) return error(s, FN, "out of memory");
    double times[4];
    p = get(p, times, sizeof times);
    st->mode = ints[0];
    st->has_unit = ints[1];
    st->t0 = times[0], st->tolerance = times[1], st->t = times[2], st->h_guess = times[3];
    p = get(p, st->params, m->n_params * sizeof(double));
    p = get(p, st->x, m->n_states * sizeof(double));
    p = get(p, st->u, m->n_inputs * sizeof(double));
    get(p, st->z, titop_model_n_discrete(m) * sizeof(double));
    const char *why = inconsistent(st);
    if (why) {
        free(st);
        return error(s, FN, "the FMU state is inconsistent: %s", why);
    }
    if (*FMUstate) {                           /* the one given is the same FMU's: overwritten */
        State *old = (State *)*FMUstate;
        double *params = old->params, *x = old->x, *u = old->u, *z = old->z;
        memcpy(params, st->params,
               (m->n_params + m->n_states + m->n_inputs + titop_model_n_discrete(m)) * sizeof(double));
        *old = *st;
        old->params = params, old->x = x, old->u = u, old->z = z;
        free(st);
    } else
        *FMUstate = st;
    return fmi2OK;
}


/* ---- Model Exchange ----
 * An FMU whose model says so (spec->model_exchange: an assembly) also declares Model Exchange.
 * Its continuous states are the monolithic states of the kernel's tree (the variables after the
 * outputs, then their derivatives), the derivatives the kernel's (titop_evaluate: the loop solved
 * exactly), computed with the outputs and kept with them; no event indicators. A closed loop
 * (its controllers' states among the continuous states) has time events: its signals' breakpoints
 * and its discrete blocks' samples, given as nextEventTime; fmi2NewDiscreteStates takes the
 * samples (titop_model_event). The host integrates: the quaternion of a base is not normalised
 * after a step as fmi2DoStep does.
 * It need not be: the kernel's rotation of a quaternion q is that of q/|q| (dcm_from_quat), so
 * the outputs and every other derivative do not depend on |q|, and dq/dt = 1/2 q (x) [0, w] keeps
 * |q| constant: a drift of |q| under the host's integrator changes nothing else. */

#define BEGIN_ME(function)                                                                  \
    BEGIN(function);                                                                        \
    if (!s->model_exchange)                                                                 \
        return error(s, FN, "a Model Exchange function, and this instance is of type co-simulation")

/* n doubles from src to dst, either NULL when n is 0 (a host may pass NULL for no state; memcpy's may not
   be NULL) */
static void copy(double *dst, const double *src, size_t n) {
    if (n) memcpy(dst, src, n * sizeof(double));
}

/* an array of n values where the FMU has `expected` (states, event indicators): fmi2OK or the error */
static fmi2Status count(const Instance *s, const char *fn, const void *array, size_t n, int expected,
                        const char *what) {
    if (n != (size_t)expected)
        return error(s, fn, "the FMU has %d %s, %lu given", expected, what, (unsigned long)n);
    NOT_NULL(array || !n, fn);
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
    BEGIN_ME(fmi2SetTime);
    char r[32];
    if (!isfinite(time)) return error(s, FN, "the time must be finite, got %s", titop_repr(time, r));
    s->t = time;                               /* a closed loop's signals depend on it */
    s->y_valid = 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
    BEGIN_ME(fmi2SetContinuousStates);
    const TitopModelSpec *m = s->spec;
    if (count(s, FN, x, nx, m->n_states, "continuous states")) return fmi2Error;
    char names[3000];
    if (non_finite(s, m->n_params + m->n_inputs + m->n_outputs, NULL, x, nx, names, sizeof names))
        return error(s, FN, "SolverError: non-finite state(s) [%s]", names);
    copy(s->x, x, nx);
    s->y_valid = 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    BEGIN_ME(fmi2GetContinuousStates);
    if (count(s, FN, x, nx, s->spec->n_states, "continuous states") || no_unit(s, FN)) return fmi2Error;
    copy(x, s->x, nx);
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx) {
    BEGIN_ME(fmi2GetDerivatives);
    if (count(s, FN, derivatives, nx, s->spec->n_states, "continuous states") || !outputs(s, FN)) return fmi2Error;
    copy(derivatives, s->xdot, nx);
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[], size_t nx) {
    BEGIN_ME(fmi2GetNominalsOfContinuousStates);
    if (count(s, FN, x_nominal, nx, s->spec->n_states, "continuous states")) return fmi2Error;
    for (size_t i = 0; i < nx; i++) x_nominal[i] = 1.0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[], size_t ni) {
    BEGIN_ME(fmi2GetEventIndicators);
    return count(s, FN, eventIndicators, ni, 0, "event indicators");
}

EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) {
    BEGIN_ME(fmi2EnterEventMode);
    s->mode = EVENT;
    return fmi2OK;
}

EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
    BEGIN_ME(fmi2NewDiscreteStates);
    NOT_NULL(info, FN);
    int code = titop_model_event(s->model, s->t, s->x, s->z, s->u);    /* the samples at t, the next event */
    if (code) return kernel_error(s, FN, code);
    double next = titop_model_next_event(s->model, s->z);
    memset(info, 0, sizeof *info);             /* no iteration, the continuous states unchanged */
    info->nextEventTimeDefined = isfinite(next);
    info->nextEventTime = isfinite(next) ? next : 0.0;
    s->y_valid = 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
    BEGIN_ME(fmi2EnterContinuousTimeMode);
    s->mode = CONTINUOUS;
    return fmi2OK;
}

EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                              fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation) {
    BEGIN_ME(fmi2CompletedIntegratorStep);
    (void)noSetFMUStatePriorToCurrentPoint;
    NOT_NULL(enterEventMode && terminateSimulation, FN);
    *enterEventMode = *terminateSimulation = 0;
    return fmi2OK;
}
