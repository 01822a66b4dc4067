//! Reading a git revision (`simulate --from/--to`, `fix --base`) writes nothing and reads only
//! what fluxmend reads: commits crafted with tree entries git refuses (`../x`, an absolute
//! path, `.git/config`, `.GIT`, `git~1`), a blob over the size limit and one whose header lies
//! about its size, and a revision that loads exactly as its checkout does.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use crate::common::{self, git};
use fluxmend::load::Repo;
use fluxmend::load::revision::load_revision;

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  a: b\n";

/// A raw tree object: entries `(mode, name, id)` in the order given (git's order when the names
/// are ordinary), names as bytes, unchecked — what a hostile author can write with any tool.
fn raw_tree(git: &git2::Repository, entries: &[(&str, &[u8], git2::Oid)]) -> git2::Oid {
    let mut bytes = Vec::new();
    for (mode, name, id) in entries {
        bytes.extend_from_slice(mode.as_bytes());
        bytes.push(b' ');
        bytes.extend_from_slice(name);
        bytes.push(0);
        bytes.extend_from_slice(id.as_bytes());
    }
    git.odb()
        .unwrap()
        .write(git2::ObjectType::Tree, &bytes)
        .unwrap()
}

/// Commit `tree` on HEAD of `git`.
fn commit(git: &git2::Repository, tree: git2::Oid, message: &str) {
    let tree = git.find_tree(tree).unwrap();
    let who = git2::Signature::now("t", "t@t").unwrap();
    let parents: Vec<git2::Commit> = git
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .into_iter()
        .collect();
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    git.commit(Some("HEAD"), &who, &who, message, &tree, &parents)
        .unwrap();
}

/// Every path below `dir` (files and directories), relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            e.unwrap()
                .path()
                .strip_prefix(dir)
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

fn diagnostic_files(repo: &Repo) -> Vec<(String, String)> {
    repo.diagnostics
        .iter()
        .map(|d| (d.file().to_string(), d.message.clone()))
        .collect()
}

/// `fluxmend ARGS` with `TMPDIR` set to `tmp`.
fn fluxmend_with_tmpdir(args: &[&str], tmp: &Path) -> common::Run {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    common::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn tree_entries_git_refuses_are_skipped_and_nothing_is_written() {
    let sandbox = tempfile::tempdir().unwrap();
    let tmp = sandbox.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let work = sandbox.path().join("repo");
    let git = git2::Repository::init(&work).unwrap();
    let blob = |text: &str| git.blob(text.as_bytes()).unwrap();
    let cm = blob(CONFIGMAP);
    let evil = blob("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n");
    let apps = raw_tree(&git, &[("100644", b"cm.yaml", cm)]);
    let evil_dir = raw_tree(&git, &[("100644", b"evil.yaml", evil)]);
    let absolute = format!("{}/abs.yaml", sandbox.path().display());
    let mut entries: Vec<(&str, &[u8], git2::Oid)> = vec![
        ("100644", b"../escaped.yaml", evil),
        ("100644", absolute.as_bytes(), evil),
        ("100644", b".git/config", evil),
        ("40000", b".GIT", evil_dir),
        ("40000", b".git. ", evil_dir),
        ("40000", b"GIT~1", evil_dir),
        ("40000", b"..", evil_dir),
        ("40000", b"apps", apps),
    ];
    entries.sort_by(|a, b| a.1.cmp(b.1));
    let root = raw_tree(&git, &entries);
    commit(&git, root, "hostile names");
    let config_before = std::fs::read(work.join(".git/config")).unwrap();
    let before = listing(sandbox.path());

    let path = work.to_str().unwrap();
    for args in [
        vec!["simulate", "--from", "HEAD", path],
        vec!["simulate", "--from", "HEAD", "--to", "HEAD", path],
        vec!["fix", "--base", "HEAD", path],
        vec!["fix", path],
    ] {
        let run = fluxmend_with_tmpdir(&args, &tmp);
        assert!(
            run.code == 0 || (run.code == 1 && args[0] == "fix"),
            "{args:?}\n{}\n{}",
            run.stdout,
            run.stderr
        );
        // simulate says what it left out of the revision, as check says it of a work tree.
        if args[0] == "simulate" {
            for name in ["../escaped.yaml", ".git/config", "GIT~1", absolute.as_str()] {
                assert!(
                    run.stderr
                        .contains(&format!("warning: at HEAD: {name}: skipped")),
                    "{args:?}: {name} not reported:\n{}",
                    run.stderr
                );
            }
        }
    }
    // Nothing below the sandbox changed: no file escaped the (former) temporary tree, nothing
    // was left in TMPDIR, git's own files are untouched.
    assert_eq!(listing(sandbox.path()), before);
    assert_eq!(
        std::fs::read(work.join(".git/config")).unwrap(),
        config_before
    );

    // The revision holds only apps/cm.yaml; each refused entry is reported once.
    let repo = load_revision(&work, "HEAD", &[], None).unwrap();
    let paths: Vec<&str> = repo.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["apps/cm.yaml"]);
    let refused: Vec<(String, String)> = diagnostic_files(&repo)
        .into_iter()
        .filter(|(_, m)| m.contains("git refuses a tree entry"))
        .collect();
    assert_eq!(refused.len(), 7, "{refused:#?}");
    for name in [
        "../escaped.yaml",
        ".git/config",
        ".GIT",
        "GIT~1",
        "..",
        &absolute,
    ] {
        assert!(
            refused.iter().any(|(f, _)| f == name),
            "{name} not reported: {refused:#?}"
        );
    }
    assert!(
        repo.diagnostics
            .iter()
            .all(|d| d.severity == fluxmend::diagnostics::Severity::Warning
                || !d.message.contains("git refuses"))
    );
    assert!(!repo.is_dir(".GIT") && !repo.is_file("../escaped.yaml"));
}

