//! A parsed template run with an input set: its text printed, its blocks taken, each action's
//! pipeline evaluated (operands: literals, inputs, `range` variables; then functions), within
//! the budget.

use crate::parse::Value;

use super::budget::{Budget, MAX_RENDERED_BYTES, MAX_TEMPLATE_STEPS, NotExpanded};
use super::functions::function;
use super::inputs::Inputs;
use super::parse::Node;

/// The input set, the `range` variables in scope, and what the expansion may still use.
pub(super) struct Env<'a> {
    pub(super) inputs: Option<&'a Inputs>,
    pub(super) vars: Vec<(String, Value)>,
    pub(super) budget: &'a mut Budget,
}

impl Env<'_> {
    /// Append rendered text, within the byte budget.
    fn print(&mut self, out: &mut String, text: &str) -> Result<(), NotExpanded> {
        self.budget.bytes = self.budget.bytes.checked_sub(text.len()).ok_or_else(|| {
            NotExpanded::Limit(format!("it renders more than {MAX_RENDERED_BYTES} bytes"))
        })?;
        out.push_str(text);
        Ok(())
    }
}

pub(super) fn run(nodes: &[Node], env: &mut Env, out: &mut String) -> Result<(), NotExpanded> {
    for node in nodes {
        env.budget.steps = env.budget.steps.checked_sub(1).ok_or_else(|| {
            NotExpanded::Limit(format!(
                "its templates run more than {MAX_TEMPLATE_STEPS} steps"
            ))
        })?;
        match node {
            Node::Text(t) => env.print(out, t)?,
            Node::Value(action) => match evaluate(action, env)? {
                Value::Str(s, _) => env.print(out, &s)?,
                Value::Null => {}
                _ => return Err(format!("`<< {action} >>` is not a scalar").into()),
            },
            Node::If(cond, then, otherwise) => {
                let branch = if truthy(&evaluate(cond, env)?) {
                    then
                } else {
                    otherwise
                };
                run(branch, env, out)?;
            }
            Node::Range(var, expr, body) => {
                let items = match evaluate(expr, env)? {
                    Value::Seq(items) => items,
                    Value::Map(entries) => {
                        let mut entries = entries;
                        entries.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
                        entries.into_iter().map(|(_, v)| v).collect()
                    }
                    Value::Null => Vec::new(),
                    Value::Str(..) => return Err(format!("`range` over a scalar ({expr})").into()),
                };
                for item in items {
                    env.vars.push((var.clone(), item));
                    let result = run(body, env, out);
                    env.vars.pop();
                    result?;
                }
            }
        }
    }
    Ok(())
}

/// Go's truth: false, 0, nil and empty values are false. An unquoted YAML scalar is typed as
/// the JSON the operator reads (`false`, `0`, `null`); a quoted one is a string.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Str(s, false) => !matches!(s.as_str(), "" | "false" | "0" | "null" | "~"),
        Value::Str(s, true) => !s.is_empty(),
        Value::Seq(items) => !items.is_empty(),
        Value::Map(entries) => !entries.is_empty(),
    }
}

/// One action: a pipeline of commands separated by `|`. A lone operand keeps its value (a list
/// for `range`, a boolean for `if`); a function makes a string.
fn evaluate(action: &str, env: &Env) -> Result<Value, String> {
    let mut value: Option<Value> = None;
    for (i, command) in split_pipeline(action)?.into_iter().enumerate() {
        let words = words(&command);
        let Some((head, args)) = words.split_first() else {
            return Err(format!("an empty command in `<< {action} >>`"));
        };
        if i == 0 && args.is_empty() {
            value = Some(operand(head, env)?);
            continue;
        }
        let mut args: Vec<String> = args
            .iter()
            .map(|a| operand(a, env).and_then(|v| scalar_text(&v, a)))
            .collect::<Result<_, _>>()?;
        if i > 0 {
            let piped = value.take().unwrap_or(Value::Null);
            args.push(scalar_text(&piped, &command)?);
        }
        value = Some(Value::Str(function(head, &args)?, false));
    }
    Ok(value.unwrap_or(Value::Null))
}

fn scalar_text(value: &Value, what: &str) -> Result<String, String> {
    match value {
        Value::Str(s, _) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        _ => Err(format!("`{what}` is not a scalar")),
    }
}

/// An argument: a string literal, a number, an input reference or a `range` variable.
fn operand(word: &str, env: &Env) -> Result<Value, String> {
    if let Some(s) = word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
        return Ok(Value::Str(
            s.replace("\\\"", "\"").replace("\\\\", "\\"),
            true,
        ));
    }
    if word.parse::<f64>().is_ok() || word == "true" || word == "false" {
        return Ok(Value::Str(word.to_string(), false));
    }
    let (mut value, path) = if let Some(var) = word.strip_prefix('$') {
        let (name, rest) = var
            .split_once('.')
            .map_or((var, None), |(n, r)| (n, Some(r)));
        let value = env
            .vars
            .iter()
            .rev()
            .find(|(v, _)| v[1..] == *name)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("the template uses `{word}`"))?;
        (value, rest)
    } else {
        let path = word
            .strip_prefix("inputs.")
            .ok_or_else(|| format!("the template uses `{word}`"))?;
        let inputs = env
            .inputs
            .ok_or("a template refers to inputs, and the ResourceSet has none")?;
        let (first, rest) = path
            .split_once('.')
            .map_or((path, None), |(f, r)| (f, Some(r)));
        if first == "id" || first == "provider" {
            return Err(format!(
                "the template uses inputs.{first}, which flux-operator computes"
            ));
        }
        let value = inputs
            .get(first)
            .ok_or_else(|| format!("no input `{first}` (flux-operator fails on a missing key)"))?;
        (value, rest)
    };
    for k in path.into_iter().flat_map(|p| p.split('.')) {
        value = value
            .get(k)
            .ok_or_else(|| format!("no input `{word}` (flux-operator fails on a missing key)"))?;
    }
    Ok(value.clone())
}

/// `a | b "x" | c` into its commands, `|` inside string literals kept.
fn split_pipeline(action: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in action.chars() {
        match c {
            '\\' if in_string && !escaped => {
                escaped = true;
                current.push(c);
                continue;
            }
            '"' if !escaped => in_string = !in_string,
            '|' if !in_string => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            '(' | ')' if !in_string => {
                return Err(format!("the template uses parentheses in `<< {action} >>`"));
            }
            _ => {}
        }
        escaped = false;
        current.push(c);
    }
    if in_string {
        return Err(format!("an unterminated string in `<< {action} >>`"));
    }
    out.push(current);
    Ok(out)
}

/// A command's words: string literals whole.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in command.trim().chars() {
        match c {
            '"' if !escaped => {
                in_string = !in_string;
                current.push(c);
            }
            c if c.is_whitespace() && !in_string => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => {
                escaped = c == '\\' && !escaped;
                current.push(c);
                continue;
            }
        }
        escaped = false;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
