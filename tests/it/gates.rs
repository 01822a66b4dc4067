//! The gates are known to be able to fail: deliberately wrong fixes, handed in as hand-built
//! [`Fix`]es on a real FM001 finding, are each refused by the gate meant to catch them — the YAML
//! gate, the builtin render gate, convergence and the kustomize gate — and the rule's own fix
//! passes all four. Also: `--verify` modes on the command line.
//!
//! The kustomize gate needs `kustomize` or `kubectl` (1.32, kustomize v5.5) on PATH; like the
//! differential tests, these tests fail without it rather than skip.

use crate::common::{self, TempRepo, command_args};
use fluxmend::edit::{Changeset, FileOp, TextEdit};
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};
use fluxmend::rules::{Finding, Fix, Remedy};
use fluxmend::verify::gates::{self, Gate, GateFailure, VerifyMode};
use fluxmend::verify::kustomize::Tool;

const APPS_KUSTOMIZATION: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - app.yaml
  - shop
  - flux.yaml
";

/// A sub-kustomization with two transformers: `namespace:` (which fluxmend models) and
/// `patches:` (which it does not — only a real kustomize sees what dropping it does).
const SHOP_KUSTOMIZATION: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
  - cm.yaml
patches:
  - target:
      kind: ConfigMap
      name: shop-settings
    patch: |
      - op: add
        path: /data/patched
        value: \"yes\"
";

const SHOP_CM: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-settings
data:
  color: blue
";

/// The common layout plus a FluxInstance in the `wait: true` layer `apps` (an FM001 finding)
/// and the `shop` sub-kustomization.
fn layout() -> TempRepo {
    // Protected already, so that the rule's fix is the move itself (one step on this pruning
    // layer); the unprotected case is the transition gate's test below.
    let repo = TempRepo::with_protected_flux_instance();
    repo.write("apps/kustomization.yaml", APPS_KUSTOMIZATION)
        .write("apps/shop/kustomization.yaml", SHOP_KUSTOMIZATION)
        .write("apps/shop/cm.yaml", SHOP_CM);
    repo
}

fn tool() -> Tool {
    Tool::find().expect("the kustomize gate tests need `kustomize` or `kubectl` on PATH")
}

/// Run `test` on the layout's repository, its model and FM001's finding of `apps` (with the
/// rule's own fix): where every gate test starts.
fn on_the_rules_fix(test: impl FnOnce(&Setup, &Model, &Finding)) {
    let dir = layout();
    let s = Setup::new(&dir);
    let model = s.model();
    let finding = Setup::finding(&model);
    test(&s, &model, &finding);
}

/// A change replacing the bytes `range` of `path` with `text`.
fn replacing(path: &str, range: std::ops::Range<usize>, text: impl Into<String>) -> Changeset {
    let mut change = Changeset::default();
    change.edit(
        path,
        TextEdit {
            start: range.start,
            end: range.end,
            text: text.into(),
        },
    );
    change
}

struct Setup {
    repo: Repo,
    options: ModelOptions,
}

impl Setup {
    fn new(dir: &TempRepo) -> Self {
        Setup {
            repo: Repo::load(dir.path()).expect("load"),
            options: ModelOptions::default(),
        }
    }

