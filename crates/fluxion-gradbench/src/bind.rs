//! GradBench inputs to an entry's arguments, and its result back to JSON, by
//! parameter name, so that an eval program needs no glue of its own: a parameter
//! takes the input field of its name (exact, else the one field equal to it but for
//! case, as Fluxion names start in lower case and an eval may say `A`), looked for at
//! the top level and then in nested objects (ht's `data.model.parents`), where the
//! name must be unique. An input that is not an object (hello's number) is the
//! argument of a one-parameter entry.

use fluxion_driver::core::{Module, Type};
use fluxion_driver::interp::Value;
use fluxion_driver::json;
use serde_json::{Map, Value as Json};

use crate::programs::Shape;

/// The arguments of `code`'s parameters, taken from `input`.
pub fn arguments(
    module: &Module,
    code: fluxion_driver::core::CodeId,
    input: &Json,
) -> Result<Vec<Value>, String> {
    let c = module.code(code);
    let Type::Fn(types, _) = module.code_ty(code) else {
        return Err("the entry is not a function".into());
    };
    let names: Vec<String> = c
        .params
        .iter()
        .map(|v| module.var(*v).name.clone())
        .collect();
    match input {
        Json::Object(fields) => names
            .iter()
            .zip(&types)
            .map(|(name, ty)| {
                let (path, field) = find(fields, name)?;
                json::decode(field, ty, module, &format!("input.{path}"))
            })
            .collect(),
        other if names.len() == 1 => Ok(vec![json::decode(other, &types[0], module, "input")?]),
        _ => Err(format!(
            "the input is not an object, but the function takes {} parameters ({})",
            names.len(),
            names.join(", ")
        )),
    }
}

/// The field for parameter `name`, with its path: at this level (exact, then by
/// case), else the unique match in the objects below.
fn find<'a>(fields: &'a Map<String, Json>, name: &str) -> Result<(String, &'a Json), String> {
    if let Some(v) = fields.get(name) {
        return Ok((name.to_string(), v));
    }
    let by_case: Vec<_> = fields
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .collect();
    if let [(k, v)] = by_case[..] {
        return Ok((k.clone(), v));
    }
    let mut nested = Vec::new();
    for (k, v) in fields {
        if let Json::Object(inner) = v
            && let Ok((path, found)) = find(inner, name)
        {
            nested.push((format!("{k}.{path}"), found));
        }
    }
    match nested.len() {
        1 => Ok(nested.pop().expect("one match")),
        0 => Err(format!(
            "the input has no field `{name}` for the parameter of that name (fields: {})",
            fields.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        _ => Err(format!(
            "the parameter `{name}` matches several input fields: {}",
            nested
                .into_iter()
                .map(|(p, _)| p)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The result as JSON, shaped as the program says (`programs::output_shape`).
pub fn output(value: &Value, ty: &Type, module: &Module, shape: &Shape) -> Result<Json, String> {
    reshape(json::encode(value, ty, module), shape)
}

fn reshape(encoded: Json, shape: &Shape) -> Result<Json, String> {
    let Shape::Object(fields) = shape else {
        return Ok(encoded);
    };
    match encoded {
        Json::Array(items) if items.len() == fields.len() => items
            .into_iter()
            .zip(fields)
            .map(|(item, (name, shape))| Ok((name.clone(), reshape(item, shape)?)))
            .collect::<Result<Map<_, _>, String>>()
            .map(Json::Object),
        _ => Err(format!(
            "the program's output shape has {} fields ({}), but the result is not a tuple of {}",
            fields.len(),
            fields
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            fields.len()
        )),
    }
}

/// `min_runs` and `min_seconds` of an input (1 and 0 where absent, as for `hello`).
pub fn runs(input: &Json) -> Result<(u64, f64), String> {
    let runs = match input.get("min_runs") {
        None => 1,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("min_runs must be a non-negative integer, found {v}"))?,
    };
    let seconds = match input.get("min_seconds") {
        None => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| format!("min_seconds must be a non-negative number, found {v}"))?,
    };
    Ok((runs.max(1), seconds))
}
