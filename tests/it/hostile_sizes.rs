//! Crashes and hangs reachable from a repository (issue 24 item 7), with generated hostile
//! inputs: ResourceSet templates nested until the stack would overflow, nested `range`s whose
//! output grows as a power, a ResourceSet with tens of thousands of inputs, a mapping with
//! hundreds of thousands of keys. Each ends (the watchdog only catches a hang) with the outcome
//! asserted: a diagnostic at the ResourceSet's place when a limit is reached, the whole
//! expansion when it is not.

use std::fmt::Write as _;
use std::time::Duration;

use crate::common::{TempRepo, command_args, diagnostics, fluxmend_within};

/// A watchdog, not a measurement: these inputs hung or crashed fluxmend before.
const WATCHDOG: Duration = Duration::from_secs(300);

/// The `apps` layout plus `apps/rset.yaml` (listed in `apps`), a ResourceSet with a
/// `resourcesTemplate` block (its key on line 7, column 3) and `inputs` (YAML text, indented
/// for `spec:`); `gen/` for the layers it generates to sync.
fn with_resourceset(inputs: &str, template: &str) -> TempRepo {
    let repo = TempRepo::flux_layout();
    let mut text = String::from(
        "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: hostile\n  namespace: flux-system\nspec:\n  resourcesTemplate: |\n",
    );
    for line in template.lines() {
        let _ = writeln!(text, "    {line}");
    }
    text.push_str(inputs);
    repo.write("apps/rset.yaml", text)
        .append("apps/kustomization.yaml", "  - rset.yaml\n")
        .write("gen/README.md", "synced by the generated layers\n");
    repo
}

fn check(repo: &TempRepo) -> serde_json::Value {
    let run = fluxmend_within(
        command_args("check", repo.path(), &["--format", "json"]),
        WATCHDOG,
    );
    run.assert_no_panic();
    run.json()
}

/// The diagnostic about the ResourceSet `flux-system/hostile`, with its place.
fn resourceset_diagnostic(report: &serde_json::Value) -> (String, String, u64, u64) {
    let d = diagnostics(report)
        .iter()
        .find(|d| {
            d["message"]
                .as_str()
                .is_some_and(|m| m.contains("ResourceSet flux-system/hostile"))
        })
        .unwrap_or_else(|| panic!("no diagnostic about the ResourceSet: {report:#}"));
    (
        d["severity"].as_str().unwrap().to_string(),
        d["message"].as_str().unwrap().to_string(),
        d["line"].as_u64().unwrap(),
        d["column"].as_u64().unwrap(),
    )
}

/// A Flux Kustomization per rendered item, named `gen-…`.
const LAYER: &str = "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: gen-<< NAME >>\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./gen\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";

#[test]
fn nested_if_and_range_never_overflow_the_stack() {
    let mut tried = 0;
    for (open, depth) in [
        ("<< if inputs.on >>", 100_000),
        ("<< range $x := inputs.items >>", 100_000),
        ("<< if inputs.on >>", 65),
    ] {
        let template = format!(
            "{}{}{}",
            open.repeat(depth),
            LAYER.replace("<< NAME >>", "x"),
            "<< end >>".repeat(depth)
        );
        let repo = with_resourceset("  inputs:\n    - on: true\n      items: [a]\n", &template);
        let report = check(&repo);
        let (severity, message, line, column) = resourceset_diagnostic(&report);
        assert_eq!(severity, "warning", "{message}");
        assert!(
            message.contains("not expanded (templates nested deeper than 64 levels)"),
            "{message}"
        );
        // The template's place: the `resourcesTemplate` key.
        assert_eq!((line, column), (7, 3), "{message}");
        tried += 1;
    }
    assert_eq!(tried, 3);
}

#[test]
fn nested_ranges_stop_at_the_output_limit() {
    let items: String = (0..200).map(|i| format!("i{i}, ")).collect();
    let template = format!(
        "<< range $a := inputs.items >><< range $b := inputs.items >><< range $c := inputs.items >><< range $d := inputs.items >>{}<< end >><< end >><< end >><< end >>",
        LAYER.replace("<< NAME >>", "<< $a >>-<< $b >>-<< $c >>-<< $d >>")
    );
    let repo = with_resourceset(&format!("  inputs:\n    - items: [{items}]\n"), &template);
    let report = check(&repo);
    let (severity, message, line, _) = resourceset_diagnostic(&report);
    assert_eq!(severity, "warning", "{message}");
    assert!(
        message.contains("not expanded (it renders more than 33554432 bytes)"),
        "{message}"
    );
    assert_eq!(line, 7);
}

/// ~33,000 input sets of two inputs: every one is expanded (the ResourceSet was silently not,
/// past the conversion budget of 100,000 nodes), and deduplicating what they generate stays
/// linear. Counted as the objects of the model: one ConfigMap per input set.
#[test]
fn a_resourceset_with_many_inputs_is_expanded() {
    const INPUTS: usize = 33_000;
    let config_map = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen-<< inputs.name >>\n  namespace: demo\n";
    let objects = |n: usize| {
        let mut inputs = String::from("  inputs:\n");
        for i in 0..n {
            let _ = writeln!(inputs, "    - name: t{i}\n      team: platform");
        }
        let report = check(&with_resourceset(&inputs, config_map));
        assert!(
            diagnostics(&report).is_empty(),
            "{:#}",
            report["diagnostics"]
        );
        report["summary"]["objects"].as_u64().unwrap() as usize
    };
    assert_eq!(objects(INPUTS), objects(1) + INPUTS - 1);
}

/// A mapping of 200,000 keys (an input of a ResourceSet) is converted in linear time (it was
/// quadratic, then the ResourceSet silently not expanded past the conversion budget): the
/// ResourceSet generates its object as with a small mapping, and nothing is reported.
#[test]
fn a_mapping_with_many_keys_is_read() {
    let objects = |keys: usize| {
        let repo = with_resourceset(
            &format!(
                "  inputs:\n    - name: one\n      big:\n{}",
                (0..keys)
                    .map(|i| format!("        k{i}: v\n"))
                    .collect::<String>()
            ),
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen-<< inputs.name >>\n  namespace: demo\n",
        );
        let report = check(&repo);
        assert!(
            diagnostics(&report).is_empty(),
            "{:#}",
            report["diagnostics"]
        );
        report["summary"]["objects"].as_u64().unwrap()
    };
    assert_eq!(objects(200_000), objects(2));
}
