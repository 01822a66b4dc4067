//! The hostile corpus: every kind of bad or odd input issue 5 lists, placed beside a layout that
//! has an FM001 finding. Each case has an asserted diagnostic (severity, file, message, line) or
//! a documented skip; the rest of the repository is still analysed; `fix --write` over the whole
//! corpus fixes the finding (verified by every gate) and changes no byte of any hostile file.
//!
//! The corpus is built in the test (binary, huge and symlinked files do not belong in git).
//! `tests/it/bad_input.rs` has the focused one-case-per-test versions of several of these.

// Symbolic links to /etc and the unix root are part of the corpus.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use crate::common::{
    TempRepo, alias_bomb, assert_diagnostic, diagnostics, differing_paths, find_diagnostic,
    inventory, layer, outside_dir, tree,
};
use fluxmend::parse::{MAX_NESTING, Value, YamlFile};
use serde_json::Value as Json;

/// What fluxmend must say about one hostile file.
enum Expect {
    /// A diagnostic: severity, message fragment, and the line when there is one.
    Diag(&'static str, &'static str, Option<u64>),
    /// Several diagnostics for the same file.
    Diags(&'static [(&'static str, &'static str, Option<u64>)]),
    /// Valid YAML: read, no diagnostic.
    Clean,
    /// Documented skip: fluxmend does not read the file at all (no diagnostic, not counted) —
    /// only `.yaml`/`.yml` (and `Kustomization`) files are Kubernetes YAML to it.
    NotRead,
}

struct Case {
    path: String,
    bytes: Vec<u8>,
    expect: Expect,
}

fn case(path: &str, bytes: impl Into<Vec<u8>>, expect: Expect) -> Case {
    Case {
        path: path.to_string(),
        bytes: bytes.into(),
        expect,
    }
}

const NOT_PARSE: &str = "YAML does not parse";

const SOPS_SECRET: &str = "\
apiVersion: v1
kind: Secret
metadata:
    name: db
    namespace: infra
stringData:
    password: ENC[AES256_GCM,data:Zm9vYmFy,iv:aXY=,tag:dGFn,type:str]
sops:
    age:
        - recipient: age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq
    lastmodified: \"2024-05-01T10:00:00Z\"
    mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]
    version: 3.8.1
";

/// Flux objects in the root layer's path: a dependsOn cycle of three, a Kustomization without
/// `sourceRef`, a GitRepository without `url`.
const HOSTILE_FLUX: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: no-source
  namespace: flux-system
spec:
  interval: 10m
  path: ./hostile/plain
  prune: true
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: no-url
  namespace: flux-system
spec:
  interval: 1m
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cyc-a
  namespace: flux-system
spec:
  interval: 10m
  path: ./hostile/plain
  prune: true
  dependsOn: [{name: cyc-b}]
  sourceRef: {kind: GitRepository, name: flux-system}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cyc-b
  namespace: flux-system
spec:
  interval: 10m
  path: ./hostile/plain
  prune: true
  dependsOn: [{name: cyc-c}]
  sourceRef: {kind: GitRepository, name: flux-system}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cyc-c
  namespace: flux-system
spec:
  interval: 10m
  path: ./hostile/plain
  prune: true
  dependsOn: [{name: cyc-a}]
  sourceRef: {kind: GitRepository, name: flux-system}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: remote
  namespace: flux-system
spec:
  interval: 10m
  path: ./hostile/kustomize/remote
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
";

