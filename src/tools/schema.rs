//! Checks a tool input against its JSON Schema: what tern's tools, MCP
//! servers and `--json-schema` callers write (pydantic's and zod's output
//! among them). Understood: `type` (one or a list), `enum`, `const`,
//! `anyOf`/`oneOf`/`allOf`/`not`, `$ref` into the same document (`#`,
//! `#/$defs/…`, `#/definitions/…`), number bounds and `multipleOf`, string
//! lengths and `pattern`, `items` (one schema or a tuple), `prefixItems`,
//! item counts and `uniqueItems`, `properties`, `required`,
//! `additionalProperties` (false or a schema), `patternProperties` and
//! property counts. Other keywords (`format`, `if`, …) are not enforced;
//! neither is a `$ref` that leads nowhere or a `pattern` the regex engine
//! does not take. Errors name the field so the model can correct the call.

use crate::json::{Number, Value};

/// Deeper than this is a `$ref` loop, not a schema.
const MAX_DEPTH: usize = 64;

pub fn check(schema: &Value, input: &Value) -> Result<(), String> {
    Checker { root: schema }.at(schema, input, "input", 0)
}

/// Coerces what models send as strings into the scalars the schema asks
/// for, then checks. Small local models and OpenAI-compatible servers
/// write `"limit": "2"` or `"replace_all": "true"`; Claude Code takes
/// them, so every tool here does too. Only a clean conversion happens
/// ("2", " 1.5 ", "true", "False"); anything else is left for `check` to
/// refuse with the field's name.
pub fn coerce_and_check(schema: &Value, input: &mut Value) -> Result<(), String> {
    coerce(schema, schema, input, 0);
    check(schema, input)
}

