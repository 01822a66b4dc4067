//! The edit that writes the merged entry in place of the list, in the list's own style: the
//! first entry's key order and quoting, block or flow.

use crate::edit::{self, TextEdit};
use crate::parse::{NodeId, NodeKind, ScalarStyle, YamlFile};

/// A scalar written like `like` (its quoting style) when that style can hold `value`.
fn scalar_like(yaml: &YamlFile, like: Option<NodeId>, value: &str) -> String {
    let style = like.and_then(|n| match yaml.node(n).kind {
        NodeKind::Scalar { style, .. } => Some(style),
        _ => None,
    });
    match style {
        Some(ScalarStyle::SingleQuoted) if !value.chars().any(char::is_control) => {
            format!("'{}'", value.replace('\'', "''"))
        }
        Some(ScalarStyle::DoubleQuoted) => edit::double_quoted(value),
        _ => edit::scalar_text(value),
    }
}

/// The edit that replaces the list with one entry, written in the list's style: the first
/// entry's key order, quoting and block or flow form.
pub(super) fn replace_list(
    yaml: &YamlFile,
    list: NodeId,
    issuer: &str,
    subject: &str,
) -> Result<TextEdit, String> {
    let items = yaml.items(list);
    let first = yaml
        .resolve(items[0])
        .ok_or("an entry is an unknown alias")?;
    let keys: Vec<&str> = yaml
        .entries(first)
        .iter()
        .filter_map(|(k, _)| yaml.scalar(k))
        .collect();
    let value_of = |k: &str| yaml.lookup(first, &[k]);
    let pair = |k: &str| {
        let v = if k == "issuer" { issuer } else { subject };
        format!("{k}: {}", scalar_like(yaml, value_of(k), v))
    };
    let NodeKind::Sequence { flow, .. } = yaml.node(list).kind else {
        return Err("not a list".into());
    };
    let item_flow = matches!(yaml.node(first).kind, NodeKind::Mapping { flow: true, .. });
    let body = if item_flow {
        format!(
            "{{{}}}",
            keys.iter().map(|k| pair(k)).collect::<Vec<_>>().join(", ")
        )
    } else {
        String::new()
    };
    let span = yaml.node(list).span;
    if flow {
        let body = if item_flow {
            body
        } else {
            format!(
                "{{{}}}",
                keys.iter().map(|k| pair(k)).collect::<Vec<_>>().join(", ")
            )
        };
        return Ok(TextEdit {
            start: span.start,
            end: span.end,
            text: format!("[{body}]"),
        });
    }
    let dash = yaml
        .node(items[0])
        .dash
        .ok_or("a block entry without its dash")?;
    let last = *items.last().expect("two or more entries");
    let end = yaml.node(last).span.end;
    let text = if item_flow {
        format!("- {body}")
    } else {
        let column = dash - yaml.line_start(dash);
        let lead = yaml.node(first).span.start - dash;
        let pad = " ".repeat(column + lead);
        let lines: Vec<String> = keys.iter().map(|k| pair(k)).collect();
        format!(
            "-{}{}",
            " ".repeat(lead - 1),
            lines.join(&format!("\n{pad}"))
        )
    };
    Ok(TextEdit {
        start: dash,
        end,
        text,
    })
}