    fn model(&self) -> Model<'_> {
        Model::build(&self.repo, &self.options)
    }

    /// The FM001 finding of `apps`, with the rule's own fix.
    fn finding(model: &Model) -> Finding {
        let findings = fluxmend::rules::run(model, &["FM001".to_string()]);
        let f = findings
            .into_iter()
            .find(|f| f.layer.name == "apps")
            .expect("an FM001 finding in apps");
        assert!(f.fix().is_some(), "the rule offers a fix: {f:?}");
        f
    }

    fn text(&self, path: &str) -> &str {
        self.repo
            .file(self.repo.file_id(path).expect(path))
            .yaml
            .text()
    }

    /// [`gates::verify_fix`] of `f` (the kustomize gate too when given `tool`).
    fn verify(&self, model: &Model, f: &Finding, tool: Option<&Tool>) -> Result<(), GateFailure> {
        gates::verify_fix(&self.repo, model, &self.options, f, tool)
    }

    /// The kustomize gate refuses `f` too, for a reason that mentions every one of `needles`.
    fn expect_kustomize_refusal(&self, model: &Model, f: &Finding, needles: &[&str]) {
        let k = gates::kustomize_gate(&self.repo, model, &self.options, f, &tool())
            .expect_err("kustomize sees it too");
        eprintln!("kustomize gate: {}", k.reason);
        for n in needles {
            assert!(k.reason.contains(n), "{}", k.reason);
        }
    }

    /// A change appending `text` to the end of `path`.
    fn appending(&self, path: &str, text: &str) -> Changeset {
        let end = self.text(path).len();
        replacing(path, end..end, text)
    }

    fn remove_line(&self, path: &str, needle: &str) -> TextEdit {
        let text = self.text(path);
        let at = text
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in {path}"));
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        TextEdit {
            start,
            end: fluxmend::edit::after_line(text, at),
            text: String::new(),
        }
    }
}

/// The finding with `changes` as its fix (optionally on top of the rule's own fix).
fn planted(finding: &Finding, with_rule_fix: bool, extra: &Changeset) -> Finding {
    let mut changes = if with_rule_fix {
        finding.fix().unwrap().changes.clone()
    } else {
        Changeset::default()
    };
    changes
        .merge(extra)
        .expect("planted edits do not overlap the rule's");
    let mut f = finding.clone();
    f.remedy = Remedy::Fix(Fix::new("a deliberately wrong fix".into(), "none", changes));
    f
}

fn expect_gate(result: Result<(), GateFailure>, gate: Gate, needles: &[&str]) {
    let failure = result.expect_err("the planted fix must be refused");
    eprintln!("{gate}: {}", failure.reason);
    assert_eq!(failure.gate, gate, "refused by the wrong gate: {failure:?}");
    for n in needles {
        assert!(
            failure.reason.contains(n),
            "{gate} reason does not mention {n:?}: {}",
            failure.reason
        );
    }
}

#[test]
fn the_rules_own_fix_passes_every_gate() {
    on_the_rules_fix(|s, model, finding| {
        let tool = tool();
        s.verify(model, finding, Some(&tool)).unwrap();
        let outcome =
            gates::kustomize_gate(&s.repo, model, &s.options, finding, &tool).expect("kustomize");
        // Before and after: the root layer (generated), `apps` and the new `flux-instance`.
        assert!(outcome.builds >= 4, "too few builds: {outcome:?}");
        assert!(
            outcome.objects >= 8,
            "too few objects compared: {outcome:?}"
        );
        assert!(outcome.not_verified.is_empty(), "{outcome:?}");
    });
}

/// YAML gate: `wait: true` → `false` through a range one byte off: the file still parses, but
/// the value is `tfalse`.
#[test]
fn yaml_gate_catches_an_edit_through_a_bad_byte_range() {
    on_the_rules_fix(|s, model, finding| {
        let path = "clusters/prod/apps.yaml";
        let at = s.text(path).find("wait: true").unwrap() + "wait: ".len();
        let bad = replacing(path, at + 1..at + 4, "false");
        let f = planted(finding, false, &bad);
        expect_gate(
            s.verify(model, &f, None),
            Gate::Yaml,
            &[path, "document 1: spec.wait", "`true`"],
        );
    });
}

/// YAML gate: an append that lands inside a block scalar (indented like its content) parses,
/// but changes the scalar instead of adding a key.
#[test]
fn yaml_gate_catches_an_append_that_changes_a_block_scalar() {
    on_the_rules_fix(|s, model, finding| {
        let path = "apps/shop/kustomization.yaml";
        let bad = s.appending(path, "        labels: {}\n");
        let f = planted(finding, true, &bad);
        expect_gate(
            s.verify(model, &f, None),
            Gate::Yaml,
            &[path, "document 1: patches[0].patch changed"],
        );
    });
}

