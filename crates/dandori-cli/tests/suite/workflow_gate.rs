//! The `if:` of a GitHub Actions job, evaluated as GitHub's runner does before
//! the job starts: the subset of the expression language `dandori init
//! github-action` writes (`==`, `!=`, `&&`, `||`, parentheses, string literals,
//! `github.event_name`, `github.event.*`, `contains`, `startsWith`, `fromJSON`).
//! As GitHub documents: string comparison ignores case, a missing property is
//! `null`, `contains(array, item)` compares items loosely. Anything else fails
//! the test instead of guessing.

use serde_json::Value;

/// Whether the job starts for the event `name` with `payload`.
pub(super) fn job_starts(cond: &str, name: &str, payload: &Value) -> bool {
    let tokens = lex(cond);
    let mut p = Parser {
        t: &tokens,
        i: 0,
        name,
        payload,
    };
    let v = p.or();
    assert_eq!(
        p.i,
        tokens.len(),
        "unparsed rest of {cond}: {:?}",
        &tokens[p.i..]
    );
    truthy(&v)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Ident(String),
    Op(&'static str),
}

fn lex(s: &str) -> Vec<Tok> {
    let c: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '\'' {
            let mut v = String::new();
            i += 1;
            loop {
                assert!(i < c.len(), "unterminated string in {s}");
                if c[i] == '\'' {
                    if c.get(i + 1) == Some(&'\'') {
                        v.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                v.push(c[i]);
                i += 1;
            }
            out.push(Tok::Str(v));
        } else if ch.is_ascii_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || "._-".contains(c[i])) {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let op = match two.as_str() {
                "==" => "==",
                "!=" => "!=",
                "&&" => "&&",
                "||" => "||",
                _ => match ch {
                    '(' => "(",
                    ')' => ")",
                    ',' => ",",
                    '!' => "!",
                    other => panic!("unsupported character {other:?} in {s}"),
                },
            };
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    out
}

struct Parser<'a> {
    t: &'a [Tok],
    i: usize,
    name: &'a str,
    payload: &'a Value,
}

impl Parser<'_> {
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.t.get(self.i), Some(Tok::Op(o)) if *o == op) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Value {
        let mut v = self.and();
        while self.eat("||") {
            let r = self.and();
            v = if truthy(&v) { v } else { r };
        }
        v
    }

    fn and(&mut self) -> Value {
        let mut v = self.cmp();
        while self.eat("&&") {
            let r = self.cmp();
            v = if truthy(&v) { r } else { v };
        }
        v
    }

    fn cmp(&mut self) -> Value {
        let l = self.unary();
        if self.eat("==") {
            let r = self.unary();
            return Value::Bool(loose_eq(&l, &r));
        }
        if self.eat("!=") {
            let r = self.unary();
            return Value::Bool(!loose_eq(&l, &r));
        }
        l
    }

    fn unary(&mut self) -> Value {
        if self.eat("!") {
            return Value::Bool(!truthy(&self.unary()));
        }
        if self.eat("(") {
            let v = self.or();
            assert!(self.eat(")"), "missing )");
            return v;
        }
        match self.t.get(self.i).cloned() {
            Some(Tok::Str(s)) => {
                self.i += 1;
                Value::String(s)
            }
            Some(Tok::Ident(id)) => {
                self.i += 1;
                if self.eat("(") {
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.or());
                            if self.eat(")") {
                                break;
                            }
                            assert!(self.eat(","), "expected , in {id}(…)");
                        }
                    }
                    return call(&id, &args);
                }
                self.property(&id)
            }
            other => panic!("unexpected token {other:?}"),
        }
    }

    fn property(&self, path: &str) -> Value {
        if path == "github.event_name" {
            return Value::String(self.name.to_string());
        }
        let Some(rest) = path.strip_prefix("github.event.") else {
            panic!("unsupported context {path}");
        };
        let ptr = format!("/{}", rest.replace('.', "/"));
        self.payload.pointer(&ptr).cloned().unwrap_or(Value::Null)
    }
}

fn call(name: &str, args: &[Value]) -> Value {
    let s = |v: &Value| match v {
        Value::String(s) => s.to_lowercase(),
        Value::Null => String::new(),
        other => other.to_string().to_lowercase(),
    };
    match (name, args) {
        ("fromJSON", [Value::String(j)]) => serde_json::from_str(j).expect("fromJSON"),
        ("startsWith", [a, b]) => Value::Bool(s(a).starts_with(&s(b))),
        ("contains", [Value::Array(items), x]) => Value::Bool(items.iter().any(|i| loose_eq(i, x))),
        ("contains", [a, b]) => Value::Bool(s(a).contains(&s(b))),
        _ => panic!("unsupported function {name}({args:?})"),
    }
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.eq_ignore_ascii_case(y),
        _ => a == b,
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        _ => true,
    }
}

#[test]
fn the_gate_reads_like_githubs_runner() {
    let p = serde_json::json!({"comment": {"author_association": "owner", "body": "/Dandori run"}});
    let c = "contains(fromJSON('[\"OWNER\", \"MEMBER\"]'), github.event.comment.author_association) && startsWith(github.event.comment.body, '/dandori')";
    assert!(job_starts(c, "issue_comment", &p));
    assert!(!job_starts("github.event.label.name == 'x'", "issues", &p));
    assert!(job_starts(
        "github.event.comment.user.type != 'Bot'",
        "issue_comment",
        &p
    ));
    assert!(job_starts(
        "(github.event_name == 'x') || github.event_name == 'issue_comment'",
        "issue_comment",
        &p
    ));
}
