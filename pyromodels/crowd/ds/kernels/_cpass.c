/* The Dawid-Skene EM passes over the items, compiled ahead of time (built with the package).
 *
 * The same loops as the numba passes (passes.py, unrolled.py), for a process that should not
 * pay numba's start-up (a fresh process loads this module in about a millisecond). Item n's
 * unnormalised posterior is the running product
 *
 *     a[k] = prior[k] * prod over n's labels l of conf[w_l, y_l, k],
 *
 * rescaled by its largest entry whenever that falls below 2^-300 (the log of each scale is
 * added to the running total), then q[n, k] = a[k] / s with s = sum_k a[k]. The normalisers s
 * are multiplied into a running product whose log is taken before it can underflow.
 *
 * Layouts (C order, float64 unless said): ptr (N + 1,) int64 with item n's labels at rows
 * ptr[n] .. ptr[n + 1] - 1 of cells (L,) int32, where the label y given by worker w is the
 * cell w * K + y (one index reads the confusion column and the counts row of the pair);
 * prior (K,); conf (M, K, K) with conf[m, j, :] the column confusion[m, :, j]; counts
 * (M, K, K) laid out [m, j, k]; q (N, K).
 *
 * Every cell is checked against M * K as it is read and ptr is checked to be a valid grouping,
 * so a bad argument raises ValueError instead of reading out of bounds. The loops run without
 * the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define SMALL 0x1p-300
#define RUN_FLOOR 0x1p-600
/* K up to this many classes gets a pass compiled for its K (products kept in registers) */
#define MAX_FIXED 16

#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

typedef struct {
    const int64_t *ptr;
    const int32_t *cells;
    const double *prior;
    const double *conf;
    Py_ssize_t N, M, K;
    uint64_t num_cells; /* M * K */
    /* items with at most this many labels cannot need a rescaling (see safe_labels) */
    int64_t safe;
    int bad; /* set when a code is out of range */
} Pass;

/* ------------------------------------------------------------------ the shared pieces */

/* The most labels an item can have while its running product provably stays above SMALL,
 * so that the rescaling test can be skipped without changing a single rounding. Every class
 * whose product ends positive has a[k] >= (smallest positive prior) * (smallest positive
 * confusion entry)^j after j labels, so the largest entry stays above SMALL for
 * j <= (log SMALL - log prior_min) / log conf_min; an item impossible under every class ends
 * with s = 0 either way. A margin of 2^10 covers the rounding of the products. */
static int64_t safe_labels(const double *prior, const double *conf, Py_ssize_t M, Py_ssize_t K)
{
    double prior_min = 1.0, conf_min = 1.0;
    for (Py_ssize_t k = 0; k < K; ++k)
        if (prior[k] > 0.0 && prior[k] < prior_min)
            prior_min = prior[k];
    for (Py_ssize_t i = 0; i < M * K * K; ++i)
        if (conf[i] > 0.0 && conf[i] < conf_min)
            conf_min = conf[i];
    const double room = log(prior_min) - log(SMALL) - 10.0 * log(2.0);
    if (!(room >= 0.0) || !(conf_min > 0.0))
        return -1; /* NaN, or a prior too small already: test every label */
    if (conf_min >= 1.0)
        return INT64_MAX;
    const double most = floor(room / -log(conf_min));
    return most >= 9.0e18 ? INT64_MAX : (int64_t)most;
}

/* Item n's rescaled running product into a; returns logs plus the log of every scale taken
 * out, in order. */
INLINE double item_product(Pass *p, Py_ssize_t n, double *a, const Py_ssize_t K, double logs)
{
    for (Py_ssize_t k = 0; k < K; ++k)
        a[k] = p->prior[k];
    const int64_t hi = p->ptr[n + 1];
    if (hi - p->ptr[n] <= p->safe) { /* no rescaling can happen: no test */
        for (int64_t i = p->ptr[n]; i < hi; ++i) {
            const uint32_t cell = (uint32_t)p->cells[i];
            if (cell >= p->num_cells) {
                p->bad = 1;
                return logs;
            }
            const double *col = p->conf + (size_t)cell * K;
            for (Py_ssize_t k = 0; k < K; ++k)
                a[k] *= col[k];
        }
        return logs;
    }
    for (int64_t i = p->ptr[n]; i < hi; ++i) {
        const uint32_t cell = (uint32_t)p->cells[i];
        if (cell >= p->num_cells) {
            p->bad = 1;
            return logs;
        }
        const double *col = p->conf + (size_t)cell * K;
        double top = 0.0;
        for (Py_ssize_t k = 0; k < K; ++k) {
            const double v = a[k] * col[k];
            a[k] = v;
            top = v > top ? v : top;
        }
        if (top < SMALL && top > 0.0) {
            for (Py_ssize_t k = 0; k < K; ++k)
                a[k] /= top;
            logs += log(top);
        }
    }
    return logs;
}

