//! Elicitation in form mode (MCP 2025-06-18 and 2025-11-25): a server asks
//! the person for a few values. Its `requestedSchema` is a flat object of
//! primitive properties — strings (with a format, or an `enum` / `oneOf`
//! of titled choices), numbers and integers (with bounds), booleans, and
//! arrays of enum values for a multi-select — and nothing else.
//!
//! Here the schema is read and checked once ([`Form::parse`]), what a
//! person types is turned into a value of the field's type
//! ([`Field::read`]), and an accepted answer is completed with the
//! schema's defaults (SEP-1034) and checked whole ([`Form::complete`])
//! before it goes back. The frontends only ask.

use crate::json::{Map, Value};

/// What the person did with the form.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    Accept(Map),
    Decline,
    Cancel,
}

impl Elicited {
    /// The `elicitation/create` result.
    pub fn to_result(&self) -> Value {
        let mut m = Map::new();
        match self {
            Elicited::Accept(content) => {
                m.insert("action", "accept");
                m.insert("content", Value::Object(content.clone()));
            }
            Elicited::Decline => m.insert("action", "decline"),
            Elicited::Cancel => m.insert("action", "cancel"),
        }
        Value::Object(m)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text {
        format: Option<String>,
        min: Option<usize>,
        max: Option<usize>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    /// One of `choices` (value, title); several when `multi`.
    Choice {
        choices: Vec<(String, String)>,
        multi: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// The title, else the name: what a person reads.
    pub label: String,
    pub description: String,
    pub kind: Kind,
    pub required: bool,
    pub default: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub message: String,
    pub fields: Vec<Field>,
    /// The schema as the server sent it (relayed to an SDK host).
    pub schema: Value,
}

/// At most this many fields: a form, not a questionnaire.
const MAX_FIELDS: usize = 50;

impl Form {
    /// Reads an `elicitation/create` request's params; `Err` says what is
    /// wrong with it, for the server.
    pub fn parse(params: &Value) -> Result<Form, String> {
        if let Some(mode) = params.str_field("mode")
            && mode != "form"
        {
            return Err(format!(
                "elicitation mode {mode:?} is not offered (form only)"
            ));
        }
        let message = params.str_field("message").unwrap_or_default().to_string();
        let schema = params
            .get("requestedSchema")
            .ok_or("requestedSchema is missing")?;
        let schema = schema
            .as_object()
            .ok_or("requestedSchema must be a JSON object schema")?;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("requestedSchema must have \"type\": \"object\"".into());
        }
        let props = match schema.get("properties") {
            None => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err("requestedSchema.properties must be an object".into()),
        };
        if props.len() > MAX_FIELDS {
            return Err(format!(
                "requestedSchema has more than {MAX_FIELDS} properties"
            ));
        }
        let required: Vec<&str> = match schema.get("required") {
            None => Vec::new(),
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err("requestedSchema.required must be an array of names".into()),
        };
        let mut fields = Vec::new();
        for (name, p) in props.iter() {
            let field = field(name, p, required.contains(&name))
                .map_err(|why| format!("property {name:?}: {why}"))?;
            fields.push(field);
        }
        if let Some(missing) = required.iter().find(|r| props.get(r).is_none()) {
            return Err(format!("required property {missing:?} is not defined"));
        }
        Ok(Form {
            message,
            fields,
            schema: Value::Object(schema.clone()),
        })
    }

    /// An accepted answer, completed: fields left out take their default,
    /// unknown keys are dropped, every value is checked. `Err` names the
    /// first field that is wrong or missing.
    pub fn complete(&self, given: &Map) -> Result<Map, String> {
        let mut out = Map::new();
        for f in &self.fields {
            let value = given
                .get(&f.name)
                .filter(|v| !v.is_null())
                .or(f.default.as_ref());
            match value {
                Some(v) => {
                    f.check(v).map_err(|why| format!("{}: {why}", f.label))?;
                    out.insert(f.name.as_str(), v.clone());
                }
                None if f.required => return Err(format!("{} is required", f.label)),
                None => {}
            }
        }
        Ok(out)
    }
}

fn field(name: &str, p: &Value, required: bool) -> Result<Field, String> {
    let p = p.as_object().ok_or("must be a schema object")?;
    let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let count = |k: &str| {
        p.get(k)
            .and_then(Value::as_i64)
            .and_then(|n| usize::try_from(n).ok())
    };
    let kind = match p.get("type").and_then(Value::as_str) {
        Some("string") => match choices(p.get("enum"), p.get("enumNames"), p.get("oneOf"))? {
            Some(choices) => Kind::Choice {
                choices,
                multi: false,
            },
            None => Kind::Text {
                format: text("format"),
                min: count("minLength"),
                max: count("maxLength"),
            },
        },
        Some(t @ ("number" | "integer")) => Kind::Number {
            integer: t == "integer",
            min: p.get("minimum").and_then(Value::as_f64),
            max: p.get("maximum").and_then(Value::as_f64),
        },
        Some("boolean") => Kind::Bool,
        Some("array") => {
            let items = p
                .get("items")
                .and_then(Value::as_object)
                .ok_or("an array needs items with an enum")?;
            let choices = choices(items.get("enum"), None, items.get("anyOf"))?
                .ok_or("an array's items must be an enum")?;
            Kind::Choice {
                choices,
                multi: true,
            }
        }
        Some(other) => return Err(format!("type {other:?} is not a primitive")),
        None => return Err("has no type".into()),
    };
    let mut f = Field {
        name: name.to_string(),
        label: text("title").unwrap_or_else(|| name.to_string()),
        description: text("description").unwrap_or_default(),
        kind,
        required,
        default: None,
    };
    // A default that does not fit its own field is the server's mistake:
    // left out, so it is never sent back as the person's answer.
    f.default = p.get("default").filter(|d| f.check(d).is_ok()).cloned();
    Ok(f)
}

/// The choices of an `enum` (with legacy `enumNames`) or a `oneOf` /
/// `anyOf` of `{const, title}`; None when there are none.
fn choices(
    values: Option<&Value>,
    names: Option<&Value>,
    titled: Option<&Value>,
) -> Result<Option<Vec<(String, String)>>, String> {
    if let Some(values) = values {
        let values = values.as_array().ok_or("enum must be an array")?;
        let names = names.and_then(Value::as_array);
        let mut out = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let v = v.as_str().ok_or("enum values must be strings")?;
            let title = names
                .and_then(|n| n.get(i))
                .and_then(Value::as_str)
                .unwrap_or(v);
            out.push((v.to_string(), title.to_string()));
        }
        return Ok((!out.is_empty()).then_some(out));
    }
    if let Some(list) = titled {
        let list = list.as_array().ok_or("oneOf must be an array")?;
        let mut out = Vec::new();
        for c in list {
            let v = c.str_field("const").ok_or("oneOf entries need a const")?;
            out.push((v.to_string(), c.str_field("title").unwrap_or(v).to_string()));
        }
        return Ok((!out.is_empty()).then_some(out));
    }
    Ok(None)
}

impl Field {
    /// Whether `v` is a valid value for this field; why not.
    pub fn check(&self, v: &Value) -> Result<(), String> {
        match &self.kind {
            Kind::Text { format, min, max } => {
                let s = v.as_str().ok_or("must be text")?;
                let n = s.chars().count();
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!(
                        "must be {} to {} characters long",
                        min.unwrap_or(0),
                        max.map_or("any".to_string(), |m| m.to_string())
                    ));
                }
                format_ok(format.as_deref(), s)
            }
            Kind::Number { integer, min, max } => {
                let x = v.as_f64().ok_or("must be a number")?;
                if *integer && v.as_i64().is_none() {
                    return Err("must be a whole number".into());
                }
                if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                    return Err(format!(
                        "must be between {} and {}",
                        min.map_or("-∞".into(), |m| m.to_string()),
                        max.map_or("∞".into(), |m| m.to_string())
                    ));
                }
                Ok(())
            }
            Kind::Bool => v
                .as_bool()
                .map(|_| ())
                .ok_or_else(|| "must be true or false".into()),
            Kind::Choice { choices, multi } => {
                let known = |s: &str| choices.iter().any(|(c, _)| c == s);
                match (multi, v) {
                    (false, Value::String(s)) if known(s) => Ok(()),
                    (true, Value::Array(items))
                        if items.iter().all(|i| i.as_str().is_some_and(known)) =>
                    {
                        Ok(())
                    }
                    _ => Err(format!(
                        "must be {}: {}",
                        if *multi { "some of" } else { "one of" },
                        choices
                            .iter()
                            .map(|(c, _)| c.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
        }
    }

    /// What a person typed, as this field's value. Choices are taken by
    /// number (from 1, comma-separated for a multi-select) or by value;
    /// booleans as y/yes/true or n/no/false.
    pub fn read(&self, typed: &str) -> Result<Value, String> {
        let typed = typed.trim();
        let v = match &self.kind {
            Kind::Text { .. } => Value::from(typed),
            Kind::Number { integer: true, .. } => typed
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "type a whole number".to_string())?,
            Kind::Number { .. } => typed
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Value::from)
                .ok_or("type a number")?,
            Kind::Bool => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".into()),
            },
            Kind::Choice { choices, multi } => {
                let pick = |t: &str| -> Option<Value> {
                    let t = t.trim();
                    let at = t
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .filter(|&i| i < choices.len());
                    let (value, _) = match at {
                        Some(i) => &choices[i],
                        None => choices.iter().find(|(c, title)| c == t || title == t)?,
                    };
                    Some(Value::from(value.as_str()))
                };
                if *multi {
                    let picked: Option<Vec<Value>> = typed
                        .split(',')
                        .filter(|t| !t.trim().is_empty())
                        .map(pick)
                        .collect();
                    Value::Array(picked.ok_or("pick from the numbers shown")?)
                } else {
                    pick(typed).ok_or("pick one of the numbers shown")?
                }
            }
        };
        self.check(&v)?;
        Ok(v)
    }

