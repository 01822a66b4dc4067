//! kustomize's `configMapGenerator` and `secretGenerator`: the ConfigMaps and Secrets a
//! kustomization creates, with kustomize's content-hash name suffix computed exactly as kustomize
//! v5.5 does (`api/hasher`: sha256 of a Go-JSON encoding whose `name` is always empty, because
//! kyaml's `Lookup("metadata/name")` does not split the path).

use sha2::{Digest, Sha256};

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::{FileId, Repo};
use crate::parse::{NodeId, YamlFile};

use super::objects::line_of_document;
use super::{Name, Object, ObjectKey, join};

/// One generated object, before it is placed in the model's object list.
pub(super) struct Generated {
    pub object: Object,
    /// `-<hash>` appended after every name transformer, or `None` when hashing is disabled.
    pub hash_suffix: Option<Name>,
}

/// What the generators of one kustomization make, and what they read to make it.
#[derive(Default)]
pub(super) struct Generation {
    pub objects: Vec<Generated>,
    pub diagnostics: Vec<Diagnostic>,
    /// The files read that are not parsed YAML: read from where the repository was loaded
    /// (its work tree, a revision's objects), so that two repositories listing the same files
    /// may still differ there.
    pub inputs: Vec<String>,
}

impl Generation {
    fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.diagnostics.is_empty() && self.inputs.is_empty()
    }
}

/// What the generators of the kustomization in `dir` create; `None` when they make, say and
/// read nothing.
pub(super) fn generate(repo: &Repo, dir: &str, file: FileId, root: NodeId) -> Option<Generation> {
    let source = repo.file(file);
    let yaml = &source.yaml;
    let global_no_hash = flag(yaml, root, &["generatorOptions", "disableNameSuffixHash"]);
    let mut made = Generation::default();
    let (out, diagnostics, inputs) = (&mut made.objects, &mut made.diagnostics, &mut made.inputs);
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
            let (data, remote) = match entry_data(repo, dir, yaml, entry, inputs) {
                Ok(read) => read,
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
            if let Some(url) = remote.first() {
                diagnostics.push(
                    Diagnostic::new(
                        Severity::Note,
                        &source.path,
                        format!(
                            "{field} {name}: {url} is fetched over the network when the layer is built (kustomize loads http(s) files, and Flux with it): its content{} is unknown to fluxmend",
                            if no_hash { "" } else { ", so the name's hash suffix," }
                        ),
                    )
                    .at(line, col),
                );
            }
            let hash_suffix = (!no_hash && remote.is_empty()).then(|| {
                let encoded = if kind == "ConfigMap" {
                    config_map_encoding(&data)
                } else {
                    let secret_type = text(&["type"]).unwrap_or_else(|| "Opaque".into());
                    format!(
                        "{{\"data\":{},\"kind\":\"Secret\",\"name\":\"\",\"type\":{}}}",
                        go_json_map(data.iter().map(|(k, v)| (k, base64_lines(v)))),
                        go_json_string(&secret_type)
                    )
                };
                Name::from(format!("-{}", kustomize_hash(&encoded)))
            });
            out.push(Generated {
                object: Object {
                    file,
                    doc: 0,
                    root: entry,
                    line: line_of_document(line, false),
                    key: ObjectKey {
                        api_version: "v1".into(),
                        kind: kind.into(),
                        namespace: text(&["namespace"])
                            .filter(|n| !n.is_empty())
                            .map(Name::from),
                        name: name.into(),
                    },
                },
                hash_suffix,
            });
        }
    }
    (!made.is_empty()).then_some(made)
}

fn flag(yaml: &YamlFile, node: NodeId, keys: &[&str]) -> bool {
    yaml.lookup(node, keys)
        .and_then(|n| yaml.value(n).ok())
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// A generator entry's keys and values.
type Data = Vec<(String, Vec<u8>)>;

/// The key/value data of one generator entry, as kustomize's `api/kv` loads it: `envs` (and
/// `env`), `literals`, then `files`, sorted by key; a repeated key is an error, as in kustomize.
/// Values are bytes: a file need not be text. Also the http(s) URLs among its files, which
/// kustomize's loader fetches (`FileLoader.Load`, `IsRemoteFile`): their data is not known here.
/// The files read that are not parsed YAML join `inputs`.
fn entry_data(
    repo: &Repo,
    dir: &str,
    yaml: &YamlFile,
    entry: NodeId,
    inputs: &mut Vec<String>,
) -> Result<(Data, Vec<String>), String> {
    let list = |key: &str| -> Vec<String> {
        yaml.lookup(entry, &[key]).map_or_else(Vec::new, |l| {
            yaml.items(l)
                .iter()
                .filter_map(|&i| yaml.scalar(i).map(str::to_string))
                .collect()
        })
    };
    let mut read = |rel: &str| -> Result<Vec<u8>, String> {
        let path = join(dir, rel).ok_or_else(|| format!("`{rel}` leaves the repository root"))?;
        file_bytes(repo, path, inputs)
    };
    let mut data: Data = Vec::new();
    let mut remote = Vec::new();
    let env = yaml
        .lookup(entry, &["env"])
        .and_then(|n| yaml.scalar(n))
        .filter(|e| !e.is_empty())
        .map(str::to_string);
    for path in list("envs").into_iter().chain(env) {
        if is_remote_file(&path) {
            remote.push(path);
            continue;
        }
        data.extend(env_pairs(&path, &read(&path)?)?);
    }
    for literal in list("literals") {
        let (k, v) = literal
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| format!("literal `{literal}` is not key=value"))?;
        data.push((k.to_string(), unquote(v).as_bytes().to_vec()));
    }
    for source in list("files") {
        let (key, path) = file_source(&source)?;
        if is_remote_file(&path) {
            remote.push(path);
            continue;
        }
        data.push((key, read(&path)?));
    }
    data.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = data.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "the key `{}` is repeated (kustomize refuses)",
            w[0].0
        ));
    }
    Ok((data, remote))
}

