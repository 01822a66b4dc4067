//! Flux Operator `ResourceSet`s: flux-operator generates objects — Flux Kustomizations,
//! HelmReleases, sources — from each set's `resources` (and `resourcesTemplate`, `steps`)
//! templates, once per input set, with `<< inputs.x >>` Go templates. Flux applies what is
//! generated, so the loader generates it too: one read-only file per ResourceSet, holding the
//! documents flux-operator would build (as `flux-operator build rset` does,
//! `internal/builder/resourceset.go`), named after the ResourceSet it comes from.
//!
//! Expanded: inline `spec.inputs`, and `spec.inputsFrom` naming a `Static`
//! ResourceSetInputProvider of the repository (its `defaultValues`), combined with the `Flatten`
//! strategy; templates whose actions are input references piped through `default`, `quote`,
//! `squote`, `slugify`, `lower`, `upper`, `trim`, `toString`, `int`, `replace`, `trimPrefix`,
//! `trimSuffix`, with `if`/`else`/`end` and `range $x := …`/`end` (Go's truth: an unquoted
//! `false`, `0` or `null` input, and empty values, are false). What cannot be expanded — inputs
//! from a cluster or a remote service, the `Permute` strategy, the generated `id`, `with`,
//! `define`, other functions — is a note, never an error, and nothing is generated for that
//! ResourceSet.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashSet as HashSet;

use crate::diagnostics::{Diagnostic, Severity};
use crate::parse::{Value, YamlFile};

use super::file::SourceFile;

/// The group flux-operator's kinds belong to.
const GROUP: &str = "fluxcd.controlplane.io";

/// One input set: input name → value.
type Inputs = BTreeMap<String, Value>;

/// How deep `if` and `range` blocks may nest (each level is a recursion of the renderer).
pub const MAX_TEMPLATE_DEPTH: usize = 64;
/// How much text one ResourceSet may render (nested `range`s grow as a power).
pub const MAX_RENDERED_BYTES: usize = 32 << 20;
/// How many template nodes one ResourceSet may run (a `range` with an empty body prints
/// nothing, however long it runs).
pub const MAX_TEMPLATE_STEPS: usize = 50_000_000;
/// How many nodes a ResourceSet may have, and its objects together: thousands of input sets
/// fit, an expansion that would exhaust memory does not.
pub const MAX_NODES: usize = 2_000_000;

/// Why a ResourceSet is not expanded.
#[derive(Debug)]
enum NotExpanded {
    /// Something fluxmend does not model (a note).
    Unsupported(String),
    /// A limit of the module documentation (a warning).
    Limit(String),
}

impl From<String> for NotExpanded {
    fn from(why: String) -> NotExpanded {
        NotExpanded::Unsupported(why)
    }
}

impl From<&str> for NotExpanded {
    fn from(why: &str) -> NotExpanded {
        NotExpanded::Unsupported(why.to_string())
    }
}

/// What the expansion of one ResourceSet may still use.
struct Budget {
    bytes: usize,
    steps: usize,
    nodes: usize,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            bytes: MAX_RENDERED_BYTES,
            steps: MAX_TEMPLATE_STEPS,
            nodes: MAX_NODES,
        }
    }

    fn nodes(&mut self, n: usize) -> Result<(), NotExpanded> {
        self.nodes = self.nodes.checked_sub(n).ok_or_else(|| {
            NotExpanded::Limit(format!("it generates more than {MAX_NODES} nodes"))
        })?;
        Ok(())
    }
}

/// The path of the generated file of a ResourceSet: its file and its identity, so that reports
/// name where the generated objects come from.
pub fn generated_path(file: &str, namespace: &str, name: &str) -> String {
    format!("{file}#ResourceSet/{namespace}/{name}")
}

