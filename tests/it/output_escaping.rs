//! Output injection (issue 24, item 8): a repository's names, paths and values cannot drive the
//! terminal, break out of Markdown code spans in the pull-request body or commit message, inject
//! DOT or Mermaid syntax, or make a diff `git apply` misreads. The hostile repository is the
//! fm001-dedicated layout with its instance layer, that layer's file and its directory renamed to
//! strings holding OSC 52 (clipboard), a window title, a hyperlink, a C1 CSI, a conceal SGR, a
//! bidi override, HTML, a link, a mention, an issue reference, backticks, quotes and backslashes.

use std::path::Path;

use crate::common::{self, TempRepo, fixture, fluxmend, git};
use regex::Regex;

/// Every class of terminal control and Markdown/HTML/graph syntax, in one layer name.
const HOSTILE_NAME: &str = "fi\x1b]52;c;aGk=\x07\x1b]0;pwned\x07\x1b]8;;http://e.example/\x1b\\link\x1b]8;;\x1b\\\u{9b}31m\x1b[8m\u{202e}\u{2066}\u{2028}\u{2029}<img src=x onerror=alert(1)>`@everyone` @here *b* [a](http://e.example) #1 www.e.example \"q\\N\n---\n# h";

/// The layer's file and directory: a quote, a backslash, a tab, an escape, a space, non-ASCII.
const HOSTILE_FILE: &str = "clusters/production/fi \"q\"\\\t\x1bü.yaml";
const HOSTILE_DIR: &str = "infrastructure/fi \x1b]0;t\x07 <b>";

/// `s` as a YAML double-quoted scalar.
fn yaml_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || matches!(c, '\u{2000}'..='\u{206f}') => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn hostile_repo() -> TempRepo {
    let repo = TempRepo::copy_of(&fixture("fm001-dedicated", "before"));
    let root = repo.path();
    let layer = repo
        .read("clusters/production/flux-instance.yaml")
        .replace(
            "  name: flux-instance\n",
            &format!("  name: {}\n", yaml_quoted(HOSTILE_NAME)),
        )
        .replace(
            "  path: ./infrastructure/flux-instance\n",
            &format!("  path: {}\n", yaml_quoted(&format!("./{HOSTILE_DIR}"))),
        );
    std::fs::remove_file(root.join("clusters/production/flux-instance.yaml")).unwrap();
    repo.write(HOSTILE_FILE, layer);
    std::fs::rename(
        root.join("infrastructure/flux-instance"),
        root.join(HOSTILE_DIR),
    )
    .unwrap();
    repo
}

/// A character that must not reach a reader raw: a control character (C0, DEL, C1), a
/// bidirectional formatting character, or a line or paragraph separator (a line break to
/// editors, browsers and JavaScript: it can forge a line of the report).
/// Written here again on purpose, not taken from `emit::escape`: the test's oracle must not
/// share a mistake with the code it checks.
fn unsafe_raw(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `text` with fluxmend's own styles (bold, colours, reset) removed: what is left must hold no
/// control character but line feeds and tabs (layout, not terminal commands).
fn assert_terminal_safe(what: &str, text: &str) {
    let ours = Regex::new("\x1b\\[(0|1|3[1-7])m").unwrap();
    let left = ours.replace_all(text, "");
    let bad: Vec<(usize, char)> = left
        .char_indices()
        .filter(|&(_, c)| unsafe_raw(c) && c != '\n' && c != '\t')
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: raw control characters {bad:?} reach the terminal:\n{text}"
    );
}

