//! kustomize's `configMapGenerator` and `secretGenerator`: the ConfigMaps and Secrets a
//! kustomization creates, with kustomize's content-hash name suffix computed exactly as kustomize
//! v5.5 does (`api/hasher`: sha256 of a Go-JSON encoding whose `name` is always empty, because
//! kyaml's `Lookup("metadata/name")` does not split the path).

use sha2::{Digest, Sha256};

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::{FileId, Repo};
use crate::parse::{NodeId, YamlFile};

use super::{Name, Object, ObjectKey, join};

/// One generated object, before it is placed in the model's object list.
pub(super) struct Generated {
    pub object: Object,
    /// `-<hash>` appended after every name transformer, or `None` when hashing is disabled.
    pub hash_suffix: Option<String>,
}

/// The objects the generators of the kustomization in `dir` create.
pub(super) fn generate(
    repo: &Repo,
    dir: &str,
    file: FileId,
    root: NodeId,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Generated> {
    let source = repo.file(file);
    let yaml = &source.yaml;
    let global_no_hash = flag(yaml, root, &["generatorOptions", "disableNameSuffixHash"]);
    let mut out = Vec::new();
    for (field, kind) in [
        ("configMapGenerator", "ConfigMap"),
        ("secretGenerator", "Secret"),
    ] {
        let Some(list) = yaml.lookup(root, &[field]) else {
            continue;
        };
        for &entry in yaml.items(list) {
            let text = |keys: &[&str]| {
                yaml.lookup(entry, keys)
                    .and_then(|n| yaml.scalar(n))
                    .map(str::to_string)
            };
            let (line, col) = yaml.line_col(yaml.node(entry).span.start);
            let Some(name) = text(&["name"]).filter(|n| !n.is_empty()) else {
                diagnostics.push(
                    Diagnostic::new(
                        Severity::Error,
                        &source.path,
                        format!("{field} entry has no name"),
                    )
                    .at(line, col),
                );
                continue;
            };
            // `merge`/`replace` change an object of a base; they create none.
            if matches!(text(&["behavior"]).as_deref(), Some("merge" | "replace")) {
                continue;
            }
            let data = match entry_data(repo, dir, yaml, entry) {
                Ok(data) => data,
                Err(e) => {
                    diagnostics.push(
                        Diagnostic::new(
                            Severity::Error,
                            &source.path,
                            format!("{field} {name}: {e}"),
                        )
                        .at(line, col),
                    );
                    continue;
                }
            };
            let no_hash =
                global_no_hash || flag(yaml, entry, &["options", "disableNameSuffixHash"]);
            let hash_suffix = (!no_hash).then(|| {
                let encoded = if kind == "ConfigMap" {
                    format!(
                        "{{\"data\":{},\"kind\":\"ConfigMap\",\"name\":\"\"}}",
                        go_json_map(&data, false)
                    )
                } else {
                    let secret_type = text(&["type"]).unwrap_or_else(|| "Opaque".into());
                    format!(
                        "{{\"data\":{},\"kind\":\"Secret\",\"name\":\"\",\"type\":{}}}",
                        go_json_map(&data, true),
                        go_json_string(&secret_type)
                    )
                };
                format!("-{}", kustomize_hash(&encoded))
            });
            out.push(Generated {
                object: Object {
                    file,
                    doc: 0,
                    root: entry,
                    line,
                    key: ObjectKey {
                        api_version: "v1".into(),
                        kind: kind.into(),
                        namespace: text(&["namespace"])
                            .filter(|n| !n.is_empty())
                            .map(Name::from),
                        name: name.into(),
                    },
                    encrypted: false,
                },
                hash_suffix,
            });
        }
    }
    out
}

fn flag(yaml: &YamlFile, node: NodeId, keys: &[&str]) -> bool {
    yaml.lookup(node, keys)
        .and_then(|n| yaml.value(n).ok())
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// The key/value data of one generator entry: `literals`, `files` and `envs`, sorted by key.
fn entry_data(
    repo: &Repo,
    dir: &str,
    yaml: &YamlFile,
    entry: NodeId,
) -> Result<Vec<(String, String)>, String> {
    let list = |key: &str| -> Vec<String> {
        yaml.lookup(entry, &[key]).map_or_else(Vec::new, |l| {
            yaml.items(l)
                .iter()
                .filter_map(|&i| yaml.scalar(i).map(str::to_string))
                .collect()
        })
    };
    let read = |rel: &str| -> Result<String, String> {
        let path = join(dir, rel).ok_or_else(|| format!("`{rel}` leaves the repository root"))?;
        repo.read_text(&path)
            .map_err(|e| format!("cannot read {path}: {e}"))
    };
    let mut data = Vec::new();
    for literal in list("literals") {
        let (k, v) = literal
            .split_once('=')
            .ok_or_else(|| format!("literal `{literal}` has no `=`"))?;
        data.push((k.to_string(), unquote(v).to_string()));
    }
    for file in list("files") {
        let (key, path) = match file.split_once('=') {
            Some((k, p)) => (k.to_string(), p.to_string()),
            None => (
                file.rsplit('/').next().unwrap_or(&file).to_string(),
                file.clone(),
            ),
        };
        data.push((key, read(&path)?));
    }
    for env in list("envs").into_iter().chain(list("env")) {
        for line in read(&env)?.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some((k, v)) = line.split_once('=') {
                data.push((k.to_string(), v.to_string()));
            }
        }
    }
    data.sort();
    data.dedup_by(|a, b| a.0 == b.0);
    Ok(data)
}

/// kustomize strips one pair of matching quotes around a literal's value.
fn unquote(v: &str) -> &str {
    let b = v.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// kustomize's suffix: the first ten hex digits of sha256, with 0, 1, 3, a, e replaced so that
/// the result never looks like a number or a word.
fn kustomize_hash(encoded: &str) -> String {
    let digest = Sha256::digest(encoded.as_bytes());
    digest
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(10)
        .map(|n| match n {
            0 => 'g',
            1 => 'h',
            3 => 'k',
            0xa => 'm',
            0xe => 't',
            n => char::from_digit(u32::from(n), 16).expect("a nibble"),
        })
        .collect()
}

/// A sorted map as Go's `json.Marshal` writes it; Secret values are base64 (`[]byte`).
fn go_json_map(data: &[(String, String)], base64: bool) -> String {
    let entries: Vec<String> = data
        .iter()
        .map(|(k, v)| {
            format!(
                "{}:{}",
                go_json_string(k),
                go_json_string(&if base64 {
                    base64_encode(v.as_bytes())
                } else {
                    v.clone()
                })
            )
        })
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// A string as Go's `json.Marshal` escapes it (HTML-safe: `<`, `>`, `&` as `\u00XX`).
fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_kustomize() {
        // Measured with kubectl 1.32 (kustomize v5.5).
        let cm = format!(
            "{{\"data\":{},\"kind\":\"ConfigMap\",\"name\":\"\"}}",
            go_json_map(&[("replicas".into(), "2".into())], false)
        );
        assert_eq!(kustomize_hash(&cm), "dt79f5gthg");
        let secret = format!(
            "{{\"data\":{},\"kind\":\"Secret\",\"name\":\"\",\"type\":\"Opaque\"}}",
            go_json_map(&[("token".into(), "abc".into())], true)
        );
        assert_eq!(kustomize_hash(&secret), "dbdgd77ct8");
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64_encode(b"abc"), "YWJj");
        assert_eq!(base64_encode(b"ab"), "YWI=");
        assert_eq!(base64_encode(b"a"), "YQ==");
    }
}