/// The files the ResourceSets of `files` generate, each with what it comes from
/// (`ResourceSet ns/name (file:line)`); why a ResourceSet is not expanded goes to `diagnostics`.
pub(super) fn expand(
    files: &[Arc<SourceFile>],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(SourceFile, String)> {
    let providers = static_providers(files);
    let mut generated: Vec<(String, String, String)> = Vec::new();
    for file in files {
        if !file.yaml.text.contains("ResourceSet") {
            continue;
        }
        let yaml = &file.yaml;
        for doc in &yaml.docs {
            let scalar = |keys: &[&str]| yaml.lookup(doc.root, keys).and_then(|n| yaml.scalar(n));
            if scalar(&["kind"]) != Some("ResourceSet")
                || !scalar(&["apiVersion"]).is_some_and(|a| a.starts_with(&format!("{GROUP}/")))
            {
                continue;
            }
            let line = yaml.line_of(yaml.node(doc.root).span.start);
            let namespace = scalar(&["metadata", "namespace"]).unwrap_or("default");
            let name = scalar(&["metadata", "name"]).unwrap_or_default();
            let origin = format!("ResourceSet {namespace}/{name} ({}:{line})", file.path);
            // The place of a limit: the template, when there is one.
            let template = yaml
                .lookup(doc.root, &["spec"])
                .and_then(|spec| {
                    yaml.entry(spec, "resourcesTemplate")
                        .or_else(|| yaml.entry(spec, "steps"))
                        .or_else(|| yaml.entry(spec, "resources"))
                })
                .map_or((line, 1), |(k, _)| yaml.line_col(yaml.node(k).span.start));
            let expanded = yaml
                .value_with_budget(doc.root, MAX_NODES)
                .map_err(|_| {
                    NotExpanded::Limit(format!(
                        "it has more than {MAX_NODES} nodes once aliases are expanded"
                    ))
                })
                .and_then(|value| build(&value, namespace, &providers));
            match expanded {
                Ok(docs) => {
                    let mut text = format!(
                        "# Generated by fluxmend from {origin}, as flux-operator builds it.\n"
                    );
                    for d in &docs {
                        text.push_str("---\n");
                        for l in crate::edit::value_block_lines(d, 0) {
                            text.push_str(&l);
                            text.push('\n');
                        }
                    }
                    generated.push((generated_path(&file.path, namespace, name), text, origin));
                }
                Err(NotExpanded::Unsupported(why)) => diagnostics.push(
                    Diagnostic::new(
                        Severity::Note,
                        &file.path,
                        format!(
                            "ResourceSet {namespace}/{name}: not expanded ({why}); the objects it generates are not modelled"
                        ),
                    )
                    .at(line, 1),
                ),
                Err(NotExpanded::Limit(why)) => diagnostics.push(
                    Diagnostic::new(
                        Severity::Warning,
                        &file.path,
                        format!(
                            "ResourceSet {namespace}/{name}: not expanded ({why}); the objects it generates are not modelled"
                        ),
                    )
                    .at(template.0, template.1),
                ),
            }
        }
    }
    generated
        .into_iter()
        .map(|(path, text, origin)| {
            let (yaml, error) = YamlFile::parse(&text);
            (SourceFile { path, yaml, error }, origin)
        })
        .collect()
}

fn is(value: &Value, kind: &str) -> bool {
    value.str_at(&["kind"]) == Some(kind)
        && value
            .str_at(&["apiVersion"])
            .is_some_and(|a| a.starts_with(&format!("{GROUP}/")))
}

/// The `Static` ResourceSetInputProviders of the repository, by (namespace, name): their one
/// input set, `defaultValues`.
fn static_providers(files: &[Arc<SourceFile>]) -> BTreeMap<(String, String), Inputs> {
    let mut out = BTreeMap::new();
    for file in files {
        if !file.yaml.text.contains("ResourceSetInputProvider") {
            continue;
        }
        for doc in &file.yaml.docs {
            let Ok(v) = file.yaml.value(doc.root) else {
                continue;
            };
            if !is(&v, "ResourceSetInputProvider") || v.str_at(&["spec", "type"]) != Some("Static")
            {
                continue;
            }
            let key = (
                v.str_at(&["metadata", "namespace"])
                    .unwrap_or("default")
                    .to_string(),
                v.str_at(&["metadata", "name"])
                    .unwrap_or_default()
                    .to_string(),
            );
            out.insert(key, map_of(v.path(&["spec", "defaultValues"])));
        }
    }
    out
}

fn map_of(value: Option<&Value>) -> Inputs {
    match value {
        Some(Value::Map(entries)) => entries
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.clone())))
            .collect(),
        _ => Inputs::new(),
    }
}