#[allow(
    clippy::too_many_lines,
    reason = "a table of hostile inputs reads best as one list"
)]
fn corpus() -> Vec<Case> {
    use Expect::*;
    let cm = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: infra\n")
    };
    let mut cases = vec![
        // Malformed YAML of many kinds: an error with file:line, the rest still analysed.
        case(
            "hostile/malformed/unclosed-flow.yaml",
            "a: [1, 2\nb: 3\n",
            Diag("error", NOT_PARSE, Some(2)),
        ),
        case(
            "hostile/malformed/unclosed-quote.yaml",
            "a: \"abc\nb: 1\n",
            Diag("error", NOT_PARSE, Some(1)),
        ),
        case(
            "hostile/malformed/bad-indent.yaml",
            "a:\n  b: 1\n c: 2\n",
            Diag("error", NOT_PARSE, Some(3)),
        ),
        case(
            "hostile/malformed/seq-after-map.yaml",
            "key: value\n- item\n",
            Diag("error", NOT_PARSE, Some(2)),
        ),
        case(
            "hostile/malformed/invalid-escape.yaml",
            "a: \"\\q\"\n",
            Diag("error", "unknown escape character", Some(1)),
        ),
        case(
            "hostile/malformed/stray-bracket.yaml",
            "a: 1\n]\n",
            Diag("error", NOT_PARSE, Some(2)),
        ),
        case(
            "hostile/malformed/unknown-alias.yaml",
            "a: *nope\n",
            Diag("error", "unknown anchor", Some(1)),
        ),
        case(
            "hostile/malformed/alias-to-earlier-document.yaml",
            "a: &x 1\n---\nb: *x\n",
            Diag("error", "unknown anchor", Some(3)),
        ),
        case(
            "hostile/malformed/directive-only.yaml",
            "%YAML 1.2\n",
            Diag("error", NOT_PARSE, Some(2)),
        ),
        // go-yaml ignores indentation inside a flow collection (`]` at its key's column parses),
        // but one that never closes is an error, where go-yaml reports it.
        case(
            "hostile/malformed/flow-never-closed.yaml",
            "tls:\n  hosts: [\n    a,\n  b\nother: 1\n",
            Diag("error", NOT_PARSE, Some(5)),
        ),
        case(
            "hostile/malformed/tab-indent.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: tabbed\n",
            Diag("error", "tab", Some(4)),
        ),
        // Encodings.
        case(
            "hostile/encoding/latin1.yaml",
            &b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n"[..],
            Diag("warning", "not UTF-8", None),
        ),
        case(
            "hostile/encoding/utf16.yaml",
            "\u{feff}apiVersion: v1\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect::<Vec<u8>>(),
            Diag("warning", "binary file", None),
        ),
        case(
            "hostile/encoding/binary.yaml",
            &b"\x00\x01\x02\xff\xfe PNG\x00"[..],
            Diag("warning", "binary file", None),
        ),
        case(
            "infra/bom-crlf.yaml",
            format!("\u{feff}{}", cm("bom-crlf")).replace('\n', "\r\n"),
            Clean,
        ),
        case(
            "infra/zero-width.yaml",
            cm("zwnbsp").replace(
                "namespace: infra",
                "namespace: infra\n  annotations: {note: \"a\u{feff}b\"}",
            ),
            Clean,
        ),
        // Line endings: mixed CRLF/LF is fine; a lone CR (old Mac) is refused, not misread.
        case(
            "infra/mixed-endings.yaml",
            cm("mixed").replacen('\n', "\r\n", 2),
            Clean,
        ),
        case(
            "hostile/endings/lone-cr.yaml",
            cm("cr").replace('\n', "\r"),
            Diag("error", "carriage return that is not part of CRLF", Some(1)),
        ),
        // Tabs inside values are legal.
        case(
            "infra/tabs-in-values.yaml",
            format!("{}data:\n  quoted: \"x\ty\"\n  plain: x\ty\n", cm("tabs")),
            Clean,
        ),
        // Size: a 2 MB line is read; a file over the 8 MiB cap is skipped with a warning.
        case(
            "hostile/big/long-line.yaml",
            format!("{}data:\n  x: {}\n", cm("long"), "a".repeat(2_000_000)),
            Clean,
        ),
        case(
            "hostile/big/huge.yaml",
            format!("a: {}\n", "b".repeat(9 * 1024 * 1024)),
            Diag("warning", "over the 8388608 byte limit", None),
        ),
        // Deep nesting: refused at 512 levels (block) or by the scanner (flow), no stack overflow.
        case(
            "hostile/deep/block.yaml",
            (0..2000)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect::<String>(),
            Diag("error", "nested deeper than 512 levels", Some(513)),
        ),
        case(
            "hostile/deep/sequence.yaml",
            format!("{}x\n", "- ".repeat(100_000)),
            Diag("error", "nested deeper than 512 levels", Some(1)),
        ),
        case(
            "hostile/deep/flow.yaml",
            format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
            Diag("error", "recursion limit exceeded", Some(1)),
        ),
        // Aliases: a bomb is bounded; redefined anchors resolve to the definition in force.
        case("hostile/bomb.yaml", alias_bomb("bomb"), Clean),
        case(
            "infra/redefined-anchors.yaml",
            format!(
                "{}data:\n  a: &x one\n  b: *x\n  c: &x two\n  d: *x\n",
                cm("anchors")
            ),
            Clean,
        ),
        // Duplicate keys: Go's YAML (Flux, kustomize) rejects the file; so does fluxmend.
        case(
            "hostile/keys/duplicate.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n  name: dup2\n",
            Diag(
                "error",
                "mapping key `name` already defined at line 4",
                Some(5),
            ),
        ),
        // Paths leaving the root, remote resources.
        case(
            "hostile/kustomize/outside/kustomization.yaml",
            "resources:\n  - ../../../../../../etc\n  - /etc/passwd\n",
            Diags(&[
                (
                    "error",
                    "`../../../../../../etc` leaves the repository root",
                    Some(2),
                ),
                ("error", "`/etc/passwd` leaves the repository root", Some(3)),
            ]),
        ),
        case(
            "hostile/kustomize/remote/kustomization.yaml",
            "resources:\n  - https://github.com/x/y//deploy?ref=v1\n  - github.com/x/z\n  - cm.yaml\n",
            Diags(&[
                (
                    "note",
                    "`https://github.com/x/y//deploy?ref=v1` is remote; not fetched",
                    Some(2),
                ),
                ("note", "`github.com/x/z` is remote; not fetched", Some(3)),
            ]),
        ),
        case("hostile/kustomize/remote/cm.yaml", cm("remote-cm"), Clean),
        // kustomization files that are not Kustomizations.
        case(
            "hostile/kustomize/list/kustomization.yaml",
            "- a\n- b\n",
            Diag("error", "this kustomization file is not a mapping", Some(1)),
        ),
        case(
            "hostile/kustomize/scalar/kustomization.yaml",
            "just text\n",
            Diag("error", "this kustomization file is not a mapping", Some(1)),
        ),
        case(
            "hostile/kustomize/configmap/kustomization.yaml",
            cm("not-a-kustomization"),
            Diag(
                "error",
                "not a kustomize Kustomization (v1 ConfigMap)",
                Some(1),
            ),
        ),
        // SOPS: kept, encrypted payload not read.
        case("infra/db.sops.yaml", SOPS_SECRET, Clean),
        // Templates: Helm chart templates and Jinja are skipped with a note, `.j2` is not read.
        case(
            "hostile/chart/Chart.yaml",
            "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
            Diag("note", "Helm chart metadata", None),
        ),
        case(
            "hostile/chart/templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
            Diag("note", "Helm chart template", None),
        ),
        case(
            "hostile/jinja/loop.yaml",
            "{% for x in y %}\napiVersion: v1\n{% endfor %}\n",
            Diag("note", "template text", None),
        ),
        case("hostile/jinja/values.yaml.j2", "x: {{ y }}\n", NotRead),
        // Empty files and documents.
        case("infra/empty.yaml", "", Clean),
        case("infra/comments-only.yaml", "# nothing\n# here\n", Clean),
        case("infra/empty-documents.yaml", "---\n---\n...\n---\n", Clean),
        // Flux objects: a dependsOn cycle, missing required fields, no name.
        case(
            "clusters/prod/hostile-flux.yaml",
            HOSTILE_FLUX,
            Diags(&[
                (
                    "error",
                    "dependsOn cycle: flux-system/cyc-a, flux-system/cyc-b, flux-system/cyc-c",
                    Some(19),
                ),
                (
                    "warning",
                    "Kustomization/flux-system/no-source is missing required fields spec.sourceRef.kind, spec.sourceRef.name",
                    Some(1),
                ),
                (
                    "warning",
                    "GitRepository/flux-system/no-url is missing required field spec.url",
                    Some(11),
                ),
            ]),
        ),
        case("hostile/plain/cm.yaml", cm("plain"), Clean),
        case(
            "hostile/flux/no-name.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  namespace: flux-system\nspec:\n  path: ./x\n",
            Diag("warning", "Kustomization has no metadata.name", Some(1)),
        ),
    ];
    cases.sort_by(|a, b| a.path.cmp(&b.path));
    cases
}

