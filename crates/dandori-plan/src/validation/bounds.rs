//! Bounds on a plan document before it is parsed (hostile input): a
//! `planning.json` larger than [`MAX_PLAN_BYTES`], with more than
//! [`MAX_PLAN_VALUES`] JSON values or nested deeper than [`MAX_PLAN_DEPTH`] is
//! refused with `PLAN_TOO_LARGE` by one pass over the bytes that allocates
//! nothing, so that validating any input takes a bounded multiple of its size
//! (a parsed value costs tens of bytes per element: a 50 MB array of small
//! numbers would take 1.9 GB as a `serde_json::Value`).

use crate::reason_codes as rc;

use super::{Finding, Severity};

/// The largest plan read: real plans are kilobytes.
pub const MAX_PLAN_BYTES: usize = 8 * 1024 * 1024;
/// The most JSON values (scalars, arrays, objects) in a plan: a 100-step plan
/// has about 5 000.
pub const MAX_PLAN_VALUES: usize = 50_000;
/// The deepest nesting of arrays and objects.
pub const MAX_PLAN_DEPTH: usize = 64;

/// The `PLAN_TOO_LARGE` finding for `bytes`, or None when it is within bounds.
/// Malformed JSON is left to the parser (it reports where).
pub fn check(bytes: &[u8]) -> Option<Finding> {
    if bytes.len() > MAX_PLAN_BYTES {
        return Some(too_large(format!(
            "{} bytes, over the limit of {MAX_PLAN_BYTES}",
            bytes.len()
        )));
    }
    let (mut values, mut depth, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    let mut in_scalar = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        let starts_value = match b {
            b'"' => {
                in_string = true;
                true
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_PLAN_DEPTH {
                    return Some(too_large(format!(
                        "nested deeper than {MAX_PLAN_DEPTH} levels"
                    )));
                }
                true
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                false
            }
            b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => false,
            // A number, true, false, null: one value per run of such bytes.
            _ => !in_scalar,
        };
        in_scalar = !matches!(
            b,
            b'"' | b'[' | b'{' | b']' | b'}' | b',' | b':' | b' ' | b'\n' | b'\r' | b'\t'
        );
        if starts_value {
            values += 1;
            if values > MAX_PLAN_VALUES {
                return Some(too_large(format!(
                    "more than {MAX_PLAN_VALUES} JSON values"
                )));
            }
        }
    }
    None
}

fn too_large(why: String) -> Finding {
    Finding {
        code: rc::PLAN_TOO_LARGE.to_string(),
        severity: Severity::Fail,
        path: "$".to_string(),
        message: format!("the document is too large to be a plan: {why}; not parsed"),
        line: None,
        column: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_values_depth_and_size() {
        assert_eq!(
            check(br#"{"a": [1, 2.5, true, null, "x,[{"], "b": {}}"#),
            None
        );
        let many = format!("[{}1]", "1,".repeat(MAX_PLAN_VALUES));
        assert_eq!(check(many.as_bytes()).unwrap().code, rc::PLAN_TOO_LARGE);
        let fits = format!("[{}1]", "1,".repeat(MAX_PLAN_VALUES - 2));
        assert_eq!(check(fits.as_bytes()), None);
        let deep = "[".repeat(MAX_PLAN_DEPTH + 1);
        assert!(
            check(deep.as_bytes())
                .unwrap()
                .message
                .contains("nested deeper")
        );
        let big = vec![b' '; MAX_PLAN_BYTES + 1];
        assert!(
            check(&big)
                .unwrap()
                .message
                .contains("bytes, over the limit")
        );
        // Strings with escaped quotes and brackets count once.
        assert_eq!(check(br#"["a\"[[[", "b\\"]"#), None);
    }
}
