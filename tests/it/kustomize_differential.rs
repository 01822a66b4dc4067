//! Differential tests against the real thing: what fluxmend's model says a kustomize directory
//! (and a Flux layer) renders must be the set of objects `kubectl kustomize` builds — compared
//! by identity (apiVersion, kind, namespace, name), over every fixture tree.
//!
//! kubectl (1.32, kustomize v5.5) is required: these tests fail, never skip, without it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use fluxmend::load::Repo;
use fluxmend::model::{KUSTOMIZATION_FILE_NAMES, Layer, Model, Rendered, Renderer};
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use crate::common::{self, FixtureTree, TempRepo, fixture_trees, try_kubectl_kustomize};

/// (apiVersion, kind, namespace — `""` for none, name).
type Key = (String, String, String, String);

fn assert_kubectl_installed() {
    let out = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`kubectl version --client` failed; the differential tests need kubectl 1.32 with kustomize v5.5:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "kubectl not found ({e}); the differential tests need kubectl 1.32 with kustomize v5.5"
        ),
    }
}

/// `kubectl kustomize DIR --load-restrictor LoadRestrictionsNone` (how Flux builds), as keys.
fn kubectl_build(dir: &Path) -> Result<Vec<Key>, String> {
    let text = try_kubectl_kustomize(dir)?;
    let docs = YamlLoader::load_from_str(&text)
        .map_err(|e| format!("kubectl output does not parse: {e}"))?;
    let mut keys: Vec<Key> = docs
        .iter()
        .filter(|d| !d.is_null())
        .map(|d| {
            let s = |y: &Yaml| y.as_str().unwrap_or_default().to_string();
            (
                s(&d["apiVersion"]),
                s(&d["kind"]),
                s(&d["metadata"]["namespace"]),
                s(&d["metadata"]["name"]),
            )
        })
        .collect();
    keys.sort();
    Ok(keys)
}

fn model_keys(rendered: &[Rendered]) -> Vec<Key> {
    let mut keys: Vec<Key> = rendered
        .iter()
        .map(|r| {
            let k = &r.key;
            (
                k.api_version.to_string(),
                k.kind.to_string(),
                k.namespace.as_deref().unwrap_or_default().to_string(),
                k.name.to_string(),
            )
        })
        .collect();
    keys.sort();
    keys
}

/// Describe how two renders differ, or `None` when they agree (both failing counts as agreeing).
fn compare(
    expected: &Result<Vec<Key>, String>,
    actual: &Result<Vec<Key>, String>,
) -> Option<String> {
    let show = |k: &Key| {
        format!(
            "{} {} {}/{}",
            k.0,
            k.1,
            if k.2.is_empty() { "-" } else { &k.2 },
            k.3
        )
    };
    match (expected, actual) {
        (Err(_), Err(_)) => None,
        (Ok(_), Err(e)) => Some(format!("kubectl builds it, fluxmend does not: {e}")),
        (Err(e), Ok(objs)) => Some(format!(
            "kubectl fails ({e}), fluxmend renders {} objects",
            objs.len()
        )),
        (Ok(exp), Ok(act)) if exp == act => None,
        (Ok(exp), Ok(act)) => {
            let count = |keys: &[Key]| {
                let mut m: BTreeMap<Key, usize> = BTreeMap::new();
                for k in keys {
                    *m.entry(k.clone()).or_default() += 1;
                }
                m
            };
            let (e, a) = (count(exp), count(act));
            let mut lines = Vec::new();
            for (k, n) in &e {
                if a.get(k) != Some(n) {
                    lines.push(format!(
                        "    kubectl ×{n}, fluxmend ×{}: {}",
                        a.get(k).unwrap_or(&0),
                        show(k)
                    ));
                }
            }
            for (k, n) in &a {
                if !e.contains_key(k) {
                    lines.push(format!("    kubectl ×0, fluxmend ×{n}: {}", show(k)));
                }
            }
            Some(lines.join("\n"))
        }
    }
}

fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILE_NAMES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

fn rel(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).expect("below the root");
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every directory of the tree with a kustomization file (relative, sorted).
fn kustomization_dirs(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir() && kustomization_file(e.path()).is_some())
        .map(|e| rel(root, e.path()))
        .collect();
    dirs.sort();
    dirs
}

fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("git@")
        || ["github.com/", "gitlab.com/", "bitbucket.org/"]
            .iter()
            .any(|p| entry.starts_with(p))
}

/// A remote `resources`/`bases`/`components` entry reachable from `dir`, if any (kubectl would
/// fetch it; these tests never touch the network).
fn remote_entry(dir: &Path, seen: &mut BTreeSet<PathBuf>) -> Option<String> {
    if !seen.insert(dir.to_path_buf()) {
        return None;
    }
    let file = kustomization_file(dir)?;
    let text = std::fs::read_to_string(&file).ok()?;
    let docs = YamlLoader::load_from_str(text.trim_start_matches('\u{feff}')).ok()?;
    let doc = docs.first()?;
    for field in ["resources", "bases", "components"] {
        for entry in doc[field]
            .as_vec()
            .into_iter()
            .flatten()
            .filter_map(Yaml::as_str)
        {
            if is_remote(entry) {
                return Some(entry.to_string());
            }
            let target = dir.join(entry);
            if target.is_dir()
                && let Some(remote) = remote_entry(&target, seen)
            {
                return Some(remote);
            }
        }
    }
    None
}

fn load(tree: &FixtureTree) -> Repo {
    Repo::load(&tree.root).unwrap_or_else(|e| panic!("{}: {e}", tree.label()))
}

/// Compare `dirs` (relative to `root`) with `kubectl kustomize`: how many were compared, what was
/// skipped (remote bases), and every mismatch.
fn compare_dirs(label: &str, root: &Path, dirs: &[String]) -> (usize, Vec<String>, Vec<String>) {
    let repo = Repo::load(root).unwrap_or_else(|e| panic!("{label}: {e}"));
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let mut renderer = Renderer::new(&model);
    let (mut compared, mut skipped, mut mismatches) = (0, Vec::new(), Vec::new());
    for dir in dirs {
        let label = format!("{label}: {}", if dir.is_empty() { "." } else { dir });
        if let Some(remote) = remote_entry(&root.join(dir), &mut BTreeSet::new()) {
            skipped.push(format!("{label} (remote {remote})"));
            continue;
        }
        compared += 1;
        if !repo.is_dir(dir) {
            mismatches.push(format!("{label}: fluxmend did not load this directory"));
            continue;
        }
        let expected = kubectl_build(&root.join(dir));
        let actual = renderer
            .render_dir(dir)
            .as_ref()
            .as_ref()
            .map(|objs| model_keys(objs))
            .map_err(Clone::clone);
        if let Some(diff) = compare(&expected, &actual) {
            mismatches.push(format!("{label}:\n{diff}"));
        }
    }
    (compared, skipped, mismatches)
}

fn test_data() -> PathBuf {
    common::manifest_dir().join("tests/data")
}

