/* Fluxion native runtime: included at the top of every generated translation unit.
 *
 * Values: Real = double, Int = int64_t, Bool = uint8_t, () = uint8_t; tuples are C
 * structs held by value; arrays, enum values and closures are reference-counted heap
 * objects (a header with the count first). A count below zero marks an immortal
 * object (nullary constructors are static). NULL is the symbolic zero of an array,
 * enum or function tangent; -0.0 is the zero of a Real tangent (the unit of +).
 *
 * Errors: fx_fail records the message and source span and longjmps to the entry
 * point, which frees every object still live (fx_free_all) and returns 1. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <setjmp.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
/* glibc serves a block past its mmap threshold (128 KiB at first) by mmap, and gives
 * the top of the heap back past its trim threshold: a program whose arrays of 10^4
 * pairs live until a sweep (loop nodes hold them) then faulted its pages in anew on
 * every run (GradBench ode's gradient: 14 ms, half of it in the kernel). Freed memory
 * stays with the process instead, up to these bounds; the memory budget counts what
 * the program holds, not this. */
__attribute__((constructor)) static void fx_malloc_setup(void) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
#endif

typedef double fx_real;
typedef int64_t fx_int;
typedef uint8_t fx_bool;
typedef uint8_t fx_unit;

/* What the entry point reports to its caller on a runtime error. */
typedef struct {
  char message[512];
  uint32_t source, start, end;
  /* A real the message shows: the caller prints it where the message has \x01, in
   * the interpreter's format (shortest round trip). */
  double real;
} fx_error;

/* Limits the caller sets: the lowest stack address a call may reach, and the bytes
 * of heap the program may hold. And how often to run the entry's function on the
 * arguments decoded once (a benchmark's runs, as hand-written tools time theirs):
 * at least `min_runs` times and until the runs took `min_ns` in all, each run's
 * nanoseconds written to `times` (at most `times_cap` runs; `*n_times` of them). With
 * `times` NULL the function runs once, untimed. */
typedef struct {
  uintptr_t stack_limit;
  uint64_t memory_limit;
  uint64_t min_runs, min_ns;
  uint64_t *times;
  uint64_t times_cap;
  uint64_t *n_times;
} fx_config;

/* One call at a time per process (fluxion-native holds a lock around fx_entry):
 * thread-local state in a loaded library costs a function call per access. */
static jmp_buf fx_jmp;
static fx_error *fx_err;
static uintptr_t fx_stack_limit, fx_entry_limit;
/* Objects whose freeing was put off (see FX_DEC_LATER). */
typedef void (*fx_dec_fn)(void *);
static struct {
  void **objs;
  fx_dec_fn *fns;
  int64_t len, cap, draining;
} fx_later;
static uint64_t fx_memory_limit, fx_memory_used;
/* Live heap objects: back to zero after a call that returned normally. */
static int64_t fx_live_objects;
int64_t fx_live(void) { return fx_live_objects; }

#define FX_MAX_ARRAY_LEN ((int64_t)1 << 28)

static void fx_fail(uint32_t src, uint32_t start, uint32_t end, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
#include <stdarg.h>
/* The innermost call of a prelude function from the user's code (source 0 is the
 * prelude): a fault inside the prelude is the user's mistake at that call, reported
 * there and naming the function, as the interpreter's attribute_to_caller does. Set
 * around such calls (saved and restored by the caller), cleared on entry. */
typedef struct {
  const char *name;
  uint32_t src, start, end;
} fx_site_t;
static fx_site_t fx_site;

static void fx_fail(uint32_t src, uint32_t start, uint32_t end, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fx_err->message, sizeof fx_err->message, fmt, ap);
  va_end(ap);
  if (src == 0 && fx_site.name) {
    size_t used = strlen(fx_err->message);
    /* An unnamed site: a helper the AD layers generated, not the user's to know. */
    if (fx_site.name[0])
      snprintf(fx_err->message + used, sizeof fx_err->message - used, " (in `%s`, a prelude function)", fx_site.name);
    src = fx_site.src;
    start = fx_site.start;
    end = fx_site.end;
  }
  fx_err->source = src;
  fx_err->start = start;
  fx_err->end = end;
  longjmp(fx_jmp, 1);
}

/* What fx_entry returns after a longjmp: 1 for a runtime error, 2 when the run needs
 * the interpreter (fx_miss). */
static int fx_fail_status;

/* A closure met an operator whose translation of its code was not made ahead of time
 * (resolve.rs leaves out what it cannot translate): the caller runs the program in
 * the interpreter instead, which translates at run time. */
static void fx_miss(uint32_t src, uint32_t start, uint32_t end) __attribute__((noreturn));
static void fx_miss(uint32_t src, uint32_t start, uint32_t end) {
  fx_fail_status = 2;
  fx_fail(src, start, end, "a closure met a differential operator with no translation made ahead of time");
}

/* Whether this frame lies below `limit` (the stack grows down): every stack check. */
#define FX_BELOW(limit) __builtin_expect((uintptr_t)__builtin_frame_address(0) < (limit), 0)

/* A walk over a value (reading the arguments, writing the result, `==`) recursing
 * once per level of an enum: on a value too deep for the stack left, the caller runs
 * the program in the interpreter instead, whose walks take any depth. */
static void fx_too_deep(const char *walk) __attribute__((noreturn, cold));
static void fx_too_deep(const char *walk) {
  fx_fail_status = 2;
  fx_fail(0, 0, 0, "a value nested too deeply for native code's %s", walk);
}
#define FX_DEEP_CHECK(walk)                           \
  do {                                                \
    if (FX_BELOW(fx_entry_limit)) fx_too_deep(walk);  \
  } while (0)

/* Deep recursion is an error, not a segfault: checked before every call (with the
 * call's span, as the interpreter reports it) and, with 64 KiB more room, on entry to
 * every function (which catches recursion through a higher-order built-in's loop). */
#define FX_STACK_CHECK_AT(limit, src, start, end)                                 \
  do {                                                                            \
    if (FX_BELOW(limit))                                                          \
      fx_fail(src, start, end, "stack depth exceeded (recursion too deep)");      \
  } while (0)
#define FX_STACK_CHECK(src, start, end) FX_STACK_CHECK_AT(fx_entry_limit, src, start, end)
#define FX_CALL_CHECK(src, start, end) FX_STACK_CHECK_AT(fx_stack_limit, src, start, end)

/* Every heap object starts with this header. A live object is on one circular list
 * (from the sentinel fx_all), so a call that fails frees what it held (fx_free_all);
 * an object in a free list keeps its next free object in `next`. */
typedef struct fx_hdr {
  int64_t rc;
  uint64_t bytes;
  struct fx_hdr *prev, *next;
} fx_hdr;
static fx_hdr fx_all = {0, 0, &fx_all, &fx_all};

/* Objects up to 64 KiB (closures, enum values, lazy cotangents: CHAD makes many per
 * element; rows and per-element arrays: a loop makes one per element) come from
 * per-size free lists instead of malloc: 16-byte classes up to 256 bytes, then four
 * classes per power of two (a quarter of the size wasted at most). Rows of a few
 * hundred bytes from malloc took a quarter of kmeans' `dir` (malloc and free per
 * row, per run). */
#define FX_POOL_CLASSES (16 + 4 * 8)
#define FX_POOL_MAX 65536
static void *fx_pool[FX_POOL_CLASSES];
/* The bytes the free lists hold, at most FX_POOL_HELD and an eighth of the memory
 * budget (beyond, a freed object goes back to malloc): memory the budget no longer
 * counts stays bounded. */
#define FX_POOL_HELD ((uint64_t)64 << 20)
static uint64_t fx_pool_held;

/* The class of an object of `bytes` (FX_POOL_CLASSES: none) and its size. */
static inline uint64_t fx_pool_class(uint64_t bytes, uint64_t *size) {
  if (bytes <= 256) {
    uint64_t c = bytes ? (bytes + 15) / 16 - 1 : 0;
    *size = (c + 1) * 16;
    return c;
  }
  if (bytes > FX_POOL_MAX) {
    *size = bytes;
    return FX_POOL_CLASSES;
  }
  /* bytes - 1 in [2^e, 2^(e+1)), e in 8..15: quarters of that range. */
  uint64_t e = 63 - (uint64_t)__builtin_clzll(bytes - 1), sub = ((bytes - 1) >> (e - 2)) & 3;
  *size = (4 + sub + 1) << (e - 2);
  return 16 + (e - 8) * 4 + sub;
}

/* A byte count as the interpreter words it (memory.rs `show_bytes`): whole MiB when it
 * is one, else one decimal in the largest unit that fits. */
static void fx_show_bytes(char *buf, size_t n, uint64_t bytes) {
  static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0) snprintf(buf, n, "%llu bytes", (unsigned long long)bytes);
  else if (v == (double)(uint64_t)v) snprintf(buf, n, "%llu %s", (unsigned long long)v, units[u]);
  else snprintf(buf, n, "%.1f %s", v, units[u]);
}

static void fx_over_budget(uint64_t bytes, uint32_t src, uint32_t start, uint32_t end) __attribute__((noreturn, cold));
static void fx_over_budget(uint64_t bytes, uint32_t src, uint32_t start, uint32_t end) {
  char limit[32], need[32], used[32];
  fx_show_bytes(limit, sizeof limit, fx_memory_limit);
  fx_show_bytes(need, sizeof need, bytes);
  fx_show_bytes(used, sizeof used, fx_memory_used);
  /* What is counted, as fluxion-interp's memory.rs says it (WHAT_IS_COUNTED). */
  fx_fail(src, start, end,
          "memory budget of %s exceeded: this operation needs %s more, with %s allocated (the budget counts the "
          "bytes the evaluation has allocated and not freed, reserved capacity included, which can exceed the "
          "resident memory a process monitor shows)",
          limit, need, used);
}

/* Whether `bytes` more fit in the memory budget (else the budget's runtime error). */
static inline void fx_budget(uint64_t bytes, uint32_t src, uint32_t start, uint32_t end) {
  if (fx_memory_used + bytes > fx_memory_limit) fx_over_budget(bytes, src, start, end);
}

static void *fx_alloc(uint64_t bytes, uint32_t src, uint32_t start, uint32_t end) {
  fx_budget(bytes, src, start, end);
  uint64_t size, cls = fx_pool_class(bytes, &size);
  fx_hdr *h;
  if (cls < FX_POOL_CLASSES && fx_pool[cls]) {
    h = (fx_hdr *)fx_pool[cls];
    fx_pool[cls] = h->next;
    fx_pool_held -= size;
  } else {
    h = (fx_hdr *)malloc(size);
    if (!h) fx_fail(src, start, end, "out of memory: an allocation of %llu bytes failed", (unsigned long long)bytes);
  }
  h->rc = 1;
  h->bytes = bytes;
  h->prev = &fx_all;
  h->next = fx_all.next;
  fx_all.next->prev = h;
  fx_all.next = h;
  fx_memory_used += bytes;
  fx_live_objects++;
  return h;
}

static void fx_release(void *p) {
  fx_hdr *h = (fx_hdr *)p;
  uint64_t size, bytes = h->bytes, cls = fx_pool_class(bytes, &size);
  fx_memory_used -= bytes;
  fx_live_objects--;
  h->prev->next = h->next;
  h->next->prev = h->prev;
  if (cls < FX_POOL_CLASSES && fx_pool_held + size <= FX_POOL_HELD && fx_pool_held + size <= fx_memory_limit / 8) {
    h->next = (fx_hdr *)fx_pool[cls];
    fx_pool[cls] = h;
    fx_pool_held += size;
  } else {
    free(h);
  }
}

