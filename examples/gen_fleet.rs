//! Write a deterministic Flux fleet repository for benchmarks and manual testing.
//!
//! ```text
//! cargo run --release --example gen_fleet -- --out DIR --files N [--seed S]
//! ```
//!
//! `N` (1,000 to 100,000) is the approximate number of YAML files. The same `N` and `S` always
//! write the same bytes. `DIR` must be absent, empty, or a fleet this generator wrote before.

#[path = "fleet/mod.rs"]
mod fleet;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: gen_fleet --out DIR --files N [--seed S]";

fn main() -> ExitCode {
    let mut out: Option<PathBuf> = None;
    let mut files: Option<usize> = None;
    let mut seed: u64 = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let parsed: Result<(), String> = match arg.as_str() {
            "--out" => value("--out").map(|v| out = Some(PathBuf::from(v))),
            "--files" => value("--files").and_then(|v| {
                v.replace('_', "")
                    .parse()
                    .map(|n| files = Some(n))
                    .map_err(|e| format!("--files: {e}"))
            }),
            "--seed" => value("--seed").and_then(|v| {
                v.parse()
                    .map(|s| seed = s)
                    .map_err(|e| format!("--seed: {e}"))
            }),
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unknown argument `{other}`")),
        };
        if let Err(e) = parsed {
            eprintln!("gen_fleet: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let (Some(out), Some(files)) = (out, files) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if !(1_000..=100_000).contains(&files) {
        eprintln!("gen_fleet: note: --files {files} is outside the tested range 1000..=100000");
    }
    let start = Instant::now();
    match fleet::generate(&out, files, seed) {
        Ok(stats) => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let mut report = format!(
                "wrote {} YAML files ({:.1} MB) to {} in {:.2}s: {} clusters, {} apps\n",
                stats.files,
                stats.yaml_bytes as f64 / 1e6,
                out.display(),
                start.elapsed().as_secs_f64(),
                stats.clusters,
                stats.apps
            );
            list(
                &mut report,
                "FluxInstance in a wait:true layer (FM001)",
                &stats.fm001_clusters,
            );
            list(
                &mut report,
                "CI runners in the wait:true apps layer (FM002)",
                &stats.fm002_clusters,
            );
            list(
                &mut report,
                "apps folder without kustomization.yaml",
                &stats.generated_clusters,
            );
            let _ = std::io::stdout().write_all(report.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_fleet: {e}");
            ExitCode::from(2)
        }
    }
}

/// One line per special layout: how many clusters, and the first few.
fn list(report: &mut String, what: &str, clusters: &[String]) {
    let shown: Vec<&str> = clusters.iter().take(5).map(String::as_str).collect();
    let more = if clusters.len() > shown.len() {
        ", …"
    } else {
        ""
    };
    report.push_str(&format!(
        "  {what}: {} cluster(s): {}{more}\n",
        clusters.len(),
        shown.join(", ")
    ));
}
