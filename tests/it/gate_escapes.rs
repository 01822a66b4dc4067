//! The kustomize gate cannot be escaped (issue 24 item 2). Each case is a hostile kustomization
//! that would make `kubectl kustomize` read a file outside the repository or fetch a URL, in a
//! form fluxmend's model does not read the way kustomize does: inline generator and transformer
//! strings, upper-case and capitalised keys (kustomize decodes with Go's case-insensitive JSON),
//! tagged scalars (`!!binary`), duplicate keys, a lone carriage return, a UTF-16 file, keys that
//! Go folds to ASCII, a Flux `spec.patches` entry with a `path`; and their variants: the other
//! line breaks of YAML 1.1 (NEL, U+2028, U+2029), escaped and explicit keys, merge keys and
//! aliases, every tag form, a BOM, UTF-16 big-endian, JSON, and an outside path or URL in every
//! list field. The builds run through a `kustomize` wrapper that records everything kubectl
//! printed: the outside file's marker must never be in it, nothing may connect to the listener,
//! and the layer is either not verified with the reason or built without the outside content.

// A /bin/sh kubectl wrapper, permissions, symbolic links: unix only.
#![cfg(unix)]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::common::{self, TempRepo};

/// What an outside file holds: if kubectl ever prints it, the gate was escaped.
const MARKER: &str = "leaked-outside-content";

