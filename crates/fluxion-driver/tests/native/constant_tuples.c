/* GCC 12.2 with -mavx512f at -O2 or above built the constant argument of fn_45's
   call below, ((1, 1), (0, 0)), as four 1s: nested `diff` under dual numbers gave 2
   where the answer is 1. Plain C, reduced from the C the native backend wrote for
   `diff(|x| x * diff(|y| x + y, 1.0), 1.0)`; the backend's flags must build it right. */
#include <stdio.h>
typedef struct { double f0; double f1; } tup_0;
typedef struct { tup_0 f0; tup_0 f1; } tup_1;
typedef struct clo { tup_1 (*code)(struct clo *, tup_1); tup_1 c0; } clo;

__attribute__((noinline)) static tup_1 fn_42(clo *self, tup_1 x) {
  tup_1 c = self->c0;
  tup_0 a = {c.f0.f0 + x.f0.f0, c.f0.f1 + x.f0.f1};
  tup_0 b = {c.f1.f0 + x.f1.f0, c.f1.f1 + x.f1.f1};
  tup_1 r = {a, b};
  return r;
}

__attribute__((noinline)) static tup_1 fn_45(clo *f, tup_0 x, tup_0 t) {
  tup_0 dense = {t.f0 + 0.0, t.f1 + 0.0};
  tup_0 primal = {x.f0, dense.f0};
  tup_0 tangent = {x.f1, dense.f1};
  tup_1 combined = {primal, tangent};
  tup_1 y = f->code(f, combined);
  tup_0 p = {y.f0.f0, y.f1.f0};
  tup_0 q = {y.f0.f1, y.f1.f1};
  tup_1 r = {p, q};
  return r;
}

int main(void) {
  clo c = {fn_42, {{1, 0}, {1, 0}}};
  tup_0 a = {1, 0};
  tup_1 r = fn_45(&c, a, a);
  printf("((%g, %g), (%g, %g))\n", r.f0.f0, r.f0.f1, r.f1.f0, r.f1.f1);
  return 0;
}