/// Trees nested deeper than git's own limit (`core.maxTreeDepth`, 4096): a crafted commit can
/// nest them without end, and 20,000 levels overflowed the stack. What lies below the limit is
/// skipped and said; the rest of the revision is read.
#[test]
fn trees_nested_beyond_gits_limit_are_skipped_and_said() {
    let work = tempfile::tempdir().unwrap();
    let git = git2::Repository::init(work.path()).unwrap();
    let cm = git.blob(CONFIGMAP.as_bytes()).unwrap();
    let mut deep = raw_tree(&git, &[("100644", b"deep.yaml", cm)]);
    for _ in 0..20_000 {
        deep = raw_tree(&git, &[("40000", b"d", deep)]);
    }
    let root = raw_tree(&git, &[("100644", b"cm.yaml", cm), ("40000", b"d", deep)]);
    commit(&git, root, "deep");
    let path = work.path().to_str().unwrap();
    let run = common::fluxmend(["simulate", "--from", "HEAD", path]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("deeper than 4096 directories"),
        "{}",
        run.stderr
    );
    let repo = load_revision(work.path(), "HEAD", &[], None).unwrap();
    let paths: Vec<&str> = repo.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["cm.yaml"]);
}

/// A zlib stream of `data` in stored (uncompressed) blocks: a loose object written by hand.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let chunks: Vec<&[u8]> = data.chunks(65_535).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