/* Returns the free lists to malloc (after each entry call). */
static void fx_pool_clear(void) {
  for (int c = 0; c < FX_POOL_CLASSES; c++) {
    fx_hdr *p = (fx_hdr *)fx_pool[c];
    while (p) {
      fx_hdr *next = p->next;
      free(p);
      p = next;
    }
    fx_pool[c] = NULL;
  }
  fx_pool_held = 0;
}

/* After a runtime error: frees every object still live (what the failed call held;
 * no object outlives a call — results leave as words), then the free lists. */
static void fx_free_all(void) {
  fx_hdr *p = fx_all.next;
  while (p != &fx_all) {
    fx_hdr *next = p->next;
    free(p);
    p = next;
  }
  fx_all.prev = fx_all.next = &fx_all;
  fx_later.len = fx_later.draining = 0;
  fx_live_objects = 0;
  fx_memory_used = 0;
  fx_pool_clear();
}

static inline void fx_inc(void *p) {
  fx_hdr *h = (fx_hdr *)p;
  if (h && h->rc >= 0) h->rc++;
}

/* Drops one reference; true when the caller must free the object's contents. */
static inline int fx_dec_last(void *p) {
  fx_hdr *h = (fx_hdr *)p;
  return h && h->rc >= 0 && --h->rc == 0;
}

/* Arrays: header, length, kind, then the elements (8-byte aligned). An array
 * cotangent may be lazy (kind != 0), as in the interpreter's linear.rs: a one-hot, an
 * embedding or a sum of two, made in O(1) and made dense on first read (a sum of k
 * sparse terms costs O(n + k), not O(n k)). Every read goes through fx_dense. */
typedef struct {
  fx_hdr h;
  int64_t len;
  int64_t kind;
} fx_arr;
enum { FX_DENSE = 0, FX_ONEHOT = 1, FX_SUM = 2, FX_EMBED = 3 };
typedef struct fx_lazy {
  fx_arr a;
  /* The array's dense form (per element type), cached. */
  fx_arr *(*force)(struct fx_lazy *);
  fx_arr *cache;
  /* Drops the node's references (per element type). */
  void (*drop)(struct fx_lazy *);
} fx_lazy;
typedef struct {
  fx_lazy l;
  fx_arr *left, *right;
} fx_lazy_sum;
typedef struct {
  fx_lazy l;
  int64_t start;
  fx_arr *t;
} fx_lazy_embed;
/* FX_ALL_DENSE: the program makes no lazy array (emit.rs defines it when no lazy
 * helper was asked for), so reading an array checks nothing. */
static inline fx_arr *fx_dense(fx_arr *a) {
#ifdef FX_ALL_DENSE
  return a;
#else
  if (__builtin_expect(!a || a->kind == FX_DENSE, 1)) return a;
  fx_lazy *l = (fx_lazy *)a;
  if (!l->cache) l->cache = l->force(l);
  return l->cache;
#endif
}
/* A fact the C compiler may rely on (emit.rs `index_hints`: only where it holds). */
#define FX_ASSUME(c) \
  do {                 \
    if (!(c)) __builtin_unreachable(); \
  } while (0)
#define FX_DATA(a, T) ((T *)(fx_dense((fx_arr *)(a)) + 1))
#define FX_LEN(a) ((a) ? ((fx_arr *)(a))->len : 0)

/* `n` as the length of an array `what` makes (the interpreter's `length_arg`). */
static inline void fx_length(int64_t n, const char *what, uint32_t src, uint32_t start, uint32_t end) {
  if (n < 0) fx_fail(src, start, end, "%s: negative length %lld", what, (long long)n);
  if (n > FX_MAX_ARRAY_LEN)
    fx_fail(src, start, end, "%s: length %lld is too large (the limit is %lld elements)", what, (long long)n,
            (long long)FX_MAX_ARRAY_LEN);
}

/* The checks of fx_arr_new without the array, for a loop fused into its consumer that
 * would have made it (a length the interpreter refuses is refused here too). */
static void fx_arr_check(int64_t n, size_t elem, const char *what, uint32_t src, uint32_t start, uint32_t end) {
  fx_length(n, what, src, start, end);
  fx_budget(sizeof(fx_arr) + (uint64_t)n * elem, src, start, end);
}

static fx_arr *fx_arr_new(int64_t n, size_t elem, const char *what, uint32_t src, uint32_t start, uint32_t end) {
  fx_length(n, what, src, start, end);
  fx_arr *a = (fx_arr *)fx_alloc(sizeof(fx_arr) + (uint64_t)n * elem, src, start, end);
  a->len = n;
  a->kind = FX_DENSE;
  return a;
}

/* An array of `n` elements in `buf` (FX_STACK_ARR_WORDS words, on the caller's C
 * stack; the caller checked that they fit): no reference count (rc -1, as a stack
 * closure), never freed, not counted against the budget (analysis.rs `stack_arrays`:
 * only arrays that nothing keeps past the block that made them). */
#define FX_STACK_ARR_BYTES 256
#define FX_STACK_ARR_WORDS ((sizeof(fx_arr) + FX_STACK_ARR_BYTES) / 8)
static inline fx_arr *fx_stack_arr(uint64_t *buf, int64_t n, const char *what, uint32_t src, uint32_t start,
                                   uint32_t end) {
  fx_length(n, what, src, start, end);
  fx_arr *a = (fx_arr *)buf;
  a->h.rc = -1;
  a->h.bytes = 0;
  a->h.prev = a->h.next = NULL;
  a->len = n;
  a->kind = FX_DENSE;
  return a;
}

/* The constant series [x, 0, ..., 0] of order k (a real captured by a closure lifted
 * into Taylor mode at run time, `%chad_of`). */
static fx_arr *fx_jet_lift(double x, int64_t k, uint32_t src, uint32_t start, uint32_t end) {
  fx_arr *a = fx_arr_new(k + 1, sizeof(double), "a series", src, start, end);
  double *d = (double *)(a + 1);
  d[0] = x;
  for (int64_t i = 1; i <= k; i++) d[i] = 0.0;
  return a;
}

/* `%union`: the union of two ascending arrays of distinct Ints, ascending (a real's
   set of inputs under `sparsity`, fluxion-ad's deps.rs). */
static fx_arr *fx_int_union(fx_arr *a, fx_arr *b, uint32_t src, uint32_t start, uint32_t end) {
  int64_t n = FX_LEN(a), m = FX_LEN(b), i = 0, j = 0, k = 0;
  const fx_int *x = n ? FX_DATA(a, fx_int) : NULL, *y = m ? FX_DATA(b, fx_int) : NULL;
  int64_t both = 0;
  while (i < n && j < m) {
    if (x[i] < y[j]) i++;
    else if (x[i] > y[j]) j++;
    else { both++; i++; j++; }
  }
  fx_arr *r = fx_arr_new(n + m - both, sizeof(fx_int), "a set of inputs", src, start, end);
  fx_int *o = FX_DATA(r, fx_int);
  i = j = 0;
  while (i < n && j < m) {
    if (x[i] < y[j]) o[k++] = x[i++];
    else if (x[i] > y[j]) o[k++] = y[j++];
    else { o[k++] = x[i++]; j++; }
  }
  while (i < n) o[k++] = x[i++];
  while (j < m) o[k++] = y[j++];
  return r;
}

/* `%rows_of(offsets)`: the row of each nonzero of a compressed-row pattern. */
static fx_arr *fx_rows_of(fx_arr *offsets, uint32_t src, uint32_t start, uint32_t end) {
  int64_t m = FX_LEN(offsets) - 1;
  const fx_int *o = m >= 0 ? FX_DATA(offsets, fx_int) : NULL;
  int64_t nnz = m > 0 ? o[m] : 0;
  fx_arr *r = fx_arr_new(nnz, sizeof(fx_int), "the rows of a pattern", src, start, end);
  fx_int *rows = FX_DATA(r, fx_int);
  for (int64_t i = 0; i < m; i++)
    for (int64_t t = o[i]; t < o[i + 1] && t < nnz; t++) rows[t] = i;
  return r;
}

/* `%colour(offsets, cols, n, by_rows)`: the greedy first-fit colouring of a
   compressed-row pattern's columns (two sharing a row differ) or, by_rows, its rows
   (two sharing a column differ), in natural order. The interpreter has the same
   algorithm (fluxion-interp's colouring.rs). */
/* `limit` > 0: stop at the first item that needs colour `limit` (it gets that colour,
 * the items after it -1), as colouring.rs does. */
static fx_arr *fx_colour(fx_arr *offsets, fx_arr *cols, fx_int n, fx_int by_rows, fx_int limit, uint32_t src,
                         uint32_t start, uint32_t end) {
  int64_t m = FX_LEN(offsets) - 1, nnz = FX_LEN(cols);
  const fx_int *ro = m >= 0 ? FX_DATA(offsets, fx_int) : NULL;
  const fx_int *rc = nnz ? FX_DATA(cols, fx_int) : NULL;
  int ok = n >= 0 && m >= 0 && ro[0] == 0 && ro[m] == nnz;
  for (int64_t i = 0; ok && i < m; i++) ok = ro[i] <= ro[i + 1];
  for (int64_t t = 0; ok && t < nnz; t++) ok = rc[t] >= 0 && rc[t] < n;
  if (!ok) fx_fail(src, start, end, "internal error: a malformed sparsity pattern");
  /* The transpose: the rows of each column. */
  int64_t *cs = calloc((size_t)n + 1, sizeof(int64_t)), *fill = malloc(((size_t)n + 1) * sizeof(int64_t));
  int64_t *cr = malloc(((size_t)nnz + 1) * sizeof(int64_t));
  int64_t items = by_rows ? m : n;
  int64_t *mark = malloc(((size_t)items + 1) * sizeof(int64_t));
  fx_arr *r = NULL;
  if (!cs || !fill || !cr || !mark) goto out;
  for (int64_t t = 0; t < nnz; t++) cs[rc[t] + 1]++;
  for (int64_t j = 0; j < n; j++) cs[j + 1] += cs[j];
  for (int64_t j = 0; j <= n; j++) fill[j] = cs[j];
  for (int64_t i = 0; i < m; i++)
    for (int64_t t = ro[i]; t < ro[i + 1]; t++) cr[fill[rc[t]]++] = i;
  r = fx_arr_new(items, sizeof(fx_int), "a colouring", src, start, end);
  fx_int *colours = FX_DATA(r, fx_int);
  for (int64_t u = 0; u < items; u++) colours[u] = -1;
  for (int64_t u = 0; u <= items; u++) mark[u] = -1;
  for (int64_t u = 0; u < items; u++) {
    int64_t gs = by_rows ? ro[u] : cs[u], ge = by_rows ? ro[u + 1] : cs[u + 1];
    for (int64_t q = gs; q < ge; q++) {
      int64_t g = by_rows ? rc[q] : cr[q];
      int64_t vs = by_rows ? cs[g] : ro[g], ve = by_rows ? cs[g + 1] : ro[g + 1];
      for (int64_t p = vs; p < ve; p++) {
        int64_t v = by_rows ? cr[p] : rc[p];
        if (colours[v] >= 0) mark[colours[v]] = u;
      }
    }
    int64_t c = 0;
    while (mark[c] == u) c++;
    colours[u] = c;
    if (limit > 0 && c >= limit) break;
  }
out:
  free(cs);
  free(fill);
  free(cr);
  free(mark);
  if (!r) fx_fail(src, start, end, "out of memory: colouring a sparsity pattern");
  return r;
}