INLINE double sum_of(const double *a, const Py_ssize_t K)
{
    double s = 0.0;
    for (Py_ssize_t k = 0; k < K; ++k)
        s += a[k];
    return s;
}

/* Add log s to log(*run) + *total without taking a log per item. */
INLINE void accumulate_log(double s, double *run, double *total)
{
    if (s < SMALL) {
        *total += log(s);
        return;
    }
    *run *= s;
    if (*run < RUN_FLOOR) {
        *total += log(*run);
        *run = 1.0;
    }
}

/* ------------------------------------------------------------------ the passes, any K */

INLINE double em_counts_k(Pass *p, double *heap, double *counts, double *qsum,
                          const Py_ssize_t K)
{
    /* the running products in local arrays (registers once the loops over k are unrolled):
     * through a pointer they could alias counts, and every product would go through memory */
    double local_a[MAX_FIXED], local_sums[MAX_FIXED];
    double *a = K <= MAX_FIXED ? local_a : heap, *sums = K <= MAX_FIXED ? local_sums : heap + K;
    double run = 1.0, total = 0.0;
    for (Py_ssize_t k = 0; k < K; ++k)
        sums[k] = 0.0;
    for (Py_ssize_t n = 0; n < p->N; ++n) {
        total = item_product(p, n, a, K, total);
        if (p->bad)
            return 0.0;
        const double s = sum_of(a, K);
        accumulate_log(s, &run, &total);
        const double inv = 1.0 / s;
        for (Py_ssize_t k = 0; k < K; ++k) {
            a[k] *= inv;
            sums[k] += a[k];
        }
        for (int64_t i = p->ptr[n]; i < p->ptr[n + 1]; ++i) {
            double *c = counts + (size_t)p->cells[i] * K;
            for (Py_ssize_t k = 0; k < K; ++k)
                c[k] += a[k];
        }
    }
    for (Py_ssize_t k = 0; k < K; ++k)
        qsum[k] += sums[k];
    return total + log(run);
}

INLINE void posteriors_k(Pass *p, double *heap, double *q, double *loglik, int64_t *best,
                         const Py_ssize_t K)
{
    double local_a[MAX_FIXED];
    double *a = K <= MAX_FIXED ? local_a : heap;
    for (Py_ssize_t n = 0; n < p->N; ++n) {
        const double shift = item_product(p, n, a, K, 0.0);
        if (p->bad)
            return;
        const double s = sum_of(a, K);
        for (Py_ssize_t k = 0; k < K; ++k)
            q[n * K + k] = a[k] / s;
        loglik[n] = log(s) + shift;
        if (best != NULL) { /* the first class of largest posterior, as argmax takes it */
            int64_t top = 0;
            double largest = a[0];
            for (Py_ssize_t k = 1; k < K; ++k) { /* selects, not branches: the winner is random */
                const int wins = a[k] > largest;
                top = wins ? k : top;
                largest = wins ? a[k] : largest;
            }
            best[n] = top;
        }
    }
}

INLINE double log_marginal_k(Pass *p, double *heap, const Py_ssize_t K)
{
    double local_a[MAX_FIXED];
    double *a = K <= MAX_FIXED ? local_a : heap;
    double run = 1.0, total = 0.0;
    for (Py_ssize_t n = 0; n < p->N; ++n) {
        total = item_product(p, n, a, K, total);
        if (p->bad)
            return 0.0;
        accumulate_log(sum_of(a, K), &run, &total);
    }
    return total + log(run);
}

/* One instance per K <= MAX_FIXED (the compiler unrolls the loops over k) and one for any K. */
#define FIXED_CASES(CALL) \
    CALL(2) CALL(3) CALL(4) CALL(5) CALL(6) CALL(7) CALL(8) CALL(9) CALL(10) CALL(11) \
    CALL(12) CALL(13) CALL(14) CALL(15) CALL(16)