/// Render gate (builtin): dropping the `namespace:` transformer moves the ConfigMap out of
/// `shop`; the kustomize gate sees it too.
#[test]
fn render_gate_catches_a_dropped_namespace_transformer() {
    on_the_rules_fix(|s, model, finding| {
        let mut bad = Changeset::default();
        bad.edit(
            "apps/shop/kustomization.yaml",
            s.remove_line("apps/shop/kustomization.yaml", "namespace: shop"),
        );
        let f = planted(finding, true, &bad);
        // The YAML gate accepts it: removing a whole entry is what the edit says.
        expect_gate(s.verify(model, &f, None), Gate::Render, &["shop-settings"]);
        s.expect_kustomize_refusal(
            model,
            &f,
            &["ConfigMap shop/shop-settings", "metadata.namespace"],
        );
    });
}

/// Render gate (builtin): the same object applied by two layers.
#[test]
fn render_gate_catches_an_object_duplicated_into_two_layers() {
    on_the_rules_fix(|s, model, finding| {
        let mut bad = Changeset::default();
        bad.create(
            "infra/settings.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  greeting: hello\n"
                .into(),
        );
        let f = planted(finding, true, &bad);
        expect_gate(s.verify(model, &f, None), Gate::Render, &["settings"]);
        s.expect_kustomize_refusal(
            model,
            &f,
            &["ConfigMap demo/settings is rendered 1 more time"],
        );
    });
}

/// Render gate (builtin): an object of a layer the fix leaves alone, changed in place (the same
/// identity from the same document of the same file, other content), is still compared: the
/// layers the gate leaves out of its counts must also leave their files alone.
#[test]
fn render_gate_catches_an_object_changed_in_place_in_a_layer_the_fix_leaves_alone() {
    on_the_rules_fix(|s, model, finding| {
        let bad = s.appending("infra/namespace.yaml", "  labels:\n    team: platform\n");
        let f = planted(finding, true, &bad);
        expect_gate(s.verify(model, &f, None), Gate::Render, &["infra"]);
    });
}

/// Convergence: a change that is harmless but fixes nothing.
#[test]
fn convergence_catches_a_fix_that_fixes_nothing() {
    on_the_rules_fix(|s, model, finding| {
        let path = "clusters/prod/apps.yaml";
        let at = s.text(path).find("10m").unwrap();
        let bad = replacing(path, at..at + 3, "11m");
        let f = planted(finding, false, &bad);
        expect_gate(
            s.verify(model, &f, None),
            Gate::Convergence,
            &["FM001", "FluxInstance"],
        );
    });
}

/// Where a rule reports several findings at one place (FM004: two patches of one instance miss),
/// a fix converges only when the place keeps fewer findings: a planted fix that changes only a
/// comment leaves both and is refused; the rule's own fix of one of them (negative control)
/// leaves the other and passes.
#[test]
fn convergence_counts_the_findings_left_at_one_place() {
    let dir = TempRepo::copy_of(&common::fixture("fm004-instance-order", "before"));
    let s = Setup::new(&dir);
    let model = s.model();
    let findings = fluxmend::rules::run(&model, &["FM004".to_string()]);
    let errors = || {
        findings
            .iter()
            .filter(|f| f.severity == fluxmend::diagnostics::Severity::Error)
    };
    assert_eq!(errors().count(), 2, "{findings:?}");
    let fixable = errors()
        .find(|f| f.fix().is_some())
        .expect("the namespace miss has a fix");
    assert!(s.verify(&model, fixable, None).is_ok());
    let path = "flux/instance.yaml";
    let comment = "# The manifest has no namespace when the patch runs: never applied.";
    let at = s.text(path).find(comment).expect("the comment");
    let bad = replacing(path, at..at + comment.len(), "# never applied");
    expect_gate(
        s.verify(&model, &planted(fixable, false, &bad), None),
        Gate::Convergence,
        &["FM004"],
    );
}