fn coerce(root: &Value, schema: &Value, v: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = match schema.str_field("$ref").and_then(|r| pointer(root, r)) {
        Some(target) => target,
        None => schema,
    };
    match v {
        Value::String(s) => {
            if let Some(scalar) = scalar_from(&types(root, schema, depth), s) {
                *v = scalar;
            }
        }
        Value::Object(fields) => {
            let names: Vec<String> = fields.iter().map(|(k, _)| k.to_string()).collect();
            for name in names {
                let sub = schema
                    .get("properties")
                    .and_then(|p| p.get(&name))
                    .or_else(|| schema.get("additionalProperties"));
                if let (Some(sub), Some(value)) = (sub, fields.get_mut(&name)) {
                    coerce(root, sub, value, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|s| s.as_object().is_some()) {
                for item in items {
                    coerce(root, sub, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The type names a schema allows, its `anyOf`/`oneOf` forms included
/// (pydantic writes an optional integer as `anyOf: [integer, null]`).
fn types<'s>(root: &'s Value, schema: &'s Value, depth: usize) -> Vec<&'s str> {
    let mut out: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if depth < MAX_DEPTH {
        for key in ["anyOf", "oneOf"] {
            for form in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let form = match form.str_field("$ref").and_then(|r| pointer(root, r)) {
                    Some(target) => target,
                    None => form,
                };
                out.extend(types(root, form, depth + 1));
            }
        }
    }
    out
}

/// The boolean or number `s` cleanly stands for, when the schema wants
/// one and does not take a string as it is.
fn scalar_from(types: &[&str], s: &str) -> Option<Value> {
    if types.is_empty() || types.contains(&"string") {
        return None;
    }
    let t = s.trim();
    if types.contains(&"boolean") {
        if t.eq_ignore_ascii_case("true") {
            return Some(Value::Bool(true));
        }
        if t.eq_ignore_ascii_case("false") {
            return Some(Value::Bool(false));
        }
    }
    let number = types.contains(&"number");
    if !number && !types.contains(&"integer") {
        return None;
    }
    // JSON's own number grammar: no "0x10", "NaN", "1_000" or "+1".
    let v = match crate::json::parse(t) {
        Ok(v @ Value::Number(_)) => v,
        _ => return None,
    };
    let x = v.as_f64()?;
    if !x.is_finite() {
        return None;
    }
    if number {
        return Some(v);
    }
    // An integer field takes "3" and "3.0", not "1.5": that stays a string
    // and is refused as one.
    (x.fract() == 0.0).then(|| match v {
        Value::Number(Number::Float(f)) if f.abs() < 9.0e15 => Value::Number(Number::Int(f as i64)),
        other => other,
    })
}

/// Whether a schema from an untrusted author (a REPL script's
/// `registerTool`) is one the model's API will take: every subschema an
/// object or a boolean, `type` a known name or a list of them, the
/// keywords that hold schemas holding schemas, `required` names, `enum` a
/// list, no `$ref` (there is nothing for it to point at), bounded in depth
/// and size. A malformed schema sent along would fail every request.
#[cfg(feature = "repl")]
pub(crate) fn well_formed(schema: &Value) -> Result<(), String> {
    const MAX_TEXT: usize = 64 * 1024;
    if schema.to_json().len() > MAX_TEXT {
        return Err(format!("it is over {} KiB", MAX_TEXT / 1024));
    }
    match schema {
        Value::Object(m) => match m.get("type") {
            Some(Value::String(t)) if t == "object" => shape(schema, "schema", 0),
            _ => Err("its top-level type must be \"object\"".into()),
        },
        _ => Err("it must be a JSON object".into()),
    }
}

#[cfg(feature = "repl")]
fn shape(s: &Value, at: &str, depth: usize) -> Result<(), String> {
    const TYPES: [&str; 7] = [
        "object", "array", "string", "boolean", "number", "integer", "null",
    ];
    if depth > 32 {
        return Err(format!("{at} is nested more than 32 deep"));
    }
    let m = match s {
        Value::Bool(_) => return Ok(()),
        Value::Object(m) => m,
        _ => return Err(format!("{at} must be an object or a boolean")),
    };
    let known = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
    match m.get("type") {
        None => {}
        Some(Value::Array(ts)) if !ts.is_empty() && ts.iter().all(known) => {}
        Some(t) if known(t) => {}
        Some(t) => return Err(format!("{at}.type is not a JSON Schema type: {t}")),
    }
    if m.get("$ref").is_some() || m.get("$dynamicRef").is_some() {
        return Err(format!(
            "{at} has a $ref, which a registered tool cannot resolve"
        ));
    }
    for (key, v) in m.iter() {
        let here = format!("{at}.{key}");
        match key {
            "properties" | "patternProperties" | "$defs" | "definitions" => match v {
                Value::Object(props) => {
                    for (name, sub) in props.iter() {
                        shape(sub, &format!("{here}.{name}"), depth + 1)?;
                    }
                }
                _ => return Err(format!("{here} must be an object of schemas")),
            },
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "if"
            | "then"
            | "else" => match v {
                Value::Array(list) if key == "items" => {
                    for (i, sub) in list.iter().enumerate() {
                        shape(sub, &format!("{here}[{i}]"), depth + 1)?;
                    }
                }
                _ => shape(v, &here, depth + 1)?,
            },
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => match v {
                Value::Array(list) if !list.is_empty() => {
                    for (i, sub) in list.iter().enumerate() {
                        shape(sub, &format!("{here}[{i}]"), depth + 1)?;
                    }
                }
                _ => return Err(format!("{here} must be a non-empty list of schemas")),
            },
            "required" => match v {
                Value::Array(names) if names.iter().all(|n| n.as_str().is_some()) => {}
                _ => return Err(format!("{here} must be a list of property names")),
            },
            "enum" if !matches!(v, Value::Array(_)) => {
                return Err(format!("{here} must be a list"));
            }
            "description" | "title" | "pattern" | "format" if v.as_str().is_none() => {
                return Err(format!("{here} must be a string"));
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
            | "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties"
                if v.as_f64().is_none_or(|n| !n.is_finite()) =>
            {
                return Err(format!("{here} must be a number"));
            }
            _ => {}
        }
    }
    Ok(())
}

struct Checker<'s> {
    root: &'s Value,
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

/// What a value was, for an error: a short string is quoted, so a
/// `"1.5"` sent for an integer reads as what it is.
fn got(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() <= 40 => format!("string {}", v.to_json()),
        _ => type_name(v).to_string(),
    }
}

/// JSON equality: 1 and 1.0 are the same number.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => a.as_f64() == b.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn count(schema: &Value, key: &str) -> Option<usize> {
    schema
        .get(key)
        .and_then(Value::as_i64)
        .and_then(|n| usize::try_from(n).ok())
}

/// A JSON pointer (`#/a/b`) into the schema's own document.
fn pointer<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let path = reference.strip_prefix('#')?;
    let mut at = root;
    for raw in path.split('/').skip(1) {
        let key = raw.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(_) => at.get(&key)?,
            Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

impl<'s> Checker<'s> {
    fn at(&self, schema: &'s Value, v: &Value, at: &str, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("the schema for {at} refers to itself without end"));
        }
        let schema = match schema {
            // `true` accepts everything, `false` nothing.
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err(format!("{at} is not allowed here")),
            Value::Object(_) => schema,
            _ => return Ok(()),
        };
        if let Some(target) = schema.str_field("$ref").and_then(|r| pointer(self.root, r)) {
            self.at(target, v, at, depth + 1)?;
        }
        self.kind(schema, v, at)?;
        self.combinators(schema, v, at, depth)?;
        match v {
            Value::Number(_) => number(schema, v, at)?,
            Value::String(s) => string(schema, s, at)?,
            Value::Array(items) => self.array(schema, items, at, depth)?,
            Value::Object(_) => self.object(schema, v, at, depth)?,
            _ => {}
        }
        Ok(())
    }

    fn kind(&self, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
        match schema.get("type") {
            Some(Value::String(ty)) if !type_ok(ty, v) => {
                return Err(format!("{at} must be {ty}, got {}", got(v)));
            }
            Some(Value::Array(types)) => {
                let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                if !names.is_empty() && !names.iter().any(|t| type_ok(t, v)) {
                    return Err(format!(
                        "{at} must be {}, got {}",
                        names.join(" or "),
                        got(v)
                    ));
                }
            }
            _ => {}
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.iter().any(|o| same(o, v))
        {
            let list: Vec<String> = options.iter().map(Value::to_json).collect();
            return Err(format!("{at} must be one of {}", list.join(", ")));
        }
        if let Some(c) = schema.get("const")
            && !same(c, v)
        {
            return Err(format!("{at} must be {}", c.to_json()));
        }
        Ok(())
    }

    fn combinators(
        &self,
        schema: &'s Value,
        v: &Value,
        at: &str,
        depth: usize,
    ) -> Result<(), String> {
        let list = |k: &str| schema.get(k).and_then(Value::as_array);
        if let Some(all) = list("allOf") {
            for s in all {
                self.at(s, v, at, depth + 1)?;
            }
        }
        if let Some(any) = list("anyOf") {
            let errors: Vec<String> = any
                .iter()
                .filter_map(|s| self.at(s, v, at, depth + 1).err())
                .collect();
            if errors.len() == any.len() && !any.is_empty() {
                return Err(format!(
                    "{at} matches none of the allowed forms: {}",
                    errors.join("; or ")
                ));
            }
        }
        if let Some(one) = list("oneOf") {
            let results: Vec<Result<(), String>> =
                one.iter().map(|s| self.at(s, v, at, depth + 1)).collect();
            let matched = results.iter().filter(|r| r.is_ok()).count();
            if matched == 0 {
                let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
                return Err(format!(
                    "{at} matches none of the allowed forms: {}",
                    errors.join("; or ")
                ));
            }
            if matched > 1 {
                return Err(format!(
                    "{at} matches {matched} of the forms where exactly one must match"
                ));
            }
        }
        if let Some(not) = schema.get("not")
            && self.at(not, v, at, depth + 1).is_ok()
        {
            return Err(format!("{at} has a form the schema rules out"));
        }
        Ok(())
    }

    fn array(
        &self,
        schema: &'s Value,
        items: &[Value],
        at: &str,
        depth: usize,
    ) -> Result<(), String> {
        // A tuple: `prefixItems` (2020-12) or `items` as a list (draft 7).
        let tuple = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .or_else(|| schema.get("items").and_then(Value::as_array));
        let rest = match (tuple.is_some(), schema.get("prefixItems").is_some()) {
            (false, _) => schema.get("items"),
            (true, true) => schema.get("items"),
            (true, false) => schema.get("additionalItems"),
        };
        let fixed = tuple.map_or(0, Vec::len);
        for (i, item) in items.iter().enumerate() {
            let sub = match tuple {
                Some(t) if i < fixed => Some(&t[i]),
                _ => rest,
            };
            if let Some(sub) = sub {
                self.at(sub, item, &format!("{at}[{i}]"), depth + 1)?;
            }
        }
        if let Some(min) = count(schema, "minItems")
            && items.len() < min
        {
            return Err(format!(
                "{at} must have at least {min} items, has {}",
                items.len()
            ));
        }
        if let Some(max) = count(schema, "maxItems")
            && items.len() > max
        {
            return Err(format!(
                "{at} must have at most {max} items, has {}",
                items.len()
            ));
        }
        if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, a) in items.iter().enumerate() {
                if let Some(j) = items[..i].iter().position(|b| same(a, b)) {
                    return Err(format!("{at}[{i}] repeats {at}[{j}]; items must be unique"));
                }
            }
        }
        Ok(())
    }

    fn object(&self, schema: &'s Value, v: &Value, at: &str, depth: usize) -> Result<(), String> {
        let Value::Object(fields) = v else {
            return Ok(());
        };
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if fields.get(name).is_none() {
                    return Err(format!("{at}.{name} is required"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        let patterns: Vec<(regex::Regex, &Value)> = schema
            .get("patternProperties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter_map(|(k, s)| regex::Regex::new(k).ok().map(|r| (r, s)))
                    .collect()
            })
            .unwrap_or_default();
        for (name, value) in fields.iter() {
            let here = format!("{at}.{name}");
            let mut known = false;
            if let Some(sub) = props.and_then(|p| p.get(name)) {
                known = true;
                self.at(sub, value, &here, depth + 1)?;
            }
            for (re, sub) in &patterns {
                if re.is_match(name) {
                    known = true;
                    self.at(sub, value, &here, depth + 1)?;
                }
            }
            if known {
                continue;
            }
            match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    return Err(format!("{at} has unexpected field {name:?}"));
                }
                Some(extra @ Value::Object(_)) => self.at(extra, value, &here, depth + 1)?,
                _ => {}
            }
        }
        if let Some(min) = count(schema, "minProperties")
            && fields.len() < min
        {
            return Err(format!("{at} must have at least {min} fields"));
        }
        if let Some(max) = count(schema, "maxProperties")
            && fields.len() > max
        {
            return Err(format!("{at} must have at most {max} fields"));
        }
        Ok(())
    }
}

fn number(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(x) = v.as_f64() else {
        return Ok(());
    };
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    // Draft 4 spells an exclusive bound as a flag beside the bound.
    let flag = |k: &str| schema.get(k) == Some(&Value::Bool(true));
    if let Some(min) = bound("minimum") {
        if flag("exclusiveMinimum") && x <= min {
            return Err(format!("{at} must be greater than {min}, got {x}"));
        }
        if x < min {
            return Err(format!("{at} must be at least {min}, got {x}"));
        }
    }
    if let Some(max) = bound("maximum") {
        if flag("exclusiveMaximum") && x >= max {
            return Err(format!("{at} must be less than {max}, got {x}"));
        }
        if x > max {
            return Err(format!("{at} must be at most {max}, got {x}"));
        }
    }
    if let Some(min) = bound("exclusiveMinimum")
        && x <= min
    {
        return Err(format!("{at} must be greater than {min}, got {x}"));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && x >= max
    {
        return Err(format!("{at} must be less than {max}, got {x}"));
    }
    if let Some(m) = bound("multipleOf").filter(|m| *m > 0.0) {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            return Err(format!("{at} must be a multiple of {m}, got {x}"));
        }
    }
    Ok(())
}

fn string(schema: &Value, s: &str, at: &str) -> Result<(), String> {
    let len = s.chars().count();
    if let Some(min) = count(schema, "minLength")
        && len < min
    {
        return Err(format!(
            "{at} must be at least {min} characters long, is {len}"
        ));
    }
    if let Some(max) = count(schema, "maxLength")
        && len > max
    {
        return Err(format!(
            "{at} must be at most {max} characters long, is {len}"
        ));
    }
    if let Some(p) = schema.str_field("pattern")
        && let Ok(re) = regex::Regex::new(p)
        && !re.is_match(s)
    {
        return Err(format!("{at} must match the pattern {p}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
