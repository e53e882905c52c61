//! Structured output that survives real models: find the JSON in the answer
//! (whole text, fenced block, or the first balanced object in prose), repair common
//! slips (trailing commas, single quotes, unquoted keys, comments, Python literals),
//! validate against the expected schema, and re-ask once quoting the problems.

use serde_json::Value;

use crate::client::Client;
use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, Message};

/// Parse model text as JSON as leniently as is safe. Errors say what was tried.
pub fn parse_lenient(text: &str) -> Result<Value, String> {
    let candidates = candidates(text);
    if candidates.is_empty() {
        return Err("the answer contains no JSON object".to_string());
    }
    let mut first_error = None;
    for candidate in &candidates {
        match serde_json::from_str::<Value>(candidate) {
            Ok(v) => return Ok(v),
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(e.to_string());
                }
            }
        }
        if let Ok(v) = serde_json::from_str::<Value>(&repair(candidate)) {
            return Ok(v);
        }
    }
    Err(format!(
        "the answer is not valid JSON ({})",
        first_error.unwrap_or_default()
    ))
}

/// Texts that may be the JSON answer, most likely first.
fn candidates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let trimmed = text.trim();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        out.push(trimmed.to_string());
    }
    // Fenced blocks: ```json … ``` or ``` … ```.
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                let block = body[..end].trim();
                if block.starts_with('{') || block.starts_with('[') {
                    out.push(block.to_string());
                }
                rest = &body[end + 3..];
            }
            None => {
                // An unterminated fence (answer cut): take what follows.
                let block = body.trim();
                if block.starts_with('{') {
                    out.push(block.to_string());
                }
                break;
            }
        }
    }
    if let Some(balanced) = first_balanced(text) {
        out.push(balanced);
    }
    out.dedup();
    out
}

/// The first `{…}` with balanced braces outside strings.
fn first_balanced(text: &str) -> Option<String> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text[start..].char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(text[start..start + i + c.len_utf8()].to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// Fix the slips models make: trailing commas, single-quoted strings, unquoted keys,
/// `//` and `/* */` comments, Python `True`/`False`/`None`.
pub fn repair(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                // Copy a string, re-quoting single-quoted ones.
                out.push('"');
                i += 1;
                while i < chars.len() && chars[i] != c {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        if chars[i + 1] == '\'' {
                            out.push('\'');
                        } else {
                            out.push('\\');
                            out.push(chars[i + 1]);
                        }
                        i += 2;
                        continue;
                    }
                    if chars[i] == '"' {
                        out.push_str("\\\"");
                    } else if chars[i] == '\n' {
                        out.push_str("\\n");
                    } else {
                        out.push(chars[i]);
                    }
                    i += 1;
                }
                out.push('"');
                i += 1;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            ',' => {
                // Drop a comma followed only by whitespace/comments and a closer.
                let mut j = i + 1;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                if !matches!(chars.get(j), Some('}') | Some(']')) {
                    out.push(',');
                }
                i += 1;
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric()
                        || chars[i] == '_'
                        || chars[i] == '$'
                        || chars[i] == '-')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                if chars.get(j) == Some(&':') {
                    out.push('"');
                    out.push_str(&word);
                    out.push('"');
                } else {
                    out.push_str(match word.as_str() {
                        "True" => "true",
                        "False" => "false",
                        "None" => "null",
                        other => other,
                    });
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Validate `value` against a JSON-schema subset (type, properties, required,
/// additionalProperties, items, enum, const, min/max, minItems/maxItems, minLength,
/// anyOf/oneOf). Returns problems as `$.json.path: message`.
pub fn validate(value: &Value, schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(value, schema, "$", &mut problems);
    problems
}

fn type_matches(value: &Value, ty: &str) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(value: &Value, schema: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if let Some(ty) = schema.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_matches(value, t)) {
            problems.push(format!(
                "{path}: expected {}, found {}",
                types.join(" or "),
                describe(value)
            ));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        problems.push(format!(
            "{path}: {value} is not one of {}",
            Value::Array(allowed.clone())
        ));
    }
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        problems.push(format!("{path}: must be {expected}, found {value}"));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let matching = options
                .iter()
                .filter(|option| validate(value, option).is_empty())
                .count();
            let ok = if key == "anyOf" {
                matching >= 1
            } else {
                matching == 1
            };
            if !ok {
                problems.push(format!(
                    "{path}: matches {matching} of the {} allowed shapes ({key})",
                    options.len()
                ));
            }
        }
    }
    match value {
        Value::Object(map) => {
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        problems.push(format!("{path}: missing required property `{key}`"));
                    }
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                match props.and_then(|p| p.get(key)) {
                    Some(child_schema) => check(child, child_schema, &child_path, problems),
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            problems.push(format!("{path}: unexpected property `{key}`"))
                        }
                        Some(extra @ Value::Object(_)) => {
                            check(child, extra, &child_path, problems)
                        }
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                problems.push(format!(
                    "{path}: needs at least {min} items, has {}",
                    items.len()
                ));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && (items.len() as u64) > max
            {
                problems.push(format!(
                    "{path}: allows at most {max} items, has {}",
                    items.len()
                ));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{path}[{i}]"), problems);
                }
            }
        }
        Value::String(s) => {
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && (s.chars().count() as u64) < min
            {
                problems.push(format!("{path}: shorter than {min} characters"));
            }
        }
        Value::Number(n) => {
            if let (Some(min), Some(v)) =
                (schema.get("minimum").and_then(Value::as_f64), n.as_f64())
                && v < min
            {
                problems.push(format!("{path}: {v} is below the minimum {min}"));
            }
            if let (Some(max), Some(v)) =
                (schema.get("maximum").and_then(Value::as_f64), n.as_f64())
                && v > max
            {
                problems.push(format!("{path}: {v} is above the maximum {max}"));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// Parse and validate in one go.
pub fn parse_and_validate(text: &str, schema: &Value) -> Result<Value, Vec<String>> {
    let value = parse_lenient(text).map_err(|e| vec![e])?;
    let problems = validate(&value, schema);
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(problems)
    }
}

/// The corrective message sent back after an invalid answer.
pub fn corrective_message(problems: &[String]) -> String {
    let mut text = String::from("Your previous answer could not be used. Problems found:\n");
    for p in problems.iter().take(20) {
        text.push_str("- ");
        text.push_str(p);
        text.push('\n');
    }
    text.push_str(
        "Answer again with only the corrected JSON object, following the schema exactly. No prose, no code fences.",
    );
    text
}

/// The outcome of a structured call: the value and every response it took.
#[derive(Debug, Clone)]
pub struct Structured {
    pub value: Value,
    pub responses: Vec<ChatResponse>,
    /// The problems of the first answer when a re-ask was needed.
    pub reasked_for: Option<Vec<String>>,
}

/// Send `request` (whose `response_schema` must be set), parse and validate the
/// answer; on problems, re-ask once with the problems quoted. `extra` adds domain
/// checks beyond the schema (their problems are quoted the same way).
pub async fn chat_structured(
    client: &Client,
    request: &ChatRequest,
    extra: &(dyn Fn(&Value) -> Vec<String> + Sync),
) -> Result<Structured, LlmError> {
    let schema = request
        .response_schema
        .as_ref()
        .map(|s| (s.name.clone(), s.schema.clone()))
        .ok_or_else(|| LlmError::InvalidConfig {
            provider: client.config().name.clone(),
            message: "chat_structured needs a response_schema".to_string(),
        })?;
    let check = |response: &ChatResponse| -> Result<Value, Vec<String>> {
        let value = parse_and_validate(response.answer_text(), &schema.1)?;
        let problems = extra(&value);
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(problems)
        }
    };
    let first = client.chat(request).await?;
    let problems = match check(&first) {
        Ok(value) => {
            return Ok(Structured {
                value,
                responses: vec![first],
                reasked_for: None,
            });
        }
        Err(problems) => problems,
    };
    let mut again = request.clone();
    again.purpose = "corrective_reask";
    again
        .messages
        .push(Message::assistant(wire_truncate(first.answer_text())));
    again
        .messages
        .push(Message::user(corrective_message(&problems)));
    let second = client.chat(&again).await?;
    match check(&second) {
        Ok(value) => Ok(Structured {
            value,
            responses: vec![first, second],
            reasked_for: Some(problems),
        }),
        Err(second_problems) => Err(LlmError::InvalidStructuredOutput {
            provider: client.config().name.clone(),
            schema: schema.0,
            problems: second_problems,
        }),
    }
}

