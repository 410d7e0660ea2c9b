//! Zero and plus of tangent values are a commutative monoid on every tangent type, and
//! the symbolic zero is interchangeable with the dense one: x + 0 = x, u + v = v + u,
//! (u + v) + w = u + (v + w), on random types and values (reals are small integers so
//! that float addition is exact and associativity can be tested with `==`).

use std::rc::Rc;

use fluxion_interp::Value;
use fluxion_interp::tangent::{dense, plus, zero_at};
use proptest::prelude::*;

/// A tangent type with its lengths and constructors fixed.
#[derive(Clone, Debug)]
enum Shape {
    Real,
    Unit,
    Tuple(Vec<Shape>),
    Array(usize, Box<Shape>),
    /// Constructor tag and field shapes.
    Enum(u32, Vec<Shape>),
}

/// A small deterministic generator, driven by proptest's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn shape(r: &mut Rng, depth: u32) -> Shape {
    let pick = if depth == 0 { r.next(2) } else { r.next(5) };
    match pick {
        0 => Shape::Real,
        1 => Shape::Unit,
        2 => Shape::Tuple((0..2 + r.next(2)).map(|_| shape(r, depth - 1)).collect()),
        3 => Shape::Array(r.next(4) as usize, Box::new(shape(r, depth - 1))),
        _ => Shape::Enum(
            r.next(3) as u32,
            (0..r.next(3)).map(|_| shape(r, depth - 1)).collect(),
        ),
    }
}

/// A value of `s`; where `zeros` allows, a part is the symbolic zero instead.
fn value(s: &Shape, r: &mut Rng, zeros: bool) -> Value {
    if zeros && r.next(5) == 0 {
        return Value::Zero;
    }
    match s {
        Shape::Real => Value::Real(r.next(21) as f64 - 10.0),
        Shape::Unit => Value::Unit,
        Shape::Tuple(ts) => {
            let fields: Vec<Value> = ts.iter().map(|t| value(t, r, zeros)).collect();
            // Both representations of a pair of reals: canonical (`Dual`) and boxed.
            if r.next(2) == 0 {
                Value::tuple(fields)
            } else {
                Value::Tuple(fields.into())
            }
        }
        Shape::Array(n, t) => Value::array((0..*n).map(|_| value(t, r, zeros)).collect()),
        Shape::Enum(tag, fs) => Value::Enum(
            *tag,
            fs.iter().map(|f| value(f, r, zeros)).collect::<Rc<[_]>>(),
        ),
    }
}

/// Equality after making both dense at the point `p`.
fn same(p: &Value, a: &Value, b: &Value) -> bool {
    dense(p, a)
        .expect("dense")
        .equals(&dense(p, b).expect("dense"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn zero_and_plus_form_a_commutative_monoid(seed in 1u64..u64::MAX) {
        let mut r = Rng(seed);
        let s = shape(&mut r, 3);
        let p = value(&s, &mut r, false);
        let (u, v, w) = (value(&s, &mut r, true), value(&s, &mut r, true), value(&s, &mut r, true));
        let add = |a: &Value, b: &Value| plus(a, b).expect("same shape");
        // x + 0 = x = 0 + x, with the symbolic zero and with the dense zero at p.
        prop_assert!(same(&p, &add(&u, &Value::Zero), &u));
        prop_assert!(same(&p, &add(&Value::Zero, &u), &u));
        prop_assert!(same(&p, &add(&u, &zero_at(&p)), &u));
        // Commutativity and associativity.
        prop_assert!(same(&p, &add(&u, &v), &add(&v, &u)));
        prop_assert!(same(&p, &add(&add(&u, &v), &w), &add(&u, &add(&v, &w))));
        // Adding dense forms gives the dense form of the sum.
        let du = dense(&p, &u).expect("dense");
        let dv = dense(&p, &v).expect("dense");
        prop_assert!(same(&p, &add(&du, &dv), &add(&u, &v)));
        // The symbolic zero made dense is the dense zero.
        prop_assert!(dense(&p, &Value::Zero).expect("dense").equals(&zero_at(&p)));
    }
}

#[test]
fn tangents_of_different_lengths_or_constructors_do_not_add() {
    let a = Value::array(vec![Value::Real(1.0), Value::Real(2.0)]);
    let b = Value::array(vec![Value::Real(1.0)]);
    let err = plus(&a, &b).expect_err("lengths 2 and 1");
    assert!(err.contains("different lengths (2 and 1)"), "{err}");
    let e0 = Value::Enum(0, Rc::new([Value::Real(1.0)]));
    let e1 = Value::Enum(1, Rc::new([Value::Real(1.0)]));
    assert!(
        plus(&e0, &e1)
            .expect_err("constructors")
            .contains("different constructors")
    );
    // The symbolic zero has no length: it adds to any array, and to any constructor.
    assert!(plus(&a, &Value::Zero).expect("zero").equals(&a));
    assert!(plus(&Value::Zero, &e1).expect("zero").equals(&e1));
    // Made dense at a point, a tangent must have the point's length.
    let err = dense(&a, &b).expect_err("length 1 at a point of length 2");
    assert!(err.contains("length 1 at a point of length 2"), "{err}");
}