/* Enums: header, tag, then the constructor's fields (a per-constructor struct). */
typedef struct {
  fx_hdr h;
  uint32_t tag;
} fx_enum;

/* Closures: header, code, drop of the environment, then the captures. */
typedef struct fx_clo {
  fx_hdr h;
  void *code;
  void (*drop)(struct fx_clo *);
} fx_clo;

/* Freeing a value nested millions deep (a list, a chain of closures) recurses once per
 * level. When the stack runs low, a dec puts its object off instead, with the helper
 * that frees it; the first dec that returns with room to spare frees what was put off
 * (and the entry does before it returns), so freeing takes constant stack. An error
 * frees everything at once (fx_free_all), the list with it. */
#define FX_LATER_ROOM (256 << 10)
static inline int fx_stack_low(uintptr_t room) { return FX_BELOW(fx_stack_limit + room); }
static void fx_later_push(void *x, fx_dec_fn f) {
  if (fx_later.len == fx_later.cap) {
    int64_t cap = fx_later.cap ? 2 * fx_later.cap : 1024;
    void **objs = (void **)realloc(fx_later.objs, (size_t)cap * sizeof(void *));
    if (objs) fx_later.objs = objs;
    fx_dec_fn *fns = (fx_dec_fn *)realloc(fx_later.fns, (size_t)cap * sizeof(fx_dec_fn));
    if (fns) fx_later.fns = fns;
    if (!objs || !fns) fx_fail(0, 0, 0, "out of memory freeing a deeply nested value");
    fx_later.cap = cap;
  }
  fx_later.objs[fx_later.len] = x;
  fx_later.fns[fx_later.len] = f;
  fx_later.len++;
}
static void fx_later_drain(void) {
  if (fx_later.draining) return;
  fx_later.draining = 1;
  while (fx_later.len > 0) {
    fx_later.len--;
    fx_later.fns[fx_later.len](fx_later.objs[fx_later.len]);
  }
  fx_later.draining = 0;
}
/* At the top of a dec helper: put `x` off if the stack is low. */
#define FX_DEC_LATER(x, f)                    \
  do {                                        \
    if ((x) && ((fx_hdr *)(x))->rc < 0) return; \
    if (fx_stack_low(FX_LATER_ROOM)) {        \
      fx_later_push((x), (fx_dec_fn)(f));     \
      return;                                 \
    }                                         \
  } while (0)
/* At its end: free what was put off, if there is room now. */
#define FX_DEC_DRAIN()                                                      \
  do {                                                                      \
    if (fx_later.len && !fx_stack_low(4 * FX_LATER_ROOM)) fx_later_drain(); \
  } while (0)

static void fx_dec_clo_now(void *c);
static inline void fx_dec_clo(fx_clo *c) {
  if (fx_stack_low(FX_LATER_ROOM)) {
    if (c && c->h.rc >= 0) fx_later_push(c, fx_dec_clo_now);
    return;
  }
  if (fx_dec_last(c)) {
    c->drop(c);
    fx_release(c);
    FX_DEC_DRAIN();
  }
}
static void fx_dec_clo_now(void *c) { fx_dec_clo((fx_clo *)c); }

static inline void fx_bounds(int64_t i, int64_t n, uint32_t src, uint32_t start, uint32_t end) {
  if (__builtin_expect((uint64_t)i >= (uint64_t)n, 0))
    fx_fail(src, start, end, "index %lld out of range for an array of length %lld", (long long)i, (long long)n);
}

static inline void fx_same_length(const char *what, int64_t n, int64_t m, uint32_t src, uint32_t start, uint32_t end) {
  if (n != m) fx_fail(src, start, end, "%s: arrays of different lengths (%lld and %lld)", what, (long long)n, (long long)m);
}

/* Checked Int arithmetic (docs/language.md: overflow is a runtime error). */
#define FX_INT_OP(name, builtin, sym)                                                   \
  static inline int64_t name(int64_t a, int64_t b, uint32_t src, uint32_t start, uint32_t end) { \
    int64_t r;                                                                          \
    if (__builtin_expect(builtin(a, b, &r), 0)) fx_fail(src, start, end, "Int overflow in `" sym "`"); \
    return r;                                                                           \
  }
FX_INT_OP(fx_iadd, __builtin_add_overflow, "+")
FX_INT_OP(fx_isub, __builtin_sub_overflow, "-")
FX_INT_OP(fx_imul, __builtin_mul_overflow, "*")

static inline int64_t fx_idiv(int64_t a, int64_t b, uint32_t src, uint32_t start, uint32_t end) {
  if (b == 0) fx_fail(src, start, end, "integer division by zero");
  if (a == INT64_MIN && b == -1) fx_fail(src, start, end, "Int overflow in `/`");
  return a / b;
}
static inline int64_t fx_irem(int64_t a, int64_t b, uint32_t src, uint32_t start, uint32_t end) {
  if (b == 0) fx_fail(src, start, end, "integer division by zero");
  if (a == INT64_MIN && b == -1) fx_fail(src, start, end, "Int overflow in `%%`");
  return a % b;
}
static inline int64_t fx_ineg(int64_t a, uint32_t src, uint32_t start, uint32_t end) {
  if (a == INT64_MIN) fx_fail(src, start, end, "Int overflow in `-`");
  return -a;
}
static inline int64_t fx_iabs(int64_t a, uint32_t src, uint32_t start, uint32_t end) {
  if (a == INT64_MIN) fx_fail(src, start, end, "Int overflow in `abs`");
  return a < 0 ? -a : a;
}

static inline int64_t fx_to_int(double x, uint32_t src, uint32_t start, uint32_t end) {
  /* [-2^63, 2^63): every double in it truncates to an Int. */
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
  {
    fx_err->real = x;
    fx_fail(src, start, end, "to_int: \x01 is out of Int range");
  }
  return (int64_t)trunc(x);
}

