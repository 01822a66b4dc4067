//! Benchmark `fluxmend check` on generated Flux fleets against the floor of walking, reading and
//! parsing the same YAML.
//!
//! ```text
//! cargo run --release --example bench_fleet -- [--sizes 1000,10000,100000] [--dir /tmp/fleet]
//!                                             [--seed S] [--runs 3] [--timeout SECS] [--git]
//! ```
//!
//! For each size the fleet is generated under `DIR/<size>` (see `examples/fleet/mod.rs`), then
//! every phase runs `--runs` times, each in a child process (this example re-executed with the
//! hidden `--phase NAME --dir D`), so that the peak RSS (`VmHWM`) belongs to that phase alone.
//! Times are medians; peak RSS is the largest seen. A phase whose first run takes over a minute
//! is not repeated, a run is killed after `--timeout` seconds (default 150) and reported as a
//! lower bound, and `fix` is skipped when `check` timed out — which keeps a 100k-file run within
//! about five minutes on two cores.
//!
//! * `floor`: single-threaded walkdir + read + yaml-rust2 event parse of every `.yaml`/`.yml`
//!   file with a receiver that does nothing: no analysis can be faster than this.
//! * `check`: `Repo::load` + `Model::build` + `rules::run`, what `fluxmend check` does before it
//!   prints (the child also reports the three stages separately).
//! * `empty`: `check` on an empty directory, once per benchmark: the memory any run costs
//!   whatever the repository (binary, allocator, thread pools). What `check` and `fix` hold beyond
//!   it is what grows with the repository, reported per YAML byte.
//! * `fix`: what `fluxmend fix --verify builtin` does without `--write`, through the same entry
//!   points as the binary: `check` with the suppressions applied, then `verify::gates::plan_with`
//!   (the whole-move gate re-plans the later phases of every first phase, then every fix is
//!   re-verified against a re-modelled copy of the repository), the unified diff and the text
//!   report. Only the kustomize gate is left out: it runs an external `kubectl`/`kustomize`.
//!   In a fleet's own git checkout, as `fluxmend fix` there: the default base revision is read
//!   beside the work tree for the transition gate (`verify::Deployed`: modelled only when it
//!   differs).
//! * with `--git`, `fix` again in a clean git checkout of the same fleet (`DIR/<size>-git`,
//!   committed with the `git` command): what a bot's `fix` on its checkout costs.

#[path = "fleet/mod.rs"]
mod fleet;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use saphyr_parser::{Event, Parser, Span, SpannedEventReceiver};

/// The allocator the `fluxmend` binary uses, set up as it does in `main`, so that `check` and
/// `fix` are measured as shipped (the floor runs on it too).
#[global_allocator]
static GLOBAL: fluxmend::platform::Allocator = fluxmend::platform::Allocator {};

const USAGE: &str = "usage: bench_fleet [--sizes 1000,10000,100000] [--dir /tmp/fleet] [--seed S] [--runs N] [--timeout SECS] [--git]";

/// Phases a child can run.
const PHASES: &[&str] = &["floor", "check", "fix"];

/// After a first run slower than this, a phase is not repeated (keeps 100k runs bounded).
const REPEAT_LIMIT: Duration = Duration::from_secs(60);

struct Options {
    sizes: Vec<usize>,
    dir: PathBuf,
    seed: u64,
    runs: usize,
    timeout: Duration,
    /// Also run `fix` in a clean git checkout of each fleet.
    git: bool,
}