/// The input sets of a ResourceSet: its own, then its providers', concatenated (`Flatten`).
fn input_sets(
    rset: &Value,
    namespace: &str,
    providers: &BTreeMap<(String, String), Inputs>,
) -> Result<Vec<Inputs>, String> {
    if let Some(strategy) = rset.str_at(&["spec", "inputStrategy", "name"])
        && strategy != "Flatten"
    {
        return Err(format!("inputStrategy {strategy}"));
    }
    let mut sets: Vec<Inputs> = rset
        .path(&["spec", "inputs"])
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .map(|i| map_of(Some(i)))
        .collect();
    let mut from: Vec<(String, String)> = Vec::new();
    for reference in rset
        .path(&["spec", "inputsFrom"])
        .map(Value::seq)
        .unwrap_or_default()
    {
        let kind = reference
            .str_at(&["kind"])
            .unwrap_or("ResourceSetInputProvider");
        let Some(name) = reference.str_at(&["name"]) else {
            return Err(
                "inputsFrom selects providers by label, whose inputs the cluster holds".into(),
            );
        };
        if kind != "ResourceSetInputProvider" {
            return Err(format!("inputsFrom {kind}/{name}"));
        }
        from.push((namespace.to_string(), name.to_string()));
    }
    from.sort();
    for key in from {
        let inputs = providers.get(&key).ok_or_else(|| {
            format!(
                "inputsFrom ResourceSetInputProvider {}/{}: not a Static provider of this repository; its inputs come from a remote service",
                key.0, key.1
            )
        })?;
        sets.push(inputs.clone());
    }
    Ok(sets)
}

/// The documents flux-operator builds from a ResourceSet: every template once per input set
/// (once without inputs when there are none), objects annotated
/// `fluxcd.controlplane.io/reconcile: disabled` left out, duplicates (group, kind, namespace,
/// name) kept once, a missing namespace of a Flux object set to the ResourceSet's.
fn build(
    rset: &Value,
    namespace: &str,
    providers: &BTreeMap<(String, String), Inputs>,
) -> Result<Vec<Value>, NotExpanded> {
    let sets = input_sets(rset, namespace, providers)?;
    let runs: Vec<Option<&Inputs>> = if sets.is_empty() {
        vec![None]
    } else {
        sets.iter().map(Some).collect()
    };
    let mut templates: Vec<(Option<&Value>, Option<&str>)> = vec![(
        rset.path(&["spec", "resources"]),
        rset.str_at(&["spec", "resourcesTemplate"]),
    )];
    if let Some(steps) = rset.path(&["spec", "steps"]) {
        templates = steps
            .seq()
            .iter()
            .map(|s| (s.get("resources"), s.str_at(&["resourcesTemplate"])))
            .collect();
    }
    let mut budget = Budget::new();
    let mut out: Vec<Value> = Vec::new();
    let mut keys: HashSet<(String, String, String, String)> = HashSet::default();
    for (resources, text) in templates {
        let mut built: Vec<Value> = Vec::new();
        for resource in resources.map(Value::seq).unwrap_or_default() {
            for inputs in &runs {
                built.push(render_value(resource, *inputs, &mut budget)?);
            }
        }
        if let Some(text) = text {
            for inputs in &runs {
                let rendered = render_within(text, *inputs, &mut budget)?;
                let (yaml, error) = YamlFile::parse(&rendered);
                if let Some(e) = error {
                    return Err(format!(
                        "resourcesTemplate does not parse once rendered ({}:{}: {})",
                        e.line, e.column, e.message
                    )
                    .into());
                }
                for d in &yaml.docs {
                    let v = yaml.value_with_budget(d.root, budget.nodes).map_err(|_| {
                        NotExpanded::Limit(format!("it generates more than {MAX_NODES} nodes"))
                    })?;
                    budget.nodes(node_count(&v))?;
                    if v != Value::Null {
                        built.push(v);
                    }
                }
            }
        }
        for mut object in built {
            if object.str_at(&[
                "metadata",
                "annotations",
                "fluxcd.controlplane.io/reconcile",
            ]) == Some("disabled")
            {
                continue;
            }
            let group = object
                .str_at(&["apiVersion"])
                .and_then(|a| a.rsplit_once('/'))
                .map_or("", |(g, _)| g)
                .to_string();
            if group.ends_with(".toolkit.fluxcd.io")
                && object.str_at(&["metadata", "namespace"]).is_none()
            {
                set_namespace(&mut object, namespace);
            }
            let key = (
                group,
                object.str_at(&["kind"]).unwrap_or_default().to_string(),
                object
                    .str_at(&["metadata", "namespace"])
                    .unwrap_or_default()
                    .to_string(),
                object
                    .str_at(&["metadata", "name"])
                    .unwrap_or_default()
                    .to_string(),
            );
            if keys.insert(key) {
                out.push(object);
            }
        }
    }
    Ok(out)
}