static double em_counts_any(Pass *p, double *heap, double *counts, double *qsum)
{
    switch (p->K) {
#define CASE(k) case k: return em_counts_k(p, heap, counts, qsum, k);
        FIXED_CASES(CASE)
#undef CASE
    default: return em_counts_k(p, heap, counts, qsum, p->K);
    }
}

static void posteriors_any(Pass *p, double *a, double *q, double *loglik, int64_t *best)
{
    switch (p->K) {
#define CASE(k) case k: posteriors_k(p, a, q, loglik, best, k); return;
        FIXED_CASES(CASE)
#undef CASE
    default: posteriors_k(p, a, q, loglik, best, p->K);
    }
}

static double log_marginal_any(Pass *p, double *a)
{
    switch (p->K) {
#define CASE(k) case k: return log_marginal_k(p, a, k);
        FIXED_CASES(CASE)
#undef CASE
    default: return log_marginal_k(p, a, p->K);
    }
}

/* Add q[n] to the counts of every label of item n. */
static void counts_pass(Pass *p, const double *q, double *counts)
{
    const Py_ssize_t K = p->K;
    for (Py_ssize_t n = 0; n < p->N; ++n) {
        for (int64_t i = p->ptr[n]; i < p->ptr[n + 1]; ++i) {
            const uint32_t cell = (uint32_t)p->cells[i];
            if (cell >= p->num_cells) {
                p->bad = 1;
                return;
            }
            double *c = counts + (size_t)cell * K;
            for (Py_ssize_t k = 0; k < K; ++k)
                c[k] += q[n * K + k];
        }
    }
}

/* The counts of the majority-vote start: counts_pass with q[n] the fraction of item n's labels
 * given to each class (uniform for an item without labels), formed on the fly; qsum gets
 * sum_n q[n]. heap holds the fractions for more than MAX_FIXED classes. */
INLINE void vote_counts_k(Pass *p, double *heap, double *counts, double *qsum,
                          const Py_ssize_t K)
{
    double local_frac[MAX_FIXED];
    double *frac = K <= MAX_FIXED ? local_frac : heap;
    for (Py_ssize_t n = 0; n < p->N; ++n) {
        const int64_t lo = p->ptr[n], hi = p->ptr[n + 1];
        for (Py_ssize_t k = 0; k < K; ++k)
            frac[k] = 0.0;
        for (int64_t i = lo; i < hi; ++i) {
            const uint32_t cell = (uint32_t)p->cells[i];
            if (cell >= p->num_cells) {
                p->bad = 1;
                return;
            }
            frac[cell % K] += 1.0;
        }
        const double inv = hi > lo ? 1.0 / (double)(hi - lo) : 0.0;
        for (Py_ssize_t k = 0; k < K; ++k) {
            frac[k] = hi > lo ? frac[k] * inv : 1.0 / (double)K;
            qsum[k] += frac[k];
        }
        for (int64_t i = lo; i < hi; ++i) {
            double *c = counts + (size_t)p->cells[i] * K;
            for (Py_ssize_t k = 0; k < K; ++k)
                c[k] += frac[k];
        }
    }
}

static void vote_counts_any(Pass *p, double *heap, double *counts, double *qsum)
{
    switch (p->K) {
#define CASE(k) case k: vote_counts_k(p, heap, counts, qsum, k); return;
        FIXED_CASES(CASE)
#undef CASE
    default: vote_counts_k(p, heap, counts, qsum, p->K);
    }
}

/* ------------------------------------------------------------------ argument handling */

typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* Take the buffer of obj (writable when asked) and check that it holds exactly count items of
 * size bytes each; on failure set a Python error naming the argument and return -1. */
static int take(PyObject *obj, Buf *b, const char *name, Py_ssize_t count, Py_ssize_t size,
                int writable)
{
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous%s buffer", name,
                     writable ? " writable" : "");
        return -1;
    }
    b->held = 1;
    if (b->view.len != count * size) {
        PyErr_Format(PyExc_ValueError, "%s must hold %zd items of %zd bytes (%zd bytes), "
                     "got %zd bytes", name, count, size, count * size, b->view.len);
        return -1;
    }
    return 0;
}

static void release(Buf *bufs, int n)
{
    for (int i = 0; i < n; ++i)
        if (bufs[i].held)
            PyBuffer_Release(&bufs[i].view);
}

