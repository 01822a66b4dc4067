//! Repository-relative paths: `/`-separated, no leading `./`, `""` for the root.

/// Normalise a relative path; `None` when `..` climbs above the root.
pub fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// Join `rel` onto directory `base` and normalise; `None` when the result leaves the root.
pub fn join(base: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    if base.is_empty() {
        normalize(rel)
    } else {
        normalize(&format!("{base}/{rel}"))
    }
}

/// The relative path from directory `from` to directory `to` (both repository-relative).
pub fn relative_path(from: &str, to: &str) -> String {
    let a: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = to.split('/').filter(|s| !s.is_empty()).collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<&str> = vec![".."; a.len() - common];
    parts.extend(&b[common..]);
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_and_refuses_to_climb_out() {
        assert_eq!(join("a/b", "../c").as_deref(), Some("a/c"));
        assert_eq!(join("", "./x/./y/").as_deref(), Some("x/y"));
        assert_eq!(join("a", "../../x"), None);
        assert_eq!(join("a", "/etc"), None);
    }
}
