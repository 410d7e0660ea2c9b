#!/bin/sh
# Second-order gradients against the inner gradient (issue 31's scaling target),
# one core, each backend and reverse mode: wall seconds of one run after a warm-up
# run (which fills the native cache). Run from the repository's root after
# `cargo build --release -p fluxion-cli`:
#   sh crates/fluxion-bench/second_order/run.sh
# (ADS="delta" SIZES="1000 2000" PROGRAMS="inner gp" to choose the modes, sizes and
# programs.)
#  inner_gg: grad(|v| s * sum(map(|t| t * t, v)), x0)        (the inner gradient)
#  gg:       grad(|s| sum(grad(|v| s * sum(map(|t| t * t, v)), x0)), 1.0)
#  inner:    grad(f, w), f(w) = sum(map(|t| sin(t) * t, w))
#  gp:       grad of the gradient penalty |grad(f, w)|^2
#  gp_chosen: gp with f taken from an array at run time (n even: the same f)
#  inner_hyper: grad(loss, w)
#  hyper:    d/d(lr) of the loss after five gradient steps w - lr * grad(loss, w)
#  inner_rof: jvp(f, w, u)
#  rof:      grad(|w| jvp(f, w, u).1, w): reverse over forward
dir=$(dirname "$0")
F=${FLUXION:-target/release/fluxion}
t=$(mktemp)
for ad in ${ADS:-delta chad}; do for b in interp native; do for n in ${SIZES:-1000 10000 100000 1000000}; do
  line="$ad $b n=$n"
  for p in ${PROGRAMS:-inner_gg gg inner gp gp_chosen inner_hyper hyper inner_rof rof}; do
    taskset -c 1 "$F" run "$dir/$p.flx" --args "[$n]" --ad $ad --backend $b >/dev/null 2>&1
    /usr/bin/time -o "$t" -f "%e" taskset -c 1 "$F" run "$dir/$p.flx" --args "[$n]" \
      --ad $ad --backend $b >/dev/null 2>&1
    line="$line $p=$(cat "$t")"
  done
  echo "$line"
done; done; done
rm -f "$t"