/* The grouping (ptr, cells) and the sizes: checks shared by every pass. */
static int take_groups(PyObject *const *args, Buf *bufs, Pass *p, Py_ssize_t N, Py_ssize_t M,
                       Py_ssize_t K)
{
    if (N < 0 || M < 1 || K < 2) {
        PyErr_Format(PyExc_ValueError, "need N >= 0, M >= 1 and K >= 2, got %zd, %zd and %zd",
                     N, M, K);
        return -1;
    }
    if (take(args[0], &bufs[0], "ptr", N + 1, sizeof(int64_t), 0) < 0)
        return -1;
    const int64_t *ptr = (const int64_t *)bufs[0].view.buf;
    const int64_t L = ptr[N];
    if (ptr[0] != 0 || L < 0) {
        PyErr_SetString(PyExc_ValueError, "ptr must start at 0 and end at the number of labels");
        return -1;
    }
    for (Py_ssize_t n = 0; n < N; ++n) {
        if (ptr[n + 1] < ptr[n]) {
            PyErr_SetString(PyExc_ValueError, "ptr must be non-decreasing");
            return -1;
        }
    }
    if ((uint64_t)M * (uint64_t)K > (uint64_t)INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "M * K must be below 2^31 for int32 cells, got %zd * %zd",
                     M, K);
        return -1;
    }
    if (take(args[1], &bufs[1], "cells", L, sizeof(int32_t), 0) < 0)
        return -1;
    p->ptr = ptr;
    p->cells = (const int32_t *)bufs[1].view.buf;
    p->num_cells = (uint64_t)M * (uint64_t)K;
    p->N = N;
    p->M = M;
    p->K = K;
    p->bad = 0;
    p->safe = -1;
    return 0;
}

static int bad_codes(const Pass *p)
{
    if (p->bad)
        PyErr_Format(PyExc_ValueError, "a cell (worker * K + label) is outside 0 .. %zd",
                     p->M * p->K - 1);
    return p->bad;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", name, want, nargs);
        return -1;
    }
    return 0;
}

static int sizes(PyObject *const *args, Py_ssize_t *N, Py_ssize_t *M, Py_ssize_t *K)
{
    *N = PyLong_AsSsize_t(args[0]);
    *M = PyLong_AsSsize_t(args[1]);
    *K = PyLong_AsSsize_t(args[2]);
    return PyErr_Occurred() ? -1 : 0;
}

/* 2K doubles of scratch for the passes over more than MAX_FIXED classes (the others keep
 * theirs in local arrays); *heap stays NULL for them */
