//! The merged patterns: the alternation of the entries' issuers and of their subjects, and the
//! canonical form the gates compare (every list as its merged entry), so a fix passes only when
//! it merged the identities and changed nothing else.

use crate::parse::{Value, YamlFile};

use super::meta::LIST;

/// `(?:a)|(?:b)` for several distinct patterns (`^(?:a|b)$` when each is anchored at both ends
/// and has no alternation of its own); the pattern itself for one. Go's `regexp` matches a
/// pattern anywhere in the text, so the alternation matches exactly what one of them matched.
fn alternation(patterns: &[&str]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for p in patterns {
        if !distinct.contains(p) {
            distinct.push(p);
        }
    }
    if distinct.len() == 1 {
        return distinct[0].to_string();
    }
    let anchored = |p: &&str| {
        p.starts_with('^') && p.ends_with('$') && !p.ends_with("\\$") && !p.contains('|')
    };
    if distinct.iter().all(anchored) {
        let inner: Vec<&str> = distinct.iter().map(|p| &p[1..p.len() - 1]).collect();
        return format!("^(?:{})$", inner.join("|"));
    }
    distinct
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|")
}

/// The merged entry, and whether it accepts exactly what the list accepted: true when the
/// entries are every combination of their distinct subjects and issuers.
pub(super) fn merge(entries: &[(String, String)]) -> (String, String, bool) {
    let issuers: Vec<&str> = entries.iter().map(|(i, _)| i.as_str()).collect();
    let subjects: Vec<&str> = entries.iter().map(|(_, s)| s.as_str()).collect();
    let count = |v: &[&str]| {
        let mut d = v.to_vec();
        d.sort_unstable();
        d.dedup();
        d.len()
    };
    let mut pairs = entries.to_vec();
    pairs.sort();
    pairs.dedup();
    let exact = pairs.len() == count(&issuers) * count(&subjects);
    (alternation(&issuers), alternation(&subjects), exact)
}

/// The canonical form of verify blocks, for the gates: every `matchOIDCIdentity` list (and a
/// JSON6902 `value` for one) becomes its merged single entry, and every `patch` string its
/// parsed, canonical documents. A fix passes when the content after equals the content before
/// in this form: it merged the identities and changed nothing else.
pub(super) fn canonical(value: Value) -> Value {
    match value {
        Value::Map(entries) => {
            let json_patch_list = entries.iter().any(|(k, v)| {
                k.as_str() == Some("path")
                    && v.as_str()
                        .is_some_and(|p| p.ends_with("/matchOIDCIdentity"))
            });
            Value::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| {
                        let v = match k.as_str() {
                            Some(LIST) => merged_value(v),
                            Some("value") if json_patch_list => merged_value(v),
                            Some("patch") => parsed_patch(v),
                            _ => canonical(v),
                        };
                        (k, v)
                    })
                    .collect(),
            )
        }
        Value::Seq(items) => Value::Seq(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// A list of identities as its one merged entry (unchanged when not a list of issuer/subject
/// pairs).
fn merged_value(list: Value) -> Value {
    let Value::Seq(items) = &list else {
        return list;
    };
    let pairs: Option<Vec<(String, String)>> = items
        .iter()
        .map(|i| match i {
            Value::Map(e) if e.len() == 2 => Some((
                i.str_at(&["issuer"])?.to_string(),
                i.str_at(&["subject"])?.to_string(),
            )),
            _ => None,
        })
        .collect();
    let Some(pairs) = pairs.filter(|p| !p.is_empty()) else {
        return list;
    };
    let (issuer, subject, _) = merge(&pairs);
    let s = |t: &str| Value::Str(t.to_string(), false);
    Value::Seq(vec![Value::Map(vec![
        (s("issuer"), s(&issuer)),
        (s("subject"), s(&subject)),
    ])])
}

/// A patch string as its parsed documents in canonical form (unchanged when it does not parse).
fn parsed_patch(value: Value) -> Value {
    let Value::Str(text, _) = &value else {
        return canonical(value);
    };
    let (yaml, error) = YamlFile::parse(text);
    if error.is_some() {
        return value;
    }
    let docs: Option<Vec<Value>> = yaml
        .docs()
        .iter()
        .map(|d| yaml.value(d.root).ok().map(canonical))
        .collect();
    match docs {
        Some(docs) => Value::Map(vec![(
            Value::Str("<patch>".into(), false),
            Value::Seq(docs),
        )]),
        None => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternation_keeps_each_pattern_whole() {
        assert_eq!(alternation(&["a", "a"]), "a");
        assert_eq!(alternation(&["^x$", "^y.*$"]), "^(?:x|y.*)$");
        // Unanchored patterns match anywhere: grouped whole, each keeps its meaning.
        assert_eq!(alternation(&["x", "^y"]), "(?:x)|(?:^y)");
        // An alternation inside a pattern must not leak into the other's anchors.
        assert_eq!(alternation(&["^a|b$", "^c$"]), "(?:^a|b$)|(?:^c$)");
    }

    proptest::proptest! {
        /// The alternation matches exactly what one of the patterns matched, with Go's
        /// unanchored `MatchString` semantics (Rust's `regex` agrees with RE2 on this syntax).
        #[test]
        fn alternation_matches_the_union(
            patterns in proptest::collection::vec("[\\^]?[ab.]{0,3}(\\|[ab])?(\\.\\*)?[$]?", 1..4),
            texts in proptest::collection::vec("[abc]{0,5}", 1..12),
        ) {
            let compiled: Vec<regex::Regex> = patterns
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect();
            proptest::prop_assume!(compiled.len() == patterns.len());
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            let merged = regex::Regex::new(&alternation(&refs)).unwrap();
            for t in &texts {
                proptest::prop_assert_eq!(
                    merged.is_match(t),
                    compiled.iter().any(|r| r.is_match(t)),
                    "{:?} vs {:?} on {:?}", alternation(&refs), patterns, t
                );
            }
        }
    }

    #[test]
    fn merge_is_exact_only_for_a_full_cross_product() {
        let e = |i: &str, s: &str| (i.to_string(), s.to_string());
        assert!(merge(&[e("i", "a"), e("i", "b")]).2);
        assert!(merge(&[e("i", "a"), e("j", "a"), e("i", "b"), e("j", "b")]).2);
        assert!(!merge(&[e("i", "a"), e("j", "b")]).2);
    }

    #[test]
    fn canonical_form_is_the_same_before_and_after_a_merge() {
        let parse = |t: &str| {
            let (y, e) = YamlFile::parse(t);
            assert!(e.is_none());
            y.value(y.docs()[0].root).unwrap()
        };
        let before = parse(
            "spec:\n  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: '^i$'\n        subject: '^a$'\n      - issuer: '^i$'\n        subject: '^b$'\n",
        );
        let after = parse(
            "spec:\n  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: '^i$'\n        subject: '^(?:a|b)$'\n",
        );
        let other = parse(
            "spec:\n  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: '^i$'\n        subject: '^(?:a|c)$'\n",
        );
        assert_eq!(canonical(before.clone()), canonical(after));
        assert_ne!(canonical(before), canonical(other));
    }
}