/* Ties follow the first argument; a NaN comparison takes the second. */
static inline double fx_rmin(double a, double b) { return a <= b ? a : b; }
static inline double fx_rmax(double a, double b) { return a >= b ? a : b; }
static inline int64_t fx_imin(int64_t a, int64_t b) { return a <= b ? a : b; }
static inline int64_t fx_imax(int64_t a, int64_t b) { return a >= b ? a : b; }
static inline double fx_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* `%lscale(c, w)`: `w` where `w` is zero (keeping its sign: -0.0 is the symbolic zero),
   0.0 where `c` is; `c * w` otherwise (fluxion-core's `prim::lscale`). */
static inline double fx_lscale(double c, double w) {
  double r = c * w; /* computed first, so that the C compiler selects without branching */
  return w == 0.0 ? w : (c == 0.0 ? 0.0 : r);
}

/* ψ, ψ' and ψ⁽ⁿ⁾ by the same recurrences and series as the interpreter (prims.rs). */
static double fx_digamma(double x) {
  if (isnan(x) || x == -INFINITY) return NAN;
  if (x <= 0.0 && x == floor(x)) return NAN;
  if (x < 0.0) return fx_digamma(1.0 - x) - M_PI / tan(M_PI * x);
  double acc = 0.0;
  while (x < 10.0) {
    acc -= 1.0 / x;
    x += 1.0;
  }
  double inv = 1.0 / x, inv2 = inv * inv;
  double series =
      inv2 * (1.0 / 12.0 -
              inv2 * (1.0 / 120.0 -
                      inv2 * (1.0 / 252.0 -
                              inv2 * (1.0 / 240.0 -
                                      inv2 * (1.0 / 132.0 -
                                              inv2 * (691.0 / 32760.0 - inv2 * (1.0 / 12.0 - inv2 * (3617.0 / 8160.0))))))));
  return acc + log(x) - 0.5 * inv - series;
}
static double fx_trigamma(double x) {
  if (x <= 0.0 && x == floor(x)) return NAN;
  if (x < 0.0) {
    double s = sin(M_PI * x);
    return -fx_trigamma(1.0 - x) + M_PI * M_PI / (s * s);
  }
  double acc = 0.0;
  while (x < 10.0) {
    acc += 1.0 / (x * x);
    x += 1.0;
  }
  double inv = 1.0 / x, inv2 = inv * inv;
  double series =
      1.0 / 6.0 -
      inv2 * (1.0 / 30.0 -
              inv2 * (1.0 / 42.0 -
                      inv2 * (1.0 / 30.0 -
                              inv2 * (5.0 / 66.0 - inv2 * (691.0 / 2730.0 - inv2 * (7.0 / 6.0 - inv2 * (3617.0 / 510.0)))))));
  return acc + inv + 0.5 * inv2 + inv * inv2 * series;
}
static double fx_polygamma(int64_t n, double x) {
  if (n < 0 || n > 170) return NAN;
  if (n == 0) return fx_digamma(x);
  if (x <= 0.0 && x == floor(x)) return NAN;
  double m = (double)(n + 1), fact = 1.0;
  for (int64_t i = 1; i <= n; i++) fact *= (double)i;
  double sign = n % 2 == 1 ? 1.0 : -1.0, sum = 0.0, y = x;
  while (y < 20.0) {
    sum += pow(y, -m);
    y += 1.0;
  }
  static const double B[6] = {1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0};
  double tail = pow(y, 1.0 - m) / (m - 1.0) + 0.5 * pow(y, -m);
  double rising = m, fact2j = 2.0;
  for (int k = 0; k < 6; k++) {
    double j = (double)k + 1.0;
    if (j > 1.0) {
      rising *= (m + 2.0 * j - 3.0) * (m + 2.0 * j - 2.0);
      fact2j *= (2.0 * j - 1.0) * (2.0 * j);
    }
    tail += B[k] / fact2j * rising * pow(y, -(m + 2.0 * j - 1.0));
  }
  return sign * fact * (sum + tail);
}
static double fx_lgamma(double x) {
  int sign;
  return lgamma_r(x, &sign);
}

/* The delta tape of `--ad delta` ([Delta] §7; fluxion-interp's tape.rs): node i is
 * the delta sum_k coefs[k] * parents[k] for k in starts[i]..starts[i+1]; id 0 is the
 * zero delta (no node, never a parent). A %delta_vjp opens a tape nested in the
 * current one at a mark (the next id) and closes it by truncating back to the mark,
 * so the ids of nested tapes never mix. The sweep visits each node once, last to
 * first, skipping those whose adjoint is zero (the interpreter's order exactly). The
 * buffers are kept between calls and reset on entry. They count in the memory budget,
 * as the interpreter's tape does: their capacity, and the adjoints of a sweep. */
/* A dot node (delta_fuse.rs `dot_or`): the delta of the sum over t < n of a[t]·b[t],
 * for arrays a and b of (Real, Int) pairs, each a buffer of reals then a buffer of
 * ids (types.rs `Types::get`). It holds the two arrays (a reference each) instead of
 * their 2n terms: O(1) tape where the fused node wrote 24n bytes, and the sweep reads
 * the terms back from the arrays in the fused node's order (fx_tape_sweep_dot). */
/* A loop node (delta_loop.rs): the delta of a `%delta_sum` over a loop whose element
 * function is cheap straight-line code. It holds the element function's closure (a
 * heap copy) and the loop's operand arrays instead of the elements' nodes, and its
 * sweep (generated per loop) runs the elements again, last to first, each with its
 * own nodes swept in registers: the updates the elements' nodes would have made, in
 * the same order. Both kinds share this struct; `sweep` is NULL for a dot node.
 * A *map* loop node (`ids` 1) stands for the elements of a `build`, `map` or
 * `map2` of such an element function: it takes one id per element (the node's id is
 * the last; element i's is id - n + 1 + i) and its sweep seeds each element's sweep
 * with that element's adjoint. */
struct fx_tape_dot;
/* The most arrays a loop node holds (delta_loop.rs MAX_HELD). */
#define FX_LOOP_HELD 8
/* What a loop node has besides a dot node's fields: its sweep, the element function's
 * closure it owns (a copy, allocated with this), the bytes of the nodes it stands for,
 * and the arrays it holds (its operands and its closure's), to count each once. */
typedef struct {
  /* `pre` as fx_sweep_impl's: 1 routes the terms below `mark` into FX_PRE_ADD. */
  void (*sweep)(const struct fx_tape_dot *d, double a, double *adj, int64_t mark, int pre);
  fx_clo *clo;
  uint64_t terms;
  int ids;
  fx_arr *arrs[FX_LOOP_HELD];
} fx_tape_loop_t;
typedef struct fx_tape_dot {
  int64_t id, n;
  fx_arr *a, *b;
  /* The bytes this node counted as held (fx_tape_dot_pays). */
  uint64_t held;
  /* NULL for a dot node. */
  fx_tape_loop_t *loop;
} fx_tape_dot_t;
static struct {
  int64_t len, depth, cap_nodes, nterms, cap_terms, cursor;
  int64_t *starts;
  double *coefs;
  uint32_t *parents;
  /* The adjoints of the sweep under way (from `mark` on), kept between sweeps and
   * runs as the other buffers are: a fresh one per sweep faulted in its pages anew. */
  double *adj;
  int64_t mark, cap_adj;
  /* The dot nodes, by increasing id. */
  fx_tape_dot_t *dots;
  int64_t ndots, cap_dots;
  /* Over the dot nodes on the tape: the bytes of the arrays they hold (each array
   * counted once per node, unless the node before held it too) and the bytes their
   * terms would have taken. */
  uint64_t dot_held, dot_terms;
  /* Bit d % 64 of word d / 64: the tape opened at depth d is plain, no loop node on
   * it (a Jacobian's, which fx_tape_columns may sweep forward). */
  uint64_t *plain;
  int64_t cap_plain;
  /* On a plain tape, the fused sums' nodes by increasing id, each with its terms per
   * element (two int64s a sum): fx_tape_columns adds up each element's terms first,
   * as the interpreter's element nodes do. */
  int64_t *groups;
  int64_t ngroups, cap_groups;
} fx_tape;

/* Preaccumulation's buffers (FX_PRE_ADD, fx_pre_*): a coefficient per id and two
 * levels of bits saying which ids (b1, a bit per id) and which words of b1 (b2) an
 * element's sweep reached; all zero between sums. Bits, not a list: the sweeps' inner
 * loops then make no call (which made the C compiler reload a loop node's captures
 * every term: llsq's gradient was 15% slower for it). */
static struct {
  int active;
  double *g;
  uint32_t *b1, *b2;
  int64_t cap_g, cap_b1, cap_b2;
  /* The words of b2 the sum under way can mark: those of the ids below its mark
   * (the scans at its node stop there, not at the buffer's end after a long tape).
   * Tracking the words reached instead cost GMM's gradient 7%. */
  int64_t hi;
} fx_pre;

/* The bytes the tape's buffers hold (their capacity). */
static uint64_t fx_tape_bytes(void) {
  return (uint64_t)fx_pre.cap_g * sizeof(double) + (uint64_t)(fx_pre.cap_b1 + fx_pre.cap_b2) * sizeof(uint32_t) +
         (uint64_t)fx_tape.cap_nodes * sizeof(int64_t) +
         (uint64_t)fx_tape.cap_terms * (sizeof(double) + sizeof(uint32_t)) +
         (uint64_t)fx_tape.cap_dots * sizeof(fx_tape_dot_t) + (uint64_t)fx_tape.cap_adj * sizeof(double) +
         (uint64_t)fx_tape.cap_groups * sizeof(int64_t);
}

/* An empty tape, whose kept buffers are charged to this call. On entry (`keep` 0, after
 * the budget is set) buffers grown past a quarter of the budget by an earlier call are
 * freed instead, so that its tape never counts against this one; between the runs of
 * one call (`keep` 1, fx_run_again) they are this call's own and are all kept. */
static void fx_pre_reset(void);
static void fx_tape_reset(int keep) {
  fx_pre_reset();
  fx_tape.len = 1;
  fx_tape.depth = 0;
  fx_tape.nterms = 0;
  /* A failed call's dot nodes held arrays that fx_free_all has freed. */
  fx_tape.ndots = 0;
  fx_tape.dot_held = fx_tape.dot_terms = 0;
  if (fx_tape.plain) memset(fx_tape.plain, 0, (size_t)fx_tape.cap_plain * sizeof(uint64_t));
  fx_tape.ngroups = 0;
  if (!keep && fx_tape_bytes() > fx_memory_limit / 4) {
    free(fx_tape.starts);
    free(fx_tape.coefs);
    free(fx_tape.parents);
    free(fx_tape.dots);
    free(fx_tape.adj);
    free(fx_tape.groups);
    free(fx_pre.g);
    free(fx_pre.b1);
    free(fx_pre.b2);
    fx_pre.g = NULL;
    fx_pre.b1 = fx_pre.b2 = NULL;
    fx_pre.cap_g = fx_pre.cap_b1 = fx_pre.cap_b2 = 0;
    fx_tape.starts = NULL;
    fx_tape.coefs = NULL;
    fx_tape.parents = NULL;
    fx_tape.dots = NULL;
    fx_tape.adj = NULL;
    fx_tape.groups = NULL;
    fx_tape.cap_nodes = fx_tape.cap_terms = fx_tape.cap_dots = fx_tape.cap_adj = fx_tape.cap_groups = 0;
  }
  fx_memory_used += fx_tape_bytes();
}

/* `p` grown to hold `need` entries of `elem` bytes, the growth charged to the budget. */
static void *fx_tape_grow(void *p, int64_t *cap, int64_t need, size_t elem, uint32_t src, uint32_t start,
                          uint32_t end) {
  if (need <= *cap) return p;
  int64_t cap2 = *cap ? *cap : 1024;
  while (cap2 < need) cap2 *= 2;
  uint64_t more = (uint64_t)(cap2 - *cap) * elem;
  fx_budget(more, src, start, end);
  void *q = realloc(p, (size_t)cap2 * elem);
  if (!q) fx_fail(src, start, end, "out of memory: the reverse pass's tape needs %lld entries", (long long)need);
  fx_memory_used += more;
  *cap = cap2;
  return q;
}

/* The checks and growth behind fx_tape_reserve (out of line: the fast path is three
 * comparisons). The node capacity never passes 2^32 - 1, so the id limit is met here. */
static void fx_tape_reserve_slow(int64_t terms, uint32_t src, uint32_t start, uint32_t end)
    __attribute__((noinline, cold));
static void fx_tape_reserve_slow(int64_t terms, uint32_t src, uint32_t start, uint32_t end) {
  if (fx_tape.depth == 0) fx_fail(src, start, end, "internal error: a delta outside a reverse pass");
  if (fx_tape.len + 2 > (int64_t)UINT32_MAX) fx_fail(src, start, end, "the reverse pass needs more than 2^32 deltas");
  if (fx_tape.len + 2 > fx_tape.cap_nodes) {
    int64_t cap = fx_tape.cap_nodes;
    fx_tape.starts = (int64_t *)fx_tape_grow(fx_tape.starts, &cap, fx_tape.len + 2, sizeof(int64_t), src, start, end);
    fx_tape.cap_nodes = cap;
  }
  if (fx_tape.nterms + terms > fx_tape.cap_terms) {
    int64_t cap = fx_tape.cap_terms;
    fx_tape.coefs = (double *)fx_tape_grow(fx_tape.coefs, &cap, fx_tape.nterms + terms, sizeof(double), src, start, end);
    cap = fx_tape.cap_terms;
    fx_tape.parents =
        (uint32_t *)fx_tape_grow(fx_tape.parents, &cap, fx_tape.nterms + terms, sizeof(uint32_t), src, start, end);
    fx_tape.cap_terms = cap;
  }
}
/* Room for one more node of up to `terms` terms. */
static inline void fx_tape_reserve(int64_t terms, uint32_t src, uint32_t start, uint32_t end) {
  if (__builtin_expect(fx_tape.depth == 0 || fx_tape.len + 2 > fx_tape.cap_nodes ||
                           fx_tape.nterms + terms > fx_tape.cap_terms, 0))
    fx_tape_reserve_slow(terms, src, start, end);
}
/* A term of the node being made (after fx_tape_reserve). Terms on the zero delta add
 * nothing; a zero coefficient is kept (an infinite adjoint times it is NaN, as IEEE
 * says). */
static inline void fx_tape_term(double c, int64_t id) {
  if (id != 0) {
    fx_tape.coefs[fx_tape.nterms] = c;
    fx_tape.parents[fx_tape.nterms] = (uint32_t)id;
    fx_tape.nterms++;
  }
}
/* A node of the terms written since the last one, always (an input, a dot node). */
static inline int64_t fx_tape_node_raw(void) {
  fx_tape.starts[fx_tape.len + 1] = fx_tape.nterms;
  return fx_tape.len++;
}
/* The node of the terms written since the last one; with none (every term on the zero
 * delta: a constant's arithmetic) the zero delta itself, as tape.rs's `push`. */
static inline int64_t fx_tape_node(void) {
  if (fx_tape.nterms == fx_tape.starts[fx_tape.len]) return 0;
  return fx_tape_node_raw();
}
/* A node of one or two terms, out of line: what a function making hundreds of nodes
 * calls (emit.rs `many_pushes`; inlined, their room checks took GCC minutes). */
static __attribute__((noinline)) int64_t fx_tape_push1(double c0, int64_t p0, uint32_t src, uint32_t start,
                                                       uint32_t end) {
  fx_tape_reserve(1, src, start, end);
  fx_tape_term(c0, p0);
  return fx_tape_node();
}
static __attribute__((noinline)) int64_t fx_tape_push2(double c0, int64_t p0, double c1, int64_t p1, uint32_t src,
                                                       uint32_t start, uint32_t end) {
  fx_tape_reserve(2, src, start, end);
  fx_tape_term(c0, p0);
  fx_tape_term(c1, p1);
  return fx_tape_node();
}
static int64_t fx_tape_input(uint32_t src, uint32_t start, uint32_t end) {
  fx_tape_reserve(0, src, start, end);
  return fx_tape_node_raw();
}
static int64_t fx_tape_open(void) {
  if (fx_tape.cap_nodes < 2) {
    int64_t cap = fx_tape.cap_nodes;
    fx_tape.starts = (int64_t *)fx_tape_grow(fx_tape.starts, &cap, 2, sizeof(int64_t), 0, 0, 0);
    fx_tape.cap_nodes = cap;
  }
  if (fx_tape.len == 1) fx_tape.starts[0] = fx_tape.starts[1] = 0;
  fx_tape.depth++;
  return fx_tape.len;
}
/* Whether the tape being recorded is plain (fx_tape.plain). */
static inline int fx_tape_is_plain(void) {
  int64_t d = fx_tape.depth;
  return d / 64 < fx_tape.cap_plain && (fx_tape.plain[d / 64] >> (d % 64) & 1);
}
/* A tape on which no loop node is made (fx_tape.plain). */
static int64_t fx_tape_open_plain(uint32_t src, uint32_t start, uint32_t end) {
  int64_t mark = fx_tape_open();
  int64_t d = fx_tape.depth;
  if (d / 64 >= fx_tape.cap_plain) {
    int64_t cap = d / 64 + 1;
    uint64_t *p = (uint64_t *)realloc(fx_tape.plain, (size_t)cap * sizeof(uint64_t));
    if (!p) fx_fail(src, start, end, "out of memory: a Jacobian nested %lld deep", (long long)d);
    memset(p + fx_tape.cap_plain, 0, (size_t)(cap - fx_tape.cap_plain) * sizeof(uint64_t));
    fx_tape.plain = p;
    fx_tape.cap_plain = cap;
  }
  fx_tape.plain[d / 64] |= UINT64_C(1) << (d % 64);
  return mark;
}
/* The adjoints of the ids from `mark` on, all zero, for seeding and the sweep (which
 * run no program code, so they never nest). */
static void fx_tape_sweep_begin(int64_t mark, uint32_t src, uint32_t start, uint32_t end) {
  fx_tape.mark = mark;
  int64_t n = fx_tape.len - mark + 1;
  if (n > fx_tape.cap_adj) {
    /* Grown by doubling, its old contents not wanted: freed, then allocated anew. */
    int64_t cap = fx_tape.cap_adj ? fx_tape.cap_adj : 1024;
    while (cap < n) cap *= 2;
    uint64_t more = (uint64_t)(cap - fx_tape.cap_adj) * sizeof(double);
    fx_budget(more, src, start, end);
    free(fx_tape.adj);
    fx_memory_used -= (uint64_t)fx_tape.cap_adj * sizeof(double);
    fx_tape.cap_adj = 0;
    fx_tape.adj = (double *)malloc((size_t)cap * sizeof(double));
    if (!fx_tape.adj) fx_fail(src, start, end, "out of memory: the adjoints of %lld deltas", (long long)(n - 1));
    fx_tape.cap_adj = cap;
    fx_memory_used += (uint64_t)cap * sizeof(double);
  }
  memset(fx_tape.adj, 0, (size_t)n * sizeof(double));
}
static inline void fx_tape_seed(int64_t id, double w) {
  if (id >= fx_tape.mark) fx_tape.adj[id - fx_tape.mark] += w;
}
/* Preaccumulation (`%delta_sumbuild`, fluxion-opt's preaccumulate.rs; the
 * interpreter's delta.rs `preaccumulate`, step for step): each element's entries are
 * swept as soon as it is made, seeded with 1, and dropped; what reaches an id below
 * the elements' mark goes into `g` (by id). The sum is then one node of those terms.
 * One sum preaccumulates at a time: inside its elements, a `%delta_sumbuild` leaves
 * its elements on the tape (`fx_pre_plain`). The buffers are with the tape's. */
/* `x` more for id `p` below the elements' mark, and its bits set. */
#define FX_PRE_ADD(p, x)                                         \
  do {                                                           \
    int64_t q__ = (p);                                           \
    uint32_t *w__ = fx_pre.b1 + (q__ >> 5), bit__ = 1u << (q__ & 31); \
    fx_pre.g[q__] += (x);                                        \
    if (!(*w__ & bit__)) {                                       \
      *w__ |= bit__;                                             \
      fx_pre.b2[q__ >> 10] |= 1u << ((q__ >> 5) & 31);           \
    }                                                            \
  } while (0)
static inline const double *fx_pair_vals(const fx_arr *a) { return (const double *)(a + 1); }
static inline const int64_t *fx_pair_ids(const fx_arr *a) { return (const int64_t *)((const uint64_t *)(a + 1) + a->len); }
/* Whether every id of array of pairs `a` is zero (the zero delta: constants to the
 * tape); not asked of an array longer than `most` (0 then). */
static int fx_pair_ids_zero(fx_arr *a, int64_t most) {
  if (!a) return 1;
  if (a->len > most) return 0;
  a = fx_dense(a);
  const int64_t *ids = fx_pair_ids(a);
  for (int64_t t = 0; t < a->len; t++)
    if (ids[t] != 0) return 0;
  return 1;
}
/* A dot node's terms, as the fused node of the same loop held them (delta_fuse.rs):
 * the last element's first, each element's `(b[t], id of a[t]), (a[t], id of b[t])`,
 * the order of the product's `%delta` — so the adjoints are the interpreter's bits. */
/* `pre` is 1 in a preaccumulating sum's sweep of one element (fx_pre_element): the
 * terms on ids below the mark go into the sum's coefficients (FX_PRE_ADD); 0 in every
 * other sweep, whose code is then what it was before preaccumulation existed (its
 * inner loops unchanged: an extra branch there slowed llsq's gradient by 15%). */
static inline __attribute__((always_inline)) void fx_sweep_dot_impl(int pre, const fx_tape_dot_t *d, double a,
                                                                   double *adj, int64_t mark) {
  const double *av = fx_pair_vals(d->a), *bv = fx_pair_vals(d->b);
  const int64_t *ai = fx_pair_ids(d->a), *bi = fx_pair_ids(d->b);
  int finite = isfinite(a);
  for (int64_t t = d->n - 1; t >= 0; t--) {
    /* As in fx_tape_sweep: a zero partial passes no infinite or NaN adjoint on. */
    if (ai[t] >= mark && (finite || bv[t] != 0.0)) adj[ai[t] - mark] += bv[t] * a;
    else if (pre && ai[t] < mark && (finite || bv[t] != 0.0)) FX_PRE_ADD(ai[t], bv[t] * a);
    if (bi[t] >= mark && (finite || av[t] != 0.0)) adj[bi[t] - mark] += av[t] * a;
    else if (pre && bi[t] < mark && (finite || av[t] != 0.0)) FX_PRE_ADD(bi[t], av[t] * a);
  }
}
static void fx_tape_sweep_dot(const fx_tape_dot_t *d, double a, double *adj, int64_t mark) {
  fx_sweep_dot_impl(0, d, a, adj, mark);
}
static inline __attribute__((always_inline)) void fx_sweep_impl(int pre) {
  int64_t mark = fx_tape.mark;
  double *adj = fx_tape.adj;
  int64_t r = fx_tape.ndots - 1;
  int64_t next_dot = r >= 0 ? fx_tape.dots[r].id : -1;
  for (int64_t id = fx_tape.len - 1; id >= mark; id--) {
    double a = adj[id - mark];
    if (id == next_dot) {
      const fx_tape_dot_t *d = &fx_tape.dots[r];
      if (d->loop && d->loop->ids) {
        /* A map loop node: its elements' ids, each with its own adjoint. */
        d->loop->sweep(d, 0.0, adj, mark, pre);
        id -= d->n - 1;
      } else if (a != 0.0) {
        if (d->loop) d->loop->sweep(d, a, adj, mark, pre);
        else fx_sweep_dot_impl(pre, d, a, adj, mark);
      }
      r--;
      next_dot = r >= 0 ? fx_tape.dots[r].id : -1;
      continue;
    }
    /* A delta no path from the output reaches contributes nothing (not 0 * inf). A run
     * of them is passed over eight at a time, down to the next dot node: a Jacobian's
     * row reaches few of the tape's deltas (ht's, one sweep per error), and the test
     * per delta was most of its sweeps. An adjoint is never -0.0 (below), so zero is
     * all bits clear. */
    if (a == 0.0) {
      typedef uint64_t __attribute__((may_alias)) bits;
      const bits *w = (const bits *)adj;
      int64_t j = id - mark, low = (next_dot >= mark ? next_dot + 1 : mark) - mark;
      while (j - 8 >= low) {
        const bits *b = w + j - 8;
        if ((b[0] | b[1] | b[2] | b[3] | b[4] | b[5] | b[6] | b[7]) != 0) break;
        j -= 8;
      }
      id = j + mark;
      continue;
    }
    int64_t k0 = fx_tape.starts[id], k1 = fx_tape.starts[id + 1];
    if (isfinite(a)) {
      /* A zero partial adds 0.0 here, which is skipping it: an adjoint is never -0.0. */
      for (int64_t k = k0; k < k1; k++) {
        int64_t p = fx_tape.parents[k];
        if (p >= mark) adj[p - mark] += fx_tape.coefs[k] * a;
        else if (pre) FX_PRE_ADD(p, fx_tape.coefs[k] * a);
      }
    } else {
      /* A zero partial passes nothing on, not even an infinite or NaN adjoint
       * (tape.rs: the rule of every mode). */
      for (int64_t k = k0; k < k1; k++) {
        int64_t p = fx_tape.parents[k];
        double c = fx_tape.coefs[k];
        if (p >= mark && c != 0.0) adj[p - mark] += c * a;
        else if (pre && p < mark && c != 0.0) FX_PRE_ADD(p, c * a);
      }
    }
  }
}
static void fx_tape_sweep(void) { fx_sweep_impl(0); }
static void fx_pre_sweep(void) { fx_sweep_impl(1); }
/* A fused `%delta_sum` over a loop (delta_fuse.rs): the sum's node gets room for
 * the `n·k` terms of its `n` elements, which each element writes in its turn below
 * the last (fx_tape_fused_terms), so that they lie last element first, in the order
 * the sweep met the elements' own nodes. An element makes no node, so the room stays
 * the node's. Terms on the zero delta are kept: the sweep skips them (id 0 is below
 * every mark). */
static inline void fx_tape_fused_open(int64_t terms, uint32_t src, uint32_t start, uint32_t end) {
  fx_tape_reserve(terms, src, start, end);
  fx_tape.cursor = fx_tape.nterms + terms;
}
/* Where an element's `k` terms go. */
static inline int64_t fx_tape_fused_terms(int64_t k) { return fx_tape.cursor -= k; }
/* The sum's node of `terms` terms, `k` an element (none: the zero delta, as
 * `%delta_sum` of []); on a plain tape its `k` goes in fx_tape.groups. */
static inline int64_t fx_tape_fused_close(int64_t terms, int64_t k, uint32_t src, uint32_t start, uint32_t end) {
  if (terms == 0) return 0;
  fx_tape.nterms += terms;
  int64_t id = fx_tape_node_raw();
  if (fx_tape_is_plain()) {
    if (2 * fx_tape.ngroups + 2 > fx_tape.cap_groups) {
      int64_t cap = fx_tape.cap_groups;
      fx_tape.groups =
          (int64_t *)fx_tape_grow(fx_tape.groups, &cap, 2 * fx_tape.ngroups + 2, sizeof(int64_t), src, start, end);
      fx_tape.cap_groups = cap;
    }
    fx_tape.groups[2 * fx_tape.ngroups] = id;
    fx_tape.groups[2 * fx_tape.ngroups + 1] = k;
    fx_tape.ngroups++;
  }
  return id;
}
/* The bytes a dot node of `a` and `b` would count as held: 16 per pair of each array
 * that the node before it does not hold already (its arrays are alive while it is on
 * the tape, so they cannot be new arrays at the same address). */
static uint64_t fx_tape_dot_held(const fx_arr *a, const fx_arr *b) {
  const fx_tape_dot_t *last = fx_tape.ndots > 0 ? &fx_tape.dots[fx_tape.ndots - 1] : NULL;
  uint64_t held = 0;
  if (!last || (a != last->a && a != last->b)) held += 16 * (uint64_t)FX_LEN(a);
  if (b != a && (!last || (b != last->a && b != last->b))) held += 16 * (uint64_t)FX_LEN(b);
  return held;
}
/* Whether a dot node over `n` elements holding `held` bytes (fx_tape_dot_held) keeps
 * the tape within a constant of the terms it replaces: the arrays the tape's dot nodes
 * hold stay within twice the 24 bytes per element their terms would take, plus a
 * sixteenth of the memory budget (so that the rows of one matrix larger than their
 * first row's terms are read in place: its first node holds it all). Arrays much longer than the dot (a
 * dot over a prefix of a fresh long array, every iteration) write terms instead, so
 * that holding them never costs memory the terms would not (found by a helper:
 * /work/adv12/min). */
/* Whether a node holding `held` more bytes, in place of `terms` bytes of nodes, keeps
 * the held arrays within twice what the nodes would take (a loop node's test). */
static inline int fx_tape_held_pays(uint64_t held, uint64_t terms) {
  return fx_tape.dot_held + held <= 2 * (fx_tape.dot_terms + terms) + fx_memory_limit / 16;
}
/* Not on a plain tape (a Jacobian's, which may be swept forward). Inside a
 * preaccumulating sum's element the node is swept at once by fx_pre_sweep, whose `pre`
 * its generated sweep takes. */
static inline int fx_tape_loop_pays(uint64_t held, uint64_t terms) {
  return !fx_tape_is_plain() && fx_tape_held_pays(held, terms);
}
static inline int fx_tape_dot_pays(uint64_t held, int64_t n) { return fx_tape_held_pays(held, 24 * (uint64_t)n); }
/* The bytes array of arrays `a` holds, its rows' elements `size` bytes each: what a
 * loop node holding it counts (an element reading a row, delta_loop.rs). */
static uint64_t fx_rows_bytes(const fx_arr *a, uint64_t size) {
  uint64_t bytes = (uint64_t)FX_LEN(a) * sizeof(fx_arr *);
  /* A lazy array's rows are not there to count (made as they are read). */
  if (!a || a->kind != FX_DENSE) return bytes;
  for (int64_t i = 0; i < FX_LEN(a); i++) bytes += (uint64_t)FX_LEN(FX_DATA(a, fx_arr *)[i]) * size;
  return bytes;
}
/* The bytes a loop node holding arrays `arrs` (`bytes` each; NULL for none) would count
 * as held: each once, and none the node before holds. */
static uint64_t fx_tape_loop_held(fx_arr *const *arrs, const uint64_t *bytes, int k) {
  const fx_tape_dot_t *last = fx_tape.ndots > 0 ? &fx_tape.dots[fx_tape.ndots - 1] : NULL;
  uint64_t held = 0;
  for (int j = 0; j < k; j++) {
    const fx_arr *x = arrs[j];
    int counted = !x;
    for (int i = 0; i < j && !counted; i++) counted = arrs[i] == x;
    if (last && !counted) {
      counted = x == last->a || x == last->b;
      for (int i = 0; i < FX_LOOP_HELD && !counted && last->loop; i++) counted = x == last->loop->arrs[i];
    }
    if (!counted) held += bytes[j];
  }
  return held;
}
/* The dot node of `a` and `b` over their first `n` elements (the caller checked that
 * both have them, and fx_tape_dot_pays of their `held` bytes), holding a reference to each; the zero delta
 * when n is 0 (as fx_tape_fused_close) or every id is zero. */
/* The bytes of terms node `d` stands for: a dot's 24 per element, a loop's own. */
static inline uint64_t fx_tape_dot_terms(const fx_tape_dot_t *d) {
  return d->loop ? d->loop->terms : 24 * (uint64_t)d->n;
}
/* The node `d` on the tape (its id set here), with a reference to each of its arrays:
 * one id, or for a map loop node `d.n` ids (the node's the last); returns the first. */
static int64_t fx_tape_push_dot(fx_tape_dot_t d, uint32_t src, uint32_t start, uint32_t end) {
  int64_t ids = d.loop && d.loop->ids ? d.n : 1;
  fx_tape_reserve(0, src, start, end);
  if (ids > 1) {
    if (fx_tape.len + ids + 1 > (int64_t)UINT32_MAX)
      fx_fail(src, start, end, "the reverse pass needs more than 2^32 deltas");
    if (fx_tape.len + ids + 1 > fx_tape.cap_nodes) {
      int64_t cap = fx_tape.cap_nodes;
      fx_tape.starts =
          (int64_t *)fx_tape_grow(fx_tape.starts, &cap, fx_tape.len + ids + 1, sizeof(int64_t), src, start, end);
      fx_tape.cap_nodes = cap;
    }
  }
  if (fx_tape.ndots == fx_tape.cap_dots) {
    int64_t cap = fx_tape.cap_dots;
    fx_tape.dots = (fx_tape_dot_t *)fx_tape_grow(fx_tape.dots, &cap, fx_tape.ndots + 1, sizeof(fx_tape_dot_t), src,
                                                 start, end);
    fx_tape.cap_dots = cap;
  }
  fx_inc(d.a);
  fx_inc(d.b);
  int64_t first = fx_tape.len;
  d.id = first + ids - 1;
  fx_tape.dots[fx_tape.ndots++] = d;
  fx_tape.dot_held += d.held;
  fx_tape.dot_terms += fx_tape_dot_terms(&d);
  /* The ids as nodes of no terms. Only the last's end is ever read (by the node after
   * it, and as a mark): the sweep passes over a map node's ids, and no tape opens
   * inside its loop, so the others are left unwritten (their pages untouched). */
  fx_tape.starts[first + ids] = fx_tape.nterms;
  fx_tape.len = first + ids;
  return first;
}
static int64_t fx_tape_dot(fx_arr *a, fx_arr *b, int64_t n, uint64_t held, uint32_t src, uint32_t start,
                           uint32_t end) {
  if (n == 0) return 0;
  /* Every id zero (constant data inside a gradient): the zero delta, as the
   * interpreter's products make, and no node holding the arrays until the sweep. The
   * scan stops at the first element either side has a delta for. */
  const int64_t *ai = fx_pair_ids(a), *bi = fx_pair_ids(b);
  int64_t t = 0;
  while (t < n && (ai[t] | bi[t]) == 0) t++;
  if (t == n) return 0;
  return fx_tape_push_dot((fx_tape_dot_t){0, n, a, b, held, NULL}, src, start, end);
}
/* The loop node of `n` elements (n > 0; the caller checked fx_tape_loop_pays): `x`
 * (allocated with the closure's copy it owns) says its sweep and the arrays it holds;
 * it takes a reference to the operands `a` and `b` (NULL where the loop has fewer). */
static int64_t fx_tape_loop(fx_tape_loop_t *x, fx_arr *a, fx_arr *b, int64_t n, uint64_t held, uint32_t src,
                            uint32_t start, uint32_t end) {
  return fx_tape_push_dot((fx_tape_dot_t){0, n, a, b, held, x}, src, start, end);
}
static inline double fx_tape_adjoint(int64_t id) { return id >= fx_tape.mark ? fx_tape.adj[id - fx_tape.mark] : 0.0; }
/* Drops the ids from `mark` on, releasing what their dot and loop nodes held. */
static void fx_tape_truncate(int64_t mark) {
  while (fx_tape.ndots > 0 && fx_tape.dots[fx_tape.ndots - 1].id >= mark) {
    fx_tape_dot_t *d = &fx_tape.dots[--fx_tape.ndots];
    fx_tape.dot_held -= d->held;
    fx_tape.dot_terms -= fx_tape_dot_terms(d);
    /* Arrays of pairs or scalars hold no references: dropping one frees its buffer
     * alone. */
    if (d->a && fx_dec_last(d->a)) fx_release(d->a);
    if (d->b && fx_dec_last(d->b)) fx_release(d->b);
    if (d->loop) fx_dec_clo(d->loop->clo);
  }
  while (fx_tape.ngroups > 0 && fx_tape.groups[2 * fx_tape.ngroups - 2] >= mark) fx_tape.ngroups--;
  fx_tape.len = mark;
  fx_tape.nterms = fx_tape.starts[mark];
}
static void fx_tape_close(int64_t mark) {
  fx_tape_truncate(mark);
  int64_t d = fx_tape.depth;
  if (d / 64 < fx_tape.cap_plain) fx_tape.plain[d / 64] &= ~(UINT64_C(1) << (d % 64));
  fx_tape.depth--;
}

/* The most columns one forward sweep of fx_tape_columns carries. */
#define FX_COLUMNS 32
/* `t` (a node's `w` tangents) plus `c` times a parent's `tp`: a zero partial passes
 * nothing on, and neither does a zero tangent, even to an infinite partial (the
 * sweep's rules, read forward: a delta no input reaches contributes nothing). */
static inline void fx_columns_add(double *t, double c, const double *tp, int64_t w) {
  if (c == 0.0) return;
  if (isfinite(c)) {
    for (int64_t l = 0; l < w; l++) t[l] += c * tp[l];
  } else {
    for (int64_t l = 0; l < w; l++)
      if (tp[l] != 0.0) t[l] += c * tp[l];
  }
}
/* `%delta_rows(mark, r, xd)` by columns where there are fewer inputs than outputs: the
 * tape from `mark` swept forward, first to last, carrying up to FX_COLUMNS inputs'
 * tangents per node at once (input j seeded with 1 in lane j), and row i read off
 * output i's node — J·eⱼ for every j, where the sweeps of fx_tape_sweep give eᵢᵀ·J,
 * one per output. The same Jacobian (up to the order of its sums' terms) in
 * ⌈inputs / 32⌉ passes over the tape instead of one per output: ht's errors in its
 * 26 pose parameters. The tape is plain (fx_tape_open_plain: no loop node, whose sweep
 * runs backward only). `out` gets the rows; 0 (nothing done) where there are at least
 * as many outputs as inputs, which the interpreter sweeps backward as well. */
static int fx_tape_columns(int64_t mark, fx_arr *r, fx_arr *xd, fx_arr *out, uint32_t src, uint32_t start,
                           uint32_t end) {
  r = fx_dense(r);
  xd = fx_dense(xd);
  int64_t nin = FX_LEN(xd), nout = FX_LEN(r), n = fx_tape.len - mark;
  if (nin == 0 || nin >= nout || n <= 0) return 0;
  int64_t first = fx_tape.ndots;
  while (first > 0 && fx_tape.dots[first - 1].id >= mark) first--;
  int plain = fx_tape_is_plain();
  for (int64_t d = first; d < fx_tape.ndots; d++) plain = plain && !fx_tape.dots[d].loop;
  if (!plain) fx_fail(src, start, end, "internal error: a Jacobian's tape is not plain");
  int64_t group = fx_tape.ngroups;
  while (group > 0 && fx_tape.groups[2 * group - 2] >= mark) group--;
  /* Fewer inputs a pass where the tangents would pass an eighth of the budget, down to
   * one (a backward sweep's adjoints): a lane's sums do not depend on the width. */
  int64_t w = nin < FX_COLUMNS ? nin : FX_COLUMNS;
  while (w > 1 && fx_memory_used + (uint64_t)n * (uint64_t)w * sizeof(double) > fx_memory_limit / 8) w = (w + 1) / 2;
  uint64_t bytes = (uint64_t)n * (uint64_t)w * sizeof(double);
  for (int64_t i = 0; i < nout; i++)
    FX_DATA(out, fx_arr *)[i] = fx_arr_new(nin, sizeof(fx_real), "an array", src, start, end);
  fx_budget(bytes, src, start, end);
  double *t = (double *)malloc(bytes);
  if (!t) fx_fail(src, start, end, "out of memory: a Jacobian's tangents need %llu bytes", (unsigned long long)bytes);
  fx_memory_used += bytes;
  const int64_t *in = fx_pair_ids(xd), *ids = fx_pair_ids(r);
  for (int64_t c0 = 0; c0 < nin; c0 += w) {
    memset(t, 0, bytes);
    for (int64_t j = c0; j < nin && j < c0 + w; j++)
      if (in[j] >= mark) t[(in[j] - mark) * w + (j - c0)] = 1.0;
    int64_t d = first, next_dot = d < fx_tape.ndots ? fx_tape.dots[d].id : -1;
    int64_t g = group, next_group = g < fx_tape.ngroups ? fx_tape.groups[2 * g] : -1;
    for (int64_t id = mark; id < fx_tape.len; id++) {
      double *ti = t + (id - mark) * w;
      double te[FX_COLUMNS];
      if (id == next_dot) {
        /* A dot node: the sum over its elements, first to last, of each one's
         * b[e]·δa[e] + a[e]·δb[e] (the interpreter's element nodes, then its sum). */
        const fx_tape_dot_t *dn = &fx_tape.dots[d];
        const double *av = fx_pair_vals(dn->a), *bv = fx_pair_vals(dn->b);
        const int64_t *ai = fx_pair_ids(dn->a), *bi = fx_pair_ids(dn->b);
        for (int64_t e = 0; e < dn->n; e++) {
          if (ai[e] < mark && bi[e] < mark) continue;
          memset(te, 0, (size_t)w * sizeof(double));
          if (ai[e] >= mark) fx_columns_add(te, bv[e], t + (ai[e] - mark) * w, w);
          if (bi[e] >= mark) fx_columns_add(te, av[e], t + (bi[e] - mark) * w, w);
          fx_columns_add(ti, 1.0, te, w);
        }
        d++;
        next_dot = d < fx_tape.ndots ? fx_tape.dots[d].id : -1;
        continue;
      }
      if (id == next_group) {
        /* A fused sum: its elements' terms lie last element first (fx_tape_fused_terms). */
        int64_t k = fx_tape.groups[2 * g + 1], s0 = fx_tape.starts[id], s1 = fx_tape.starts[id + 1];
        for (int64_t e0 = s1 - k; e0 >= s0; e0 -= k) {
          memset(te, 0, (size_t)w * sizeof(double));
          for (int64_t q = e0; q < e0 + k; q++) {
            int64_t p = fx_tape.parents[q];
            if (p >= mark) fx_columns_add(te, fx_tape.coefs[q], t + (p - mark) * w, w);
          }
          fx_columns_add(ti, 1.0, te, w);
        }
        g++;
        next_group = g < fx_tape.ngroups ? fx_tape.groups[2 * g] : -1;
        continue;
      }
      for (int64_t k = fx_tape.starts[id]; k < fx_tape.starts[id + 1]; k++) {
        int64_t p = fx_tape.parents[k];
        if (p >= mark) fx_columns_add(ti, fx_tape.coefs[k], t + (p - mark) * w, w);
      }
    }
    for (int64_t i = 0; i < nout; i++) {
      double *row = FX_DATA(FX_DATA(out, fx_arr *)[i], fx_real);
      for (int64_t j = c0; j < nin && j < c0 + w; j++) row[j] = ids[i] >= mark ? t[(ids[i] - mark) * w + (j - c0)] : 0.0;
    }
  }
  free(t);
  fx_memory_used -= bytes;
  return 1;
}

/* A `%delta_sumbuild` of `n` elements begins: the mark of its elements' ids, or -1
 * inside another's elements (they stay on the tape: fx_pre_plain). */
static int64_t fx_pre_open(uint32_t src, uint32_t start, uint32_t end) {
  if (fx_pre.active) return -1;
  fx_tape_reserve(0, src, start, end);
  int64_t mark = fx_tape.len;
  /* Each buffer grown to its own need, its capacity recorded once it has it: a
   * budget error in between leaves every recorded capacity true. */
  if (mark > fx_pre.cap_g) {
    int64_t cap = fx_pre.cap_g;
    fx_pre.g = (double *)fx_tape_grow(fx_pre.g, &cap, mark, sizeof(double), src, start, end);
    memset(fx_pre.g + fx_pre.cap_g, 0, (size_t)(cap - fx_pre.cap_g) * sizeof(double));
    fx_pre.cap_g = cap;
  }
  if (mark / 32 + 1 > fx_pre.cap_b1) {
    int64_t cap = fx_pre.cap_b1;
    fx_pre.b1 = (uint32_t *)fx_tape_grow(fx_pre.b1, &cap, mark / 32 + 1, sizeof(uint32_t), src, start, end);
    memset(fx_pre.b1 + fx_pre.cap_b1, 0, (size_t)(cap - fx_pre.cap_b1) * sizeof(uint32_t));
    fx_pre.cap_b1 = cap;
  }
  if (mark / 1024 + 1 > fx_pre.cap_b2) {
    int64_t cap = fx_pre.cap_b2;
    fx_pre.b2 = (uint32_t *)fx_tape_grow(fx_pre.b2, &cap, mark / 1024 + 1, sizeof(uint32_t), src, start, end);
    memset(fx_pre.b2 + fx_pre.cap_b2, 0, (size_t)(cap - fx_pre.cap_b2) * sizeof(uint32_t));
    fx_pre.cap_b2 = cap;
  }
  fx_pre.active = 1;
  fx_pre.hi = mark / 1024 + 1;
  return mark;
}
/* Element `id` made: its entries (from `mark` on) swept into the sum's terms, dropped. */
static void fx_pre_element(int64_t mark, int64_t id, uint32_t src, uint32_t start, uint32_t end) {
  if (id >= mark) {
    fx_tape_sweep_begin(mark, src, start, end);
    fx_tape.adj[id - mark] = 1.0;
    fx_pre_sweep();
  } else {
    FX_PRE_ADD(id, 1.0);
  }
  fx_tape_truncate(mark);
}
/* Calls `f(id)` for each id whose bit is set, in increasing order: the words of b1
 * that b2 marks, in b2's words below `hi`; with `clear` 1, clearing the bits. */
#define FX_PRE_BITS(f, clear)                                                           \
  for (int64_t w2 = 0; w2 < fx_pre.hi; w2++) {                                          \
    for (uint32_t m2 = fx_pre.b2[w2]; m2; m2 &= m2 - 1) {                               \
      int64_t w1 = w2 * 32 + __builtin_ctz(m2);                                         \
      for (uint32_t m1 = fx_pre.b1[w1]; m1; m1 &= m1 - 1) f(w1 * 32 + __builtin_ctz(m1)); \
      if (clear) fx_pre.b1[w1] = 0;                                                     \
    }                                                                                   \
    if (clear) fx_pre.b2[w2] = 0;                                                       \
  }
/* Whether id `p` is one of the sum's node's terms. */
#define FX_PRE_LIVE(p) ((p) != 0 && fx_pre.g[p] != 0.0)
/* The sum's node: each id reached but the zero delta, with its coefficient if not 0
 * (the interpreter's terms, in increasing order: each id once, so the order changes
 * no sum); `g` and the bits zero again. */
static int64_t fx_pre_close(uint32_t src, uint32_t start, uint32_t end) {
  fx_pre.active = 0;
  int64_t terms = 0;
#define FX_PRE_COUNT(p) terms += FX_PRE_LIVE(p)
  FX_PRE_BITS(FX_PRE_COUNT, 0)
#undef FX_PRE_COUNT
  fx_tape_reserve(terms, src, start, end);
#define FX_PRE_TERM(p)                                          \
  do {                                                          \
    int64_t p_ = (p);                                           \
    if (FX_PRE_LIVE(p_)) fx_tape_term(fx_pre.g[p_], p_);        \
    fx_pre.g[p_] = 0.0;                                         \
  } while (0)
  FX_PRE_BITS(FX_PRE_TERM, 1)
#undef FX_PRE_TERM
  fx_pre.hi = 0;
  return fx_tape_node();
}
/* A `%delta_sumbuild` inside another's elements: `%delta_sum` of its elements' ids. */
static int64_t fx_pre_plain(const fx_arr *ids, uint32_t src, uint32_t start, uint32_t end) {
  int64_t n = ids->len;
  if (n == 0) return 0;
  const int64_t *d = (const int64_t *)(ids + 1);
  fx_tape_reserve(n, src, start, end);
  for (int64_t i = 0; i < n; i++) fx_tape_term(1.0, d[i]);
  return fx_tape_node();
}
/* After a failed call: no sum under way, `g` zero. */
static void fx_pre_reset(void) {
#define FX_PRE_CLEAR(p) fx_pre.g[p] = 0.0
  FX_PRE_BITS(FX_PRE_CLEAR, 1)
#undef FX_PRE_CLEAR
  fx_pre.hi = 0;
  fx_pre.active = 0;
}

/* The second tape of reverse over reverse (fluxion-ad's delta_twice.rs; the
 * interpreter's tape.rs `Tape2`, step for step): node i is the inner delta
 * sum_k (coefs[k], cids[k]) * parents[k], each coefficient an outer pair (a value and
 * its delta's id on fx_tape). %delta2_open opens it at a mark, as fx_tape_open; the
 * sweep keeps each adjoint as an outer pair and records each step adj[p] += c * a
 * where c or a has an outer delta on fx_tape: the node (1, adj[p]) + (a, c's id) +
 * (c, a's id). */
static struct {
  int64_t len, depth, cap_nodes, nterms, cap_terms, mark;
  int64_t *starts;
  double *coefs;
  uint32_t *cids, *parents;
  double *adjv;
  int64_t *adjd;
  uint64_t adj_bytes;
} fx_tape2;

static uint64_t fx_tape2_bytes(void) {
  return (uint64_t)fx_tape2.cap_nodes * sizeof(int64_t) +
         (uint64_t)fx_tape2.cap_terms * (sizeof(double) + 2 * sizeof(uint32_t));
}
/* On entry: as fx_tape_reset. */
static void fx_tape2_reset(void) {
  fx_tape2.len = 1;
  fx_tape2.depth = 0;
  fx_tape2.nterms = 0;
  free(fx_tape2.adjv);
  free(fx_tape2.adjd);
  fx_tape2.adjv = NULL;
  fx_tape2.adjd = NULL;
  fx_tape2.adj_bytes = 0;
  if (fx_tape2_bytes() > fx_memory_limit / 4) {
    free(fx_tape2.starts);
    free(fx_tape2.coefs);
    free(fx_tape2.cids);
    free(fx_tape2.parents);
    fx_tape2.starts = NULL;
    fx_tape2.coefs = NULL;
    fx_tape2.cids = fx_tape2.parents = NULL;
    fx_tape2.cap_nodes = fx_tape2.cap_terms = 0;
  }
  fx_memory_used += fx_tape2_bytes();
}
/* Out of line, as fx_tape_push1/2: a function making many nodes calls it often. */
static __attribute__((noinline)) void fx_tape2_reserve(int64_t terms, uint32_t src, uint32_t start, uint32_t end) {
  if (fx_tape2.depth == 0) fx_fail(src, start, end, "internal error: a delta outside a reverse pass");
  if (fx_tape2.len + 2 > (int64_t)UINT32_MAX) fx_fail(src, start, end, "the reverse pass needs more than 2^32 deltas");
  if (fx_tape2.len + 2 > fx_tape2.cap_nodes) {
    int64_t cap = fx_tape2.cap_nodes;
    fx_tape2.starts = (int64_t *)fx_tape_grow(fx_tape2.starts, &cap, fx_tape2.len + 2, sizeof(int64_t), src, start, end);
    fx_tape2.cap_nodes = cap;
  }
  if (fx_tape2.nterms + terms > fx_tape2.cap_terms) {
    int64_t need = fx_tape2.nterms + terms, cap = fx_tape2.cap_terms;
    fx_tape2.coefs = (double *)fx_tape_grow(fx_tape2.coefs, &cap, need, sizeof(double), src, start, end);
    cap = fx_tape2.cap_terms;
    fx_tape2.cids = (uint32_t *)fx_tape_grow(fx_tape2.cids, &cap, need, sizeof(uint32_t), src, start, end);
    cap = fx_tape2.cap_terms;
    fx_tape2.parents = (uint32_t *)fx_tape_grow(fx_tape2.parents, &cap, need, sizeof(uint32_t), src, start, end);
    fx_tape2.cap_terms = cap;
  }
}
/* A term of the node being made; none on the zero delta. */
static inline void fx_tape2_term(double c, int64_t cid, int64_t id) {
  if (id != 0) {
    fx_tape2.coefs[fx_tape2.nterms] = c;
    fx_tape2.cids[fx_tape2.nterms] = (uint32_t)cid;
    fx_tape2.parents[fx_tape2.nterms] = (uint32_t)id;
    fx_tape2.nterms++;
  }
}
static inline int64_t fx_tape2_node_raw(void) {
  fx_tape2.starts[fx_tape2.len + 1] = fx_tape2.nterms;
  return fx_tape2.len++;
}
/* As fx_tape_node: with no term, the zero delta. */
static inline int64_t fx_tape2_node(void) {
  if (fx_tape2.nterms == fx_tape2.starts[fx_tape2.len]) return 0;
  return fx_tape2_node_raw();
}
static int64_t fx_tape2_input(uint32_t src, uint32_t start, uint32_t end) {
  fx_tape2_reserve(0, src, start, end);
  return fx_tape2_node_raw();
}
static int64_t fx_tape2_open(void) {
  if (fx_tape2.cap_nodes < 2) {
    int64_t cap = fx_tape2.cap_nodes;
    fx_tape2.starts = (int64_t *)fx_tape_grow(fx_tape2.starts, &cap, 2, sizeof(int64_t), 0, 0, 0);
    fx_tape2.cap_nodes = cap;
  }
  if (fx_tape2.len == 1) fx_tape2.starts[0] = fx_tape2.starts[1] = 0;
  fx_tape2.depth++;
  return fx_tape2.len;
}
/* The outer node (1, d0) + (c1, d1) + (c2, d2) on fx_tape. */
static int64_t fx_tape2_outer(int64_t d0, double c1, int64_t d1, double c2, int64_t d2, uint32_t src, uint32_t start,
                              uint32_t end) {
  fx_tape_reserve(3, src, start, end);
  fx_tape_term(1.0, d0);
  fx_tape_term(c1, d1);
  fx_tape_term(c2, d2);
  return fx_tape_node();
}
static void fx_tape2_sweep_begin(int64_t mark, uint32_t src, uint32_t start, uint32_t end) {
  fx_tape2.mark = mark;
  size_t n = (size_t)(fx_tape2.len - mark) + 1;
  uint64_t bytes = (uint64_t)n * (sizeof(double) + sizeof(int64_t));
  fx_budget(bytes, src, start, end);
  fx_tape2.adjv = (double *)calloc(n, sizeof(double));
  fx_tape2.adjd = (int64_t *)calloc(n, sizeof(int64_t));
  if (!fx_tape2.adjv || !fx_tape2.adjd)
    fx_fail(src, start, end, "out of memory: the adjoints of %lld deltas", (long long)(fx_tape2.len - mark));
  fx_tape2.adj_bytes = bytes;
  fx_memory_used += bytes;
}
/* adj[id] += (wv, wd): an outer node only where both have deltas. */
static void fx_tape2_seed(int64_t id, double wv, int64_t wd, uint32_t src, uint32_t start, uint32_t end) {
  if (id < fx_tape2.mark) return;
  int64_t i = id - fx_tape2.mark, ud = fx_tape2.adjd[i];
  int64_t d = ud == 0 ? wd : wd == 0 ? ud : fx_tape2_outer(ud, 1.0, wd, 0.0, 0, src, start, end);
  fx_tape2.adjv[i] += wv;
  fx_tape2.adjd[i] = d;
}
static void fx_tape2_sweep(uint32_t src, uint32_t start, uint32_t end) {
  int64_t mark = fx_tape2.mark;
  double *adjv = fx_tape2.adjv;
  int64_t *adjd = fx_tape2.adjd;
  for (int64_t id = fx_tape2.len - 1; id >= mark; id--) {
    double a = adjv[id - mark];
    int64_t ad = adjd[id - mark];
    if (a == 0.0 && ad == 0) continue;
    for (int64_t k = fx_tape2.starts[id]; k < fx_tape2.starts[id + 1]; k++) {
      int64_t p = fx_tape2.parents[k], cid = fx_tape2.cids[k];
      if (p < mark) continue;
      double c = fx_tape2.coefs[k];
      /* The value's step is the first tape's (a zero partial or a zero adjoint passes
       * nothing on); its delta is d(c * a) = a * dc + c * da. */
      if (c != 0.0 && a != 0.0) adjv[p - mark] += c * a;
      if (cid != 0 || ad != 0) adjd[p - mark] = fx_tape2_outer(adjd[p - mark], a, cid, c, ad, src, start, end);
    }
  }
}
static inline double fx_tape2_adjv(int64_t id) { return id >= fx_tape2.mark ? fx_tape2.adjv[id - fx_tape2.mark] : 0.0; }
static inline int64_t fx_tape2_adjd(int64_t id) { return id >= fx_tape2.mark ? fx_tape2.adjd[id - fx_tape2.mark] : 0; }
static void fx_tape2_close(int64_t mark) {
  free(fx_tape2.adjv);
  free(fx_tape2.adjd);
  fx_tape2.adjv = NULL;
  fx_tape2.adjd = NULL;
  fx_memory_used -= fx_tape2.adj_bytes;
  fx_tape2.adj_bytes = 0;
  fx_tape2.len = mark;
  fx_tape2.nterms = fx_tape2.starts[mark];
  fx_tape2.depth--;
}

static inline void *fx_inc_ret(void *p) {
  fx_inc(p);
  return p;
}

/* The argument and result streams of the entry ABI: 64-bit words, a Real as its bits,
 * an Int or Bool as a number, an array as its length then its elements, a tuple as
 * its fields, an enum as its tag then its fields, () as nothing. */
typedef struct {
  const uint64_t *words;
  size_t len, pos;
} fx_reader;
typedef struct {
  uint64_t *words;
  size_t len, cap;
} fx_writer;
/* The entry's result stream while it is written: a failure or hand-over part-way (a
 * result too deep for FX_DEEP_CHECK) frees it on the way out, as it frees objects. */
static fx_writer fx_out;

static uint64_t fx_read(fx_reader *r) {
  if (r->pos >= r->len) fx_fail(0, 0, 0, "internal error: the argument stream is too short");
  return r->words[r->pos++];
}
static double fx_read_real(fx_reader *r) {
  uint64_t w = fx_read(r);
  double d;
  memcpy(&d, &w, 8);
  return d;
}
/* Room for `more` words in the result stream (its capacity doubled, from 64, as often
 * as that needs). */
static void fx_reserve(fx_writer *w, size_t more) {
  if (w->cap - w->len >= more) return;
  size_t cap = w->cap ? w->cap * 2 : 64;
  while (cap - w->len < more) cap *= 2;
  uint64_t *words = (uint64_t *)realloc(w->words, cap * 8);
  if (!words) fx_fail(0, 0, 0, "out of memory writing the result");
  w->words = words;
  w->cap = cap;
}
static void fx_write(fx_writer *w, uint64_t x) {
  fx_reserve(w, 1);
  w->words[w->len++] = x;
}
static void fx_write_real(fx_writer *w, double d) {
  uint64_t x;
  memcpy(&x, &d, 8);
  fx_write(w, x);
}

/* An array of 8-byte numbers (Real as bits, Int) in the argument stream: its length,
 * then its elements in the stream — or, the length's top bit set, one word holding the
 * address of the caller's buffer of them (a NumPy array's, read in place: the caller
 * keeps it alive during the call). One copy either way, by memcpy. */
#define FX_BORROWED ((uint64_t)1 << 63)
static fx_arr *fx_read_numbers(fx_reader *r) {
  uint64_t w = fx_read(r);
  int64_t n = (int64_t)(w & ~FX_BORROWED);
  fx_arr *a = fx_arr_new(n, 8, "an argument", 0, 0, 0);
  const uint64_t *from;
  if (w & FX_BORROWED) {
    from = (const uint64_t *)(uintptr_t)fx_read(r);
  } else {
    if ((uint64_t)n > r->len - r->pos) fx_fail(0, 0, 0, "internal error: the argument stream is too short");
    from = r->words + r->pos;
    r->pos += (size_t)n;
  }
  if (n) memcpy(FX_DATA(a, uint64_t), from, (size_t)n * 8);
  return a;
}
/* An array of 8-byte numbers into the result stream: its length, then its elements. */
static void fx_write_numbers(fx_writer *w, fx_arr *x) {
  int64_t n = FX_LEN(x);
  fx_write(w, (uint64_t)n);
  if (!n) return;
  fx_reserve(w, (size_t)n);
  memcpy(w->words + w->len, FX_DATA(x, uint64_t), (size_t)n * 8);
  w->len += (size_t)n;
}

/* Frees a result stream the entry returned. */
void fx_free_words(uint64_t *words) { free(words); }

/* Sets up the limits and the error target of one entry call. */
/* The entry's repeated runs (fx_config): a monotonic clock, and whether run `run`
 * (0-based), which took `ns`, is the last. */
static uint64_t fx_runs_total;
static uint64_t fx_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static int fx_run_done(const fx_config *cfg, uint64_t run, uint64_t ns) {
  if (!cfg->times) return 1;
  cfg->times[run] = ns;
  *cfg->n_times = run + 1;
  fx_runs_total += ns;
  return run + 1 >= cfg->times_cap ||
         (run + 1 >= cfg->min_runs && fx_runs_total >= cfg->min_ns);
}
/* Between two runs (after the last one's result is released): what was put off
 * released, and the tapes emptied as on entry — their kept buffers uncharged first,
 * so that they count once, not once per run. */
static void fx_run_again(void) {
  fx_later_drain();
  /* The free lists stay (bounded by FX_POOL_HELD), as malloc's own would: a loop
   * node's closures and a gradient's rows, all live until the sweep, were malloc'd
   * anew every run. */
  fx_memory_used -= fx_tape_bytes() + fx_tape2_bytes();
  fx_tape_reset(1);
  fx_tape2_reset();
}

#define FX_ENTRY_BEGIN(cfg, err)             \
  fx_runs_total = 0;                         \
  fx_err = (err);                            \
  fx_stack_limit = (cfg)->stack_limit;       \
  fx_entry_limit = fx_stack_limit > 65536 ? fx_stack_limit - 65536 : 0; \
  fx_memory_limit = (cfg)->memory_limit;     \
  fx_memory_used = 0;                        \
  fx_tape_reset(0);                          \
  fx_tape2_reset();                          \
  fx_site.name = NULL;                       \
  fx_fail_status = 1;                        \
  fx_out = (fx_writer){0};                   \
  if (setjmp(fx_jmp)) {                       \
    free(fx_out.words);                      \
    fx_out = (fx_writer){0};                 \
    fx_free_all();                           \
    return fx_fail_status;                   \
  }