static int scratch(Py_ssize_t K, double **heap)
{
    *heap = NULL;
    if (K <= MAX_FIXED)
        return 0;
    *heap = PyMem_Malloc(2 * (size_t)K * sizeof(double));
    if (*heap == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The arguments every pass starts with: nargs == want, the sizes N, M, K (args[0..2]) and
 * the grouping (args[3], args[4] into b[0], b[1]); sets the sizes into *N, *M, *K. */
static int start_pass(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
                      const char *name, Buf *b, Pass *p, Py_ssize_t *N, Py_ssize_t *M,
                      Py_ssize_t *K)
{
    if (check_nargs(nargs, want, name) < 0 || sizes(args, N, M, K) < 0)
        return -1;
    return take_groups(args + 3, b, p, *N, *M, *K);
}

/* prior (args[5], into b[2]) and conf (args[6], into b[3]) of the product passes, and the
 * pass's parameters set from them */
static int take_parameters(PyObject *const *args, Buf *b, Pass *p, Py_ssize_t M, Py_ssize_t K)
{
    if (take(args[5], &b[2], "prior", K, sizeof(double), 0) < 0
        || take(args[6], &b[3], "conf", M * K * K, sizeof(double), 0) < 0)
        return -1;
    p->prior = b[2].view.buf;
    p->conf = b[3].view.buf;
    p->safe = safe_labels(p->prior, p->conf, M, K);
    return 0;
}

/* After a pass: free its scratch, release the n buffers and raise on a bad code (-1). */
static int finish(const Pass *p, double *heap, Buf *b, int n)
{
    PyMem_Free(heap);
    release(b, n);
    return bad_codes(p) ? -1 : 0;
}

/* ------------------------------------------------------------------ the module's functions */

PyDoc_STRVAR(em_counts_doc,
"em_counts(N, M, K, ptr, cells, prior, conf, counts, qsum) -> float\n\n"
"Add one E-step's expected confusion counts to counts (M, K, K) [m, j, k] and sum_n q[n] to\n"
"qsum (K,); return log p(labels | prior, conf) (-inf or nan when an item is impossible).");

static PyObject *py_em_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t N, M, K;
    Buf b[6] = {{{0}}};
    Pass p;
    double total = 0.0, *a = NULL;
    if (start_pass(args, nargs, 9, "em_counts", b, &p, &N, &M, &K) < 0
        || take_parameters(args, b, &p, M, K) < 0
        || take(args[7], &b[4], "counts", M * K * K, sizeof(double), 1) < 0
        || take(args[8], &b[5], "qsum", K, sizeof(double), 1) < 0 || scratch(K, &a) < 0) {
        release(b, 6);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    total = em_counts_any(&p, a, b[4].view.buf, b[5].view.buf);
    Py_END_ALLOW_THREADS
    return finish(&p, a, b, 6) < 0 ? NULL : PyFloat_FromDouble(total);
}

PyDoc_STRVAR(posteriors_doc,
"posteriors(N, M, K, ptr, cells, prior, conf, q, loglik, best) -> None\n\n"
"Fill q (N, K) with the class posteriors, loglik (N,) with log p(labels_n | theta) and, unless\n"
"best is None, best (N,) int64 with each item's most probable class (the first on ties).");

static PyObject *py_posteriors(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t N, M, K;
    Buf b[7] = {{{0}}};
    Pass p;
    double *a = NULL;
    if (start_pass(args, nargs, 10, "posteriors", b, &p, &N, &M, &K) < 0
        || take_parameters(args, b, &p, M, K) < 0
        || take(args[7], &b[4], "q", N * K, sizeof(double), 1) < 0
        || take(args[8], &b[5], "loglik", N, sizeof(double), 1) < 0
        || (args[9] != Py_None && take(args[9], &b[6], "best", N, sizeof(int64_t), 1) < 0)
        || scratch(K, &a) < 0) {
        release(b, 7);
        return NULL;
    }
    int64_t *best = args[9] == Py_None ? NULL : b[6].view.buf;
    Py_BEGIN_ALLOW_THREADS
    posteriors_any(&p, a, b[4].view.buf, b[5].view.buf, best);
    Py_END_ALLOW_THREADS
    if (finish(&p, a, b, 7) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(log_marginal_doc,
"log_marginal(N, M, K, ptr, cells, prior, conf) -> float\n\n"
"log p(labels | prior, conf) with the classes summed out.");

static PyObject *py_log_marginal(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t N, M, K;
    Buf b[4] = {{{0}}};
    Pass p;
    double total = 0.0, *a = NULL;
    if (start_pass(args, nargs, 7, "log_marginal", b, &p, &N, &M, &K) < 0
        || take_parameters(args, b, &p, M, K) < 0
        || scratch(K, &a) < 0) {
        release(b, 4);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    total = log_marginal_any(&p, a);
    Py_END_ALLOW_THREADS
    return finish(&p, a, b, 4) < 0 ? NULL : PyFloat_FromDouble(total);
}

PyDoc_STRVAR(counts_doc,
"counts(N, M, K, ptr, cells, q, counts) -> None\n\n"
"Add q[n] (q is (N, K)) to the counts (M, K, K) [m, j, k] of every label of item n.");

static PyObject *py_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t N, M, K;
    Buf b[4] = {{{0}}};
    Pass p;
    if (start_pass(args, nargs, 7, "counts", b, &p, &N, &M, &K) < 0
        || take(args[5], &b[2], "q", N * K, sizeof(double), 0) < 0
        || take(args[6], &b[3], "counts", M * K * K, sizeof(double), 1) < 0) {
        release(b, 4);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    counts_pass(&p, b[2].view.buf, b[3].view.buf);
    Py_END_ALLOW_THREADS
    if (finish(&p, NULL, b, 4) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(group_doc,
"group_by_item(N, M, K, item, workers, labels, ptr, out_cells) -> None\n\n"
"Group the rows (item, workers, labels: (L,) int64 codes) by item: ptr (N + 1,) int64 must\n"
"hold the running label counts per item; row i's cell workers[i] * K + labels[i] goes to the\n"
"next free slot of item[i] in out_cells ((L,) int32), rows taken in order (a stable counting\n"
"sort; rows already in item order are only coded).");

static PyObject *py_group_by_item(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t N, M, K;
    Buf b[5] = {{{0}}};
    int64_t *fill = NULL;
    int bad = 0;
    if (check_nargs(nargs, 8, "group_by_item") < 0 || sizes(args, &N, &M, &K) < 0)
        return NULL;
    if (N < 0 || M < 1 || K < 2 || (uint64_t)M * (uint64_t)K > (uint64_t)INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "need N >= 0, M >= 1, K >= 2 and M * K below 2^31, got "
                     "%zd, %zd and %zd", N, M, K);
        return NULL;
    }
    if (take(args[6], &b[3], "ptr", N + 1, sizeof(int64_t), 0) < 0)
        goto fail;
    const int64_t *ptr = b[3].view.buf;
    const Py_ssize_t L = (Py_ssize_t)ptr[N];
    if (take(args[3], &b[0], "item", L, sizeof(int64_t), 0) < 0
        || take(args[4], &b[1], "workers", L, sizeof(int64_t), 0) < 0
        || take(args[5], &b[2], "labels", L, sizeof(int64_t), 0) < 0
        || take(args[7], &b[4], "out_cells", L, sizeof(int32_t), 1) < 0)
        goto fail;
    fill = PyMem_Malloc(((size_t)N + 1) * sizeof(int64_t));
    if (fill == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(fill, ptr, ((size_t)N + 1) * sizeof(int64_t));
    const int64_t *item = b[0].view.buf, *wk = b[1].view.buf, *lb = b[2].view.buf;
    int32_t *out = b[4].view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < L; ++i) {
        const int64_t n = item[i], w = wk[i], y = lb[i];
        if ((uint64_t)n >= (uint64_t)N || (uint64_t)w >= (uint64_t)M
            || (uint64_t)y >= (uint64_t)K || fill[n] >= ptr[n + 1]) {
            bad = 1;
            break;
        }
        out[fill[n]++] = (int32_t)(w * K + y);
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(fill);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a code is out of range or ptr does not match the "
                        "label counts of the items");
        goto fail;
    }
    release(b, 5);
    Py_RETURN_NONE;
fail:
    release(b, 5);
    return NULL;
}

PyDoc_STRVAR(vote_counts_doc,
"vote_counts(N, M, K, ptr, cells, counts, qsum) -> None\n\n"
"Add to counts (M, K, K) [m, j, k] the confusion counts of the majority-vote fractions (q[n]\n"
"the fraction of item n's labels given to each class, uniform without labels) and sum_n q[n]\n"
"to qsum (K,).");

static PyObject *py_vote_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t N, M, K;
    Buf b[4] = {{{0}}};
    Pass p;
    double *a = NULL;
    if (start_pass(args, nargs, 7, "vote_counts", b, &p, &N, &M, &K) < 0
        || take(args[5], &b[2], "counts", M * K * K, sizeof(double), 1) < 0
        || take(args[6], &b[3], "qsum", K, sizeof(double), 1) < 0 || scratch(K, &a) < 0) {
        release(b, 4);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    vote_counts_any(&p, a, b[2].view.buf, b[3].view.buf);
    Py_END_ALLOW_THREADS
    if (finish(&p, a, b, 4) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"vote_counts", (PyCFunction)(void (*)(void))py_vote_counts, METH_FASTCALL, vote_counts_doc},
    {"em_counts", (PyCFunction)(void (*)(void))py_em_counts, METH_FASTCALL, em_counts_doc},
    {"posteriors", (PyCFunction)(void (*)(void))py_posteriors, METH_FASTCALL, posteriors_doc},
    {"log_marginal", (PyCFunction)(void (*)(void))py_log_marginal, METH_FASTCALL, log_marginal_doc},
    {"counts", (PyCFunction)(void (*)(void))py_counts, METH_FASTCALL, counts_doc},
    {"group_by_item", (PyCFunction)(void (*)(void))py_group_by_item, METH_FASTCALL, group_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cpass",
    "The Dawid-Skene EM passes compiled ahead of time (see pyromodels.crowd.ds.kernels.compiled).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__cpass(void)
{
    return PyModule_Create(&module);
}