/// Every kustomize directory of every fixture tree, and of `tests/data/kustomize/` (identity
/// transformers over built-in, custom and too-new kinds, overlays, components, `.yml` and
/// `Kustomization` file names, and builds that must fail).
#[test]
fn every_kustomization_dir_renders_like_kubectl() {
    assert_kubectl_installed();
    let mut compared = 0;
    let mut skipped = Vec::new();
    let mut mismatches = Vec::new();
    let mut trees: Vec<(String, PathBuf, Vec<String>)> = fixture_trees(true)
        .into_iter()
        .map(|t| (t.label(), t.root.clone(), kustomization_dirs(&t.root)))
        .collect();
    let data = test_data();
    let data_dirs = kustomization_dirs(&data)
        .into_iter()
        .filter(|d| d.starts_with("kustomize/"))
        .collect();
    trees.push(("tests/data".into(), data, data_dirs));
    for (label, root, dirs) in trees {
        let (n, s, m) = compare_dirs(&label, &root, &dirs);
        compared += n;
        skipped.extend(s);
        mismatches.extend(m);
    }
    eprintln!("compared {compared} kustomize directories; skipped (remote): {skipped:?}");
    assert!(
        mismatches.is_empty(),
        "{} of {compared} kustomize directories render differently from `kubectl kustomize`:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(compared > 10, "only {compared} directories compared");
}

/// One known-bad directory of `tests/data/kustomize-bugs/` must render like kubectl.
fn assert_data_dir_renders_like_kubectl(dir: &str) {
    assert_kubectl_installed();
    let (compared, _, mismatches) = compare_dirs("tests/data", &test_data(), &[dir.to_string()]);
    assert_eq!(compared, 1);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn generators_render_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/generators");
}

#[test]
fn legacy_bases_only_kustomization_renders_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/legacy-bases");
}

#[test]
fn list_resource_renders_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/list");
}

/// go-yaml (Flux's and kustomize's parser) ignores indentation inside flow collections: a `]`
/// at the parent key's column.
#[test]
fn flow_sequence_closed_at_the_parents_indentation_renders_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/yaml-flow-closer");
}

/// Flow items and closers left of their key (HelmRelease values written that way).
#[test]
fn flow_collections_left_of_their_key_render_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/yaml-flow-left");
}

/// A quoted string whose continuation line starts at column 0.
#[test]
fn quoted_continuation_at_column_zero_renders_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/yaml-quoted-continuation");
}

/// `tls: [hosts: [*host]]`: a single-pair mapping in a flow sequence whose value is a flow
/// sequence holding an alias.
#[test]
fn single_pair_mapping_with_a_flow_value_renders_like_kubectl() {
    assert_data_dir_renders_like_kubectl("kustomize-bugs/yaml-flow-pair");
}

/// The `resources` of the kustomization Flux generates for `dir` (no kustomization file): every
/// `.yaml`/`.yml` below it in walk order, and each subdirectory that has a kustomization file as
/// a directory resource (not descended into). Only what the source ships (the loader's view of
/// `.sourceignore`) is listed.
fn flux_generated_resources(root: &Path, repo: &Repo, dir: &str) -> Vec<String> {
    let base = root.join(dir);
    let mut out = Vec::new();
    let mut walk = walkdir::WalkDir::new(&base)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = walk.next() {
        let entry = entry.expect("walk");
        if entry.depth() == 0 {
            continue;
        }
        let in_repo = rel(root, entry.path());
        let in_dir = rel(&base, entry.path());
        if entry.file_type().is_dir() {
            if !repo.is_dir(&in_repo) {
                walk.skip_current_dir();
            } else if kustomization_file(entry.path()).is_some() {
                out.push(in_dir);
                walk.skip_current_dir();
            }
        } else if (in_dir.ends_with(".yaml") || in_dir.ends_with(".yml")) && repo.is_file(&in_repo)
        {
            out.push(in_dir);
        }
    }
    out
}

/// What a Flux Kustomization layers on top of the build (`spec.targetNamespace`, `namePrefix`,
/// `nameSuffix`, `components`), written into the kustomization file the way Flux's generator does.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Overlays {
    namespace: Option<String>,
    prefix: Option<String>,
    suffix: Option<String>,
    components: Vec<String>,
}

