//! From tokens to simple commands: operators, subshells, redirections,
//! assignments, and the constructs refused while parsing (functions, `&`,
//! `for ((…))`, consecutive operators).

use super::lexer::Token;
use super::rules::is_name;
use super::*;

/// Shell builtins: their presence needs `sh -c`.
pub(crate) const BUILTINS: &[&str] = &[
    "cd", "export", "test", "[", "type", "pwd", "true", "false", "read",
];

#[derive(Default)]
struct Builder {
    cmd: Option<SimpleCommand>,
    pending_redir: Option<String>,
}

pub(crate) fn parse(line: &str, tokens: Vec<Token>) -> Result<ParsedCommand, PolicyViolation> {
    let abuse = |what: String| PolicyViolation::new(codes::POLICY_OPERATOR_ABUSE, what);
    let mut commands: Vec<SimpleCommand> = Vec::new();
    let mut operators: Vec<String> = Vec::new();
    let mut b = Builder::default();
    let mut pipe_position = 0usize;
    // True right after an operator: a command must follow.
    let mut expect_command = true;
    let mut last_op: Option<&'static str> = None;
    let mut depth = 0i32;
    let mut needs_shell = false;

    let finish =
        |b: &mut Builder, commands: &mut Vec<SimpleCommand>| -> Result<bool, PolicyViolation> {
            if let Some(op) = b.pending_redir.take() {
                return Err(PolicyViolation::new(
                    codes::POLICY_PARSE_ERROR,
                    format!("redirection `{op}` without a target in `{line}`"),
                ));
            }
            match b.cmd.take() {
                Some(c) => {
                    commands.push(c);
                    Ok(true)
                }
                None => Ok(false),
            }
        };

    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        match tok {
            Token::Word(w) => {
                if b.cmd.is_none() && (w.text == "{" || w.text == "}") && !w.expands {
                    needs_shell = true;
                    continue;
                }
                if b.cmd.is_none() && w.text == "function" {
                    return Err(PolicyViolation::new(
                        codes::POLICY_SHELL_FUNCTION,
                        format!("shell function definition in `{line}`"),
                    ));
                }
                let cmd = b.cmd.get_or_insert_with(|| SimpleCommand {
                    assignments: Vec::new(),
                    program: String::new(),
                    args: Vec::new(),
                    redirections: Vec::new(),
                    pipe_position,
                    words: Vec::new(),
                    other_words: Vec::new(),
                });
                expect_command = false;
                if w.expands || !w.substitutions.is_empty() {
                    needs_shell = true;
                }
                if let Some(op) = b.pending_redir.take() {
                    cmd.redirections.push(Redirection {
                        operator: op,
                        target: w.text.clone(),
                        word: w.clone(),
                    });
                    cmd.other_words.push(w);
                    continue;
                }
                if cmd.program.is_empty() {
                    if let Some((name, value)) = w.text.split_once('=')
                        && is_name(name)
                    {
                        needs_shell = true;
                        cmd.assignments.push((name.to_string(), value.to_string()));
                        cmd.other_words.push(w);
                        continue;
                    }
                    cmd.program = w.text.clone();
                    if BUILTINS.contains(&cmd.program.as_str()) {
                        needs_shell = true;
                    }
                } else {
                    cmd.args.push(w.text.clone());
                }
                cmd.words.push(w);
            }
            Token::Redir(op) => {
                needs_shell = true;
                if b.pending_redir.is_some() {
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("redirection without a target in `{line}`"),
                    ));
                }
                // `2>&1`, `>&2`: the target is an fd, not a path.
                let fd_target = op.ends_with('&')
                    && matches!(iter.peek(), Some(Token::Word(w)) if w.text.chars().all(|c| c.is_ascii_digit() || c == '-'));
                let cmd = b.cmd.get_or_insert_with(|| SimpleCommand {
                    assignments: Vec::new(),
                    program: String::new(),
                    args: Vec::new(),
                    redirections: Vec::new(),
                    pipe_position,
                    words: Vec::new(),
                    other_words: Vec::new(),
                });
                expect_command = false;
                if fd_target {
                    if let Some(Token::Word(w)) = iter.next() {
                        cmd.redirections.push(Redirection {
                            operator: op,
                            target: w.text.clone(),
                            word: w,
                        });
                    }
                } else {
                    b.pending_redir = Some(op);
                }
            }
            Token::Op("(") => {
                if let Some(cmd) = &b.cmd
                    && cmd.program == "for"
                    && cmd.args.is_empty()
                {
                    return Err(c_style_for(line, &mut iter));
                }
                if let Some(cmd) = &b.cmd {
                    // `name ( )`: a function definition.
                    if cmd.args.is_empty() && matches!(iter.peek(), Some(Token::Op(")"))) {
                        let name = cmd.program.clone();
                        // Look for the name inside the body only (up to the closing `}`).
                        let mut braces = 0i32;
                        let mut calls_itself = false;
                        for t in iter.by_ref() {
                            if let Token::Word(w) = &t {
                                match w.text.as_str() {
                                    "{" => braces += 1,
                                    "}" => {
                                        braces -= 1;
                                        if braces <= 0 {
                                            break;
                                        }
                                    }
                                    x if x == name => calls_itself = true,
                                    _ => {}
                                }
                            }
                        }
                        let (code, what) = if calls_itself {
                            (
                                codes::POLICY_FORK_BOMB,
                                "a self-calling shell function (fork bomb)",
                            )
                        } else {
                            (codes::POLICY_SHELL_FUNCTION, "a shell function definition")
                        };
                        return Err(PolicyViolation::new(
                            code,
                            format!("`{line}` contains {what}"),
                        ));
                    }
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("unexpected `(` in `{line}`"),
                    ));
                }
                if !expect_command {
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("unexpected `(` in `{line}`"),
                    ));
                }
                needs_shell = true;
                depth += 1;
            }
            Token::Op(")") => {
                finish(&mut b, &mut commands)?;
                depth -= 1;
                if depth < 0 {
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("unbalanced `)` in `{line}`"),
                    ));
                }
                expect_command = false;
            }
            Token::Op(op) => {
                let had = finish(&mut b, &mut commands)?;
                needs_shell = true;
                if op == ";;" {
                    return Err(abuse(format!("`;;` outside a case statement in `{line}`")));
                }
                if op == "&" {
                    return Err(PolicyViolation::new(
                        codes::POLICY_BACKGROUND_PROCESS,
                        format!("`&` sends a command to the background in `{line}`"),
                    ));
                }
                if expect_command && !had {
                    // `;` after `;` (or at the start) is harmless in sh but is
                    // exactly the "consecutive metacharacters" of seed §11.1.2.
                    return Err(abuse(match last_op {
                        Some(prev) => format!(
                            "`{prev}` followed by `{op}` with no command between in `{line}`"
                        ),
                        None => format!("`{line}` starts with `{op}`"),
                    }));
                }
                operators.push(op.to_string());
                pipe_position = if op == "|" || op == "|&" {
                    pipe_position + 1
                } else {
                    0
                };
                expect_command = true;
                last_op = Some(op);
            }
        }
    }
    finish(&mut b, &mut commands)?;
    if depth != 0 {
        return Err(PolicyViolation::new(
            codes::POLICY_PARSE_ERROR,
            format!("unbalanced `(` in `{line}`"),
        ));
    }
    if expect_command && let Some(op) = last_op {
        if op != ";" {
            return Err(abuse(format!("`{line}` ends with `{op}`")));
        }
        // A trailing `;` is not an operator between commands.
        operators.pop();
    }
    if commands.len() == 1 && operators.is_empty() && !needs_shell {
        needs_shell = commands[0].program.is_empty();
    }
    Ok(ParsedCommand {
        line: line.to_string(),
        commands,
        operators,
        needs_shell,
    })
}

/// `for ((init; cond; step))`: refused, as an endless loop when `cond` is empty.
pub(crate) fn c_style_for(line: &str, iter: &mut impl Iterator<Item = Token>) -> PolicyViolation {
    // Tokens up to the closing `))`: `;` separates the three clauses (`;;` is two).
    let mut clause = 0usize;
    let mut cond_words = 0usize;
    let mut parens = 1i32;
    for t in iter {
        match t {
            Token::Op("(") => parens += 1,
            Token::Op(")") => {
                parens -= 1;
                if parens <= 0 {
                    break;
                }
            }
            Token::Op(";") => clause += 1,
            Token::Op(";;") => clause += 2,
            Token::Word(_) if clause == 1 => cond_words += 1,
            _ => {}
        }
    }
    if cond_words == 0 {
        PolicyViolation::new(
            codes::POLICY_INFINITE_LOOP,
            format!("`{line}` has a `for ((…))` loop without a condition"),
        )
        .with_rule("endless-loop")
    } else {
        PolicyViolation::new(
            codes::POLICY_UNSUPPORTED_SYNTAX,
            format!("arithmetic `for ((…))` loops are not accepted in `{line}`"),
        )
    }
}