/// Symbolic links: loops and links leaving the root (a note each, never followed).
fn symlinks(repo: &TempRepo, outside: &Path) -> Vec<&'static str> {
    repo.symlink("..", "hostile/links/parent")
        .symlink(".", "hostile/links/self")
        .symlink("/etc/passwd", "hostile/links/passwd.yaml")
        .symlink("/etc", "hostile/links/etc")
        .symlink(outside, "infra/outside.yaml");
    vec![
        "hostile/links/parent",
        "hostile/links/self",
        "hostile/links/passwd.yaml",
        "hostile/links/etc",
        "infra/outside.yaml",
    ]
}

/// The common layout with an FM001 finding (a FluxInstance in the `wait: true` layer `apps`),
/// the corpus and the links; returns the repository and every hostile path.
fn hostile_repo(outside: &Path) -> (TempRepo, Vec<Case>, Vec<&'static str>) {
    let repo = TempRepo::with_flux_instance();
    let cases = corpus();
    for c in &cases {
        repo.write(&c.path, &c.bytes);
    }
    let links = symlinks(&repo, outside);
    (repo, cases, links)
}

#[test]
fn every_hostile_case_has_its_diagnostic_and_the_rest_is_analysed() {
    let outside = outside_dir();
    let (repo, cases, links) = hostile_repo(&outside.path().join("cm.yaml"));
    let r = repo.run_within("check", &["--format", "json"], Duration::from_secs(60));
    let report = r.json();
    let diags = diagnostics(&report);
    for c in &cases {
        let mine: Vec<&Json> = diags
            .iter()
            .filter(|d| d["file"] == c.path.as_str())
            .collect();
        let expected: Vec<(&str, &str, Option<u64>)> = match &c.expect {
            Expect::Diag(s, m, l) => vec![(*s, *m, *l)],
            Expect::Diags(list) => list.to_vec(),
            Expect::Clean | Expect::NotRead => {
                assert!(
                    mine.is_empty(),
                    "{}: unexpected diagnostics {mine:#?}",
                    c.path
                );
                continue;
            }
        };
        for (severity, needle, line) in &expected {
            // No layer reads `hostile/`: its problems never reach Flux and are notes.
            let unread = c.path.starts_with("hostile/");
            let shown = if unread { "note" } else { severity };
            let d = assert_diagnostic(&report, &c.path, needle, shown);
            if unread && *severity != "note" {
                let message = d["message"].as_str().unwrap_or_default();
                assert!(message.contains("no live layer reads this file"), "{d:#}");
            }
            if let Some(line) = line {
                assert_eq!(d["line"].as_u64(), Some(*line), "{}: {d:#}", c.path);
            }
        }
        assert_eq!(
            mine.len(),
            expected.len(),
            "{}: exactly the expected diagnostics: {mine:#?}",
            c.path
        );
    }
    for link in &links {
        assert_diagnostic(&report, link, "symbolic link not followed", "note");
    }
    // No diagnostic about anything else (the layout itself is clean).
    let known: Vec<&str> = cases
        .iter()
        .map(|c| c.path.as_str())
        .chain(links.iter().copied())
        .collect();
    let stray: Vec<&Json> = diags
        .iter()
        .filter(|d| !known.contains(&d["file"].as_str().unwrap()))
        .collect();
    assert!(
        stray.is_empty(),
        "diagnostics outside the corpus: {stray:#?}"
    );
    // The finding is there, and the layout is analysed as if the corpus were not.
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0]["rule"], "FM001");
    assert_eq!(findings[0]["layer"]["name"], "apps");

    let graph = repo.graph_json();
    let apps = inventory(layer(&graph, "flux-system", "apps"));
    assert_eq!(
        apps.len(),
        4,
        "Namespace, ConfigMap, Deployment, FluxInstance: {apps:?}"
    );
    let infra = inventory(layer(&graph, "flux-system", "infra"));
    let mut names: Vec<&str> = infra.iter().map(|(_, _, n)| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "anchors", "bom-crlf", "db", "infra", "mixed", "tabs", "zwnbsp"
        ],
        "the odd-but-valid files of the generated layer are its objects: {infra:?}"
    );
    for name in ["no-source", "cyc-a", "cyc-b", "cyc-c", "remote"] {
        assert_eq!(layer(&graph, "flux-system", name)["live"], true, "{name}");
    }
    // Nothing was read through a link, and nothing outside the root.
    assert!(!graph.to_string().contains("\"outside\""));
    // The skipped files are not counted; the `.j2` file is not read at all.
    assert!(!report.to_string().contains("values.yaml.j2"));

    // Values: redefined anchors resolve to the definition in force at the alias.
    let loaded = fluxmend::load::Repo::load(repo.path()).unwrap();
    let f = loaded.file(loaded.file_id("infra/redefined-anchors.yaml").unwrap());
    let v = f.yaml.value(f.yaml.docs()[0].root).unwrap();
    assert_eq!(v.str_at(&["data", "b"]), Some("one"));
    assert_eq!(v.str_at(&["data", "d"]), Some("two"));
}

