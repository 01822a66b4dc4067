//! A layer's `spec.path` against the directories of the repository: placeholders resolved
//! outside Flux (`__PROVIDER__`, `${CLUSTER}`) expand to every matching directory, and `..`
//! at the source root stays there (securejoin).

use crate::model::{Model, join};

/// Is a path segment a placeholder resolved outside Flux (`__PROVIDER__`, `${CLUSTER}`)?
fn placeholder_parts(segment: &str) -> Option<(&str, &str, &str)> {
    let (start, end) = if let Some(s) = segment.find("${") {
        (s, segment[s..].find('}')? + s + 1)
    } else {
        let s = segment.find("__")?;
        let e = segment[s + 2..].find("__")? + s + 4;
        if e - s <= 4
            || !segment[s + 2..e - 2]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return None;
        }
        (s, e)
    };
    Some((&segment[..start], &segment[start..end], &segment[end..]))
}

/// Placeholder text and the directory name it matched.
pub(super) type Bindings = Vec<(String, String)>;

/// Expand a layer path against existing directories: one (dir, bindings) per match.
pub(super) fn expand_path(
    model: &Model,
    base: &str,
    path: &str,
    clamped: &mut bool,
) -> Result<Vec<(String, Bindings)>, String> {
    let mut current: Vec<(String, Bindings)> = vec![(base.to_string(), Vec::new())];
    for segment in path.split('/') {
        let mut next = Vec::new();
        for (dir, bindings) in current {
            match segment {
                "" | "." => next.push((dir, bindings)),
                // Flux joins the path with securejoin: `..` at the source root stays there.
                ".." => match join(&dir, "..") {
                    Some(parent) if dir != base => next.push((parent, bindings)),
                    _ => {
                        *clamped = true;
                        next.push((dir, bindings));
                    }
                },
                seg => match placeholder_parts(seg) {
                    Some((prefix, placeholder, suffix)) => {
                        for sub in model.repo.subdirs(&dir) {
                            let name = sub.rsplit('/').next().unwrap_or(sub);
                            if name.len() <= prefix.len() + suffix.len()
                                || !name.starts_with(prefix)
                                || !name.ends_with(suffix)
                            {
                                continue;
                            }
                            let value = &name[prefix.len()..name.len() - suffix.len()];
                            // A placeholder stands for one value wherever it is written (it
                            // is replaced before Flux reads the path): a directory naming
                            // another is not on this path.
                            match bindings.iter().find(|(p, _)| p == placeholder) {
                                Some((_, bound)) if bound != value => {}
                                Some(_) => next.push((sub.to_string(), bindings.clone())),
                                None => {
                                    let mut b = bindings.clone();
                                    b.push((placeholder.to_string(), value.to_string()));
                                    next.push((sub.to_string(), b));
                                }
                            }
                        }
                    }
                    None => {
                        let joined = join(&dir, seg)
                            .ok_or_else(|| format!("path `{path}` leaves the source root"))?;
                        if model.repo.is_dir(&joined) {
                            next.push((joined, bindings));
                        }
                    }
                },
            }
        }
        current = next;
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::expand_path;
    use crate::load::{Repo, write_test_file as write};
    use crate::model::{Model, ModelOptions};

    /// A placeholder written twice in a path stands for one value: `clusters/a/apps/b` is not
    /// a match of `clusters/${CLUSTER}/apps/${CLUSTER}`, and each match binds it once.
    #[test]
    fn a_placeholder_written_twice_binds_one_value() {
        let tmp = tempfile::tempdir().unwrap();
        for dir in [
            "clusters/a/apps/a",
            "clusters/a/apps/b",
            "clusters/b/apps/b",
        ] {
            write(tmp.path(), &format!("{dir}/cm.yaml"), "kind: ConfigMap\n");
        }
        let repo = Repo::load(tmp.path()).unwrap();
        let model = Model::build(&repo, &ModelOptions::default());
        let mut clamped = false;
        let found = expand_path(
            &model,
            "",
            "./clusters/${CLUSTER}/apps/${CLUSTER}",
            &mut clamped,
        )
        .unwrap();
        let bound = |dir: &str, value: &str| {
            (
                dir.to_string(),
                vec![("${CLUSTER}".to_string(), value.to_string())],
            )
        };
        assert_eq!(
            found,
            [
                bound("clusters/a/apps/a", "a"),
                bound("clusters/b/apps/b", "b")
            ]
        );
        assert!(!clamped);
        // Two placeholders are independent.
        let found = expand_path(&model, "", "./clusters/${A}/apps/${B}", &mut clamped).unwrap();
        assert_eq!(found.len(), 3);
    }
}
