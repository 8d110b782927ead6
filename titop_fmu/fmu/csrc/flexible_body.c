/* A flexible body of a standalone FMU (docs/flexible-bodies.md), included by tree.c: its data in
 * the kernel's layout (titop_fmu/kernel.py: flexible_data; flexible.h: FlexData) computed from
 * the FMI parameters (titop_fmu/fmu/flexible.py: flex.*, c<i>.r, c<i>.phi, ...), checked as
 * flexible.py's flexible_body and ModalData (titop_fmu/blocks/modal.py) check them, in their
 * order and with their messages: a bad modal parameter is an FMI error with its message, never
 * a crash. The modes are fixed at build time (the FMU's n), so every size below is the table's. */

/* the largest |A[k]| over size entries, at least 1 (the scale of modal.py's tolerances) */
static double scale_of(const double *A, int size)
{
    return fmax(1.0, max_abs(A, size));
}

static int all_finite(const double *A, int size)
{
    for (int i = 0; i < size; i++)
        if (!isfinite(A[i]))
            return 0;
    return 1;
}

/* each of the `blocks` n x n matrices of A symmetric to 1e-9 of the largest entry of A */
static int symmetric(const double *A, int blocks, int n)
{
    double asym = 0.0;
    for (int k = 0; k < blocks; k++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                asym = fmax(asym, fabs(A[n * n * k + n * i + j] - A[n * n * k + n * j + i]));
    return asym <= 1e-9 * scale_of(A, blocks * n * n);
}

/* which of the `blocks` n x n matrices of A are not all zero (kernel.py: nonzero) */
static void nonzero(const double *A, int blocks, int n, double *flags)
{
    for (int k = 0; k < blocks; k++) {
        flags[k] = 0.0;
        for (int i = 0; i < n * n; i++)
            if (A[n * n * k + i] != 0.0)
                flags[k] = 1.0;
    }
}

/* the smallest eigenvalue of the 6 x 6 matrix D - L^T L, its lower triangle read (as numpy's
 * eigvalsh reads it); L is n x 6 */
static double residual_eigenvalue(const double *D, const double *L, int n)
{
    double R[36], w[6];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j <= i; j++) {
            double s = D[6 * i + j];
            for (int k = 0; k < n; k++)
                s -= L[6 * k + i] * L[6 * k + j];
            R[6 * i + j] = R[6 * j + i] = s;
        }
    eigvalsh(6, R, w);
    return w[0];
}

/* "parameter '<name>': <detail> (FMU parameters)": ModalData's error, renamed to the FMI parameter */
static int modal_fail(Err *e, const char *name, const char *detail)
{
    char d[300];
    snprintf(d, sizeof d, "%s (FMU parameters)", detail);
    return fail(e, name, d);
}

/* modal.py's ModalData._check_values on the FMI parameters */
static int modal_values(const TitopBlockSpec *b, const double *par, Err *e)
{
    const int *f = b->flex;
    int n = b->modes;
    const double *D = par + f[TITOP_F_MASS], *L = par + f[TITOP_F_L], *omega = par + f[TITOP_F_OMEGA];
    const double *zeta = par + f[TITOP_F_ZETA], *F = par + f[TITOP_F_I_PHI_PHI];
    char d[200];
    for (int j = 0; j < n; j++)
        if (omega[j] <= 0) {
            snprintf(d, sizeof d, "the frequencies of the clamped modes must be positive, got %g at mode %d", omega[j],
                     j + 1);
            return modal_fail(e, "flex.omega", d);
        }
    for (int j = 0; j < n; j++)
        if (zeta[j] < 0) {
            snprintf(d, sizeof d, "damping ratios must be >= 0, got %g at mode %d", zeta[j], j + 1);
            return modal_fail(e, "flex.zeta", d);
        }
    double scale = scale_of(D, 36), asym = 0.0, trans = 0.0, S[36], w[6];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            asym = fmax(asym, fabs(D[6 * i + j] - D[6 * j + i]));
            S[6 * i + j] = 0.5 * (D[6 * i + j] + D[6 * j + i]);
            if (i < 3 && j < 3)
                trans = fmax(trans, fabs(D[6 * i + j] - (i == j ? D[0] : 0.0)));
        }
    if (asym > 1e-9 * scale)
        return modal_fail(e, "flex.mass", "the rigid mass D_P must be symmetric");
    if (D[0] <= 0 || trans > 1e-9 * scale)
        return modal_fail(e, "flex.mass", "its translational block must be m 1 with a positive mass m");
    eigvalsh(6, S, w);
    if (w[0] < -1e-9 * scale)
        return modal_fail(e, "flex.mass", "the rigid mass D_P must be positive semi-definite");
    double residual = n ? residual_eigenvalue(D, L, n) : 0.0;
    if (n && residual < -1e-8 * scale) {
        snprintf(d, sizeof d, "the residual mass D_P - L^T L is not positive semi-definite (eigenvalue %.3g): L does "
                 "not belong to this mass, or the modes are not mass-normalised", residual);
        return modal_fail(e, "flex.L", d);
    }
    double fs = n ? scale_of(F, 9 * n * n) : 1.0, fasym = 0.0, diagonal = -INFINITY;
    for (int a = 0; a < 3; a++)                     /* F[a, b, i, j] = F[b, a, j, i] */
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    fasym = fmax(fasym, fabs(F[((3 * a + c) * n + i) * n + j] - F[((3 * c + a) * n + j) * n + i]));
    if (fasym > 1e-9 * fs)
        return modal_fail(e, "flex.I_phi_phi", "must satisfy I_phi_phi[a, b, i, j] = I_phi_phi[b, a, j, i]");
    for (int i = 0; i < n; i++) {                   /* sum_a F[a, a]: its diagonal */
        double s = 0.0;
        for (int a = 0; a < 3; a++)
            s += F[(4 * a * n + i) * n + i];
        diagonal = fmax(diagonal, s);
    }
    if (n && diagonal > 1 + 1e-6)
        return modal_fail(e, "flex.I_phi_phi", "sum_a I_phi_phi[a, a] has diagonal terms above 1: the modes are not "
                          "mass-normalised");
    static const struct { int field, blocks; const char *name; } K0[] = {
        {TITOP_F_K0T, 3, "flex.K0t"}, {TITOP_F_K0R, 3, "flex.K0r"}, {TITOP_F_K0OM, 6, "flex.K0om"}};
    for (int k = 0; k < 3; k++)
        if (!symmetric(par + f[K0[k].field], K0[k].blocks, n))
            return modal_fail(e, K0[k].name, "each n x n matrix must be symmetric");
    return 0;
}

