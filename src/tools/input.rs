//! A tool's input: the schema it is checked against, declared once per
//! tool, and the typed reading of an input that passed it.
//!
//! The pipeline checks (and coerces) every input against the schema before
//! any tool sees it — the model's, a hook's, an approver's. Each tool then
//! reads it into a struct of its own through [`Fields`], in one function:
//! the field names, their defaults and what is optional live there, not in
//! every method. A field of the wrong type is an error naming it, never a
//! silent default; after the schema check it cannot happen, and if a tool's
//! schema and its reader ever disagree the call fails instead of running on
//! a guess.

use std::sync::OnceLock;

use crate::json::Value;

/// A built-in tool's schema, written as JSON in its source and parsed the
/// first time it is needed, then kept for the process.
pub(crate) struct Schema {
    text: &'static str,
    parsed: OnceLock<Value>,
}

impl Schema {
    pub(crate) const fn new(text: &'static str) -> Schema {
        Schema {
            text,
            parsed: OnceLock::new(),
        }
    }

    /// The parsed schema. A text that does not parse gives `null`, which
    /// `builtin_schemas_are_objects_with_properties` refuses for every tool.
    pub(crate) fn get(&self) -> &Value {
        self.parsed
            .get_or_init(|| crate::json::parse(self.text).unwrap_or_default())
    }
}

/// Reads the fields of one input object, each by its type.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    input: &'a Value,
}

impl<'a> Fields<'a> {
    pub(crate) fn of(input: &'a Value) -> Result<Fields<'a>, String> {
        match input {
            Value::Object(_) => Ok(Fields { input }),
            _ => Err("the input must be an object".into()),
        }
    }

    /// The field's value when present and not `null`.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.input.get(key).filter(|v| !matches!(v, Value::Null))
    }

    /// A required string.
    pub(crate) fn text(&self, key: &str) -> Result<&'a str, String> {
        self.opt_text(key)?
            .ok_or_else(|| format!("`{key}` is required"))
    }

    pub(crate) fn opt_text(&self, key: &str) -> Result<Option<&'a str>, String> {
        self.value(key)
            .map(|v| v.as_str().ok_or_else(|| wrong(key, "a string")))
            .transpose()
    }

    /// A boolean that is false when absent.
    pub(crate) fn flag(&self, key: &str) -> Result<bool, String> {
        Ok(self.opt_flag(key)?.unwrap_or(false))
    }

    pub(crate) fn opt_flag(&self, key: &str) -> Result<Option<bool>, String> {
        self.value(key)
            .map(|v| v.as_bool().ok_or_else(|| wrong(key, "true or false")))
            .transpose()
    }

    /// A whole number, of any sign.
    pub(crate) fn opt_int(&self, key: &str) -> Result<Option<i64>, String> {
        self.value(key)
            .map(|v| v.as_i64().ok_or_else(|| wrong(key, "a whole number")))
            .transpose()
    }

    /// A whole number that is not negative.
    pub(crate) fn opt_count(&self, key: &str) -> Result<Option<usize>, String> {
        self.opt_int(key)?
            .map(|n| usize::try_from(n).map_err(|_| wrong(key, "a whole number, not negative")))
            .transpose()
    }
}

fn wrong(key: &str, what: &str) -> String {
    format!("`{key}` must be {what}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn fields_read_each_type_and_name_the_field_that_is_wrong() {
        let v = parse(r#"{"s":"x","b":true,"n":-2,"c":3,"z":null}"#).unwrap();
        let f = Fields::of(&v).unwrap();
        assert_eq!(f.text("s"), Ok("x"));
        assert_eq!(f.opt_text("z"), Ok(None));
        assert_eq!(f.text("z"), Err("`z` is required".into()));
        assert_eq!(f.flag("b"), Ok(true));
        assert_eq!(f.flag("missing"), Ok(false));
        assert_eq!(f.opt_int("n"), Ok(Some(-2)));
        assert_eq!(f.opt_count("c"), Ok(Some(3)));
        assert!(f.opt_count("n").unwrap_err().contains("`n`"));
        assert!(f.text("b").unwrap_err().contains("`b` must be a string"));
        assert!(f.flag("s").unwrap_err().contains("`s`"));
        assert!(Fields::of(&Value::Null).is_err());
    }

    #[test]
    fn a_schema_is_parsed_once_and_kept() {
        static S: Schema = Schema::new(r#"{"type":"object"}"#);
        let first: *const Value = S.get();
        assert!(std::ptr::eq(first, S.get()));
        assert_eq!(S.get().str_field("type"), Some("object"));
    }
}
