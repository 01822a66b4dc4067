//! The catalogue's YAML read node by node, so that every error carries its file, line and
//! column: a repository's `disposable:` section is the user's to fix.

use crate::parse::{NodeId, NodeKind, YamlFile};

/// A catalogue file that cannot be read as one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct CatalogueError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

pub(super) fn field(fields: &[(String, NodeId)], key: &str) -> Option<NodeId> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Reads catalogue YAML by node, so that errors carry lines.
pub(super) struct Reader<'a> {
    pub(super) yaml: &'a YamlFile,
    pub(super) file: &'a str,
}

impl Reader<'_> {
    pub(super) fn error(&self, node: NodeId, message: String) -> CatalogueError {
        let (line, column) = self.yaml.line_col(self.yaml.node(node).span.start);
        CatalogueError {
            file: self.file.into(),
            line,
            column,
            message,
        }
    }

    pub(super) fn entries(&self, map: NodeId) -> Result<Vec<(String, NodeId)>, CatalogueError> {
        let id = self.yaml.resolve(map).unwrap_or(map);
        let NodeKind::Mapping { entries, .. } = self.yaml.node(id).kind else {
            return Err(self.error(map, "expected a mapping".into()));
        };
        entries
            .iter()
            .map(|(k, v)| {
                let key = self
                    .yaml
                    .scalar(k)
                    .ok_or_else(|| self.error(k, "expected a plain key".into()))?;
                Ok((key.to_string(), v))
            })
            .collect()
    }

    pub(super) fn list(&self, node: NodeId) -> Result<Vec<NodeId>, CatalogueError> {
        let id = self.yaml.resolve(node).unwrap_or(node);
        match self.yaml.node(id).kind {
            NodeKind::Sequence { items, .. } => Ok(items.to_vec()),
            _ => Err(self.error(node, "expected a list".into())),
        }
    }

    pub(super) fn string(&self, node: NodeId) -> Result<String, CatalogueError> {
        self.yaml
            .scalar(node)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| self.error(node, "expected a non-empty string".into()))
    }

    /// A list of strings (or one string).
    pub(super) fn strings(&self, node: NodeId) -> Result<Vec<String>, CatalogueError> {
        if self.yaml.scalar(node).is_some() {
            return Ok(vec![self.string(node)?]);
        }
        let out: Vec<String> = self
            .list(node)?
            .into_iter()
            .map(|i| self.string(i))
            .collect::<Result<_, _>>()?;
        if out.is_empty() {
            return Err(self.error(node, "expected at least one string".into()));
        }
        Ok(out)
    }

    /// A matcher: its required `reason` and its other fields (only `allowed` ones).
    pub(super) fn rule(
        &self,
        item: NodeId,
        allowed: &[&str],
    ) -> Result<(String, Vec<(String, NodeId)>), CatalogueError> {
        let fields = self.entries(item)?;
        for (k, v) in &fields {
            if k != "reason" && !allowed.contains(&k.as_str()) {
                return Err(self.error(
                    *v,
                    format!(
                        "unknown key `{k}` (expected reason, {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        let reason = field(&fields, "reason")
            .ok_or_else(|| self.error(item, "every matcher needs a `reason`".into()))?;
        Ok((self.string(reason)?, fields))
    }

    pub(super) fn required(
        &self,
        item: NodeId,
        fields: &[(String, NodeId)],
        key: &str,
    ) -> Result<NodeId, CatalogueError> {
        field(fields, key).ok_or_else(|| self.error(item, format!("missing `{key}`")))
    }
}