#[test]
fn terminal_reports_escape_every_control_character() {
    let repo = hostile_repo();
    let root = repo.path().to_str().unwrap();
    let check = fluxmend(["check", root, "--color", "always"]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    // Shown, escaped: the reader sees what the repository holds.
    assert!(check.stdout.contains("\\x1b]52;c;aGk="), "{}", check.stdout);
    assert_terminal_safe("check", &check.stdout);
    let fix = fluxmend(["fix", root, "--verify", "builtin", "--color", "always"]);
    assert_eq!(fix.code, 1, "{}", fix.stderr);
    assert_terminal_safe("fix report", &fix.stderr);
    let graph = fluxmend(["graph", root]);
    assert_terminal_safe("graph", &graph.stdout);
    assert!(graph.stdout.contains("\\x1b]0;pwned"), "{}", graph.stdout);
    let simulate = fluxmend(["simulate", root, "--fail", "FluxInstance/flux-system/flux"]);
    assert_eq!(simulate.code, 0, "{}", simulate.stderr);
    assert_terminal_safe("simulate", &simulate.stdout);
    // GitHub annotations: the runner decodes `%`, CR and LF, then shows the text in the
    // workflow log and on the pull request, where a bidi override reorders it.
    let annotations = fluxmend(["check", root, "--format", "github"]);
    assert_eq!(annotations.code, 1, "{}", annotations.stderr);
    assert_terminal_safe("annotations", &annotations.stdout);
    // An error naming a hostile path.
    std::fs::write(repo.path().join(".fluxmend-journal"), "junk\n").unwrap();
    let refused = fluxmend(["fix", root, "--write", "--verify", "builtin"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_terminal_safe("error", &refused.stderr);
}

/// Inline Markdown outside code spans (CommonMark: a run of N backticks opens a span that the
/// next run of exactly N closes). Backslash-escaped characters are dropped with their escape.
fn active_markdown(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() => i += 2,
            '`' => {
                let run = chars[i..].iter().take_while(|&&c| c == '`').count();
                let mut j = i + run;
                let mut closed = None;
                while j < chars.len() {
                    if chars[j] == '`' {
                        let r = chars[j..].iter().take_while(|&&c| c == '`').count();
                        if r == run {
                            closed = Some(j + r);
                            break;
                        }
                        j += r;
                    } else {
                        j += 1;
                    }
                }
                match closed {
                    Some(end) => i = end,
                    None => {
                        out.push('`');
                        i += run;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn assert_markdown_safe(what: &str, text: &str) {
    assert_terminal_safe(what, text);
    let active = active_markdown(text);
    for injected in [
        "<img",
        "<b>",
        "](http",
        "@everyone",
        "@here",
        "*b*",
        "http://",
        "www.e",
        " #1 ",
    ] {
        assert!(
            !active.contains(injected),
            "{what}: {injected:?} is live Markdown:\n{text}"
        );
    }
    for line in text.lines() {
        assert!(
            !line.starts_with('#') || line.starts_with("## "),
            "{what}: a heading injected: {line}\n{text}"
        );
        assert!(line != "---", "{what}: a rule injected\n{text}");
    }
}

#[test]
fn pull_request_text_is_inert_markdown() {
    let repo = hostile_repo();
    let root = repo.path();
    common::init_and_commit_all(root, "init");
    let body = root.join("../pr-body.md");
    let run = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--verify",
        "builtin",
        "--commit",
        "--pr-body",
        body.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let body_text = std::fs::read_to_string(&body).unwrap();
    std::fs::remove_file(&body).unwrap();
    assert_markdown_safe("PR body", &body_text);
    let message = git(root, &["log", "-1", "--format=%B"]);
    assert_markdown_safe("commit message", &message);
    assert!(!message.lines().next().unwrap().contains('\x1b'));
}

#[test]
fn graph_labels_are_quoted() {
    let repo = hostile_repo();
    let root = repo.path().to_str().unwrap();
    let dot = fluxmend(["graph", root, "--format", "dot"]);
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    let node = Regex::new(
        r#"^  l\d+ \[label="(?:[^"\\\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]|\\.)*"(?:,penwidth=2)?(?:,style=dashed)?\];$"#,
    )
    .unwrap();
    let edge = Regex::new(r#"^  l\d+ -> l\d+ \[(?:style=dashed,)?label="[a-z ]+"\];$"#).unwrap();
    let lines: Vec<&str> = dot.stdout.lines().collect();
    assert_eq!(lines[0], "digraph fluxmend {");
    assert_eq!(*lines.last().unwrap(), "}");
    for line in &lines[3..lines.len() - 1] {
        assert!(
            node.is_match(line) || edge.is_match(line),
            "not a well-formed DOT statement: {line:?}\n{}",
            dot.stdout
        );
    }
    let mermaid = fluxmend(["graph", root, "--format", "mermaid"]);
    assert_eq!(mermaid.code, 0, "{}", mermaid.stderr);
    let node =
        Regex::new(r#"^  l\d+\["[^"<>`\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]*"\]$"#).unwrap();
    let edge = Regex::new(r"^  l\d+ (-->|-\.->)\|[a-z ]+\| l\d+$").unwrap();
    let lines: Vec<&str> = mermaid.stdout.lines().collect();
    assert_eq!(lines[0], "flowchart LR");
    for line in &lines[1..] {
        assert!(
            node.is_match(line) || edge.is_match(line),
            "not a well-formed Mermaid statement: {line:?}\n{}",
            mermaid.stdout
        );
    }
}

/// The header lines of a diff (`diff --git`, `---`, `+++`, renames).
fn headers(diff: &str) -> Vec<&str> {
    diff.lines()
        .filter(|l| {
            l.starts_with("diff --git ")
                || l.starts_with("--- ")
                || l.starts_with("+++ ")
                || l.starts_with("rename ")
        })
        .collect()
}

fn git_apply(dir: &Path, diff: &str) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("git")
        .args(["apply", "-"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(diff.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git apply: {}\n{diff}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn diff_paths_are_quoted_as_git_quotes_them() {
    let repo = hostile_repo();
    let root = repo.path();
    common::init_and_commit_all(root, "init");
    let dry = fluxmend(["fix", root.to_str().unwrap(), "--verify", "builtin"]);
    assert_eq!(dry.code, 1, "{}", dry.stderr);
    // The dry-run diff applies with git apply.
    let copy = TempRepo::copy_of(root);
    git_apply(copy.path(), &dry.stdout);
    let written = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--verify",
        "builtin",
        "--write",
    ]);
    assert_eq!(written.code, 1, "{}", written.stderr);
    assert_eq!(
        common::tree(copy.path()),
        common::tree(root),
        "git apply of the diff is not the written tree"
    );
    // Its headers are git's own.
    let ours = headers(&dry.stdout);
    let theirs = git(root, &["diff"]);
    assert!(ours.iter().any(|l| l.contains("\\033")), "{}", dry.stdout);
    assert_eq!(ours, headers(&theirs), "\n{}\n{theirs}", dry.stdout);
}
