use super::*;
use crate::json::parse;

fn err(schema: &str, input: &str) -> String {
    check(&parse(schema).unwrap(), &parse(input).unwrap()).unwrap_err()
}

fn ok(schema: &str, input: &str) {
    if let Err(e) = check(&parse(schema).unwrap(), &parse(input).unwrap()) {
        panic!("{input} against {schema}: {e}");
    }
}

#[test]
fn reports_the_offending_field() {
    let schema = r#"{"type":"object","additionalProperties":false,"required":["a"],
        "properties":{"a":{"type":"string"},"n":{"type":"integer"},
        "l":{"type":"array","items":{"type":"object","properties":{"s":{"enum":["x","y"]}}}}}}"#;
    assert_eq!(err(schema, "{}"), "input.a is required");
    assert_eq!(
        err(schema, r#"{"a":1}"#),
        "input.a must be string, got number"
    );
    assert_eq!(
        err(schema, r#"{"a":"","n":1.5}"#),
        "input.n must be integer, got number"
    );
    assert_eq!(
        err(schema, r#"{"a":"","z":1}"#),
        "input has unexpected field \"z\""
    );
    assert_eq!(
        err(schema, r#"{"a":"","l":[{"s":"q"}]}"#),
        "input.l[0].s must be one of \"x\", \"y\""
    );
    ok(schema, r#"{"a":"","n":3,"l":[{"s":"y"}]}"#);
}

/// What pydantic writes for a model with a nested model, an optional
/// field and a list of them.
#[test]
fn pydantic_references_and_nullable_fields() {
    let schema = r##"{"$defs":{"Item":{"properties":{"name":{"title":"Name","type":"string","minLength":1},
        "qty":{"type":"integer","minimum":1}},"required":["name","qty"],"title":"Item","type":"object"}},
        "properties":{"items":{"items":{"$ref":"#/$defs/Item"},"title":"Items","type":"array","minItems":1},
        "note":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}},
        "required":["items"],"title":"Order","type":"object"}"##;
    ok(schema, r#"{"items":[{"name":"a","qty":2}]}"#);
    ok(schema, r#"{"items":[{"name":"a","qty":2}],"note":null}"#);
    ok(
        schema,
        r#"{"items":[{"name":"a","qty":2}],"note":"fragile"}"#,
    );
    assert_eq!(
        err(schema, r#"{"items":[{"name":"a","qty":0}]}"#),
        "input.items[0].qty must be at least 1, got 0"
    );
    assert_eq!(
        err(schema, r#"{"items":[{"name":"","qty":1}]}"#),
        "input.items[0].name must be at least 1 characters long, is 0"
    );
    assert_eq!(
        err(schema, r#"{"items":[]}"#),
        "input.items must have at least 1 items, has 0"
    );
    let e = err(schema, r#"{"items":[{"name":"a","qty":1}],"note":3}"#);
    assert!(
        e.starts_with("input.note matches none of the allowed forms"),
        "{e}"
    );
    assert!(
        e.contains("must be string") && e.contains("must be null"),
        "{e}"
    );
}

/// What zod's converters write: type lists, exclusive bounds as numbers,
/// patterns, `const`, tuples.
#[test]
fn zod_style_keywords() {
    let schema = r#"{"type":"object","properties":{
        "score":{"type":"number","exclusiveMinimum":0,"maximum":10,"multipleOf":0.5},
        "id":{"type":["string","null"],"pattern":"^[a-z]+-[0-9]+$"},
        "kind":{"const":"report"},
        "pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false},
        "tags":{"type":"array","items":{"type":"string"},"uniqueItems":true,"maxItems":3}},
        "additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}"#;
    ok(
        schema,
        r#"{"score":9.5,"id":"abc-12","kind":"report","pair":["a",1],"tags":["x","y"]}"#,
    );
    ok(schema, r#"{"id":null}"#);
    assert_eq!(
        err(schema, r#"{"score":0}"#),
        "input.score must be greater than 0, got 0"
    );
    assert_eq!(
        err(schema, r#"{"score":10.5}"#),
        "input.score must be at most 10, got 10.5"
    );
    assert_eq!(
        err(schema, r#"{"score":0.7}"#),
        "input.score must be a multiple of 0.5, got 0.7"
    );
    assert_eq!(
        err(schema, r#"{"id":"ABC"}"#),
        "input.id must match the pattern ^[a-z]+-[0-9]+$"
    );
    assert_eq!(
        err(schema, r#"{"id":5}"#),
        "input.id must be string or null, got number"
    );
    assert_eq!(
        err(schema, r#"{"kind":"memo"}"#),
        "input.kind must be \"report\""
    );
    assert_eq!(
        err(schema, r#"{"pair":["a","b"]}"#),
        "input.pair[1] must be integer, got string \"b\""
    );
    assert_eq!(
        err(schema, r#"{"pair":["a",1,2]}"#),
        "input.pair[2] is not allowed here"
    );
    assert_eq!(
        err(schema, r#"{"tags":["x","x"]}"#),
        "input.tags[1] repeats input.tags[0]; items must be unique"
    );
}

#[test]
fn one_of_all_of_not_and_maps() {
    let schema = r#"{"oneOf":[{"type":"integer"},{"type":"number","minimum":5}]}"#;
    ok(schema, "2");
    ok(schema, "5.5");
    assert_eq!(
        err(schema, "7"),
        "input matches 2 of the forms where exactly one must match"
    );
    let schema = r#"{"allOf":[{"required":["a"]},{"required":["b"]}],"not":{"required":["c"]}}"#;
    ok(schema, r#"{"a":1,"b":2}"#);
    assert_eq!(err(schema, r#"{"a":1}"#), "input.b is required");
    assert_eq!(
        err(schema, r#"{"a":1,"b":2,"c":3}"#),
        "input has a form the schema rules out"
    );
    let schema = r#"{"type":"object","patternProperties":{"^x-":{"type":"string"}},
        "additionalProperties":{"type":"integer"},"maxProperties":2}"#;
    ok(schema, r#"{"x-a":"s","n":1}"#);
    assert_eq!(
        err(schema, r#"{"x-a":1}"#),
        "input.x-a must be string, got number"
    );
    assert_eq!(
        err(schema, r#"{"n":"s"}"#),
        "input.n must be integer, got string \"s\""
    );
    assert_eq!(
        err(schema, r#"{"a":1,"b":2,"c":3}"#),
        "input must have at most 2 fields"
    );
}

#[test]
fn numbers_compare_as_numbers_and_odd_schemas_do_not_hang() {
    ok(r#"{"enum":[1,2]}"#, "1.0");
    ok(r#"{"const":{"a":[1]}}"#, r#"{"a":[1.0]}"#);
    // Draft 4's exclusive flag.
    assert_eq!(
        err(r#"{"minimum":1,"exclusiveMinimum":true}"#, "1"),
        "input must be greater than 1, got 1"
    );
    // A reference to itself is refused, not followed for ever.
    let e = err(r##"{"$ref":"#"}"##, "1");
    assert!(e.contains("refers to itself"), "{e}");
    // A reference to nowhere and keywords tern does not know are not enforced.
    ok(
        r##"{"$ref":"#/$defs/missing","format":"email"}"##,
        r#""not an email""#,
    );
    ok("true", "[1]");
    assert_eq!(err("false", "1"), "input is not allowed here");
    // A pattern the regex engine cannot compile is not enforced.
    ok(r#"{"pattern":"(?<=a)b"}"#, r#""b""#);
}

fn coerced(schema: &str, input: &str) -> Result<String, String> {
    let mut v = parse(input).unwrap();
    coerce_and_check(&parse(schema).unwrap(), &mut v).map(|()| v.to_json())
}

/// Numbers and booleans sent as strings become what the schema asks
/// for, as Claude Code takes them; a string field keeps its string.
#[test]
fn strings_for_numbers_and_booleans_are_coerced() {
    let schema = r##"{"type":"object","properties":{
        "limit":{"type":"integer"},"ratio":{"type":"number"},"all":{"type":"boolean"},
        "name":{"type":"string"},"either":{"type":["string","integer"]},
        "opt":{"anyOf":[{"type":"integer"},{"type":"null"}]},
        "ref":{"$ref":"#/$defs/n"},
        "list":{"type":"array","items":{"type":"integer"}},
        "nested":{"type":"object","properties":{"on":{"type":"boolean"}}}},
        "$defs":{"n":{"type":"number","minimum":1}}}"##;
    assert_eq!(
        coerced(
            schema,
            r#"{"limit":"2","ratio":"1.5","all":"true","name":"7","either":"8","opt":"3",
            "ref":"2.5","list":["1"," 2 "],"nested":{"on":"False"}}"#
        ),
        Ok(r#"{"limit":2,"ratio":1.5,"all":true,"name":"7","either":"8","opt":3,"ref":2.5,"list":[1,2],"nested":{"on":false}}"#.into())
    );
    assert_eq!(
        coerced(schema, r#"{"limit":"3.0","all":"false"}"#),
        Ok(r#"{"limit":3,"all":false}"#.into())
    );
    // Bounds apply to the coerced number.
    assert_eq!(
        coerced(schema, r#"{"ref":"0.5"}"#),
        Err("input.ref must be at least 1, got 0.5".into())
    );
}

#[test]
fn what_does_not_coerce_cleanly_stays_an_error() {
    let schema = r#"{"type":"object","properties":{
        "limit":{"type":"integer"},"ratio":{"type":"number"},"all":{"type":"boolean"}}}"#;
    for (input, error) in [
        (
            r#"{"limit":"1.5"}"#,
            r#"input.limit must be integer, got string "1.5""#,
        ),
        (
            r#"{"limit":"two"}"#,
            r#"input.limit must be integer, got string "two""#,
        ),
        (
            r#"{"limit":""}"#,
            r#"input.limit must be integer, got string """#,
        ),
        (
            r#"{"ratio":"0x10"}"#,
            r#"input.ratio must be number, got string "0x10""#,
        ),
        (
            r#"{"ratio":"NaN"}"#,
            r#"input.ratio must be number, got string "NaN""#,
        ),
        (
            r#"{"ratio":"1e999"}"#,
            r#"input.ratio must be number, got string "1e999""#,
        ),
        (
            r#"{"all":"yes"}"#,
            r#"input.all must be boolean, got string "yes""#,
        ),
        (
            r#"{"all":"1"}"#,
            r#"input.all must be boolean, got string "1""#,
        ),
    ] {
        assert_eq!(coerced(schema, input), Err(error.into()), "{input}");
    }
}