/// Kustomize gate: dropping `patches:` changes the rendered ConfigMap's content — fluxmend's
/// model does not apply patches, so only a real kustomize can notice.
#[test]
fn kustomize_gate_catches_a_dropped_patch_the_model_cannot_see() {
    on_the_rules_fix(|s, model, finding| {
        let path = "apps/shop/kustomization.yaml";
        let text = s.text(path);
        let start = text.find("patches:").unwrap();
        let bad = replacing(path, start..text.len(), "");
        let f = planted(finding, true, &bad);
        // The YAML and builtin gates pass it...
        s.verify(model, &f, None)
            .expect("builtin cannot see patches");
        // ...the kustomize gate does not, and says which object changed and how.
        expect_gate(
            s.verify(model, &f, Some(&tool())),
            Gate::Kustomize,
            &[
                "ConfigMap shop/shop-settings",
                "data.patched",
                "\"yes\"",
                "(absent)",
            ],
        );
        // In `fix`, the fix is dropped and the finding kept, with the reason.
        let plan = gates::plan_with(
            &s.repo,
            model,
            fluxmend::verify::Base::WorkTree,
            &s.options,
            vec![f],
            VerifyMode::Auto,
            Some(&tool()),
        );
        assert!(plan.files.is_empty());
        let kept = &plan.findings[0];
        assert!(kept.fix().is_none());
        let reason = kept.remedy.reason().unwrap();
        assert!(
            reason.starts_with("fix dropped: kustomize gate") && reason.contains("data.patched"),
            "{reason}"
        );
    });
}

fn fix_cli(dir: &TempRepo, args: &[&str], path_env: Option<&str>) -> common::Run {
    let args = command_args("fix", dir.path(), args);
    match path_env {
        None => common::fluxmend(args),
        Some(p) => common::fluxmend_with_path(args, p),
    }
}

#[test]
fn verify_modes_on_the_command_line() {
    let dir = layout();
    let auto = fix_cli(&dir, &[], None);
    assert_eq!(auto.code, 1, "{}", auto.stderr);
    assert!(
        auto.stderr
            .contains("5 files to change; verified: builtin + kustomize"),
        "{}",
        auto.stderr
    );
    let json = fix_cli(&dir, &["--format", "json"], None).json();
    assert_eq!(
        json["verified_by"],
        serde_json::json!(["builtin", "kustomize"])
    );
    assert_eq!(json["not_verified"], serde_json::json!([]));

    let builtin = fix_cli(&dir, &["--verify", "builtin"], None);
    assert!(
        builtin.stderr.contains("to change; verified: builtin\n"),
        "{}",
        builtin.stderr
    );
    assert_eq!(builtin.stdout, auto.stdout, "same diff");

    let off = fix_cli(&dir, &["--verify", "off"], None);
    assert_eq!(off.code, 1);
    assert!(
        off.stderr.contains("NOT VERIFIED (--verify off)")
            && off.stderr.contains("not verified: --verify off"),
        "{}",
        off.stderr
    );
    let off_json = fix_cli(&dir, &["--verify", "off", "--format", "json"], None).json();
    assert_eq!(off_json["verified_by"], serde_json::json!([]));

    // Without kustomize or kubectl on PATH: auto falls back to builtin, kustomize refuses.
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().to_str().unwrap();
    let no_tool = fix_cli(&dir, &[], Some(path));
    assert!(
        no_tool.stderr.contains("verified: builtin\n"),
        "{}",
        no_tool.stderr
    );
    let refused = fix_cli(&dir, &["--verify", "kustomize"], Some(path));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("neither `kustomize` nor `kubectl` is on PATH"),
        "{}",
        refused.stderr
    );
}

