//! `--args` decoding and `--json` output (docs/language.md §6): JSON values against Core
//! types. Tuples and arrays are JSON arrays, unit is `null`, an enum value is
//! `{"Ctor": [fields]}` (a nullary one may also be the string `"Ctor"`), non-finite
//! reals are the strings `"NaN"`, `"inf"`, `"-inf"`.

use std::rc::Rc;

use fluxion_core::{Module, Type};
use fluxion_interp::Value;
use serde_json::Value as Json;

use crate::value_path::ValuePath as Path;

/// Parses JSON text of any nesting depth (serde_json alone stops at 128 levels; a
/// list of 1000 cells is 1000 levels).
pub fn parse(text: &str) -> Result<Json, String> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let json = Json::deserialize(serde_stacker::Deserializer::new(&mut de))
        .and_then(|json| de.end().map(|()| json))
        .map_err(|e| format!("not valid JSON: {e}"))?;
    Ok(json)
}

/// Drops a `Json` level by level (its own drop recurses once per level).
pub fn drop_flat(json: Json) {
    let mut work = vec![json];
    while let Some(json) = work.pop() {
        match json {
            Json::Array(items) => work.extend(items),
            Json::Object(map) => work.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Decodes `json` as a value of type `ty`; the error names the path (`$[0][1]`), which
/// starts with `root`.
pub fn decode(json: &Json, ty: &Type, module: &Module, root: &str) -> Result<Value, String> {
    decode_at(json, ty, module, &Path::Root(root))
}

fn decode_at(json: &Json, ty: &Type, module: &Module, path: &Path<'_>) -> Result<Value, String> {
    fluxion_interp::deep(|| {
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
                // `-0` is a JSON integer, which serde_json reads as the float -0.0.
                None if json
                    .as_f64()
                    .is_some_and(|x| x == 0.0 && x.is_sign_negative()) =>
                {
                    Ok(Value::Int(0))
                }
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
                        .map(|(i, (x, t))| decode_at(x, t, module, &Path::Index(path, i)))
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
                        .map(|(i, x)| decode_at(x, t, module, &Path::Index(path, i)))
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
                    .map(|(i, (x, t))| decode_at(x, t, module, &Path::Field(path, name, i)))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Value::Enum(tag as u32, Rc::from(vals)))
            }
            Type::Fn(..) => Err(format!("at {path}: functions cannot be passed as JSON")),
        }
    })
}

/// The start of `json`'s text, at most 40 characters. Printing stops once they are
/// written, so a deep value is never printed whole (nor recursed into past them).
fn describe(json: &Json) -> String {
    const LIMIT: usize = 40;
    /// Takes bytes until it holds more than `LIMIT`, then refuses the rest.
    struct Start(Vec<u8>);
    impl std::io::Write for Start {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() > LIMIT {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut start = Start(Vec::new());
    // An error here is the writer refusing more: what it holds is the start.
    let _ = serde_json::to_writer(&mut start, json);
    let s = String::from_utf8_lossy(&start.0).into_owned();
    if s.len() > LIMIT {
        format!("{}...", &s[..s.floor_char_boundary(LIMIT)])
    } else {
        s
    }
}

/// Encodes a value of type `ty` as a JSON value (for small results: a deep value
/// would make a deep `Json`, whose printing and dropping recurse; see [`write`]).
pub fn encode(v: &Value, ty: &Type, module: &Module) -> Json {
    let mut text = String::new();
    write(&mut text, v, ty, module);
    parse(&text).unwrap_or(Json::Null)
}

/// Appends the JSON text of a value of type `ty` to `out`, without building a `Json`:
/// a list of millions of cells is millions of levels deep.
pub fn write(out: &mut String, v: &Value, ty: &Type, module: &Module) {
    fluxion_interp::deep(|| match (v, ty) {
        (Value::Real(x), _) => write_real(out, *x),
        (Value::Int(i), _) => out.push_str(&i.to_string()),
        (Value::Bool(b), _) => out.push_str(if *b { "true" } else { "false" }),
        (Value::Unit, _) => out.push_str("null"),
        (Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..), Type::Tuple(ts)) => {
            let fields = v.tuple_fields().unwrap_or_default();
            write_seq(out, fields.iter().zip(ts), |out, (v, t)| {
                write(out, v, t, module)
            });
        }
        (Value::RealArray(xs), _) => write_seq(out, xs.iter(), |out, x| write_real(out, *x)),
        (Value::IntArray(xs), _) => {
            write_seq(out, xs.iter(), |out, x| out.push_str(&x.to_string()))
        }
        (Value::BoolArray(xs), _) => write_seq(out, xs.iter(), |out, x| {
            out.push_str(if *x { "true" } else { "false" })
        }),
        (Value::Array(_) | Value::DualArray(_), Type::Array(t)) => {
            write_seq(out, v.array_iter(), |out, v| write(out, &v, t, module))
        }
        (Value::Enum(tag, fields), Type::Enum(e)) => {
            let variant = &module.enum_def(*e).variants[*tag as usize];
            out.push('{');
            out.push_str(&Json::String(variant.name.clone()).to_string());
            out.push(':');
            write_seq(out, fields.iter().zip(&variant.fields), |out, (v, t)| {
                write(out, v, t, module)
            });
            out.push('}');
        }
        (Value::Closure(_), _) => out.push_str("\"<function>\""),
        _ => out.push_str("null"),
    })
}

/// `[a,b,c]`, each element written by `each`.
fn write_seq<T>(
    out: &mut String,
    items: impl Iterator<Item = T>,
    mut each: impl FnMut(&mut String, T),
) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        each(out, item);
    }
    out.push(']');
}

/// A real as JSON: non-finite ones as the strings `"NaN"`, `"inf"`, `"-inf"`.
fn write_real(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "\"inf\"" } else { "\"-inf\"" });
    } else {
        out.push_str(&Json::from(x).to_string());
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

    /// `-0` is a JSON integer (serde_json reads it as the float -0.0); `0.0` is not.
    #[test]
    fn minus_zero_is_an_int() {
        let run = |args: &str| {
            let args = args.to_string();
            crate::with_big_stack(move || {
                let program = crate::compile("t.flx", "fn main(n: Int) -> Int { n + 1 }")
                    .unwrap_or_else(|f| panic!("{}", f.render()));
                match program.run("main", Some(&args)) {
                    Ok(out) => Ok(out.to_literal()),
                    Err(f) => Err(f.render()),
                }
            })
        };
        assert_eq!(run("[-0]"), Ok("1".into()));
        assert!(run("[0.0]").is_err_and(|e| e.contains("expected Int")));
    }

    /// The path of an error 100 000 levels down is spelt by its ends (it was the
    /// whole path, megabytes long).
    #[test]
    fn a_deep_error_path_is_shortened() {
        let arg = format!(
            "{}{}{}",
            r#"{"Cons":[1,"#.repeat(100_000),
            r#"{"Nope":[]}"#,
            "]}".repeat(100_000)
        );
        let src = "enum L { Nil, Cons(Int, L) }\nfn main(l: L) -> Int { 0 }".to_string();
        let args = format!("[{arg}]");
        let err = crate::with_big_stack(move || {
            let program =
                crate::compile("t.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
            program
                .run("main", Some(&args))
                .err()
                .expect("a bad constructor")
                .render()
        });
        assert!(
            err.contains("at $[0].Cons[1].Cons[1]") && err.contains("…(99984 levels)…"),
            "{}",
            &err[..err.len().min(300)]
        );
        assert!(err.len() < 2000, "{} bytes", err.len());
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
