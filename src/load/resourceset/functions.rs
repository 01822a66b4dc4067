//! The template functions flux-operator's templates may call that fluxmend models: `default`,
//! `quote`, `squote`, `slugify`, `lower`, `upper`, `trim`, `toString`, `int`, `replace`,
//! `trimPrefix`, `trimSuffix`.

/// The supported functions; the piped value is the last argument.
pub(super) fn function(name: &str, args: &[String]) -> Result<String, String> {
    let last = || args.last().cloned().unwrap_or_default();
    Ok(match (name, args.len()) {
        ("default", 2) => {
            if args[1].is_empty() {
                args[0].clone()
            } else {
                args[1].clone()
            }
        }
        ("quote", 1) => format!("\"{}\"", last().replace('\\', "\\\\").replace('"', "\\\"")),
        ("squote", 1) => format!("'{}'", last()),
        ("slugify", 1) => slugify(&last()),
        ("lower", 1) => last().to_lowercase(),
        ("upper", 1) => last().to_uppercase(),
        ("trim", 1) => last().trim().to_string(),
        ("toString" | "int", 1) => last(),
        ("replace", 3) => args[2].replace(&args[0], &args[1]),
        ("trimPrefix", 2) => args[1]
            .strip_prefix(args[0].as_str())
            .unwrap_or(&args[1])
            .to_string(),
        ("trimSuffix", 2) => args[1]
            .strip_suffix(args[0].as_str())
            .unwrap_or(&args[1])
            .to_string(),
        _ => return Err(format!("the template uses `{name}`")),
    })
}

/// gosimple/slug as flux-operator configures it, for ASCII text: lower case, every run of other
/// characters one `-`, none at the ends, at most 63 characters cut at a `-` when one is near.
fn slugify(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out = out.trim_end_matches('-').to_string();
    if out.len() > 63 {
        let cut = out[..63].rfind('-').filter(|&i| i > 0).unwrap_or(63);
        out.truncate(cut);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugify_matches_gosimple_slug_on_ascii() {
        assert_eq!(slugify("Hello, World!"), "hello-world");
        assert_eq!(slugify("--a__b--"), "a-b");
        let long = "word-".repeat(20);
        let s = slugify(&long);
        assert!(s.len() <= 63 && !s.ends_with('-'), "{s}");
    }
}