fn main() -> ExitCode {
    fluxmend::platform::release_freed_memory_promptly();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--phase") {
        return child(&args, i);
    }
    let options = match parse_options(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("bench_fleet: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_fleet: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse_options(args: &[String]) -> Result<Option<Options>, String> {
    let mut options = Options {
        sizes: vec![1_000, 10_000, 100_000],
        dir: PathBuf::from("/tmp/fleet"),
        seed: 1,
        runs: 3,
        timeout: Duration::from_secs(150),
        git: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--sizes" => {
                options.sizes = value("--sizes")?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .replace('_', "")
                            .parse::<usize>()
                            .map_err(|e| format!("--sizes: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--dir" => options.dir = PathBuf::from(value("--dir")?),
            "--seed" => {
                options.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?;
            }
            "--runs" => {
                options.runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?;
            }
            "--timeout" => {
                options.timeout = Duration::from_secs(
                    value("--timeout")?
                        .parse()
                        .map_err(|e| format!("--timeout: {e}"))?,
                );
            }
            "--git" => options.git = true,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    options.runs = options.runs.max(1);
    Ok(Some(options))
}

/// One child run: its own wall time and peak RSS, plus whatever counters the phase reports.
#[derive(Clone, Debug, Default)]
struct Sample {
    fields: Vec<(String, String)>,
}

impl Sample {
    fn parse(line: &str) -> Sample {
        let fields = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Sample { fields }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn num(&self, key: &str) -> f64 {
        self.get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }
}

/// The runs of one phase.
struct Measured {
    samples: Vec<Sample>,
    /// Set when a run was killed at this timeout (or the phase was skipped after one).
    timed_out: Option<Duration>,
}

impl Measured {
    /// The median wall time, or `>N` when no run finished in time.
    fn ms_text(&self) -> String {
        match (self.samples.is_empty(), self.timed_out) {
            (true, Some(t)) => format!(">{} (timeout)", t.as_millis()),
            (false, Some(_)) => format!("{:.0} (a later run timed out)", self.median("ms")),
            _ => format!("{:.0}", self.median("ms")),
        }
    }

    /// The median wall time, or the timeout as a lower bound.
    fn ms_bound(&self) -> f64 {
        match (self.samples.is_empty(), self.timed_out) {
            (true, Some(t)) => t.as_secs_f64() * 1e3,
            _ => self.median("ms"),
        }
    }

    fn median(&self, key: &str) -> f64 {
        let mut v: Vec<f64> = self
            .samples
            .iter()
            .map(|s| s.num(key))
            .filter(|x| !x.is_nan())
            .collect();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    fn max(&self, key: &str) -> f64 {
        self.samples
            .iter()
            .map(|s| s.num(key))
            .filter(|x| !x.is_nan())
            .fold(f64::NAN, f64::max)
    }

    fn num_first(&self, key: &str) -> f64 {
        self.samples
            .first()
            .map_or(f64::NAN, |sample| sample.num(key))
    }

    fn first(&self, key: &str) -> String {
        self.samples
            .first()
            .and_then(|s| s.get(key))
            .unwrap_or("–")
            .to_string()
    }
}

struct Row {
    stats: fleet::FleetStats,
    gen_s: f64,
    floor: Measured,
    check: Measured,
    fix: Measured,
    /// `fix` in a clean git checkout of the fleet (`--git`).
    fix_git: Option<Measured>,
}

fn run(options: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let empty_dir = options.dir.join("empty");
    let _ = std::fs::remove_dir_all(&empty_dir);
    std::fs::create_dir_all(&empty_dir)
        .map_err(|e| format!("creating {}: {e}", empty_dir.display()))?;
    let empty = measure(&exe, "check", &empty_dir, options)?;
    eprintln!(
        "[empty] check: peak RSS {:.1} MB",
        empty.max("hwm_kb") * 1024.0 / 1e6
    );
    let mut rows = Vec::new();
    for &size in &options.sizes {
        let dir = options.dir.join(size.to_string());
        let start = Instant::now();
        let stats = fleet::generate(&dir, size, options.seed)
            .map_err(|e| format!("generating {}: {e}", dir.display()))?;
        let gen_s = start.elapsed().as_secs_f64();
        eprintln!(
            "[{size}] generated {} files, {:.1} MB, {} clusters, {} apps in {gen_s:.1}s ({})",
            stats.files,
            stats.yaml_bytes as f64 / 1e6,
            stats.clusters,
            stats.apps,
            dir.display()
        );
        let mut measured = Vec::new();
        for phase in PHASES {
            // `fix` starts with everything `check` does: no use running it when check timed out.
            let check_timed_out = measured
                .last()
                .is_some_and(|m: &Measured| m.samples.is_empty());
            let m = if *phase == "fix" && check_timed_out {
                Measured {
                    samples: Vec::new(),
                    timed_out: Some(options.timeout),
                }
            } else {
                measure(&exe, phase, &dir, options)?
            };
            eprintln!(
                "[{size}] {phase}: median {} ms over {} run(s)",
                m.ms_text(),
                m.samples.len()
            );
            measured.push(m);
        }
        let fix = measured.pop().expect("three phases");
        let check = measured.pop().expect("three phases");
        let floor = measured.pop().expect("three phases");
        let fix_git = if options.git {
            let checkout = options.dir.join(format!("{size}-git"));
            fleet::generate(&checkout, size, options.seed)
                .map_err(|e| format!("generating {}: {e}", checkout.display()))?;
            commit_all(&checkout)?;
            let m = measure(&exe, "fix", &checkout, options)?;
            eprintln!(
                "[{size}] fix in a git checkout: median {} ms over {} run(s)",
                m.ms_text(),
                m.samples.len()
            );
            Some(m)
        } else {
            None
        };
        rows.push(Row {
            stats,
            gen_s,
            floor,
            check,
            fix,
            fix_git,
        });
    }
    print_report(&rows, empty.max("hwm_kb") * 1024.0, options);
    Ok(())
}

/// Make `dir` a git repository whose one commit holds every file: a clean checkout.
fn commit_all(dir: &Path) -> Result<(), String> {
    let git = |args: &[&str]| -> Result<(), String> {
        let status = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
            .args(args)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("git: {e}"))?;
        status
            .success()
            .then_some(())
            .ok_or_else(|| format!("git {args:?} in {} failed", dir.display()))
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-q", "-m", "fleet"])
}

fn measure(exe: &Path, phase: &str, dir: &Path, options: &Options) -> Result<Measured, String> {
    let mut out = Measured {
        samples: Vec::new(),
        timed_out: None,
    };
    for i in 0..options.runs {
        let start = Instant::now();
        match run_child(exe, phase, dir, options.timeout)? {
            Some(sample) => out.samples.push(sample),
            None => {
                out.timed_out = Some(options.timeout);
                break;
            }
        }
        if i == 0 && start.elapsed() > REPEAT_LIMIT {
            break;
        }
    }
    Ok(out)
}

/// Run one phase in a child process; `None` when it ran past the timeout (it is then killed).
fn run_child(
    exe: &Path,
    phase: &str,
    dir: &Path,
    timeout: Duration,
) -> Result<Option<Sample>, String> {
    let mut child = Command::new(exe)
        .args(["--phase", phase, "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return Ok(None);
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "phase {phase} on {} failed ({status}): {text}",
            dir.display()
        ));
    }
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or_else(|| format!("phase {phase} printed no RESULT line: {text}"))?;
    Ok(Some(Sample::parse(line)))
}

/// A number with `prec` decimals, `–` when unknown.
fn num(x: f64, prec: usize) -> String {
    if x.is_nan() {
        "–".to_string()
    } else {
        format!("{x:.prec$}")
    }
}

/// A ratio, `>` when the numerator is a timeout's lower bound, `–` when unknown.
fn ratio(x: f64, bound: bool) -> String {
    match (x.is_nan(), bound) {
        (true, _) => "–".to_string(),
        (false, true) => format!(">{x:.1}×"),
        (false, false) => format!("{x:.1}×"),
    }
}

/// The issue-26 targets: `check` and `fix` against the floor, and memory beyond an empty run per
/// YAML byte.
const TARGETS: &str = "targets: check ≤ 1.3× and fix ≤ 2× the floor; check and fix peak RSS beyond the empty run ≤ 4× the YAML bytes";

/// `rows`' report; `empty_rss` is the peak RSS of `check` on an empty directory, in bytes.
fn print_report(rows: &[Row], empty_rss: f64, options: &Options) {
    let mb = |bytes: f64| num(bytes / 1e6, 0);
    let growth = |rss: f64, bytes: f64| ratio((rss - empty_rss) / bytes, false);
    println!();
    println!(
        "fluxmend bench_fleet — seed {}, up to {} run(s) per phase (median time, max peak RSS), each phase in its own process, timeout {} s",
        options.seed,
        options.runs,
        options.timeout.as_secs()
    );
    println!();
    println!(
        "{TARGETS}; check on an empty directory peaks at {} MB",
        num(empty_rss / 1e6, 1)
    );
    println!();
    println!(
        "| files | YAML MB | floor ms | check ms | check/floor | files/s (check) | ms per 1k files (check) | floor RSS MB | check RSS MB | check RSS beyond empty / YAML bytes |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let floor = r.floor.median("ms");
        let check = r.check.ms_bound();
        let bound = r.check.samples.is_empty();
        let files = r.stats.files as f64;
        let bytes = r.stats.yaml_bytes as f64;
        let check_rss = r.check.max("hwm_kb") * 1024.0;
        println!(
            "| {} | {:.1} | {} | {} | {} | {}{} | {}{} | {} | {} | {} |",
            r.stats.files,
            bytes / 1e6,
            r.floor.ms_text(),
            r.check.ms_text(),
            ratio(check / floor, bound),
            if bound { "<" } else { "" },
            num(files / (check / 1e3), 0),
            if bound { ">" } else { "" },
            num(check / (files / 1e3), 1),
            mb(r.floor.max("hwm_kb") * 1024.0),
            mb(check_rss),
            growth(check_rss, bytes),
        );
    }
    println!();
    println!(
        "check stages (median ms), peak RSS after load and after the model (the largest of the runs), and what the model saw:"
    );
    println!();
    println!(
        "| files | gen s | load | model | rules | peak RSS after load MB | after model MB | objects | layers (live) | findings | diagnostics | check runs | YAML events (floor) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} |",
            r.stats.files,
            r.gen_s,
            num(r.check.median("load_ms"), 0),
            num(r.check.median("model_ms"), 0),
            num(r.check.median("rules_ms"), 1),
            mb(r.check.max("load_hwm_kb") * 1024.0),
            mb(r.check.max("model_hwm_kb") * 1024.0),
            r.check.first("objects"),
            r.check.first("layers"),
            r.check.first("live"),
            r.check.first("findings"),
            r.check.first("diagnostics"),
            r.check.samples.len(),
            r.floor.first("events"),
        );
    }
    println!();
    println!(
        "fix (dry run, as `fix --verify builtin`: check + suppressions + every builtin gate + diff + report; nothing written):"
    );
    println!();
    println!(
        "| files | fix ms | fix/floor | fix RSS MB | fix RSS beyond empty / YAML bytes | verify ms | diff + report ms | fixes planned | fixes kept | changed files | diff KB | fix runs |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let rss = r.fix.max("hwm_kb") * 1024.0;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.stats.files,
            r.fix.ms_text(),
            ratio(
                r.fix.ms_bound() / r.floor.median("ms"),
                r.fix.samples.is_empty()
            ),
            mb(rss),
            growth(rss, r.stats.yaml_bytes as f64),
            num(r.fix.median("verify_ms"), 0),
            num(r.fix.median("diff_ms"), 1),
            r.fix.first("fixes"),
            r.fix.first("kept"),
            r.fix.first("changed_files"),
            num(r.fix.num_first("diff_bytes") / 1e3, 1),
            r.fix.samples.len(),
        );
    }
    if rows.iter().all(|r| r.fix_git.is_none()) {
        return;
    }
    println!();
    println!(
        "fix in a clean git checkout of the same fleet (the base revision read beside the work tree; `base`: whether it was modelled on its own or is the work tree's model):"
    );
    println!();
    println!(
        "| files | fix ms | fix/floor | fix RSS MB | fix RSS beyond empty / YAML bytes | base ms | base | verify ms | fixes kept | fix runs |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let Some(fix) = &r.fix_git else { continue };
        let rss = fix.max("hwm_kb") * 1024.0;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.stats.files,
            fix.ms_text(),
            ratio(
                fix.ms_bound() / r.floor.median("ms"),
                fix.samples.is_empty()
            ),
            mb(rss),
            growth(rss, r.stats.yaml_bytes as f64),
            num(fix.median("base_ms"), 0),
            fix.first("base"),
            num(fix.median("verify_ms"), 0),
            fix.first("kept"),
            fix.samples.len(),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Child side

fn child(args: &[String], i: usize) -> ExitCode {
    let phase = args.get(i + 1).map(String::as_str).unwrap_or_default();
    let dir = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|j| args.get(j + 1))
        .map(PathBuf::from);
    let Some(dir) = dir else {
        eprintln!("bench_fleet: --phase needs --dir");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    let fields = match phase {
        "floor" => floor(&dir),
        "check" => check(&dir, false),
        "fix" => check(&dir, true),
        other => Err(format!("unknown phase `{other}`")),
    };
    let ms = start.elapsed().as_secs_f64() * 1e3;
    match fields {
        Ok(fields) => {
            println!("RESULT ms={ms:.3} hwm_kb={} {fields}", peak_rss_kb());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench_fleet: {e}");
            ExitCode::from(2)
        }
    }
}

/// Peak resident set size of this process (`VmHWM`), in kB.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Counts events, so the parse cannot be optimised away; otherwise does nothing.
struct Sink {
    events: u64,
}

impl SpannedEventReceiver<'_> for Sink {
    fn on_event(&mut self, _ev: Event, _span: Span) {
        self.events += 1;
    }
}

fn floor(dir: &Path) -> Result<String, String> {
    let mut sink = Sink { events: 0 };
    let (mut files, mut bytes, mut errors) = (0u64, 0u64, 0u64);
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy();
        if !entry.file_type().is_file() || !(name.ends_with(".yaml") || name.ends_with(".yml")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        files += 1;
        bytes += text.len() as u64;
        if Parser::new_from_str(&text).load(&mut sink, true).is_err() {
            errors += 1;
        }
    }
    Ok(format!(
        "files={files} bytes={bytes} events={} parse_errors={errors}",
        sink.events
    ))
}

fn check(dir: &Path, fix: bool) -> Result<String, String> {
    use fluxmend::load::Repo;
    use fluxmend::model::{Model, ModelOptions};

    let options = ModelOptions::default();
    let t0 = Instant::now();
    let repo = Repo::load(dir).map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let load_hwm_kb = peak_rss_kb();
    let model = Model::build(&repo, &options);
    let t2 = Instant::now();
    // Which stage sets the peak: at 142k files the layers' walk did, not the rules.
    let model_hwm_kb = peak_rss_kb();
    let findings = fluxmend::rules::run(&model, &[]);
    let t3 = Instant::now();
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    let mut fields = format!(
        "load_ms={:.3} load_hwm_kb={load_hwm_kb} model_hwm_kb={model_hwm_kb} model_ms={:.3} rules_ms={:.3} files={} objects={} layers={} live={} findings={} fixes={} diagnostics={}",
        ms(t0, t1),
        ms(t1, t2),
        ms(t2, t3),
        repo.files.len(),
        model.objects.len(),
        model.layers.len(),
        model.live_layers().count(),
        findings.len(),
        findings.iter().filter(|f| f.fix().is_some()).count(),
        repo.diagnostics.len() + model.diagnostics.len(),
    );
    if fix {
        // As `fluxmend fix` (src/main.rs `fix`) does it: suppressions, every gate but the external
        // kustomize one, the diff and the report.
        let ran: Vec<String> = fluxmend::rules::all()
            .iter()
            .map(|r| r.meta().id.to_string())
            .collect();
        let outcome = fluxmend::rules::suppress::apply(&model, findings, &ran);
        let mut diagnostics = model.all_diagnostics();
        diagnostics.extend(outcome.diagnostics);
        let diagnostics = fluxmend::diagnostics::dedup(diagnostics);
        // In a checkout (`--git`), as `fluxmend fix` there: its default base read beside the
        // work tree, modelled only when it differs from it. Elsewhere none, wherever DIR is.
        let t_base = Instant::now();
        let in_checkout = dir.join(".git").exists();
        let deployed = match in_checkout
            .then(|| fluxmend::load::revision::default_base(dir))
            .flatten()
        {
            Some(rev) => {
                let read = fluxmend::load::revision::load_revision(dir, &rev, &[], Some(&repo))
                    .map_err(|e| e.to_string())?;
                Some(fluxmend::verify::Deployed::new(rev, read, &model))
            }
            None => None,
        };
        let built = deployed.as_ref().and_then(|d| d.model(&model, &options));
        let base = fluxmend::verify::base_of(deployed.as_ref(), built.as_ref(), &model);
        let base_kind = match &deployed {
            None => "none",
            Some(d) if d.differs() => "modelled",
            Some(_) => "work_tree",
        };
        let t4 = Instant::now();
        let plan = fluxmend::verify::gates::plan_with(
            &repo,
            &model,
            base,
            &options,
            outcome.findings,
            fluxmend::verify::gates::VerifyMode::Builtin,
            None,
        );
        let t5 = Instant::now();
        let diff = fluxmend::emit::apply::unified_diff(&plan.files, "");
        let standing = fluxmend::emit::report::Standing::new(&plan, &diagnostics, None);
        let report = fluxmend::emit::report::fix_text(
            &plan,
            &outcome.suppressed,
            &diagnostics,
            &standing,
            "",
            "",
            fluxmend::emit::text::Shown::default(),
        );
        let t6 = Instant::now();
        fields.push_str(&format!(
            " base_ms={:.3} base={} verify_ms={:.3} diff_ms={:.3} kept={} changed_files={} diff_bytes={} report_bytes={}",
            ms(t_base, t4),
            base_kind,
            ms(t4, t5),
            ms(t5, t6),
            plan.findings.iter().filter(|f| f.fix().is_some()).count(),
            plan.files.len(),
            diff.len(),
            report.len()
        ));
        std::mem::forget(plan);
        std::mem::forget(diff);
        std::mem::forget(report);
        std::mem::forget(built);
        std::mem::forget(deployed);
    } else {
        std::mem::forget(findings);
    }
    // Freeing the model is not part of the measured work (and would blur the stage timings).
    std::mem::forget(model);
    std::mem::forget(repo);
    Ok(fields)
}