/// How many nodes a value holds (an iterative count: values may be deep).
fn node_count(value: &Value) -> usize {
    let mut n = 0;
    let mut todo = vec![value];
    while let Some(v) = todo.pop() {
        n += 1;
        match v {
            Value::Seq(items) => todo.extend(items),
            Value::Map(entries) => {
                for (k, v) in entries {
                    todo.push(k);
                    todo.push(v);
                }
            }
            _ => {}
        }
    }
    n
}

fn set_namespace(object: &mut Value, namespace: &str) {
    let Value::Map(entries) = object else { return };
    let Some((_, Value::Map(meta))) = entries
        .iter_mut()
        .find(|(k, _)| k.as_str() == Some("metadata"))
    else {
        return;
    };
    meta.push((
        Value::Str("namespace".into(), false),
        Value::Str(namespace.into(), false),
    ));
}

/// A resource template with every string (keys included) rendered.
fn render_value(
    value: &Value,
    inputs: Option<&Inputs>,
    budget: &mut Budget,
) -> Result<Value, NotExpanded> {
    budget.nodes(1)?;
    Ok(match value {
        Value::Str(s, quoted) if s.contains("<<") => {
            scalar(&render_within(s, inputs, budget)?, *quoted)
        }
        Value::Seq(items) => Value::Seq(
            items
                .iter()
                .map(|i| render_value(i, inputs, budget))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|(k, v)| {
                    Ok((
                        render_value(k, inputs, budget)?,
                        render_value(v, inputs, budget)?,
                    ))
                })
                .collect::<Result<_, NotExpanded>>()?,
        ),
        other => other.clone(),
    })
}

/// A rendered scalar as the YAML flux-operator parses after rendering reads it: a `quote`d
/// value is the string inside the quotes.
fn scalar(text: &str, quoted: bool) -> Value {
    for q in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            return Value::Str(text[1..text.len() - 1].to_string(), true);
        }
    }
    Value::Str(text.to_string(), quoted)
}

/// Render the `<< … >>` actions of a template with the input set (Go `text/template` with
/// `<<`/`>>` delimiters, `missingkey=error`), for the subset listed in the module documentation
/// plus `if`/`else`/`end` and `range $x := …`/`end`; anything else is an error naming it.
pub fn render(template: &str, inputs: Option<&Inputs>) -> Result<String, String> {
    render_within(template, inputs, &mut Budget::new()).map_err(|e| match e {
        NotExpanded::Unsupported(why) | NotExpanded::Limit(why) => why,
    })
}

fn render_within(
    template: &str,
    inputs: Option<&Inputs>,
    budget: &mut Budget,
) -> Result<String, NotExpanded> {
    let tokens = tokenize(template)?;
    let mut at = 0;
    let nodes = parse_nodes(&tokens, &mut at, &[], 0)?;
    if at < tokens.len() {
        return Err(format!("an unexpected `{}`", tokens[at].action_text()).into());
    }
    let mut env = Env {
        inputs,
        vars: Vec::new(),
        budget,
    };
    let mut out = String::with_capacity(template.len());
    run(&nodes, &mut env, &mut out)?;
    Ok(out)
}

/// A piece of a template: text, or an action (trim markers applied to the text around it).
enum Token {
    Text(String),
    Action(String),
}