fn wire_truncate(text: &str) -> String {
    crate::wire::truncate(text, 4000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extracts_from_prose_and_fences() {
        let fenced = "Here is the plan:\n```json\n{\"a\": 1}\n```\nThanks!";
        assert_eq!(parse_lenient(fenced).unwrap(), json!({"a": 1}));
        let prose = "Sure. {\"a\": {\"b\": \"}\"}} is my answer.";
        assert_eq!(parse_lenient(prose).unwrap(), json!({"a": {"b": "}"}}));
        assert!(parse_lenient("no json here").is_err());
    }

    #[test]
    fn repairs_common_slips() {
        let sloppy = "{a: 1, 'b': 'it\\'s', \"c\": [1, 2,], d: True, // note\n e: None,}";
        assert_eq!(
            parse_lenient(sloppy).unwrap(),
            json!({"a": 1, "b": "it's", "c": [1, 2], "d": true, "e": null})
        );
    }

    #[test]
    fn validates_with_json_paths() {
        let schema = json!({
            "type": "object",
            "required": ["phase", "items"],
            "additionalProperties": false,
            "properties": {
                "phase": {"const": "planning"},
                "items": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["id"],
                    "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 1, "maximum": 10}}
                }}
            }
        });
        assert!(
            validate(
                &json!({"phase": "planning", "items": [{"id": "a", "n": 3}]}),
                &schema
            )
            .is_empty()
        );
        assert_eq!(
            validate(
                &json!({"phase": "x", "items": [{"n": 11}, {"id": 3}], "z": 1}),
                &schema
            ),
            vec![
                "$.phase: must be \"planning\", found \"x\"".to_string(),
                "$.items[0]: missing required property `id`".to_string(),
                "$.items[0].n: 11 is above the maximum 10".to_string(),
                "$.items[1].id: expected string, found number".to_string(),
                "$: unexpected property `z`".to_string(),
            ]
        );
    }
}