    /// A short hint of what may be typed.
    pub fn hint(&self) -> String {
        let mut hint = match &self.kind {
            Kind::Text {
                format: Some(f), ..
            } => f.clone(),
            Kind::Text { .. } => "text".into(),
            Kind::Number { integer: true, .. } => "whole number".into(),
            Kind::Number { .. } => "number".into(),
            Kind::Bool => "y/n".into(),
            Kind::Choice { multi: true, .. } => "numbers, comma-separated".into(),
            Kind::Choice { .. } => "a number".into(),
        };
        if let Kind::Number { min, max, .. } = &self.kind
            && (min.is_some() || max.is_some())
        {
            hint.push_str(&format!(
                ", {} to {}",
                min.map_or("…".into(), |m| m.to_string()),
                max.map_or("…".into(), |m| m.to_string())
            ));
        }
        if let Some(d) = &self.default {
            hint.push_str(&format!(", Enter for {}", shown(d)));
        } else if !self.required {
            hint.push_str(", Enter to leave out");
        }
        hint
    }
}

/// A value as a person reads it (no quotes around text).
pub fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_json(),
    }
}

/// The string formats the spec names; others are taken as text.
fn format_ok(format: Option<&str>, s: &str) -> Result<(), String> {
    let ok = match format {
        Some("email") => s
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.') && !s.contains(' ')),
        Some("uri") => s.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
        }),
        Some("date") => is_date(s),
        Some("date-time") => s
            .split_once(['T', 't'])
            .is_some_and(|(d, t)| is_date(d) && t.len() >= 8 && t.as_bytes()[2] == b':'),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("must be a valid {}", format.unwrap_or("value")))
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn form(schema: &str) -> Result<Form, String> {
        Form::parse(&parse(&format!(r#"{{"message":"m","requestedSchema":{schema}}}"#)).unwrap())
    }

    #[test]
    fn defaults_fill_what_the_person_left_out() {
        // The conformance suite's SEP-1034 schema.
        let f = form(
            r#"{"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},
            "age":{"type":"integer","default":30},
            "score":{"type":"number","default":95.5},
            "status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
            "verified":{"type":"boolean","default":true}},"required":[]}"#,
        )
        .unwrap();
        let got = f.complete(&Map::new()).unwrap();
        assert_eq!(
            Value::Object(got).to_json(),
            r#"{"name":"John Doe","age":30,"score":95.5,"status":"active","verified":true}"#
        );
        let mut given = Map::new();
        given.insert("age", 41i64);
        assert_eq!(
            f.complete(&given).unwrap().get("age"),
            Some(&Value::from(41i64))
        );
    }

    #[test]
    fn not_an_object_schema_is_refused_with_its_reason() {
        assert!(
            form(r#""a string""#)
                .unwrap_err()
                .contains("JSON object schema")
        );
        assert!(
            form(r#"{"type":"array"}"#)
                .unwrap_err()
                .contains("\"type\": \"object\"")
        );
        assert!(
            form(r#"{"type":"object","properties":{"x":{"type":"object"}}}"#)
                .unwrap_err()
                .contains("not a primitive")
        );
        assert!(Form::parse(&parse(r#"{"message":"m"}"#).unwrap()).is_err());
    }

    #[test]
    fn typed_answers_are_read_and_checked() {
        let f = form(
            r#"{"type":"object","required":["n","c"],"properties":{
            "n":{"type":"integer","minimum":1,"maximum":5},
            "c":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
            "m":{"type":"array","items":{"enum":["a","b","c"]}},
            "e":{"type":"string","format":"email"},
            "b":{"type":"boolean"}}}"#,
        )
        .unwrap();
        let [n, c, m, e, b] = &f.fields[..] else {
            panic!()
        };
        assert_eq!(n.read("3"), Ok(Value::from(3i64)));
        assert!(n.read("9").is_err() && n.read("2.5").is_err());
        assert_eq!(c.read("2"), Ok(Value::from("g")));
        assert_eq!(c.read("Red"), Ok(Value::from("r")));
        assert_eq!(m.read("1, 3").unwrap().to_json(), r#"["a","c"]"#);
        assert!(e.read("not mail").is_err() && e.read("a@b.io").is_ok());
        assert_eq!(b.read("yes"), Ok(Value::Bool(true)));
        assert!(f.complete(&Map::new()).unwrap_err().contains("required"));
    }
}