#[test]
fn fix_write_over_the_corpus_fixes_the_finding_and_changes_no_hostile_byte() {
    let outside = outside_dir();
    let outside_before = std::fs::read(outside.path().join("cm.yaml")).unwrap();
    let (repo, _, _) = hostile_repo(&outside.path().join("cm.yaml"));
    let before = tree(repo.path());

    // The layer prunes: phase 1 protects the instance where it is, phase 2 moves it.
    let first = repo.run_within("fix", &["--write"], Duration::from_secs(120));
    assert_eq!(first.code, 1, "{}", first.stderr);
    assert!(first.stderr.contains("phase 1 of 2"), "{}", first.stderr);
    assert_eq!(
        differing_paths(&before, &tree(repo.path())),
        ["apps/flux.yaml"],
        "{}",
        first.stderr
    );
    let r = repo.run_within("fix", &["--write"], Duration::from_secs(120));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("phase 2 of 2"), "{}", r.stderr);
    assert!(
        r.stderr.contains(" written; verified: builtin + kustomize"),
        "{}",
        r.stderr
    );

    // Only the fix's files changed; every other byte (the whole corpus) is as it was.
    let changed = differing_paths(&before, &tree(repo.path()));
    assert_eq!(
        changed,
        [
            "apps/flux-instance/flux.yaml",
            "apps/flux-instance/kustomization.yaml",
            "apps/flux.yaml",
            "apps/kustomization.yaml",
            "clusters/prod/flux-instance.yaml",
        ],
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read(outside.path().join("cm.yaml")).unwrap(),
        outside_before
    );

    // The finding is gone; the corpus is still reported as before.
    let after_check = repo.run_within("check", &["--format", "json"], Duration::from_secs(60));
    let report = after_check.json();
    assert!(
        report["findings"].as_array().unwrap().is_empty(),
        "{:#}",
        report["findings"]
    );
    find_diagnostic(&report, "hostile/keys/duplicate.yaml", "already defined");
    // A second run has nothing left to change, but the corpus's error diagnostics still stand:
    // exit 1 unless `--fail-on never` accepts them.
    let again = repo.run_within("fix", &[], Duration::from_secs(120));
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (1, ""),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("nothing to change")
            && again.stderr.contains("still standing at --fail-on error: ")
            && again.stderr.contains("`--fail-on never` accepts them"),
        "{}",
        again.stderr
    );
    let accepted = repo.run_within("fix", &["--fail-on", "never"], Duration::from_secs(120));
    assert_eq!(
        (accepted.code, accepted.stdout.as_str()),
        (0, ""),
        "{}",
        accepted.stderr
    );
}