impl Token {
    fn action_text(&self) -> &str {
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

fn tokenize(template: &str) -> Result<Vec<Token>, String> {
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

enum Node {
    Text(String),
    Value(String),
    If(String, Vec<Node>, Vec<Node>),
    /// `range $var := pipeline`.
    Range(String, String, Vec<Node>),
}

/// Nodes up to one of the keywords in `stop` (left at `at`), or the end; `depth`: how many
/// blocks enclose them.
fn parse_nodes(
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

/// The input set, the `range` variables in scope, and what the expansion may still use.
struct Env<'a> {
    inputs: Option<&'a Inputs>,
    vars: Vec<(String, Value)>,
    budget: &'a mut Budget,
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

fn run(nodes: &[Node], env: &mut Env, out: &mut String) -> Result<(), NotExpanded> {
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

fn clip(s: &str) -> String {
    s.chars().take(60).collect()
}

/// One action: a pipeline of commands separated by `|`. A lone operand keeps its value (a list
/// for `range`, a boolean for `if`); a function makes a string.
fn evaluate(action: &str, env: &Env) -> Result<Value, String> {
    let mut value: Option<Value> = None;
    for (i, command) in split_pipeline(action)?.into_iter().enumerate() {
        let words = words(&command)?;
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

/// The supported functions; the piped value is the last argument.
fn function(name: &str, args: &[String]) -> Result<String, String> {
    let last = || args.last().cloned().unwrap_or_default();
    Ok(match (name, args.len()) {
        ("default", 2) => {
            if args[1].is_empty() {
                args[0].clone()
            } else {
                args[1].clone()
            }
        }
        ("quote", 1) => format!("\"{}\"", last().replace('\\', "\\\\").replace('"', "\\\"")),
        ("squote", 1) => format!("'{}'", last()),
        ("slugify", 1) => slugify(&last()),
        ("lower", 1) => last().to_lowercase(),
        ("upper", 1) => last().to_uppercase(),
        ("trim", 1) => last().trim().to_string(),
        ("toString" | "int", 1) => last(),
        ("replace", 3) => args[2].replace(&args[0], &args[1]),
        ("trimPrefix", 2) => args[1]
            .strip_prefix(args[0].as_str())
            .unwrap_or(&args[1])
            .to_string(),
        ("trimSuffix", 2) => args[1]
            .strip_suffix(args[0].as_str())
            .unwrap_or(&args[1])
            .to_string(),
        _ => return Err(format!("the template uses `{name}`")),
    })
}

/// gosimple/slug as flux-operator configures it, for ASCII text: lower case, every run of other
/// characters one `-`, none at the ends, at most 63 characters cut at a `-` when one is near.
fn slugify(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out = out.trim_end_matches('-').to_string();
    if out.len() > 63 {
        let cut = out[..63].rfind('-').filter(|&i| i > 0).unwrap_or(63);
        out.truncate(cut);
    }
    out
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
fn words(command: &str) -> Result<Vec<String>, String> {
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
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(pairs: &[(&str, &str)]) -> Inputs {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Str(v.to_string(), false)))
            .collect()
    }

    #[test]
    fn renders_references_and_the_supported_functions() {
        let i = inputs(&[("tenant", "Team One"), ("env", ""), ("semver", ">=1.0.0")]);
        let r = |t: &str| render(t, Some(&i));
        assert_eq!(
            r("tenant-<< inputs.tenant | slugify >>").unwrap(),
            "tenant-team-one"
        );
        assert_eq!(r("<< inputs.env | default \"prod\" >>").unwrap(), "prod");
        assert_eq!(r("<< inputs.semver | quote >>").unwrap(), "\">=1.0.0\"");
        assert_eq!(r("<<- inputs.tenant | lower ->>  x").unwrap(), "team onex");
        assert_eq!(r("a << \"b|c\" >> d").unwrap(), "a b|c d");
        assert_eq!(
            r("<< inputs.tenant | replace \" \" \"_\" | upper >>").unwrap(),
            "TEAM_ONE"
        );
    }

    #[test]
    fn refuses_what_it_cannot_know_or_does_not_model() {
        let i = inputs(&[("tenant", "a")]);
        for (template, why) in [
            ("<< inputs.missing >>", "no input `missing`"),
            ("<< inputs.id >>", "flux-operator computes"),
            ("<< with inputs.tenant >>x<< end >>", "uses `with`"),
            ("<< if inputs.tenant >>x", "without its `end`"),
            ("<< range inputs.tenant >>x<< end >>", "only `range $x :="),
            ("<< inputs.tenant | toYaml | nindent 4 >>", "uses `toYaml`"),
            ("<< inputs.tenant", "unclosed"),
        ] {
            let e = render(template, Some(&i)).unwrap_err();
            assert!(e.contains(why), "{template}: {e}");
        }
        assert!(render("<< inputs.tenant >>", None).is_err());
    }

    /// One resource template, two input sets: names, a slugified label, a quoted value read
    /// back as the string, the ResourceSet's namespace given to the Flux objects, an object
    /// annotated `reconcile: disabled` left out, and a duplicate kept once.
    #[test]
    fn builds_each_template_once_per_input_set() {
        let text = "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: apps\n  namespace: tenants\nspec:\n  inputs:\n    - tenant: team1\n      semver: \">=1.0.0-rc.0\"\n    - tenant: team2\n      semver: \">=2.0.0\"\n  resources:\n    - apiVersion: source.toolkit.fluxcd.io/v1\n      kind: OCIRepository\n      metadata:\n        name: << inputs.tenant >>-app\n        labels:\n          semver: << inputs.semver | slugify >>\n      spec:\n        ref:\n          semver: << inputs.semver | quote >>\n    - apiVersion: v1\n      kind: Namespace\n      metadata:\n        name: shared\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: << inputs.tenant >>-off\n        annotations:\n          fluxcd.controlplane.io/reconcile: disabled\n";
        let (yaml, e) = YamlFile::parse(text);
        assert!(e.is_none());
        let rset = yaml.value(yaml.docs[0].root).unwrap();
        let built = build(&rset, "tenants", &BTreeMap::new()).unwrap();
        let ids: Vec<(String, String, String)> = built
            .iter()
            .map(|o| {
                let s = |k: &[&str]| o.str_at(k).unwrap_or_default().to_string();
                (
                    s(&["kind"]),
                    s(&["metadata", "namespace"]),
                    s(&["metadata", "name"]),
                )
            })
            .collect();
        let id = |k: &str, ns: &str, n: &str| (k.to_string(), ns.to_string(), n.to_string());
        assert_eq!(
            ids,
            [
                id("OCIRepository", "tenants", "team1-app"),
                id("OCIRepository", "tenants", "team2-app"),
                id("Namespace", "", "shared"),
            ]
        );
        assert_eq!(
            built[0].str_at(&["metadata", "labels", "semver"]),
            Some("1-0-0-rc-0")
        );
        assert_eq!(
            built[0].str_at(&["spec", "ref", "semver"]),
            Some(">=1.0.0-rc.0")
        );
    }

    /// The bundle pattern: one document per item of a list input, a field only when a boolean
    /// input is true (an unquoted `false` is false, as in the JSON the operator reads), `<<-`
    /// and `->>` trimming as Go does.
    #[test]
    fn renders_range_and_if() {
        let template = "<<- range $app := inputs.apps >>\n---\nname: << $app >>\n<<- if inputs.decryption >>\ndecrypt: yes\n<<- else >>\ndecrypt: no\n<<- end >>\n<<- end >>\n";
        let mut i = Inputs::new();
        i.insert(
            "apps".into(),
            Value::Seq(vec![
                Value::Str("a".into(), false),
                Value::Str("b".into(), false),
            ]),
        );
        i.insert("decryption".into(), Value::Str("true".into(), false));
        assert_eq!(
            render(template, Some(&i)).unwrap(),
            "\n---\nname: a\ndecrypt: yes\n---\nname: b\ndecrypt: yes\n"
        );
        i.insert("decryption".into(), Value::Str("false".into(), false));
        assert_eq!(
            render(template, Some(&i)).unwrap(),
            "\n---\nname: a\ndecrypt: no\n---\nname: b\ndecrypt: no\n"
        );
        // A quoted "false" is a non-empty string: true.
        i.insert("decryption".into(), Value::Str("false".into(), true));
        assert!(render(template, Some(&i)).unwrap().contains("decrypt: yes"));
    }

    #[test]
    fn slugify_matches_gosimple_slug_on_ascii() {
        assert_eq!(slugify("Hello, World!"), "hello-world");
        assert_eq!(slugify("--a__b--"), "a-b");
        let long = "word-".repeat(20);
        let s = slugify(&long);
        assert!(s.len() <= 63 && !s.ends_with('-'), "{s}");
    }
}
