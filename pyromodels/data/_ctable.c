/* Two passes over an annotation table's columns that NumPy can only do with sorts or several
 * array passes; built with the package (see pyromodels.data.idmaps and .annotations).
 *
 * count_repeats: whether (item, worker) codes repeat a pair. Sorting the pairs answers it in
 * O(L log L); here the rows are grouped by item with a counting sort (skipped when they
 * already come in item order) and each worker remembers the last item it was seen on, so a
 * pair repeats exactly when a worker meets its own last item again: O(L + N + M).
 *
 * dense_codes: the codes of integer ids in a narrow range, i.e. each id's rank among the
 * sorted distinct ids, by marking the ids present in a table over the range and counting.
 *
 * label_statistics: labels per item, labels per worker and which (class, worker) pairs occur,
 * in one pass instead of three scatters.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static Py_ssize_t count(const int64_t *item, const int64_t *worker, Py_ssize_t L, Py_ssize_t N,
                        Py_ssize_t M, int64_t *ptr, int64_t *grouped, int64_t *last, int *bad)
{
    int sorted = 1;
    for (Py_ssize_t i = 0; i < L; ++i) {
        if ((uint64_t)item[i] >= (uint64_t)N || (uint64_t)worker[i] >= (uint64_t)M) {
            *bad = 1;
            return 0;
        }
        if (i && item[i] < item[i - 1])
            sorted = 0;
    }
    const int64_t *workers = worker;
    if (!sorted) {
        memset(ptr, 0, ((size_t)N + 1) * sizeof(int64_t));
        for (Py_ssize_t i = 0; i < L; ++i)
            ++ptr[item[i] + 1];
        for (Py_ssize_t n = 0; n < N; ++n)
            ptr[n + 1] += ptr[n];
        for (Py_ssize_t i = 0; i < L; ++i)
            grouped[ptr[item[i]]++] = worker[i];
        workers = grouped;
    }
    for (Py_ssize_t m = 0; m < M; ++m)
        last[m] = -1;
    /* grouped rows come in item order, so item[i] of the sorted input and the running item of
     * the grouped one are the same sequence: rebuild it from the counts when grouped */
    Py_ssize_t repeats = 0;
    if (sorted) {
        for (Py_ssize_t i = 0; i < L; ++i) {
            const int64_t w = workers[i];
            if (last[w] == item[i])
                ++repeats;
            last[w] = item[i];
        }
    } else {
        Py_ssize_t i = 0;
        for (Py_ssize_t n = 0; n < N; ++n) {
            /* after the scatter, ptr[n] is the end of item n's rows */
            for (; i < ptr[n]; ++i) {
                const int64_t w = workers[i];
                if (last[w] == n)
                    ++repeats;
                last[w] = n;
            }
        }
    }
    return repeats;
}

/* ------------------------------------------------------------------ argument handling */

/* Take the C-contiguous buffers of args[first + i] for i < n (writable where writable[i]);
 * returns how many were taken: n, or fewer with a Python error set. */
static int take_buffers(PyObject *const *args, int first, int n, const int *writable,
                        Py_buffer *b)
{
    for (int i = 0; i < n; ++i) {
        int flags = PyBUF_C_CONTIGUOUS | (writable[i] ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[first + i], &b[i], flags) < 0)
            return i;
    }
    return n;
}

static void release_buffers(Py_buffer *b, int n)
{
    for (int i = 0; i < n; ++i)
        PyBuffer_Release(&b[i]);
}

/* nargs == want and the first k arguments as sizes >= 1 (k <= 3), or a Python error */
static int sizes(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *name,
                 int k, Py_ssize_t *size)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", name, want, nargs);
        return -1;
    }
    for (int i = 0; i < k; ++i) {
        size[i] = PyLong_AsSsize_t(args[i]);
        if (PyErr_Occurred())
            return -1;
        if (size[i] < 1) {
            PyErr_Format(PyExc_ValueError, "%s needs sizes >= 1, got %zd", name, size[i]);
            return -1;
        }
    }
    return 0;
}