/* the initial modal coordinates or rates (body.py's as_vector: "must be finite, got [...]") */
static int modal_vector(Err *e, const char *name, const double *v, int n)
{
    if (all_finite(v, n))
        return 0;
    char l[32 * n + 8], d[32 * n + 40];
    list_repr(v, n, l);
    snprintf(d, sizeof d, "must be finite, got %s", l);
    return fail(e, name, d);
}

/* The data of the block b's flexible body (D_P at D_D, the nodes at D_PC, FlexData after them)
 * from the parameters par, checked; its mass, centre of mass and inertia at it (blocks/body.py:
 * rigid_properties) and its residual mass D_P - L^T L at eta = 0 (eq. (F15)) for the block's
 * own checks. 0, or 1 with the message in e. */
static int flexible_body(const TitopBlockSpec *b, const double *par, double *d, Err *e, double *mass, double *J,
                         double *Dres0)
{
    const int *f = b->flex;
    int n = b->modes, nc = b->n_children;
    char name[40];
    /* flexible.py's flexible_body: each port's fields finite, its K0F and K0M symmetric */
    static const char *port_fields[TITOP_NN] = {"r", "phi", "psi", "K0F", "K0M"};
    int port_sizes[TITOP_NN] = {3, 3 * n, 3 * n, 3 * n * n, 3 * n * n};
    for (int i = 0; i < nc; i++)
        for (int k = 0; k < TITOP_NN; k++) {
            const double *v = par + f[TITOP_NF + TITOP_NN * i + k];
            snprintf(name, sizeof name, "c%d.%s", i + 1, port_fields[k]);
            if (!all_finite(v, port_sizes[k]))
                return fail(e, name, "must be finite");
            if (k >= TITOP_N_K0F && !symmetric(v, 3, n))
                return fail(e, name, "each n x n matrix must be symmetric");
        }
    /* ModalData: its fields finite, in its order, then their values */
    static const struct { int field, size[3]; const char *name; } fields[] = {   /* size: 1, n, n^2 */
        {TITOP_F_MASS, {36, 0, 0}, "flex.mass"}, {TITOP_F_L, {0, 6, 0}, "flex.L"},
        {TITOP_F_OMEGA, {0, 1, 0}, "flex.omega"}, {TITOP_F_ZETA, {0, 1, 0}, "flex.zeta"},
        {TITOP_F_I_PHI_X0, {0, 9, 0}, "flex.I_phi_x0"}, {TITOP_F_I_PHI_PHI, {0, 0, 9}, "flex.I_phi_phi"},
        {TITOP_F_K0T, {0, 0, 3}, "flex.K0t"}, {TITOP_F_K0R, {0, 0, 3}, "flex.K0r"},
        {TITOP_F_K0OM, {0, 0, 6}, "flex.K0om"}};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        int size = fields[k].size[0] + fields[k].size[1] * n + fields[k].size[2] * n * n;
        if (!all_finite(par + f[fields[k].field], size))
            return modal_fail(e, fields[k].name, "must be finite");
    }
    if (modal_values(b, par, e))
        return 1;
    double s = par[f[TITOP_F_STIFFENING]];
    if (s != 0 && s != 1) {
        char detail[80];
        snprintf(detail, sizeof detail, "must be 0 or 1, got %.0f", s);
        return fail(e, "flex.stiffening", detail);
    }
    if (modal_vector(e, "flex.eta0", par + f[TITOP_F_ETA0], n) ||
        modal_vector(e, "flex.etad0", par + f[TITOP_F_ETAD0], n))
        return 1;
    /* rigid_properties: m, [PB] and I_B of D_P */
    const double *D = par + f[TITOP_F_MASS], *L = par + f[TITOP_F_L];
    double m = D[0], com[3], S[9];
    com[0] = 0.5 * (D[6 * 5 + 1] - D[6 * 1 + 5]) / m;
    com[1] = 0.5 * (D[6 * 3 + 2] - D[6 * 2 + 3]) / m;
    com[2] = 0.5 * (D[6 * 4 + 0] - D[6 * 0 + 4]) / m;
    double sk[9] = {0.0, -com[2], com[1], com[2], 0.0, -com[0], -com[1], com[0], 0.0};
    mat3_mul(sk, sk, S);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            J[3 * i + j] = 0.5 * ((D[6 * (3 + i) + 3 + j] + m * S[3 * i + j]) + (D[6 * (3 + j) + 3 + i] + m * S[3 * j + i]));
    *mass = m;
    for (int i = 0; i < 6; i++)                     /* D_res0, its lower triangle (as numpy's eigvalsh) */
        for (int j = 0; j <= i; j++) {
            double v = D[6 * i + j];
            for (int k = 0; k < n; k++)
                v -= L[6 * k + i] * L[6 * k + j];
            Dres0[6 * i + j] = Dres0[6 * j + i] = v;
        }
    /* the kernel's data (kernel.py: tables, flexible_data) */
    memcpy(d + D_D, D, 36 * sizeof(double));
    for (int i = 0; i < nc; i++)
        memcpy(d + D_PC + 3 * i, par + f[TITOP_NF + TITOP_NN * i + TITOP_N_R], 3 * sizeof(double));
    double *o = d + D_PC + 3 * nc, *flags;
    const double *omega = par + f[TITOP_F_OMEGA], *zeta = par + f[TITOP_F_ZETA], *E = par + f[TITOP_F_I_PHI_X0];
    for (int k = 0; k < 6; k++)                     /* L^T = [C1; C2] */
        for (int j = 0; j < n; j++)
            *o++ = L[6 * j + k];
    for (int j = 0; j < n; j++)
        *o++ = omega[j] * omega[j];
    for (int j = 0; j < n; j++)
        *o++ = 2.0 * zeta[j] * omega[j];
    memcpy(o, par + f[TITOP_F_I_PHI_PHI], 9 * n * n * sizeof(double));
    o += 9 * n * n;
    memcpy(o, E, 9 * n * sizeof(double));
    o += 9 * n;
    for (int j = 0; j < n; j++)
        *o++ = E[j] + E[4 * n + j] + E[8 * n + j];
    static const int K0_fields[3] = {TITOP_F_K0T, TITOP_F_K0R, TITOP_F_K0OM}, K0_blocks[3] = {3, 3, 6};
    double *K0[3];
    for (int k = 0; k < 3; k++) {                   /* without stiffening, no K0 term (eq. (F10)) */
        K0[k] = o;
        for (int i = 0; i < K0_blocks[k] * n * n; i++)
            *o++ = s * par[f[K0_fields[k]] + i];
    }
    flags = o;
    nonzero(d + D_PC + 3 * nc + 8 * n, 9, n, flags + FF_F);
    for (int k = 0; k < 3; k++)
        nonzero(K0[k], K0_blocks[k], n, flags + (k == 0 ? FF_T : k == 1 ? FF_R : FF_OM));
    o += FF_N;
    for (int i = 0; i < nc; i++) {                  /* per node: phi, psi, K0F, K0M, their flags */
        const int *fn = f + TITOP_NF + TITOP_NN * i;
        memcpy(o, par + fn[TITOP_N_PHI], 3 * n * sizeof(double));
        memcpy(o + 3 * n, par + fn[TITOP_N_PSI], 3 * n * sizeof(double));
        o += 6 * n;
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 3 * n * n; j++)
                o[3 * n * n * k + j] = s * par[fn[k ? TITOP_N_K0M : TITOP_N_K0F] + j];
        nonzero(o, 3, n, o + 6 * n * n);
        nonzero(o + 3 * n * n, 3, n, o + 6 * n * n + 3);
        o += 6 * n * n + 6;
    }
    return 0;
}

/* the size of a flexible body's data after its nodes (flexible.h: flex_data, flex_port) */
static int flexible_size(int n, int nc)
{
    return 18 * n + 21 * n * n + FF_N + nc * (6 * n + 6 * n * n + 6);
}