fn overlays(model: &Model, layer: &Layer) -> Overlays {
    let Some(obj) = layer.object.map(|o| model.object(o)) else {
        return Overlays::default();
    };
    let yaml = &model.repo.file(obj.file).yaml;
    let scalar = |k: &str| {
        yaml.lookup(obj.root, &["spec", k])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let components = yaml
        .lookup(obj.root, &["spec", "components"])
        .map(|list| {
            yaml.items(list)
                .iter()
                .filter_map(|&i| yaml.scalar(i).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Overlays {
        namespace: scalar("targetNamespace").filter(|s| !s.is_empty()),
        prefix: scalar("namePrefix").filter(|s| !s.is_empty()),
        suffix: scalar("nameSuffix").filter(|s| !s.is_empty()),
        components,
    }
}

/// Write the kustomization Flux would build in `dir` (of the copied tree).
fn write_flux_kustomization(dir: &Path, generated: Option<Vec<String>>, overlays: &Overlays) {
    let (file, mut doc) = match generated {
        Some(resources) => {
            let mut h = Hash::new();
            h.insert(
                Yaml::from_str("apiVersion"),
                Yaml::String("kustomize.config.k8s.io/v1beta1".into()),
            );
            h.insert(Yaml::from_str("kind"), Yaml::String("Kustomization".into()));
            h.insert(
                Yaml::from_str("resources"),
                Yaml::Array(resources.into_iter().map(Yaml::String).collect()),
            );
            (dir.join("kustomization.yaml"), h)
        }
        None => {
            if *overlays == Overlays::default() {
                return;
            }
            let file = kustomization_file(dir).expect("kustomization file");
            let text = std::fs::read_to_string(&file).unwrap();
            let docs = YamlLoader::load_from_str(text.trim_start_matches('\u{feff}'))
                .expect("kustomization parses");
            let Some(Yaml::Hash(h)) = docs.into_iter().next() else {
                panic!("{} is not a mapping", file.display())
            };
            (file, h)
        }
    };
    let mut set = |key: &str, value: &Option<String>| {
        if let Some(v) = value {
            doc.insert(Yaml::String(key.into()), Yaml::String(v.clone()));
        }
    };
    set("namespace", &overlays.namespace);
    set("namePrefix", &overlays.prefix);
    set("nameSuffix", &overlays.suffix);
    if !overlays.components.is_empty() {
        let key = Yaml::String("components".into());
        let mut list = doc
            .get(&key)
            .and_then(|c| c.as_vec().cloned())
            .unwrap_or_default();
        list.extend(overlays.components.iter().cloned().map(Yaml::String));
        doc.insert(key, Yaml::Array(list));
    }
    let mut out = String::new();
    YamlEmitter::new(&mut out)
        .dump(&Yaml::Hash(doc))
        .expect("emit kustomization");
    out.push('\n');
    std::fs::write(file, out).expect("write kustomization");
}

/// Every variant of every live layer (generated kustomizations and Flux's spec overlays
/// included) renders what `kubectl kustomize` builds from the kustomization Flux would write.
#[test]
fn every_live_layer_variant_renders_like_a_flux_build() {
    assert_kubectl_installed();
    let mut compared = 0;
    let mut generated_compared = 0;
    let mut mismatches = Vec::new();
    for tree in fixture_trees(true) {
        let repo = load(&tree);
        let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
        let mut done = BTreeSet::new();
        for (_, layer) in model.live_layers() {
            let overlays = overlays(&model, layer);
            for variant in &layer.variants {
                if !done.insert((variant.dir.clone(), variant.generated, overlays.clone())) {
                    continue;
                }
                let label = format!(
                    "{}: layer {} variant {}",
                    tree.label(),
                    layer.id,
                    variant.dir
                );
                let src = tree.root.join(variant.dir.as_str());
                if let Some(remote) = remote_entry(&src, &mut BTreeSet::new()) {
                    eprintln!("skipped {label} (remote {remote})");
                    continue;
                }
                let tmp = TempRepo::copy_of(&tree.root);
                let dir = tmp.path().join(variant.dir.as_str());
                let generated = variant
                    .generated
                    .then(|| flux_generated_resources(&tree.root, &repo, &variant.dir));
                write_flux_kustomization(&dir, generated, &overlays);
                compared += 1;
                generated_compared += usize::from(variant.generated);
                let expected = kubectl_build(&dir);
                let actual = match &variant.error {
                    Some(e) => Err(e.to_string()),
                    None => Ok(model_keys(&variant.inventory)),
                };
                if let Some(diff) = compare(&expected, &actual) {
                    mismatches.push(format!(
                        "{label} (generated: {}, {overlays:?}):\n{diff}",
                        variant.generated
                    ));
                }
            }
        }
    }
    eprintln!("compared {compared} layer variants ({generated_compared} generated)");
    assert!(
        mismatches.is_empty(),
        "{} of {compared} layer variants differ from a Flux build:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(compared > 10, "only {compared} layer variants compared");
    assert!(
        generated_compared >= 5,
        "only {generated_compared} generated variants compared"
    );
}

/// The builtin transformers of `transformers:` (config files and inline documents, in a
/// kustomization and in a component) render like kubectl: NamespaceTransformer (fieldSpecs,
/// `unsetOnly`), PrefixSuffixTransformer (fieldSpecs by kind, generated names keep their hash
/// last), LabelTransformer and AnnotationsTransformer, PatchTransformer, ReplacementTransformer;
/// and a directory of configurations whose kustomization sets their namespace.
#[test]
fn builtin_transformers_render_like_kubectl() {
    assert_kubectl_installed();
    let dirs: Vec<String> = [
        "namespace",
        "prefix-suffix",
        "labels-annotations",
        "patch",
        "replacement",
        "inline",
        "component",
        "directory",
    ]
    .iter()
    .map(|d| format!("kustomize/transformers-{d}"))
    .collect();
    let (compared, _, mismatches) = compare_dirs("tests/data", &test_data(), &dirs);
    assert_eq!(compared, dirs.len());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// A PrefixSuffixTransformer without fieldSpecs fails the build, in kustomize and in the model.
#[test]
fn prefix_suffix_transformer_without_field_specs_fails_like_kubectl() {
    assert_kubectl_installed();
    let dir = "kustomize-bugs/transformer-prefix-without-field-specs";
    assert!(common::try_kubectl_kustomize(&test_data().join(dir)).is_err());
    assert_data_dir_renders_like_kubectl(dir);
}

/// Generator inputs kustomize reads as bytes (issue 22 item 9): a binary file goes to
/// `binaryData` (and into the hash), a long Secret value is base64 in 70-character lines, a
/// ConfigMap without data hashes `data` as `""`, an env file with a BOM, CRLF, a key without a
/// value and indented comments. The generated names (hash suffixes) must be kubectl's.
#[test]
fn generators_hash_binary_and_long_values_like_kubectl() {
    assert_kubectl_installed();
    let repo = TempRepo::empty();
    let binary: Vec<u8> = (0..=255u8).chain([0xff, 0xfe, 0x00, 0x80]).collect();
    repo.write("gen/logo.bin", &binary)
        .write("gen/cert.pem", "x".repeat(200))
        .write(
            "gen/app.env",
            "\u{feff}A=1\r\n  # comment\r\nEMPTY\r\n\r\nB= spaced \r\n",
        )
        .write(
            "gen/kustomization.yaml",
            "configMapGenerator:\n  - name: binary\n    files:\n      - logo.bin\n      - text=cert.pem\n  - name: only-binary\n    files:\n      - logo.bin\n  - name: nothing\n  - name: env\n    envs:\n      - app.env\nsecretGenerator:\n  - name: long\n    files:\n      - cert.pem\n  - name: short\n    literals:\n      - token=abc\n",
        );
    let (compared, _, mismatches) = compare_dirs("generated data", repo.path(), &["gen".into()]);
    assert_eq!(compared, 1);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // And no diagnostic: a binary generator file is not an error.
    let (_, report) = repo.check_json(&[]);
    let diagnostics = common::diagnostics(&report);
    assert!(
        diagnostics.iter().all(|d| d["severity"] != "error"),
        "{diagnostics:?}"
    );
}