static int int64_rows(const Py_buffer *b, int n, Py_ssize_t *rows)
{
    *rows = b[0].len / (Py_ssize_t)sizeof(int64_t);
    for (int i = 0; i < n; ++i)
        if (b[i].len != b[0].len || b[i].len % (Py_ssize_t)sizeof(int64_t))
            return -1;
    return 0;
}

/* ------------------------------------------------------------------ the module's functions */

PyDoc_STRVAR(count_repeats_doc,
"count_repeats(N, M, item, worker) -> int\n\n"
"The number of rows whose (item, worker) pair occurred in an earlier row; item and worker\n"
"are (L,) int64 codes in 0 .. N - 1 and 0 .. M - 1 (ValueError otherwise).");

static PyObject *py_count_repeats(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t size[2], L;
    Py_buffer b[2];
    const int writable[2] = {0, 0};
    if (sizes(args, nargs, 4, "count_repeats", 2, size) < 0)
        return NULL;
    const Py_ssize_t N = size[0], M = size[1];
    const int held = take_buffers(args, 2, 2, writable, b);
    PyObject *out = NULL;
    int64_t *ptr = NULL, *grouped = NULL, *last = NULL;
    if (held < 2)
        goto done;
    if (int64_rows(b, 2, &L) < 0) {
        PyErr_SetString(PyExc_ValueError, "item and worker must be int64 arrays of one length");
        goto done;
    }
    ptr = PyMem_Malloc(((size_t)N + 1) * sizeof(int64_t));
    grouped = PyMem_Malloc(((size_t)L + 1) * sizeof(int64_t));
    last = PyMem_Malloc((size_t)M * sizeof(int64_t));
    if (ptr == NULL || grouped == NULL || last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int bad = 0;
    Py_ssize_t repeats;
    Py_BEGIN_ALLOW_THREADS
    repeats = count(b[0].buf, b[1].buf, L, N, M, ptr, grouped, last, &bad);
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_Format(PyExc_ValueError, "an item code is outside 0 .. %zd or a worker code "
                     "outside 0 .. %zd", N - 1, M - 1);
    else
        out = PyLong_FromSsize_t(repeats);
done:
    PyMem_Free(ptr);
    PyMem_Free(grouped);
    PyMem_Free(last);
    release_buffers(b, held);
    return out;
}

PyDoc_STRVAR(dense_codes_doc,
"dense_codes(values, lo, codes, present) -> int\n\n"
"values: (L,) int64 ids, all in lo .. lo + S - 1 where S is the length of present ((S,)\n"
"uint8, filled with 1 where an id occurs, else 0); codes ((L,) int64) get each id's rank\n"
"among the distinct ids in increasing order. Returns the number of distinct ids.");

static PyObject *py_dense_codes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t L;
    Py_buffer b[3];  /* values, codes, present */
    const int writable[3] = {0, 1, 1};
    if (sizes(args, nargs, 4, "dense_codes", 0, NULL) < 0)
        return NULL;
    const long long lo = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *out = NULL;
    int64_t *rank = NULL;
    /* values is args[0]; codes and present args[2], args[3] */
    const int first = take_buffers(args, 0, 1, writable, b);
    const int held = first < 1 ? first : 1 + take_buffers(args, 2, 2, writable + 1, b + 1);
    if (held < 3)
        goto done;
    const Py_ssize_t S = b[2].len;
    if (int64_rows(b, 2, &L) < 0 || S < 1) {
        PyErr_SetString(PyExc_ValueError, "values and codes must be int64 arrays of one "
                        "length and present must not be empty");
        goto done;
    }
    rank = PyMem_Malloc((size_t)S * sizeof(int64_t));
    if (rank == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *v = b[0].buf;
    int64_t *codes = b[1].buf;
    uint8_t *present = b[2].buf;
    int bad = 0;
    Py_ssize_t distinct = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(present, 0, (size_t)S);
    for (Py_ssize_t i = 0; i < L; ++i) {
        const uint64_t at = (uint64_t)v[i] - (uint64_t)lo;
        if (at >= (uint64_t)S) {
            bad = 1;
            break;
        }
        present[at] = 1;
    }
    if (!bad) {
        for (Py_ssize_t s = 0; s < S; ++s) {
            rank[s] = distinct;
            distinct += present[s];
        }
        for (Py_ssize_t i = 0; i < L; ++i)
            codes[i] = rank[(uint64_t)v[i] - (uint64_t)lo];
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_Format(PyExc_ValueError, "an id lies outside lo .. lo + %zd", S - 1);
    else
        out = PyLong_FromSsize_t(distinct);
done:
    PyMem_Free(rank);
    release_buffers(b, held);
    return out;
}

PyDoc_STRVAR(label_statistics_doc,
"label_statistics(N, M, K, item, worker, label, per_item, per_worker, pairs) -> None\n\n"
"item, worker, label: (L,) int64 codes in 0 .. N - 1, 0 .. M - 1, 0 .. K - 1 (ValueError\n"
"otherwise). Fills per_item ((N,) int64) and per_worker ((M,) int64) with label counts and\n"
"pairs ((K, M) uint8) with 1 where class k was given by worker m, else 0.");

static PyObject *py_label_statistics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t size[3], L;
    Py_buffer b[6];
    const int writable[6] = {0, 0, 0, 1, 1, 1};
    if (sizes(args, nargs, 9, "label_statistics", 3, size) < 0)
        return NULL;
    const Py_ssize_t N = size[0], M = size[1], K = size[2];
    const int held = take_buffers(args, 3, 6, writable, b);
    PyObject *out = NULL;
    if (held < 6)
        goto done;
    if (int64_rows(b, 3, &L) < 0 || b[3].len != N * (Py_ssize_t)sizeof(int64_t)
        || b[4].len != M * (Py_ssize_t)sizeof(int64_t) || b[5].len != K * M) {
        PyErr_SetString(PyExc_ValueError, "item, worker and label must be int64 arrays of one "
                        "length, per_item (N,) and per_worker (M,) int64, pairs (K, M) uint8");
        goto done;
    }
    const int64_t *item = b[0].buf, *worker = b[1].buf, *label = b[2].buf;
    int64_t *per_item = b[3].buf, *per_worker = b[4].buf;
    uint8_t *pairs = b[5].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(per_item, 0, (size_t)N * sizeof(int64_t));
    memset(per_worker, 0, (size_t)M * sizeof(int64_t));
    memset(pairs, 0, (size_t)(K * M));
    for (Py_ssize_t i = 0; i < L; ++i) {
        const uint64_t n = (uint64_t)item[i], m = (uint64_t)worker[i], k = (uint64_t)label[i];
        if (n >= (uint64_t)N || m >= (uint64_t)M || k >= (uint64_t)K) {
            bad = 1;
            break;
        }
        ++per_item[n];
        ++per_worker[m];
        pairs[k * (uint64_t)M + m] = 1;
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "a code lies outside 0 .. N - 1, 0 .. M - 1 or "
                        "0 .. K - 1");
    else
        out = Py_NewRef(Py_None);
done:
    release_buffers(b, held);
    return out;
}

static PyMethodDef methods[] = {
    {"label_statistics", (PyCFunction)(void (*)(void))py_label_statistics, METH_FASTCALL,
     label_statistics_doc},
    {"count_repeats", (PyCFunction)(void (*)(void))py_count_repeats, METH_FASTCALL,
     count_repeats_doc},
    {"dense_codes", (PyCFunction)(void (*)(void))py_dense_codes, METH_FASTCALL, dense_codes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctable",
    "Passes over an annotation table's columns in C (see pyromodels.data.idmaps).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__ctable(void)
{
    return PyModule_Create(&module);
}
