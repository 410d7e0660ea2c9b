//! `--args` decoding and `--json` output (LANGUAGE.md §6): JSON values against Core
//! types. Tuples and arrays are JSON arrays, unit is `null`, an enum value is
//! `{"Ctor": [fields]}` (a nullary one may also be the string `"Ctor"`), non-finite
//! reals are the strings `"NaN"`, `"inf"`, `"-inf"`.

use std::rc::Rc;

use fluxion_core::{Module, Type};
use fluxion_interp::Value;
use serde_json::Value as Json;

/// Decodes `json` as a value of type `ty`; the error names the path (`$[0][1]`).
pub fn decode(json: &Json, ty: &Type, module: &Module, path: &str) -> Result<Value, String> {
    let show = |t: &Type| t.display(&module.enums).to_string();
    let bad = || {
        Err(format!(
            "at {path}: expected {}, found {}",
            show(ty),
            describe(json)
        ))
    };
    match ty {
        Type::Real => match json {
            Json::Number(n) => n
                .as_f64()
                .map(Value::Real)
                .ok_or_else(|| format!("at {path}: bad number")),
            Json::String(s) if s == "NaN" => Ok(Value::Real(f64::NAN)),
            Json::String(s) if s == "inf" => Ok(Value::Real(f64::INFINITY)),
            Json::String(s) if s == "-inf" => Ok(Value::Real(f64::NEG_INFINITY)),
            _ => bad(),
        },
        Type::Int => match json.as_i64() {
            Some(i) => Ok(Value::Int(i)),
            None => bad(),
        },
        Type::Bool => match json {
            Json::Bool(b) => Ok(Value::Bool(*b)),
            _ => bad(),
        },
        Type::Unit => match json {
            Json::Null => Ok(Value::Unit),
            _ => bad(),
        },
        Type::Tuple(ts) => match json {
            Json::Array(xs) if xs.len() == ts.len() => Ok(Value::tuple(
                xs.iter()
                    .zip(ts)
                    .enumerate()
                    .map(|(i, (x, t))| decode(x, t, module, &format!("{path}[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?,
            )),
            _ => bad(),
        },
        Type::Array(t) => match json {
            Json::Array(xs) => {
                if xs.len() as i64 > fluxion_interp::MAX_ARRAY_LEN {
                    return Err(format!("at {path}: array too large"));
                }
                let elems = xs
                    .iter()
                    .enumerate()
                    .map(|(i, x)| decode(x, t, module, &format!("{path}[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::array(elems))
            }
            _ => bad(),
        },
        Type::Enum(e) => {
            let def = module.enum_def(*e);
            let (name, fields) = match json {
                Json::String(s) => (s.as_str(), &[][..]),
                Json::Object(m) if m.len() == 1 => {
                    let (k, v) = m.iter().next().expect("one entry");
                    match v {
                        Json::Array(fs) => (k.as_str(), fs.as_slice()),
                        Json::Null => (k.as_str(), &[][..]),
                        _ => return bad(),
                    }
                }
                _ => return bad(),
            };
            let Some(tag) = def.variants.iter().position(|v| v.name == name) else {
                return Err(format!(
                    "at {path}: `{name}` is not a constructor of {}",
                    def.name
                ));
            };
            let variant = &def.variants[tag];
            if variant.fields.len() != fields.len() {
                return Err(format!(
                    "at {path}: `{name}` has {} field(s), found {}",
                    variant.fields.len(),
                    fields.len()
                ));
            }
            let vals = fields
                .iter()
                .zip(&variant.fields)
                .enumerate()
                .map(|(i, (x, t))| decode(x, t, module, &format!("{path}.{name}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Value::Enum(tag as u32, Rc::from(vals)))
        }
        Type::Fn(..) => Err(format!("at {path}: functions cannot be passed as JSON")),
    }
}

fn describe(json: &Json) -> String {
    let s = json.to_string();
    if s.len() > 40 {
        format!("{}...", &s[..s.floor_char_boundary(40)])
    } else {
        s
    }
}

/// Encodes a value of type `ty` as JSON.
pub fn encode(v: &Value, ty: &Type, module: &Module) -> Json {
    match (v, ty) {
        (Value::Real(x), _) => real_json(*x),
        (Value::Int(i), _) => Json::from(*i),
        (Value::Bool(b), _) => Json::Bool(*b),
        (Value::Unit, _) => Json::Null,
        (Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..), Type::Tuple(ts)) => Json::Array(
            v.tuple_fields()
                .unwrap_or_default()
                .iter()
                .zip(ts)
                .map(|(v, t)| encode(v, t, module))
                .collect(),
        ),
        (Value::RealArray(xs), _) => Json::Array(xs.iter().map(|x| real_json(*x)).collect()),
        (Value::IntArray(xs), _) => Json::Array(xs.iter().map(|x| Json::from(*x)).collect()),
        (Value::BoolArray(xs), _) => Json::Array(xs.iter().map(|x| Json::Bool(*x)).collect()),
        (Value::Array(_) | Value::DualArray(_), Type::Array(t)) => {
            Json::Array(v.array_iter().map(|v| encode(&v, t, module)).collect())
        }
        (Value::Enum(tag, fields), Type::Enum(e)) => {
            let variant = &module.enum_def(*e).variants[*tag as usize];
            let mut m = serde_json::Map::new();
            m.insert(
                variant.name.clone(),
                Json::Array(
                    fields
                        .iter()
                        .zip(&variant.fields)
                        .map(|(v, t)| encode(v, t, module))
                        .collect(),
                ),
            );
            Json::Object(m)
        }
        (Value::Closure(_), _) => Json::String("<function>".into()),
        _ => Json::Null,
    }
}

fn real_json(x: f64) -> Json {
    if x.is_nan() {
        Json::String("NaN".into())
    } else if x.is_infinite() {
        Json::String(if x > 0.0 { "inf" } else { "-inf" }.into())
    } else {
        serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number)
    }
}

#[cfg(test)]
mod tests {
    use fluxion_interp::Value;

    /// Runs `main` with `args` (JSON): the result as JSON and as a literal, and
    /// whether the representation is the one `expect` asks for.
    fn round_trip(src: &str, args: &str, expect: fn(&Value) -> bool) -> (String, String, bool) {
        let (src, args) = (src.to_string(), args.to_string());
        crate::with_big_stack(move || {
            let program =
                crate::compile("t.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
            let out = program
                .run("main", Some(&args))
                .unwrap_or_else(|f| panic!("{}", f.render()));
            (out.to_json(), out.to_literal(), expect(&out.value))
        })
    }

    #[test]
    fn int_and_bool_arrays_round_trip_through_json_unboxed() {
        let src =
            "fn main(xs: [Int], bs: [Bool], e: [Int]) -> ([Int], [Bool], [Int]) { (xs, bs, e) }";
        let args = "[[1,-2,9223372036854775807],[true,false],[]]";
        let (json, literal, unboxed) = round_trip(src, args, |v| {
            matches!(
                v.tuple_fields().as_deref(),
                Some([Value::IntArray(_), Value::BoolArray(_), _])
            )
        });
        assert!(unboxed, "decoded arguments are in canonical form");
        assert_eq!(json, args);
        assert_eq!(literal, "([1, -2, 9223372036854775807], [true, false], [])");
        let (json, _, _) = round_trip(
            "fn main() -> ([Int], [Bool]) { (range(3), map(|i| i > 0, range(2))) }",
            "[]",
            |_| true,
        );
        assert_eq!(json, "[[0,1,2],[false,true]]");
    }

    #[test]
    fn dual_numbers_round_trip_through_json_as_pairs() {
        let src = "fn main(p: (Real, Real), xs: [(Real, Real)]) -> ((Real, Real), [(Real, Real)]) { (p, xs) }";
        let args = r#"[[1.5,-2.0],[[1.0,2.0],[3.0,"NaN"]]]"#;
        let (json, literal, unboxed) = round_trip(src, args, |v| {
            matches!(
                v.tuple_fields().as_deref(),
                Some([Value::Dual(..), Value::DualArray(_)])
            )
        });
        assert!(unboxed, "decoded arguments are in canonical form");
        assert_eq!(json, r#"[[1.5,-2.0],[[1.0,2.0],[3.0,"NaN"]]]"#);
        assert_eq!(literal, "((1.5, -2.0), [(1.0, 2.0), (3.0, NaN)])");
        let (json, _, _) = round_trip(
            "fn main(xs: [(Real, Real)]) -> [(Real, Real)] { xs }",
            "[[]]",
            |_| true,
        );
        assert_eq!(json, "[]");
    }
}