/// The parser and the value conversion stay off the end of the stack at any depth: nesting is
/// refused past [`MAX_NESTING`], and everything up to it converts, compares and drops.
#[test]
fn deep_nesting_never_overflows_the_stack() {
    for text in [
        (0..100_000)
            .map(|i| format!("{}k:\n", " ".repeat(i % 5000)))
            .collect::<String>(),
        format!("{}x\n", "- ".repeat(1_000_000)),
        format!("{}{}\n", "[".repeat(1_000_000), "]".repeat(1_000_000)),
        format!("{}1{}\n", "{a: ".repeat(100_000), "}".repeat(100_000)),
    ] {
        let (file, err) = YamlFile::parse(&text);
        assert!(err.is_some(), "refused");
        assert!(file.docs().is_empty());
    }
    // Right at the limit: parses, converts, compares and drops on a small thread stack.
    let depth = MAX_NESTING;
    let text = format!("{}x\n", "- ".repeat(depth));
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let (file, err) = YamlFile::parse(&text);
            assert_eq!(err, None);
            let v = file.value(file.docs()[0].root).unwrap();
            let w = v.clone();
            assert_eq!(v, w);
            let mut inner = &v;
            let mut levels = 0;
            while let Value::Seq(items) = inner {
                inner = &items[0];
                levels += 1;
            }
            assert_eq!(levels, depth);
        })
        .unwrap()
        .join()
        .expect("no stack overflow at the nesting limit");
    let (_, err) = YamlFile::parse(&format!("{}x\n", "- ".repeat(depth + 1)));
    assert!(err.is_some_and(|e| e.message.contains("nested deeper")));
}