#[test]
fn blobs_over_the_size_limit_are_judged_by_their_header_and_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let git = git2::Repository::init(dir.path()).unwrap();
    let cm = git.blob(CONFIGMAP.as_bytes()).unwrap();
    // A real blob one byte over the limit.
    let limit = fluxmend::load::MAX_FILE_BYTES as usize;
    let mut big = String::from("a: ");
    big.push_str(&"x".repeat(limit + 1 - big.len() - 1));
    big.push('\n');
    let big = git.blob(big.as_bytes()).unwrap();
    // A loose object whose header claims 2 GB and holds a few bytes: reading it would fail
    // (and a real one would cost 2 GB); its header alone says it is over the limit.
    let liar = git2::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
    let loose = dir
        .path()
        .join(".git/objects/01/23456789abcdef0123456789abcdef01234567");
    std::fs::create_dir_all(loose.parent().unwrap()).unwrap();
    let mut file = std::fs::File::create(&loose).unwrap();
    file.write_all(&zlib_stored(b"blob 2000000000\0kind: ConfigMap\n"))
        .unwrap();
    drop(file);
    let root = raw_tree(
        &git,
        &[
            ("100644", b"big.yaml", big),
            ("100644", b"cm.yaml", cm),
            ("100644", b"liar.yaml", liar),
        ],
    );
    commit(&git, root, "big blobs");

    let repo = load_revision(dir.path(), "HEAD", &[], None).unwrap();
    let paths: Vec<&str> = repo.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["cm.yaml"]);
    let messages: BTreeMap<String, String> = diagnostic_files(&repo).into_iter().collect();
    assert_eq!(
        messages.get("big.yaml").map(String::as_str),
        Some(
            format!(
                "skipped: {} bytes is over the {limit} byte limit",
                limit + 1
            )
            .as_str()
        ),
        "{messages:#?}"
    );
    assert_eq!(
        messages.get("liar.yaml").map(String::as_str),
        Some(format!("skipped: 2000000000 bytes is over the {limit} byte limit").as_str()),
        "{messages:#?}"
    );
    let run = common::fluxmend(["simulate", "--from", "HEAD", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

/// A work tree committed as it is: the revision loads to the same repository (files and their
/// text, directories, other files, diagnostics) and the same model (generated names, which
/// hash files read from the revision), ignore files, Flux's defaults, a link, a Helm chart,
/// unreadable YAML and the configuration's `exclude` included.
// (A symbolic link in the tree: unix only.)
#[cfg(unix)]
#[test]
fn a_revision_loads_as_its_checkout_does() {
    use common::tree;
    use fluxmend::model::{Model, ModelOptions};
    let repo = common::TempRepo::empty();
    repo.write(".gitignore", "*.tmp.yaml\n!keep.tmp.yaml\nbuild/\n")
        .write("apps/cm.yaml", CONFIGMAP)
        .write("apps/scratch.tmp.yaml", CONFIGMAP)
        .write("apps/keep.tmp.yaml", CONFIGMAP)
        .write("build/out.yaml", CONFIGMAP)
        .write("apps/.sourceignore", "ignored/\n*.txt\n!notes/keep.txt\n")
        .write("apps/ignored/cm.yaml", CONFIGMAP)
        .write("apps/notes/a.txt", "a")
        .write("apps/notes/keep.txt", "b")
        .write("apps/nested/.gitignore", "\u{feff}secret.yaml\n")
        .write("apps/nested/secret.yaml", CONFIGMAP)
        .write("apps/nested/open.yaml", CONFIGMAP)
        .write(".github/workflows/ci.yaml", "on: push\n")
        .write("logo.png", "png")
        .write("charts/x/Chart.yaml", "name: x\n")
        .write("charts/x/values.yaml", "a: 1\n")
        .write("charts/x/templates/d.yaml", "{{ .Values.a }}\n")
        .write("bad/latin1.yaml", b"a: \xe9\n")
        .write("bad/nul.yaml", b"a: \0\n")
        .write("bad/broken.yaml", "a: [\n")
        .write("excluded/cm.yaml", CONFIGMAP)
        .write(
            "gen/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nconfigMapGenerator:\n  - name: gen\n    files:\n      - settings.conf\n",
        )
        .write("gen/settings.conf", "colour = blue\n")
        .write(
            "clusters/flux-system.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./gen\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        )
        .symlink("cm.yaml", "apps/link.yaml");
    git(repo.path(), &["init", "-q", "-b", "main"]);
    // Ignored files too: the revision holds them, and the load must leave them out.
    git(repo.path(), &["add", "-A", "-f"]);
    common::commit_all(repo.path(), "all");
    let exclude = vec!["excluded/".to_string()];
    let disk = Repo::load_excluding(repo.path(), &exclude).unwrap();
    let revision = load_revision(repo.path(), "HEAD", &exclude, None).unwrap();
    let files = |r: &Repo| {
        r.files
            .iter()
            .map(|f| (f.path.clone(), f.yaml.text().to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(files(&revision), files(&disk));
    assert_eq!(revision.dirs, disk.dirs);
    assert_eq!(
        revision.other_files().collect::<Vec<_>>(),
        disk.other_files().collect::<Vec<_>>()
    );
    assert_eq!(diagnostic_files(&revision), diagnostic_files(&disk));
    assert!(disk.file_id("apps/keep.tmp.yaml").is_some());
    assert!(disk.file_id("apps/scratch.tmp.yaml").is_none());
    assert!(disk.file_id("apps/nested/secret.yaml").is_none());
    assert!(disk.is_file("apps/notes/keep.txt") && !disk.is_file("apps/notes/a.txt"));
    assert!(disk.file_id(".github/workflows/ci.yaml").is_some());
    assert!(disk.file_id("excluded/cm.yaml").is_none());

    let options = ModelOptions {
        roots: Vec::new(),
        source_root: None,
        sources: Vec::new(),
    };
    let names = |r: &Repo| {
        let model = Model::build(r, &options);
        let mut names: Vec<String> = model
            .live_layers()
            .flat_map(|(_, l)| l.inventory().map(|(_, r)| r.key.to_string()))
            .collect();
        names.sort();
        (names, model.diagnostics.len())
    };
    let (on_disk, _) = names(&disk);
    assert!(
        on_disk.iter().any(|n| n.contains("gen-")),
        "the generator's name is hashed: {on_disk:?}"
    );
    assert_eq!(names(&revision), names(&disk));
    // The work tree is as it was.
    assert!(tree(repo.path()).contains_key("apps/cm.yaml"));

    // Loaded beside the work tree, the files whose bytes are the same are shared, the others
    // read from the revision: the result is the same.
    repo.write("apps/cm.yaml", CONFIGMAP.replace("a: b", "a: changed"));
    let work = Repo::load_excluding(repo.path(), &exclude).unwrap();
    let shared = load_revision(repo.path(), "HEAD", &exclude, Some(&work)).unwrap();
    assert_eq!(files(&shared), files(&revision));
    assert_eq!(diagnostic_files(&shared), diagnostic_files(&revision));
    let same = |r: &Repo, path: &str| r.files[r.file_id(path).unwrap() as usize].clone();
    assert!(std::sync::Arc::ptr_eq(
        &same(&shared, "apps/nested/open.yaml"),
        &same(&work, "apps/nested/open.yaml")
    ));
    assert!(same(&shared, "apps/cm.yaml").yaml.text().contains("a: b"));
}

/// The revision a clean checkout is at is its work tree: the work tree's model is the
/// revision's (`fix` plays the rollout from it rather than building it again), and it stops
/// being so when anything a model is built from differs: a generator's input that is not YAML
/// (only the generated name's hash tells), a YAML file, a file git does not track.
#[test]
fn a_clean_checkouts_revision_has_the_work_trees_model() {
    use fluxmend::model::{Model, ModelOptions};
    let repo = common::TempRepo::empty();
    repo.write(
        "gen/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cm.yaml\nconfigMapGenerator:\n  - name: gen\n    files:\n      - settings.conf\n",
    )
    .write("gen/settings.conf", "colour = blue\n")
    .write("gen/cm.yaml", CONFIGMAP)
    .write(
        "clusters/flux-system.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./gen\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    common::init_and_commit_all(repo.path(), "all");
    let options = ModelOptions::default();
    let applied = |model: &Model| {
        let mut names: Vec<String> = model
            .live_layers()
            .flat_map(|(_, l)| l.inventory().map(|(_, r)| r.key.to_string()))
            .collect();
        names.sort();
        names
    };
    // (the work tree's model is the revision's, the revision's own model's objects)
    let compare = || {
        let work = Repo::load(repo.path()).unwrap();
        let model = Model::build(&work, &options);
        let revision = load_revision(repo.path(), "HEAD", &[], Some(&work)).unwrap();
        let own = Model::build(&revision, &options);
        (model.is_model_of(&revision), applied(&model), applied(&own))
    };
    let (same, work, revision) = compare();
    assert!(same, "a clean checkout");
    assert_eq!(work, revision);
    assert!(work.iter().any(|n| n.contains("gen-")), "{work:?}");

    // Only the generated ConfigMap's name tells that its input changed.
    repo.write("gen/settings.conf", "colour = red\n");
    let (same, work, revision) = compare();
    assert!(!same, "a generator's input changed");
    assert_ne!(work, revision);
    repo.write("gen/settings.conf", "colour = blue\n");
    assert!(compare().0);

    repo.write("gen/cm.yaml", CONFIGMAP.replace("a: b", "a: c"));
    assert!(!compare().0, "a YAML file changed");
    repo.write("gen/cm.yaml", CONFIGMAP);
    assert!(compare().0);

    // A generator naming a file that exists nowhere fails alike on both sides; one that
    // exists in the work tree only is an input that differs.
    let generator = std::fs::read_to_string(repo.path().join("gen/kustomization.yaml")).unwrap();
    repo.write(
        "gen/kustomization.yaml",
        generator.replace("- settings.conf", "- settings.conf\n      - missing.conf"),
    );
    common::commit_all(repo.path(), "a generator input that does not exist");
    assert!(compare().0, "missing from both");
    repo.write("gen/missing.conf", "x = 1\n");
    assert!(!compare().0, "an untracked generator input");
    std::fs::remove_file(repo.path().join("gen/missing.conf")).unwrap();

    repo.write("gen/extra.yaml", CONFIGMAP);
    assert!(!compare().0, "an untracked YAML file");
    std::fs::remove_file(repo.path().join("gen/extra.yaml")).unwrap();
    repo.write("gen/notes.txt", "n");
    assert!(!compare().0, "an untracked file of another kind");
}

/// At a revision where PATH does not exist, the repository is empty; a revision that does not
/// exist is an error naming it.
#[test]
fn a_path_missing_at_the_revision_is_empty_and_an_unknown_revision_an_error() {
    let repo = common::TempRepo::empty();
    repo.write("a/cm.yaml", CONFIGMAP);
    common::init_and_commit_all(repo.path(), "a");
    repo.write("b/cm.yaml", CONFIGMAP);
    let empty = load_revision(&repo.path().join("b"), "HEAD", &[], None).unwrap();
    assert!(empty.files.is_empty() && empty.diagnostics.is_empty());
    let below = load_revision(&repo.path().join("a"), "HEAD", &[], None).unwrap();
    assert_eq!(below.files[0].path, "cm.yaml");
    let err = load_revision(repo.path(), "no-such-rev", &[], None).unwrap_err();
    assert!(
        err.to_string().contains("`no-such-rev` is not a revision"),
        "{err}"
    );
}

/// A revision whose objects are not all here (a partial clone, a damaged store) is an error,
/// never a repository with files missing: a FluxInstance missing from the base would look
/// unprotected, or never deployed.
#[test]
fn a_revision_with_missing_objects_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let git = git2::Repository::init(dir.path()).unwrap();
    let cm = git.blob(CONFIGMAP.as_bytes()).unwrap();
    let absent = git2::Oid::from_str("89abcdef0123456789abcdef0123456789abcdef").unwrap();
    let root = raw_tree(
        &git,
        &[("100644", b"cm.yaml", cm), ("100644", b"lost.yaml", absent)],
    );
    commit(&git, root, "incomplete");
    let err = load_revision(dir.path(), "HEAD", &[], None).unwrap_err();
    assert!(
        err.to_string().contains("objects are incomplete") && err.to_string().contains("lost.yaml"),
        "{err}"
    );
    let run = common::fluxmend(["fix", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("lost.yaml") && run.stderr.contains("the default base, HEAD"),
        "{}",
        run.stderr
    );
}
