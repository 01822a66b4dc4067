//! FM003's fix: the list becomes one entry whose patterns are the alternations of the entries',
//! exact when the entries are every combination of their issuers and subjects, wider otherwise.

use std::sync::LazyLock;

use crate::edit::{Changeset, TextEdit};
use crate::rules::{Fix, report_text};

use super::merge::{canonical, merge};
use super::meta::META;
use super::sites::Site;

static EXACT_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "exact"));

static WIDER_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "wider"));

/// The (issuer, subject) combinations the merged entry accepts that no entry named.
fn unlisted_pairs(entries: &[(String, String)]) -> Vec<(String, String)> {
    let mut issuers: Vec<&String> = entries.iter().map(|(i, _)| i).collect();
    let mut subjects: Vec<&String> = entries.iter().map(|(_, s)| s).collect();
    issuers.dedup();
    subjects.dedup();
    let mut out = Vec::new();
    for i in &issuers {
        for s in &subjects {
            let pair = ((*i).clone(), (*s).clone());
            if !entries.contains(&pair) && !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}

/// The fix: the list becomes one entry whose patterns are the alternations of the entries'.
pub(super) fn plan(
    broken: bool,
    path: &str,
    site: &Site,
    edit: impl Fn(&str, &str) -> Result<TextEdit, String>,
) -> Result<Fix, String> {
    if broken {
        return Err(format!(
            "{path} does not parse to its end; fluxmend does not edit it"
        ));
    }
    let entries = site.entries.as_ref().ok_or(
        "an entry has keys other than issuer and subject (or an unknown alias); merge by hand",
    )?;
    let (issuer, subject, exact) = merge(entries);
    let mut changes = Changeset::default();
    changes.edit(path, edit(&issuer, &subject)?);
    let mut description = format!(
        "merge the {} identities into one entry: issuer {issuer}, subject {subject}",
        entries.len()
    );
    if !exact {
        let extra = unlisted_pairs(entries);
        description.push_str(&format!(
            " (wider than the list: it also accepts {})",
            extra
                .iter()
                .map(|(i, s)| format!("subject {s} from issuer {i}"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut fix = Fix::titled(
        format!("merge {} matchOIDCIdentity entries into one", entries.len()),
        description,
        if exact {
            EXACT_TRADEOFF.as_str()
        } else {
            WIDER_TRADEOFF.as_str()
        },
        changes,
    );
    fix.normalise = Some(canonical);
    Ok(fix)
}
