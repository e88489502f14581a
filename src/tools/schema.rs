//! Checks a tool input against the subset of JSON Schema our tools use:
//! `type`, `properties`, `required`, `enum`, `items`, and
//! `additionalProperties: false`. Errors name the field so the model can
//! correct the call.

use crate::json::{Number, Value};

pub fn check(schema: &Value, input: &Value) -> Result<(), String> {
    check_at(schema, input, "input")
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => matches!(v, Value::Object(_)),
        "array" => matches!(v, Value::Array(_)),
        "string" => matches!(v, Value::String(_)),
        "boolean" => matches!(v, Value::Bool(_)),
        "number" => matches!(v, Value::Number(_)),
        "integer" => match v {
            Value::Number(Number::Int(_)) => true,
            Value::Number(Number::Float(f)) => f.fract() == 0.0,
            _ => false,
        },
        "null" => v.is_null(),
        _ => true,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_at(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(ty) = schema.str_field("type")
        && !type_ok(ty, v)
    {
        return Err(format!("{at} must be {ty}, got {}", type_name(v)));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(v)
    {
        let list: Vec<String> = options.iter().map(Value::to_json).collect();
        return Err(format!("{at} must be one of {}", list.join(", ")));
    }
    if let Value::Object(fields) = v {
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if fields.get(name).is_none() {
                    return Err(format!("{at}.{name} is required"));
                }
            }
        }
        for (name, value) in fields.iter() {
            match props.and_then(|p| p.get(name)) {
                Some(sub) => check_at(sub, value, &format!("{at}.{name}"))?,
                None => {
                    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                        return Err(format!("{at} has unexpected field {name:?}"));
                    }
                }
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (v, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check_at(item_schema, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn reports_the_offending_field() {
        let schema = parse(r#"{"type":"object","additionalProperties":false,"required":["a"],
            "properties":{"a":{"type":"string"},"n":{"type":"integer"},
            "l":{"type":"array","items":{"type":"object","properties":{"s":{"enum":["x","y"]}}}}}}"#)
        .unwrap();
        let err = |t: &str| check(&schema, &parse(t).unwrap()).unwrap_err();
        assert_eq!(err("{}"), "input.a is required");
        assert_eq!(err(r#"{"a":1}"#), "input.a must be string, got number");
        assert_eq!(
            err(r#"{"a":"","n":1.5}"#),
            "input.n must be integer, got number"
        );
        assert_eq!(err(r#"{"a":"","z":1}"#), "input has unexpected field \"z\"");
        assert_eq!(
            err(r#"{"a":"","l":[{"s":"q"}]}"#),
            "input.l[0].s must be one of \"x\", \"y\""
        );
        assert!(
            check(
                &schema,
                &parse(r#"{"a":"","n":3,"l":[{"s":"y"}]}"#).unwrap()
            )
            .is_ok()
        );
    }
}