/// A layer that reaches a remote resource is reported as not verified by kustomize (never
/// fetched), and the fix is still verified by everything else.
#[test]
fn remote_resource_layer_is_not_verified_not_failed() {
    let dir = layout();
    dir.append(
        "apps/kustomization.yaml",
        "  - https://github.com/example/remote//deploy?ref=v1\n",
    );
    let run = fix_cli(&dir, &[], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        common::unwrapped(&run.stderr).contains(
            "not verified: layer flux-system/apps: apps/kustomization.yaml:7:5: `resources` entry `https://github.com/example/remote//deploy?ref=v1` is a URL (never fetched)"
        ),
        "{}",
        run.stderr
    );
    // The summary claims kustomize only for the layers it built: all but `apps`.
    let (built, affected) = layers_built(&run.stderr);
    assert_eq!(built + 1, affected, "{}", run.stderr);
    let json = fix_cli(&dir, &["--format", "json"], None).json();
    assert_eq!(json["kustomize_layers"]["built"], built, "{json:#}");
    assert_eq!(json["kustomize_layers"]["affected"], affected, "{json:#}");
    // Per layer: `apps` not built, with the reason; every other affected layer built.
    let layers = json["kustomize_layers"]["layers"].as_array().unwrap();
    assert_eq!(layers.len(), affected, "{json:#}");
    for l in layers {
        if l["layer"] == "flux-system/apps" {
            assert_eq!(l["built"], false, "{l}");
            assert!(
                l["why"]
                    .as_str()
                    .unwrap()
                    .ends_with("is a URL (never fetched)"),
                "{l}"
            );
        } else {
            assert_eq!(
                (l["built"].as_bool(), l["why"].is_null()),
                (Some(true), true),
                "{l}"
            );
        }
    }
}

/// `(built, affected)` from the summary's `verified: builtin + kustomize (B of A layers built)`.
fn layers_built(stderr: &str) -> (usize, usize) {
    let rest = stderr
        .split_once("verified: builtin + kustomize (")
        .unwrap_or_else(|| panic!("no kustomize summary in: {stderr}"))
        .1;
    let (counts, _) = rest
        .split_once(" built)")
        .expect("a `built)` after the counts");
    let (built, affected) = counts.split_once(" of ").expect("`B of A layers`");
    let affected = affected
        .trim_end_matches(" layers")
        .trim_end_matches(" layer");
    (built.parse().unwrap(), affected.parse().unwrap())
}

/// Issue 5's "done when": `fix` on every fixture runs every gate, kustomize included, and says so;
/// nothing is left unverified and no fix is dropped.
#[test]
fn every_fixture_fix_is_verified_by_builtin_and_kustomize() {
    tool();
    let mut fixed = 0;
    for tree in common::fixture_trees(false) {
        let run = common::fluxmend(command_args("fix", &tree.root, &[]));
        run.assert_no_panic();
        // No diff: nothing to fix (exit 1 only when findings without a fix stand at --fail-on).
        if run.stdout.is_empty() {
            assert!(run.stderr.contains("nothing to change"), "{}", run.stderr);
            continue;
        }
        fixed += 1;
        let (built, affected) = layers_built(&run.stderr);
        assert!(
            built == affected && affected > 0,
            "{}: {}",
            tree.label(),
            run.stderr
        );
        assert!(
            !run.stderr.contains("not verified") && !run.stderr.contains("fix dropped"),
            "{}: {}",
            tree.label(),
            run.stderr
        );
    }
    assert!(fixed >= 6, "only {fixed} fixtures had a fix");
}

