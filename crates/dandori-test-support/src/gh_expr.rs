//! GitHub Actions expressions, the subset a workflow's `if:` uses: literals
//! (`'string'` with `''` for a quote, numbers, `true`, `false`, `null`),
//! property access (`github.event.comment.user.login`, `a['b']`), `!`, `==`,
//! `!=`, `&&`, `||`, parentheses, and the functions `startsWith`, `endsWith`,
//! `contains`, `fromJSON`. The semantics are GitHub's documented ones: string
//! comparison ignores case, values of different types are compared as numbers
//! (`null` is 0, `true` 1, a string its number or NaN), a missing property is
//! `null`, `&&` / `||` give an operand (not a boolean), and falsy is `false`,
//! `0`, `-0`, `''`, `null` and NaN.
//!
//! Used to decide what the `if:` of the workflow `dandori init github-action`
//! writes lets through, for every event payload of the CI corpus tests.

use serde_json::Value;

/// Evaluates `expr` with `context` as the root (`{"github": {...}}`).
pub fn eval(expr: &str, context: &Value) -> Result<Value, String> {
    let tokens = tokenize(expr)?;
    let mut p = Parser {
        tokens: &tokens,
        at: 0,
        context,
    };
    let v = p.or()?;
    match p.tokens.get(p.at) {
        None => Ok(v),
        Some(t) => Err(format!("unexpected {t:?} at token {}", p.at)),
    }
}

/// Whether `expr` is truthy: what an `if:` decides.
pub fn truthy_expr(expr: &str, context: &Value) -> Result<bool, String> {
    eval(expr, context).map(|v| truthy(&v))
}

/// The expression of a job's `if:` in a workflow's text: the folded (`>-`) or
/// plain scalar after `if:` at the job's indentation, with `${{ }}` removed.
pub fn job_if(workflow: &str, job: &str) -> Option<String> {
    let lines: Vec<&str> = workflow.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == format!("  {job}:"))?;
    let (i, line) = lines
        .iter()
        .enumerate()
        .skip(start + 1)
        .take_while(|(_, l)| l.starts_with("    ") || l.trim().is_empty())
        .find(|(_, l)| l.starts_with("    if:"))?;
    let rest = line.trim_start().trim_start_matches("if:").trim();
    let text = if rest.starts_with('>') || rest.starts_with('|') {
        lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with("      ") || l.trim().is_empty())
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        rest.to_string()
    };
    let text = text.trim();
    Some(
        text.strip_prefix("${{")
            .and_then(|t| t.strip_suffix("}}"))
            .unwrap_or(text)
            .trim()
            .to_string(),
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Num(f64),
    Ident(String),
    Op(&'static str),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '\'' {
            let mut v = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err("an unterminated string".into()),
                    Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                        v.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(x) => {
                        v.push(*x);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(v));
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        if let Some(op) = ["==", "!=", "&&", "||", "<=", ">="]
            .into_iter()
            .find(|o| *o == two)
        {
            out.push(Tok::Op(op));
            i += 2;
            continue;
        }
        if let Some(op) = ["!", "(", ")", ",", "[", "]", ".", "<", ">"]
            .into_iter()
            .find(|o| o.starts_with(c))
        {
            out.push(Tok::Op(op));
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let st = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            let text: String = chars[st..i].iter().collect();
            let n = text
                .parse::<f64>()
                .map_err(|_| format!("{text:?} is not a number"))?;
            out.push(Tok::Num(n));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '-')
            {
                i += 1;
            }
            out.push(Tok::Ident(chars[st..i].iter().collect()));
            continue;
        }
        return Err(format!("unexpected character {c:?}"));
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Tok],
    at: usize,
    context: &'a Value,
}

