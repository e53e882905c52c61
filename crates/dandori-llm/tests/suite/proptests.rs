//! The structured-output parser on arbitrary input: never panics, and any JSON
//! object comes back unchanged however it is wrapped.

use dandori_llm::structured::{parse_lenient, validate};
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-zA-Z0-9 ,:{}\\[\\]'\"\\\\é]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map("[a-z_]{1,6}", json_value(), 0..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

proptest! {
    #[test]
    fn never_panics(text in "\\PC{0,200}") {
        let _ = parse_lenient(&text);
    }

    #[test]
    fn objects_survive_wrapping(v in object(), prose in "[a-zA-Z .!]{0,40}", pretty in any::<bool>()) {
        let body = if pretty { serde_json::to_string_pretty(&v).unwrap() } else { v.to_string() };
        for text in [
            body.clone(),
            format!("{prose}\n```json\n{body}\n```\n{prose}"),
            format!("```\n{body}\n```"),
            format!("{prose} {body}"),
        ] {
            prop_assert_eq!(parse_lenient(&text).unwrap(), v.clone(), "{}", text);
        }
    }

    #[test]
    fn validation_never_panics(v in json_value(), s in json_value()) {
        let _ = validate(&v, &s);
    }
}