/// The one-step move of the FluxInstance on a layer that prunes (what `fix` printed before the
/// rollout model existed): every at-rest gate accepts it, and only the transition gate sees that
/// the old layer prunes the instance before the new layer applies it.
#[test]
fn transition_gate_catches_a_one_step_move_that_deletes_the_flux_instance() {
    let case = "flux-instance-oci-provider";
    let before = common::fixture(case, "before");
    let (phase1, after) = (
        common::tree(&common::fixture(case, "phase1")),
        common::tree(&common::fixture(case, "after")),
    );
    let repo = Repo::load(&before).unwrap();
    let options = ModelOptions::default();
    let model = Model::build(&repo, &options);
    let findings = fluxmend::rules::run(&model, &["FM001".to_string()]);
    let finding = findings
        .iter()
        .find(|f| f.fix().is_some())
        .expect("a fixed finding");
    // The move alone: what phase 2 changes, applied without phase 1's protection.
    let mut changes = Changeset::default();
    for (path, bytes) in &after {
        let text = String::from_utf8(bytes.clone()).unwrap();
        match phase1.get(path) {
            Some(old) if old == bytes => {}
            Some(_) => {
                let id = repo.file_id(path).unwrap();
                let len = repo.file(id).yaml.text().len();
                changes.edit(
                    path,
                    TextEdit {
                        start: 0,
                        end: len,
                        text,
                    },
                );
            }
            None => changes.create(path, text),
        }
    }
    // Keep the instances as they are in before/ (no annotation).
    changes
        .files
        .retain(|p, _| !p.ends_with("flux-instance/flux-instance.yaml"));
    let planted = planted(finding, false, &changes);
    let failure = gates::builtin_gate(&repo, &model, &options, &planted)
        .expect_err("the one-step move must be refused");
    assert_eq!(failure.gate, Gate::Transition, "{failure:?}");
    for needle in [
        "infrastructure-controllers deletes FluxInstance/flux-system/flux",
        "flux-operator uninstalls Flux",
    ] {
        assert!(failure.reason.contains(needle), "{}", failure.reason);
    }
    // The same move on the protected tree passes.
    let protected = Repo::load(&common::fixture(case, "phase1")).unwrap();
    let pmodel = Model::build(&protected, &options);
    let pfindings = fluxmend::rules::run(&pmodel, &["FM001".to_string()]);
    let pf = pfindings
        .iter()
        .find(|f| f.fix().is_some())
        .expect("phase 2");
    assert!(pf.fix().unwrap().description.starts_with("phase 2 of 2"));
    gates::builtin_gate(&protected, &pmodel, &options, pf).expect("phase 2 passes");
}

/// The apply-context gate: the layout with `settings` added to the `apps` layer's spec. The
/// rule's own fix carries them into the new layer and passes the builtin gates; a planted fix
/// that is the rule's fix with `planted` applied to the new layer's text (a setting dropped or
/// changed) is refused by the apply-context gate, naming `field`.
fn expect_apply_context_refusal(settings: &str, field: &str, planted: impl Fn(&str) -> String) {
    let dir = layout();
    dir.write(
        "clusters/prod/apps.yaml",
        APPS_LAYER_HEAD.to_string() + settings + APPS_LAYER_TAIL,
    );
    let s = Setup::new(&dir);
    let model = s.model();
    let finding = Setup::finding(&model);
    gates::builtin_gate(&s.repo, &model, &s.options, &finding)
        .unwrap_or_else(|e| panic!("the rule's own fix carries {field}: {e}"));
    let fix = finding.fix().unwrap();
    let new_layer = "clusters/prod/flux-instance.yaml";
    let Some(FileOp::Create(text)) = fix.changes.files.get(new_layer) else {
        panic!(
            "the fix creates {new_layer}: {:?}",
            fix.changes.files.keys()
        );
    };
    assert!(
        text.contains(&format!("  {field}:")),
        "the new layer carries {field}:\n{text}"
    );
    let wrong = planted(text);
    assert_ne!(&wrong, text, "the planted change changes the new layer");
    let mut bad = finding.clone();
    let mut changes = fix.changes.clone();
    changes
        .files
        .insert(new_layer.to_string(), FileOp::Create(wrong));
    bad.remedy = Remedy::Fix(Fix::new("a deliberately wrong fix".into(), "none", changes));
    expect_gate(
        gates::builtin_gate(&s.repo, &model, &s.options, &bad),
        Gate::ApplyContext,
        &[
            field,
            "FluxInstance/flux-system/flux",
            "by flux-system/flux-instance",
        ],
    );
}

