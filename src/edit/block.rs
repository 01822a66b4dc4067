//! A YAML document written as a literal block scalar of another file, and its edits lifted
//! into that file.

use crate::parse::{NodeId, YamlFile};

use super::changeset::TextEdit;

/// A YAML document written as a literal block scalar of another file (a `patch: |`), with the
/// map from its bytes back to the file's: every content line is the file's line less a fixed
/// indentation. An edit of the inner document becomes an edit of the file with [`Self::lift`].
pub struct BlockDocument {
    pub yaml: YamlFile,
    /// The block scalar in the outer file.
    scalar: NodeId,
    /// Where each content line starts in the outer file.
    outer_lines: Vec<usize>,
    indent: usize,
    /// The outer `patch` key's line (1-based).
    pub line: usize,
}

impl BlockDocument {
    /// `None` when the scalar's lines do not map back byte for byte (a fix there is refused by
    /// the site having no `Embedded`; such patches are still checked through their value).
    pub fn of(outer: &YamlFile, scalar: NodeId) -> Option<BlockDocument> {
        let content = outer.scalar(scalar)?;
        let span = outer.node(scalar).span;
        let text = outer.text();
        // The content starts on the line after the `|` indicator.
        let first = text[span.start..].find('\n').map(|i| span.start + i + 1)?;
        let body = &text[first..span.end.max(first)];
        let indent = body
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start_matches(' ').len())?;
        let mut outer_lines = Vec::new();
        let mut at = first;
        for line in content.strip_suffix('\n').unwrap_or(content).split('\n') {
            if at > text.len() {
                return None;
            }
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let raw = text[at..end].strip_suffix('\r').unwrap_or(&text[at..end]);
            let same = if line.is_empty() {
                raw.trim().is_empty()
            } else {
                raw.len() >= indent && raw[..indent].trim().is_empty() && &raw[indent..] == line
            };
            if !same {
                return None;
            }
            outer_lines.push(at);
            at = end + 1;
        }
        let (yaml, error) = YamlFile::parse(content);
        if error.is_some() {
            return None;
        }
        Some(BlockDocument {
            yaml,
            scalar,
            outer_lines,
            indent,
            line: outer.line_of(span.start),
        })
    }

    /// The outer byte of an inner byte (on a content line: edits never end past the content).
    fn outer(&self, inner: usize) -> Option<usize> {
        let line = self.yaml.line_of(inner) - 1;
        let column = inner - self.yaml.line_start(inner);
        Some(self.outer_lines.get(line)? + self.indent + column)
    }

    /// An edit of the inner text as an edit of the outer file: the whole block scalar replaced
    /// by its text with the edit made in it (offsets mapped, every new line indented like the
    /// block), so that the YAML gate checks the scalar's new value as a replacement.
    pub fn lift(&self, outer: &YamlFile, edit: &TextEdit) -> Result<TextEdit, String> {
        let pad = format!("\n{}", " ".repeat(self.indent));
        let outside = || "the edit falls outside the patch text".to_string();
        let span = outer.node(self.scalar).span;
        let start = self.outer(edit.start).ok_or_else(outside)?;
        let end = self.outer(edit.end).ok_or_else(outside)?;
        if start < span.start || end > span.end {
            return Err(outside());
        }
        let text = outer.text();
        Ok(TextEdit {
            start: span.start,
            end: span.end,
            text: format!(
                "{}{}{}",
                &text[span.start..start],
                edit.text.replace('\n', &pad),
                &text[end..span.end]
            ),
        })
    }
}

#[cfg(test)]
mod block_document_tests {
    use super::*;
    use crate::edit::{apply, replace_node};

    /// An edit of the document inside a `patch: |` block lands on the right bytes of the file,
    /// indented like the block, and the file's other bytes stay.
    #[test]
    fn an_inner_edit_is_lifted_into_the_block() {
        let text = "patches:\n  - patch: |\n      - op: add\n        value:\n          n: 1\n    target:\n      kind: X\n";
        let (outer, e) = YamlFile::parse(text);
        assert!(e.is_none());
        let scalar = outer.lookup(outer.docs()[0].root, &["patches"]).unwrap();
        let scalar = outer.lookup(outer.items(scalar)[0], &["patch"]).unwrap();
        let block = BlockDocument::of(&outer, scalar).expect("a literal block maps back");
        assert_eq!(block.line, 2);
        let inner = &block.yaml;
        let value = inner
            .lookup(inner.items(inner.docs()[0].root)[0], &["value"])
            .unwrap();
        let lifted = block
            .lift(&outer, &replace_node(inner, value, "n: 2\n    m: 3"))
            .unwrap();
        let after = apply(text, &[lifted]).unwrap();
        assert_eq!(
            after,
            "patches:\n  - patch: |\n      - op: add\n        value:\n          n: 2\n          m: 3\n    target:\n      kind: X\n"
        );
    }
}
