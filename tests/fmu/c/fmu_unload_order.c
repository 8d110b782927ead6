/*
 * Several TITOP FMU instances in one C process, freed and unloaded in every
 * order: the survivors must keep working and the process must exit cleanly.
 *
 * Each instance is loaded the way FMI tools do: its own dlopen of its FMU
 * binary (RTLD_NOW | RTLD_LOCAL; two instances from one unzipped folder share
 * the library, from two folders they do not), fmi2Instantiate, initialization,
 * one fmi2DoStep. Then the events of an order run one by one:
 *
 *   F<i>  fmi2Terminate and fmi2FreeInstance of instance i
 *   U<i>  dlclose of instance i's library handle (after F<i>)
 *
 * and after each event every live instance does fmi2DoStep and fmi2GetReal.
 * With -r, once all is freed and unloaded, the first instance's FMU is loaded,
 * instantiated, stepped and freed again. The process then returns from main
 * (exit handlers run).
 *
 * usage: fmu_unload_order [-r] [-t SECONDS] ORDER|all DIR MODEL_ID GUID [DIR MODEL_ID GUID]...
 *   ORDER  the events, comma separated, e.g. F0,U0,F1,F2,U2,U1
 *   all    every order in which each F<i> comes before its U<i>
 *
 * Each order runs in a child process (fork before anything is loaded), so a
 * crash or a hang (killed after SECONDS, default 60) is reported, not fatal.
 * Output: the children's lines ("log ...", "event ...", "fail ...") and one
 * line per order: "result ORDER ok" or "result ORDER FAILED <how>", then
 * "summary N orders, M failed". Exit status 0 iff every order is ok.
 */

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmi2_host.h"

static fmi2CallbackFunctions callbacks = {print_log, calloc, free, NULL, NULL};

#define MAXI 8
#define MAXE (2 * MAXI)
#define STEP 0.01

typedef struct {
    const char *dir, *id, *guid;
    void *h;
    fmi2Component c;
    double t;
    int live;
    fmi2Functions f;
} Slot;

static Slot slots[MAXI];
static int n_slots;

#define CHECK(what, expr)                                                        \
    do {                                                                         \
        fmi2Status st_ = (expr);                                                 \
        if (st_ > fmi2Warning) {                                                 \
            printf("fail %s %s of instance %d\n", what, status_name[st_], k);    \
            fflush(stdout);                                                      \
            return 0;                                                            \
        }                                                                        \
    } while (0)

static int load(int k) {
    Slot *s = &slots[k];
    char resources[4096], name[32];
    snprintf(name, sizeof name, "i%d", k);
    if (!(s->h = open_fmu(s->dir, s->id, resources, sizeof resources, &s->f))) {
        printf("fail loading instance %d\n", k);
        return 0;
    }
    if (!(s->c = s->f.Instantiate(name, 1 /* fmi2CoSimulation */, s->guid, resources, &callbacks, 0, 0))) {
        printf("fail fmi2Instantiate of instance %d\n", k);
        return 0;
    }
    s->live = 1;
    s->t = 0.0;
    CHECK("fmi2SetupExperiment", s->f.SetupExperiment(s->c, 0, 0.0, 0.0, 0, 0.0));
    CHECK("fmi2EnterInitializationMode", s->f.EnterInit(s->c));
    CHECK("fmi2ExitInitializationMode", s->f.ExitInit(s->c));
    return 1;
}

static int step(int k) {
    Slot *s = &slots[k];
    fmi2ValueReference vr = 0;
    double y;
    CHECK("fmi2DoStep", s->f.DoStep(s->c, s->t, STEP, 1));
    s->t += STEP;
    CHECK("fmi2GetReal", s->f.GetReal(s->c, &vr, 1, &y));
    return 1;
}

static int free_instance(int k) {
    Slot *s = &slots[k];
    CHECK("fmi2Terminate", s->f.Terminate(s->c));
    s->f.FreeInstance(s->c);
    s->live = 0;
    return 1;
}

static int unload(int k) {
    if (dlclose(slots[k].h)) {
        printf("fail dlclose of instance %d: %s\n", k, dlerror());
        return 0;
    }
    return 1;
}