impl Parser<'_> {
    fn peek_op(&self, op: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Tok::Op(o)) if *o == op)
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.peek_op(op) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!(
                "expected {op:?} at token {}, found {:?}",
                self.at,
                self.tokens.get(self.at)
            ))
        }
    }

    fn or(&mut self) -> Result<Value, String> {
        let mut v = self.and()?;
        while self.peek_op("||") {
            self.at += 1;
            let r = self.and()?;
            if !truthy(&v) {
                v = r;
            }
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<Value, String> {
        let mut v = self.cmp()?;
        while self.peek_op("&&") {
            self.at += 1;
            let r = self.cmp()?;
            if truthy(&v) {
                v = r;
            }
        }
        Ok(v)
    }

    fn cmp(&mut self) -> Result<Value, String> {
        let l = self.unary()?;
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.peek_op(op) {
                self.at += 1;
                let r = self.unary()?;
                let b = match op {
                    "==" => equal(&l, &r),
                    "!=" => !equal(&l, &r),
                    _ => {
                        let (a, b) = (number(&l), number(&r));
                        match op {
                            "<" => a < b,
                            ">" => a > b,
                            "<=" => a <= b,
                            _ => a >= b,
                        }
                    }
                };
                return Ok(Value::Bool(b));
            }
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Value, String> {
        if self.peek_op("!") {
            self.at += 1;
            let v = self.unary()?;
            return Ok(Value::Bool(!truthy(&v)));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Value, String> {
        let mut v = self.primary()?;
        loop {
            if self.peek_op(".") {
                self.at += 1;
                let Some(Tok::Ident(name)) = self.tokens.get(self.at).cloned() else {
                    return Err(format!("a property name expected at token {}", self.at));
                };
                self.at += 1;
                v = property(&v, &name);
            } else if self.peek_op("[") {
                self.at += 1;
                let k = self.or()?;
                self.expect("]")?;
                v = match (&v, &k) {
                    (Value::Array(a), _) => {
                        a.get(number(&k) as usize).cloned().unwrap_or(Value::Null)
                    }
                    (_, Value::String(name)) => property(&v, name),
                    _ => Value::Null,
                };
            } else {
                return Ok(v);
            }
        }
    }

    fn primary(&mut self) -> Result<Value, String> {
        let t = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or("the expression ends early")?;
        self.at += 1;
        match t {
            Tok::Str(s) => Ok(Value::String(s)),
            Tok::Num(n) => Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)),
            Tok::Op("(") => {
                let v = self.or()?;
                self.expect(")")?;
                Ok(v)
            }
            Tok::Ident(name) if self.peek_op("(") => {
                self.at += 1;
                let mut args = Vec::new();
                if !self.peek_op(")") {
                    loop {
                        args.push(self.or()?);
                        if self.peek_op(",") {
                            self.at += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.expect(")")?;
                call(&name, &args)
            }
            Tok::Ident(name) => Ok(match name.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => property(self.context, &name),
            }),
            Tok::Op(o) => Err(format!("unexpected {o:?}")),
        }
    }
}

/// A property of an object, case-insensitively as GitHub looks it up.
fn property(v: &Value, name: &str) -> Value {
    match v {
        Value::Object(m) => m
            .get(name)
            .or_else(|| {
                m.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            })
            .cloned()
            .unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    let lower = |v: &Value| string(v).to_lowercase();
    match name.to_ascii_lowercase().as_str() {
        "startswith" => Ok(Value::Bool(lower(&arg(0)).starts_with(&lower(&arg(1))))),
        "endswith" => Ok(Value::Bool(lower(&arg(0)).ends_with(&lower(&arg(1))))),
        "contains" => Ok(Value::Bool(match arg(0) {
            Value::Array(items) => items.iter().any(|x| equal(x, &arg(1))),
            hay => lower(&hay).contains(&lower(&arg(1))),
        })),
        "fromjson" => serde_json::from_str(&string(&arg(0))).map_err(|e| format!("fromJSON: {e}")),
        other => Err(format!(
            "the function {other} is not in the evaluated subset"
        )),
    }
}

/// GitHub's string coercion.
fn string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(_) => "Array".into(),
        Value::Object(_) => "Object".into(),
    }
}

/// GitHub's number coercion.
fn number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) if s.trim().is_empty() => 0.0,
        Value::String(s) => s.trim().parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.to_lowercase() == y.to_lowercase(),
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        // Objects and arrays are equal only when they are the same instance.
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => number(a) == number(b),
    }
}

/// GitHub's falsy values: `false`, `0`, `-0`, `''`, `null`, NaN.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn github_semantics() {
        let ctx = json!({"github": {"event_name": "issue_comment",
            "event": {"comment": {"body": "/Dandori run", "user": {"type": "User"}}}}});
        let t = |e: &str| truthy_expr(e, &ctx).unwrap();
        assert!(t("github.event_name == 'ISSUE_COMMENT'"));
        assert!(t("startsWith(github.event.comment.body, '/dandori')"));
        assert!(t("github.event.comment.user.type != 'Bot'"));
        assert!(t("github.event.missing.deeper == null"));
        assert!(t("github.event.missing != 'Bot'"));
        assert!(!t("github.event.missing == 'Bot'"));
        assert!(t("contains(fromJSON('[\"OWNER\", \"MEMBER\"]'), 'member')"));
        assert!(!t(
            "contains(fromJSON('[\"OWNER\"]'), github.event.comment.author_association)"
        ));
        assert!(t("'it''s' == 'IT''S' && !(1 == 2) || false"));
        assert!(t("github['event'].comment['user'].type == 'user'"));
        assert_eq!(eval("null || 'x'", &ctx).unwrap(), json!("x"));
        assert!(eval("toJSON(github)", &ctx).is_err());
    }

    #[test]
    fn the_if_of_a_job_is_read_from_the_workflow() {
        let wf = "jobs:\n  build:\n    name: b\n    if: >-\n      (a == 'x')\n        && b\n    runs-on: x\n";
        assert_eq!(job_if(wf, "build").unwrap(), "(a == 'x') && b");
        let wf = "jobs:\n  build:\n    if: ${{ a }}\n";
        assert_eq!(job_if(wf, "build").unwrap(), "a");
    }
}