const APPS_LAYER_HEAD: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
";

const APPS_LAYER_TAIL: &str = "  wait: true
  dependsOn:
    - name: infra
  sourceRef:
    kind: GitRepository
    name: flux-system
";

/// `settings` dropped from the new layer's text.
fn without(settings: &'static str) -> impl Fn(&str) -> String {
    move |text| text.replacen(settings, "", 1)
}

#[test]
fn apply_context_gate_catches_a_dropped_kube_config() {
    let s = "  prune: true\n  kubeConfig:\n    secretRef:\n      name: edge-kubeconfig\n";
    expect_apply_context_refusal(
        s,
        "kubeConfig",
        without("  kubeConfig:\n    secretRef:\n      name: edge-kubeconfig\n"),
    );
}

#[test]
fn apply_context_gate_catches_a_dropped_service_account() {
    let s = "  prune: true\n  serviceAccountName: deployer\n";
    expect_apply_context_refusal(
        s,
        "serviceAccountName",
        without("  serviceAccountName: deployer\n"),
    );
}

#[test]
fn apply_context_gate_catches_a_dropped_post_build() {
    let s = "  prune: true\n  postBuild:\n    substitute:\n      cluster: prod\n";
    expect_apply_context_refusal(
        s,
        "postBuild",
        without("  postBuild:\n    substitute:\n      cluster: prod\n"),
    );
}

#[test]
fn apply_context_gate_catches_a_dropped_decryption() {
    let s =
        "  prune: true\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n";
    expect_apply_context_refusal(
        s,
        "decryption",
        without("  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n"),
    );
}

#[test]
fn apply_context_gate_catches_a_dropped_prune() {
    expect_apply_context_refusal("  prune: true\n", "prune", without("  prune: true\n"));
}

#[test]
fn apply_context_gate_catches_a_dropped_force() {
    let s = "  prune: true\n  force: true\n";
    expect_apply_context_refusal(s, "force", without("  force: true\n"));
}

#[test]
fn apply_context_gate_catches_a_dropped_deletion_policy() {
    let s = "  prune: true\n  deletionPolicy: Orphan\n";
    expect_apply_context_refusal(s, "deletionPolicy", without("  deletionPolicy: Orphan\n"));
}

#[test]
fn apply_context_gate_catches_a_changed_suspension() {
    let s = "  prune: true\n  suspend: false\n";
    expect_apply_context_refusal(s, "suspend", |text| {
        text.replacen("  suspend: false\n", "  suspend: true\n", 1)
    });
}

/// The apply-context gate sees a layer whose objects stay the same while its spec changes
/// (`force: true` added to `infra`, which the move leaves alone): the layers both gates skip as
/// alike must apply in the same context too.
#[test]
fn apply_context_gate_catches_a_changed_layer_that_renders_alike() {
    on_the_rules_fix(|s, model, finding| {
        let bad = s.appending("clusters/prod/infra.yaml", "  force: true\n");
        let f = planted(finding, true, &bad);
        expect_gate(
            gates::builtin_gate(&s.repo, model, &s.options, &f),
            Gate::ApplyContext,
            &["force", "Namespace/", "by flux-system/infra"],
        );
    });
}

#[test]
fn apply_context_gate_catches_dropped_health_check_exprs() {
    let exprs = "  healthCheckExprs:\n    - apiVersion: v1\n      kind: ConfigMap\n      current: \"true\"\n";
    let s = format!("  prune: true\n{exprs}");
    expect_apply_context_refusal(&s, "healthCheckExprs", move |text| {
        text.replacen(exprs, "", 1)
    });
}