/* one order, in this (child) process; 1 if all went well */
static int run_order(const char *events[], int n_events, int reload) {
    for (int k = 0; k < n_slots; k++)
        if (!load(k) || !step(k)) return 0;
    for (int e = 0; e < n_events; e++) {
        int k = atoi(events[e] + 1);
        printf("event %s\n", events[e]);
        fflush(stdout);
        if (events[e][0] == 'F' ? !free_instance(k) : !unload(k)) return 0;
        for (int j = 0; j < n_slots; j++)
            if (slots[j].live && !step(j)) return 0;
    }
    if (reload) {
        int k = 0;
        printf("event reload\n");
        fflush(stdout);
        if (!load(k) || !step(k) || !free_instance(k) || !unload(k)) return 0;
    }
    return 1;
}

static int n_orders, n_failed;

static void run_child(const char *events[], int n_events, int reload, int timeout) {
    char order[MAXE * 4] = "";
    for (int e = 0; e < n_events; e++) {
        if (e) strcat(order, ",");
        strcat(order, events[e]);
    }
    printf("order %s\n", order);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        alarm((unsigned)timeout);
        exit(run_order(events, n_events, reload) ? 0 : 1);   /* exit: the exit handlers run */
    }
    int status;
    waitpid(pid, &status, 0);
    n_orders++;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("result %s ok\n", order);
    } else {
        n_failed++;
        if (WIFSIGNALED(status))
            printf("result %s FAILED signal %d (%s)\n", order, WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            printf("result %s FAILED exit %d\n", order, WEXITSTATUS(status));
    }
    fflush(stdout);
}

/* every order of the 2n events with F<i> before U<i> */
static char names[MAXE][16];
static const char *chosen[MAXE];
static int used[MAXE];

static void enumerate(int depth, int n, int reload, int timeout) {
    if (depth == 2 * n) {
        run_child(chosen, 2 * n, reload, timeout);
        return;
    }
    for (int e = 0; e < 2 * n; e++) {
        if (used[e] || (e % 2 == 1 && !used[e - 1])) continue;   /* U<i> (odd) only after F<i> */
        used[e] = 1;
        chosen[depth] = names[e];
        enumerate(depth + 1, n, reload, timeout);
        used[e] = 0;
    }
}

int main(int argc, char **argv) {
    int reload = 0, timeout = 60, a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "-r")) reload = 1;
        else if (!strcmp(argv[a], "-t") && a + 1 < argc) timeout = atoi(argv[++a]);
        else break;
    }
    if (argc - a < 4 || (argc - a - 1) % 3 || (argc - a - 1) / 3 > MAXI) {
        fprintf(stderr, "usage: %s [-r] [-t SECONDS] ORDER|all DIR MODEL_ID GUID [DIR MODEL_ID GUID]...\n",
                argv[0]);
        return 2;
    }
    const char *order = argv[a++];
    for (; a + 2 < argc; a += 3, n_slots++) {
        slots[n_slots].dir = argv[a];
        slots[n_slots].id = argv[a + 1];
        slots[n_slots].guid = argv[a + 2];
    }
    for (int k = 0; k < n_slots; k++) {
        snprintf(names[2 * k], sizeof names[0], "F%d", k);
        snprintf(names[2 * k + 1], sizeof names[0], "U%d", k);
    }
    if (!strcmp(order, "all")) {
        enumerate(0, n_slots, reload, timeout);
    } else {
        static char buf[4096];
        const char *events[MAXE];
        int n = 0;
        snprintf(buf, sizeof buf, "%s", order);
        for (char *tok = strtok(buf, ","); tok && n < MAXE; tok = strtok(NULL, ",")) {
            int k = atoi(tok + 1);
            if ((tok[0] != 'F' && tok[0] != 'U') || k < 0 || k >= n_slots) {
                fprintf(stderr, "bad event %s\n", tok);
                return 2;
            }
            events[n++] = tok;
        }
        run_child(events, n, reload, timeout);
    }
    printf("summary %d orders, %d failed\n", n_orders, n_failed);
    return n_failed ? 1 : 0;
}