/// A directory outside the repository holding files with the marker: a ConfigMap (`cm.yaml`),
/// plain text (`secret.txt`), a patch adding the marker as a label (`patch.yaml`).
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cm.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {MARKER}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("secret.txt"), MARKER).unwrap();
        std::fs::write(
            dir.path().join("patch.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\n  labels:\n    leak: {MARKER}\n"
            ),
        )
        .unwrap();
        Outside { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// A `kustomize` on PATH that runs the real `kubectl kustomize` and appends what it printed
/// (stdout and stderr) to a log.
struct Recorder {
    bin: tempfile::TempDir,
    log: PathBuf,
}

impl Recorder {
    fn new() -> Recorder {
        let bin = tempfile::tempdir().unwrap();
        let log = bin.path().join("printed");
        let kubectl = which("kubectl");
        let script = format!(
            "#!/bin/sh\nout=$({kubectl} kustomize \"$2\" --load-restrictor LoadRestrictionsNone 2>&1)\nrc=$?\nprintf '%s\\n' \"$out\" >> {log}\nprintf '%s\\n' \"$out\"\nexit $rc\n",
            kubectl = kubectl.display(),
            log = log.display()
        );
        let path = bin.path().join("kustomize");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Recorder { bin, log }
    }

    fn printed(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn path_var(&self) -> String {
        format!(
            "{}:{}",
            self.bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is required by this test"))
}

fn fix(repo: &TempRepo, recorder: &Recorder) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(["fix", "--verify", "kustomize"])
        .arg(repo.path())
        .env("PATH", recorder.path_var())
        .stdin(Stdio::null())
        .output()
        .expect("run fluxmend")
}

/// A second layer, `extra`, building `./apps` with the component `hostile/` whose
/// kustomization holds the hostile `body`. Every layer whose path holds the changed file is
/// built, so `extra` is; FM005's finding in `apps/child.yaml` keeps its fix however badly
/// `hostile/` parses (a kustomization of `apps` itself that the model cannot read would leave the
/// finding without a fix, and the gate would not run).
fn with_sub(body: impl AsRef<[u8]>) -> TempRepo {
    with_component(
        [
            b"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n".as_slice(),
            body.as_ref(),
        ]
        .concat(),
        "",
    )
}

/// [`with_sub`] with the component's whole kustomization given, and `spec` text added to the
/// `extra` layer.
fn with_component(kustomization: impl AsRef<[u8]>, spec: &str) -> TempRepo {
    let repo = TempRepo::with_flux_instance();
    repo.write(
        "clusters/prod/extra.yaml",
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: extra\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  prune: false\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  components:\n    - ../hostile\n{spec}"
        ),
    )
    // FM005's fix (the redundant list of `child`, a layer `apps` applies) changes a file below
    // `./apps`, so `extra` is built; FM001's move of the instance is refused, since it would
    // change what `extra` renders.
    .write(
        "apps/child.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: child\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./child\n  prune: false\n  wait: true\n  healthChecks:\n    - {apiVersion: v1, kind: ConfigMap, name: child, namespace: demo}\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .append("apps/kustomization.yaml", "  - child.yaml\n")
    .write(
        "child/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n  namespace: demo\n",
    )
    .write("hostile/kustomization.yaml", kustomization)
    .write(
        "hostile/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n  namespace: demo\n",
    );
    repo
}

/// `apps/kustomization.yaml` with `extra` appended.
fn with_apps_extra(extra: &str) -> TempRepo {
    let repo = TempRepo::with_flux_instance();
    repo.append("apps/kustomization.yaml", extra);
    repo
}

fn utf16(text: &str) -> Vec<u8> {
    let mut out = vec![0xff, 0xfe];
    for unit in text.encode_utf16() {
        out.extend(unit.to_le_bytes());
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
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

/// One hostile repository and what the gate must say: `Some(reason)` — a layer not verified,
/// with a reason containing it; `None` — every layer built (the hostile part is not read).
struct Case {
    name: &'static str,
    repo: TempRepo,
    not_verified: Option<&'static str>,
}

#[allow(
    clippy::too_many_lines,
    reason = "a table of escape cases reads best as one list"
)]
fn cases(o: &Outside, url: &str) -> Vec<Case> {
    let cm = o.path("cm.yaml");
    let txt = o.path("secret.txt");
    let patch = o.path("patch.yaml");
    let climb = format!("../../../../../../../../..{}", o.path("cm.yaml"));
    let generator = |files: &str| {
        format!(
            "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: leak\n  namespace: demo\nfiles:\n  - {files}\n"
        )
    };
    vec![
        Case {
            name: "inline generator (block string)",
            repo: with_apps_extra(&format!(
                "generators:\n  - |\n{}",
                generator(&txt)
                    .lines()
                    .map(|l| format!("    {l}\n"))
                    .collect::<String>()
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "inline generator (one-line flow mapping)",
            repo: with_apps_extra(&format!(
                "generators:\n  - '{{apiVersion: builtin, kind: ConfigMapGenerator, metadata: {{name: leak, namespace: demo}}, files: [{txt}]}}'\n"
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "inline transformer with a patch path",
            repo: with_apps_extra(&format!(
                "transformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata:\n      name: leak\n    path: {patch}\n"
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "inline transformer with a URL",
            repo: with_apps_extra(&format!(
                "transformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata:\n      name: leak\n    path: {url}\n"
            )),
            not_verified: Some("URL"),
        },
        Case {
            name: "capitalised top-level key",
            repo: with_apps_extra(&format!(
                "ConfigMapGenerator:\n  - name: leak\n    namespace: demo\n    files:\n      - {txt}\n"
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "upper-case key in a sub-kustomization",
            repo: with_sub(format!("RESOURCES:\n  - cm.yaml\n  - {cm}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "capitalised nested key",
            repo: with_apps_extra(&format!(
                "configMapGenerator:\n  - name: leak\n    namespace: demo\n    Files:\n      - {txt}\n"
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "capitalised patch path",
            repo: with_apps_extra(&format!("patches:\n  - Path: {patch}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "key that Go folds to ASCII (long s)",
            repo: with_sub(format!("re\u{17f}ources:\n  - cm.yaml\n  - {cm}\n")),
            not_verified: Some("not ASCII"),
        },
        Case {
            name: "!!binary resource path",
            repo: with_sub(format!(
                "resources:\n  - cm.yaml\n  - !!binary {}\n",
                base64(cm.as_bytes())
            )),
            not_verified: Some("tag"),
        },
        Case {
            name: "!!binary generator file",
            repo: with_apps_extra(&format!(
                "configMapGenerator:\n  - name: leak\n    namespace: demo\n    files:\n      - !!binary {}\n",
                base64(txt.as_bytes())
            )),
            not_verified: Some("tag"),
        },
        Case {
            name: "custom tag on a path",
            repo: with_sub(format!("resources:\n  - cm.yaml\n  - !path {climb}\n")),
            not_verified: Some("tag"),
        },
        Case {
            name: "duplicate keys",
            repo: with_sub(format!("resources:\n  - cm.yaml\nresources:\n  - {cm}\n")),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "case-insensitive duplicate keys",
            repo: with_sub(format!("resources:\n  - cm.yaml\nResources:\n  - {cm}\n")),
            not_verified: Some("repeats"),
        },
        Case {
            name: "lone carriage return",
            repo: with_sub(format!("resources:\n  - cm.yaml\r  - {cm}\n")),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "UTF-16 kustomization",
            repo: with_sub(utf16(&format!("resources:\n  - cm.yaml\n  - {cm}\n"))),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "path climbing out",
            repo: with_sub(format!("resources:\n  - cm.yaml\n  - {climb}\n")),
            not_verified: Some("leaves the repository"),
        },
        Case {
            name: "openapi schema outside",
            repo: with_apps_extra(&format!("openapi:\n  path: {txt}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "inline strategic-merge patch that is a path",
            repo: with_apps_extra(&format!("patchesStrategicMerge:\n  - {patch}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "remote git base that exists as a local directory",
            repo: {
                let repo = with_sub("resources:\n  - cm.yaml\n  - github.com/example/base\n");
                repo.write(
                    "hostile/github.com/example/base/kustomization.yaml",
                    "resources: []\n",
                );
                repo
            },
            not_verified: Some("git repository"),
        },
        Case {
            name: "transformer file naming a target file outside",
            repo: {
                let repo = with_apps_extra("transformers:\n  - value-add.yaml\n");
                repo.write(
                    "apps/value-add.yaml",
                    format!(
                        "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata:\n  name: leak\ntargetFilePath: {txt}\n"
                    ),
                );
                repo
            },
            not_verified: Some("absolute path"),
        },
        Case {
            name: "transformer file with a capitalised kind",
            repo: {
                let repo = with_apps_extra("transformers:\n  - t.yaml\n");
                repo.write(
                    "apps/t.yaml",
                    format!("apiVersion: builtin\nKind: PatchTransformer\nmetadata:\n  name: leak\npath: {patch}\n"),
                );
                repo
            },
            not_verified: Some("lower camel case"),
        },
        Case {
            name: "directory of plugin configurations that patches them",
            repo: {
                let repo = with_apps_extra("transformers:\n  - plugins\n");
                repo.write(
                    "apps/plugins/kustomization.yaml",
                    "resources:\n  - t.yaml\npatches:\n  - patch: '[{op: add, path: /path, value: /etc/hostname}]'\n    target: {kind: PatchTransformer}\n",
                )
                .write(
                    "apps/plugins/t.yaml",
                    "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: t\npatch: '{}'\n",
                );
                repo
            },
            not_verified: Some("could rewrite them"),
        },
        Case {
            name: "generator entry that is a URL",
            repo: with_apps_extra(&format!("generators:\n  - {url}\n")),
            not_verified: Some("URL"),
        },
        Case {
            name: "component that is a forced git URL",
            repo: with_sub("components:\n  - git::ssh://git@example.com/org/repo\n"),
            not_verified: Some("URL"),
        },
        Case {
            name: "resource directory through a symbolic link",
            repo: {
                let repo = with_sub("resources:\n  - cm.yaml\n  - linked\n");
                repo.symlink(o.dir.path(), "hostile/linked");
                repo
            },
            not_verified: Some("is not in the repository"),
        },
        Case {
            name: "two kustomization files in one directory",
            repo: {
                let repo = with_sub("resources:\n  - cm.yaml\n");
                repo.write("hostile/Kustomization", format!("resources:\n  - {cm}\n"));
                repo
            },
            not_verified: Some("several kustomization files"),
        },
        Case {
            name: "kustomization of two documents",
            repo: with_sub(format!(
                "resources:\n  - cm.yaml\n---\nresources:\n  - {cm}\n"
            )),
            not_verified: Some("holds 2 YAML documents"),
        },
        Case {
            name: "unknown field",
            repo: with_sub(format!("resources:\n  - cm.yaml\nresourcez:\n  - {cm}\n")),
            not_verified: Some("unknown field"),
        },
        Case {
            name: "generator file source with two `=`",
            repo: with_apps_extra(&format!(
                "configMapGenerator:\n  - name: leak\n    namespace: demo\n    files:\n      - a=b={txt}\n"
            )),
            not_verified: Some("kustomize refuses"),
        },
        // Variants of the classes above (issue 24 audit): more line breaks kustomize's YAML 1.1
        // reader knows, more key spellings, more tags, more encodings, every list field.
        Case {
            name: "NEL line break (YAML 1.1)",
            repo: with_sub(format!("resources:\n  - cm.yaml\u{85}  - {cm}\n")),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "line separator U+2028 (YAML 1.1)",
            repo: with_sub(format!("resources:\n  - cm.yaml\u{2028}  - {cm}\n")),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "paragraph separator U+2029 (YAML 1.1)",
            repo: with_sub(format!("resources:\n  - cm.yaml\u{2029}  - {cm}\n")),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "key spelled with a double-quoted escape",
            repo: with_sub(format!("\"re\\x73ources\": [cm.yaml, {cm}]\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "explicit key",
            repo: with_sub(format!("? resources\n: [cm.yaml, {cm}]\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "merge key",
            repo: with_sub(format!("<<: {{resources: [cm.yaml, {cm}]}}\n")),
            not_verified: Some("merge key"),
        },
        Case {
            name: "alias of a list holding an outside path",
            repo: with_sub(format!(
                "components: &a []\nresources: [cm.yaml, &b {cm}]\nnameSuffix: *b\n"
            )),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "deprecated bases field",
            repo: with_sub(format!(
                "resources: [cm.yaml]\nbases: [{}]\n",
                o.dir.path().display()
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "file URL",
            repo: with_sub(format!("resources: [cm.yaml, 'file://{cm}']\n")),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "!!str tag",
            repo: with_sub(format!("resources: [cm.yaml, !!str {cm}]\n")),
            not_verified: Some("tag"),
        },
        Case {
            name: "non-specific tag",
            repo: with_sub(format!("resources: [cm.yaml, ! {cm}]\n")),
            not_verified: Some("tag"),
        },
        Case {
            name: "%TAG directive",
            repo: with_sub(format!(
                "%TAG !e! tag:example.com,2000:\n---\nresources: [cm.yaml, !e!p {cm}]\n"
            )),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "UTF-8 byte order mark",
            repo: with_component(
                format!(
                    "\u{feff}apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml, {cm}]\n"
                ),
                "",
            ),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "UTF-16 big-endian kustomization",
            repo: with_sub({
                let mut out = vec![0xfe, 0xff];
                for unit in format!("resources: [cm.yaml, {cm}]\n").encode_utf16() {
                    out.extend(unit.to_be_bytes());
                }
                out
            }),
            not_verified: Some("hostile/kustomization.yaml"),
        },
        Case {
            name: "JSON kustomization",
            repo: with_component(
                format!(
                    "{{\"apiVersion\": \"kustomize.config.k8s.io/v1alpha1\", \"kind\": \"Component\", \"resources\": [\"cm.yaml\", \"{cm}\"]}}\n"
                ),
                "",
            ),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "crds outside",
            repo: with_apps_extra(&format!("crds:\n  - {cm}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "configurations outside",
            repo: with_apps_extra(&format!("configurations:\n  - {cm}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "replacements path outside",
            repo: with_apps_extra(&format!("replacements:\n  - path: {cm}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "validators outside",
            repo: with_apps_extra(&format!("validators:\n  - {cm}\n")),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "patchesJson6902 path outside",
            repo: with_apps_extra(&format!(
                "patchesJson6902:\n  - target: {{version: v1, kind: ConfigMap, name: settings}}\n    path: {patch}\n"
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "secretGenerator env (singular) outside",
            repo: with_apps_extra(&format!(
                "secretGenerator:\n  - name: leak\n    namespace: demo\n    env: {txt}\n"
            )),
            not_verified: Some("absolute path"),
        },
        Case {
            name: "Helm chart from a URL",
            repo: with_apps_extra(&format!(
                "helmCharts:\n  - name: leak\n    repo: {url}\n    version: 1.0.0\n"
            )),
            not_verified: Some("Helm chart"),
        },
        Case {
            name: "Flux spec.patches entry with a path (Flux reads only patch and target)",
            repo: {
                with_component(
                    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - cm.yaml\n",
                    &format!(
                        "  patches:\n    - path: {patch}\n      patch: |\n        apiVersion: v1\n        kind: ConfigMap\n        metadata:\n          name: sub\n          namespace: demo\n          labels:\n            patched: \"yes\"\n"
                    ),
                )
            },
            not_verified: None,
        },
    ]
}

#[test]
fn no_hostile_kustomization_escapes_the_gate() {
    let outside = Outside::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/patch.yaml", listener.local_addr().unwrap());
    let mut failures = Vec::new();
    let all = cases(&outside, &url);
    let total = all.len();
    for case in all {
        let recorder = Recorder::new();
        let out = fix(&case.repo, &recorder);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let printed = recorder.printed();
        if printed.contains(MARKER) {
            let line = printed
                .lines()
                .find(|l| l.contains(MARKER))
                .unwrap_or_default();
            failures.push(format!(
                "{}: kubectl read the outside file (printed `{}`)",
                case.name,
                line.trim()
            ));
            continue;
        }
        let verdict = common::unwrapped(&err)
            .lines()
            .find(|l| l.contains("not verified: layer flux-system/"))
            .map(str::to_string);
        match (case.not_verified, verdict) {
            (Some(why), Some(line)) if line.contains(why) => {}
            (None, None) if err.contains(" to change; verified: builtin + kustomize") => {}
            (want, got) => failures.push(format!(
                "{}: expected {want:?}, got {got:?}\n{err}",
                case.name
            )),
        }
    }
    if listener.accept().is_ok() {
        failures.push("a URL was fetched".into());
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The negative control: what a real repository does with the same features is built, not
/// refused — a directory of plugin configurations that places them (d4rkfella/home-ops'
/// layout), an inline transformer, a transformer file reading a local patch, a generator with
/// a binary file and an env file, capitalised keys Go reads as the field, a Flux patch. The
/// transformers select ConfigMaps: FM001's move takes the FluxInstance out of their reach, which
/// the gate rightly refuses.
#[test]
fn legitimate_plugins_and_generators_are_built() {
    let repo = with_apps_extra(
        "transformers:\n  - ./plugins\n  - |\n    apiVersion: builtin\n    kind: LabelTransformer\n    metadata:\n      name: team\n    labels:\n      team: web\n    fieldSpecs:\n      - path: metadata/labels\n        kind: ConfigMap\n        create: true\n  - patcher.yaml\nconfigMapGenerator:\n  - name: assets\n    namespace: demo\n    Files:\n      - logo.bin\n    envs:\n      - app.env\n",
    );
    repo.write(
        "apps/plugins/kustomization.yaml",
        "namespace: demo\nresources:\n  - ../../shared-plugins\n",
    )
    .write(
        "shared-plugins/kustomization.yaml",
        "resources:\n  - annotate.yaml\n",
    )
    .write(
        "shared-plugins/annotate.yaml",
        "apiVersion: builtin\nkind: AnnotationsTransformer\nmetadata:\n  name: owner\nannotations:\n  owner: platform\nfieldSpecs:\n  - path: metadata/annotations\n    kind: ConfigMap\n    create: true\n",
    )
    .write(
        "apps/patcher.yaml",
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: replicas\npath: replicas.yaml\ntarget:\n  kind: Deployment\n",
    )
    .write(
        "apps/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n",
    )
    .write("apps/logo.bin", [0u8, 159, 146, 150, 255])
    .write("apps/app.env", "A=1\n");
    let recorder = Recorder::new();
    let out = fix(&repo, &recorder);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("verified: builtin + kustomize (1 of 1 layer built)"),
        "{err}"
    );
    let printed = recorder.printed();
    for expected in ["binaryData:", "owner: platform", "team: web", "replicas: 2"] {
        assert!(printed.contains(expected), "{expected}:\n{printed}");
    }
}
