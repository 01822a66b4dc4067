//! A template's text parsed: the `<< … >>` actions cut out with their trim markers, and the
//! `if`/`else`/`end` and `range $x := …`/`end` blocks nested into nodes; any other block is
//! refused by name.

use super::budget::{MAX_TEMPLATE_DEPTH, NotExpanded};

/// A piece of a template: text, or an action (trim markers applied to the text around it).
pub(super) enum Token {
    Text(String),
    Action(String),
}

impl Token {
    pub(super) fn action_text(&self) -> &str {
        match self {
            Token::Text(t) | Token::Action(t) => t,
        }
    }

    fn keyword(&self) -> Option<&str> {
        match self {
            Token::Action(a) => a.split_whitespace().next(),
            Token::Text(_) => None,
        }
    }
}

pub(super) fn tokenize(template: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut rest = template;
    let mut trim_next = false;
    while let Some(start) = rest.find("<<") {
        let mut before = &rest[..start];
        if trim_next {
            before = before.trim_start();
        }
        let after = &rest[start + 2..];
        let end = after
            .find(">>")
            .ok_or_else(|| format!("unclosed action in `{}`", clip(template)))?;
        let mut action = &after[..end];
        if let Some(a) = action.strip_prefix('-').filter(|a| a.starts_with(' ')) {
            action = a;
            before = before.trim_end();
        }
        trim_next = false;
        if let Some(a) = action.strip_suffix('-').filter(|a| a.ends_with(' ')) {
            action = a;
            trim_next = true;
        }
        tokens.push(Token::Text(before.to_string()));
        tokens.push(Token::Action(action.trim().to_string()));
        rest = &after[end + 2..];
    }
    tokens.push(Token::Text(if trim_next {
        rest.trim_start().to_string()
    } else {
        rest.to_string()
    }));
    Ok(tokens)
}

pub(super) enum Node {
    Text(String),
    Value(String),
    If(String, Vec<Node>, Vec<Node>),
    /// `range $var := pipeline`.
    Range(String, String, Vec<Node>),
}

/// Nodes up to one of the keywords in `stop` (left at `at`), or the end; `depth`: how many
/// blocks enclose them.
pub(super) fn parse_nodes(
    tokens: &[Token],
    at: &mut usize,
    stop: &[&str],
    depth: usize,
) -> Result<Vec<Node>, NotExpanded> {
    if depth > MAX_TEMPLATE_DEPTH {
        return Err(NotExpanded::Limit(format!(
            "templates nested deeper than {MAX_TEMPLATE_DEPTH} levels"
        )));
    }
    let mut nodes = Vec::new();
    while let Some(token) = tokens.get(*at) {
        let keyword = token.keyword();
        if keyword.is_some_and(|k| stop.contains(&k)) {
            return Ok(nodes);
        }
        *at += 1;
        match (token, keyword) {
            (Token::Text(t), _) => nodes.push(Node::Text(t.clone())),
            (Token::Action(a), Some("if")) => {
                let then = parse_nodes(tokens, at, &["else", "end"], depth + 1)?;
                let mut otherwise = Vec::new();
                if tokens.get(*at).and_then(Token::keyword) == Some("else") {
                    if tokens[*at].action_text() != "else" {
                        return Err(
                            format!("the template uses `{}`", tokens[*at].action_text()).into()
                        );
                    }
                    *at += 1;
                    otherwise = parse_nodes(tokens, at, &["end"], depth + 1)?;
                }
                end(tokens, at)?;
                nodes.push(Node::If(
                    a["if".len()..].trim().to_string(),
                    then,
                    otherwise,
                ));
            }
            (Token::Action(a), Some("range")) => {
                let spec = a["range".len()..].trim();
                let (var, expr) = spec
                    .split_once(":=")
                    .map(|(v, e)| (v.trim(), e.trim()))
                    .filter(|(v, _)| v.starts_with('$') && !v.contains(','))
                    .ok_or_else(|| {
                        NotExpanded::from(format!(
                            "the template uses `range {spec}` (only `range $x := …`)"
                        ))
                    })?;
                let body = parse_nodes(tokens, at, &["end", "else"], depth + 1)?;
                end(tokens, at)?;
                nodes.push(Node::Range(var.to_string(), expr.to_string(), body));
            }
            (Token::Action(a), Some(k))
                if matches!(
                    k,
                    "with"
                        | "define"
                        | "template"
                        | "block"
                        | "break"
                        | "continue"
                        | "else"
                        | "end"
                ) || a.starts_with("/*") =>
            {
                return Err(format!("the template uses `{k}`").into());
            }
            (Token::Action(a), _) => nodes.push(Node::Value(a.clone())),
        }
    }
    Ok(nodes)
}

fn end(tokens: &[Token], at: &mut usize) -> Result<(), NotExpanded> {
    match tokens.get(*at) {
        Some(t) if t.action_text() == "end" => {
            *at += 1;
            Ok(())
        }
        Some(t) => Err(format!("the template uses `{}`", t.action_text()).into()),
        None => Err("an `if` or `range` without its `end`".into()),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(60).collect()
}