/// A path kustomize fetches over HTTP instead of reading (`IsRemoteFile`: a URL whose scheme is
/// http or https, in any case).
fn is_remote_file(path: &str) -> bool {
    path.split_once("://").is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
    })
}

/// The bytes of a file of the build, as Flux's artifact holds it: a parsed YAML file as the
/// repository (or the change being verified) has it, any other file read safely from disk;
/// a file Flux's ignore rules leave out is missing for Flux too. A file read from disk (or a
/// revision's objects) joins `inputs`.
fn file_bytes(repo: &Repo, path: String, inputs: &mut Vec<String>) -> Result<Vec<u8>, String> {
    if let Some(id) = repo.file_id(&path) {
        let yaml = &repo.file(id).yaml;
        let mut bytes = Vec::with_capacity(yaml.text().len() + 3);
        if yaml.bom {
            bytes.extend_from_slice("\u{feff}".as_bytes());
        }
        bytes.extend_from_slice(yaml.text().as_bytes());
        return Ok(bytes);
    }
    let read = repo.read_bytes(&path);
    let result = match read {
        Err(e) if e.is_missing() => Err(format!("{path} does not exist")),
        Err(e) => Err(format!("cannot read {path}: {e}")),
        Ok(_) if !repo.is_file(&path) => Err(format!(
            "{path} is not in what Flux builds (its ignore rules leave it out)"
        )),
        Ok(bytes) => Ok(bytes),
    };
    inputs.push(path);
    result
}

/// A `files:` entry: `path` (the key is its base name) or `key=path`, as kustomize's
/// `ParseFileSource` reads it.
fn file_source(source: &str) -> Result<(String, String), String> {
    match source.matches('=').count() {
        0 => Ok((
            source.rsplit('/').next().unwrap_or(source).to_string(),
            source.to_string(),
        )),
        1 => match source.split_once('=') {
            Some((k, p)) if !k.is_empty() && !p.is_empty() => Ok((k.to_string(), p.to_string())),
            _ => Err(format!("`{source}` lacks its key or its path")),
        },
        _ => Err(format!("`{source}`: a key or path contains `=`")),
    }
}

/// The pairs of an env file, as kustomize reads its lines: a BOM at the start dropped, leading
/// blanks trimmed, blank lines and `#` comments skipped, `KEY` alone an empty value; a line
/// that is not UTF-8 is an error.
fn env_pairs(path: &str, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    for (i, line) in lines.into_iter().enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = std::str::from_utf8(line)
            .map_err(|_| format!("{path}: line {} is not UTF-8 (kustomize refuses)", i + 1))?
            .trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        out.push((k.to_string(), v.as_bytes().to_vec()));
    }
    Ok(out)
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

/// kustomize's hash input for a generated ConfigMap (`api/hasher` `encodeConfigMap`): UTF-8
/// values in `data`, others base64 in `binaryData` (kyaml `makeConfigMapValueRNode`); a map
/// without entries is absent from the object, so `data` then encodes as `""`.
fn config_map_encoding(data: &[(String, Vec<u8>)]) -> String {
    let (text, binary): (Vec<_>, Vec<_>) = data
        .iter()
        .partition(|(_, v)| std::str::from_utf8(v).is_ok());
    let mut out = String::from("{");
    if !binary.is_empty() {
        out.push_str("\"binaryData\":");
        out.push_str(&go_json_map(
            binary.iter().map(|(k, v)| (k, base64_lines(v))),
        ));
        out.push(',');
    }
    out.push_str("\"data\":");
    if text.is_empty() {
        out.push_str("\"\"");
    } else {
        out.push_str(&go_json_map(text.iter().map(|(k, v)| {
            (
                k,
                String::from_utf8(v.clone()).expect("partitioned as UTF-8"),
            )
        })));
    }
    out.push_str(",\"kind\":\"ConfigMap\",\"name\":\"\"}");
    out
}

/// A map, sorted by key, as Go's `json.Marshal` writes it.
fn go_json_map<'a>(entries: impl Iterator<Item = (&'a String, String)>) -> String {
    let entries: Vec<String> = entries
        .map(|(k, v)| format!("{}:{}", go_json_string(k), go_json_string(&v)))
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
                out.push_str(&format!("\\u{:04x}", c as u32));
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

/// Base64 as kyaml writes generated values (`encodeBase64`): in lines of 70 characters, each
/// ending in a newline once there is more than one line's worth.
fn base64_lines(bytes: &[u8]) -> String {
    const LINE: usize = 70;
    let encoded = base64_encode(bytes);
    if encoded.len() < LINE {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_kustomize() {
        // Measured with kubectl 1.32 (kustomize v5.5).
        let cm = config_map_encoding(&[("replicas".into(), b"2".to_vec())]);
        assert_eq!(kustomize_hash(&cm), "dt79f5gthg");
        let token = "token".to_string();
        let secret = format!(
            "{{\"data\":{},\"kind\":\"Secret\",\"name\":\"\",\"type\":\"Opaque\"}}",
            go_json_map([(&token, base64_lines(b"abc"))].into_iter())
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
