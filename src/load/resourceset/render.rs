//! A template rendered with an input set (Go `text/template` with `<<`/`>>` delimiters,
//! `missingkey=error`): parsed, then run within the budget.

use super::budget::{Budget, NotExpanded};
use super::inputs::Inputs;
use super::parse::{parse_nodes, tokenize};
use super::run::{Env, run};

/// Render the `<< … >>` actions of a template with the input set (Go `text/template` with
/// `<<`/`>>` delimiters, `missingkey=error`), for the subset listed in the module documentation
/// plus `if`/`else`/`end` and `range $x := …`/`end`; anything else is an error naming it.
pub fn render(template: &str, inputs: Option<&Inputs>) -> Result<String, String> {
    render_within(template, inputs, &mut Budget::new()).map_err(|e| match e {
        NotExpanded::Unsupported(why) | NotExpanded::Limit(why) => why,
    })
}

pub(super) fn render_within(
    template: &str,
    inputs: Option<&Inputs>,
    budget: &mut Budget,
) -> Result<String, NotExpanded> {
    let tokens = tokenize(template)?;
    let mut at = 0;
    let nodes = parse_nodes(&tokens, &mut at, &[], 0)?;
    if at < tokens.len() {
        return Err(format!("an unexpected `{}`", tokens[at].action_text()).into());
    }
    let mut env = Env {
        inputs,
        vars: Vec::new(),
        budget,
    };
    let mut out = String::with_capacity(template.len());
    run(&nodes, &mut env, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::parse::Value;

    fn inputs(pairs: &[(&str, &str)]) -> Inputs {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Str(v.to_string(), false)))
            .collect()
    }

    #[test]
    fn renders_references_and_the_supported_functions() {
        let i = inputs(&[("tenant", "Team One"), ("env", ""), ("semver", ">=1.0.0")]);
        let r = |t: &str| render(t, Some(&i));
        assert_eq!(
            r("tenant-<< inputs.tenant | slugify >>").unwrap(),
            "tenant-team-one"
        );
        assert_eq!(r("<< inputs.env | default \"prod\" >>").unwrap(), "prod");
        assert_eq!(r("<< inputs.semver | quote >>").unwrap(), "\">=1.0.0\"");
        assert_eq!(r("<<- inputs.tenant | lower ->>  x").unwrap(), "team onex");
        assert_eq!(r("a << \"b|c\" >> d").unwrap(), "a b|c d");
        assert_eq!(
            r("<< inputs.tenant | replace \" \" \"_\" | upper >>").unwrap(),
            "TEAM_ONE"
        );
    }

    #[test]
    fn refuses_what_it_cannot_know_or_does_not_model() {
        let i = inputs(&[("tenant", "a")]);
        for (template, why) in [
            ("<< inputs.missing >>", "no input `missing`"),
            ("<< inputs.id >>", "flux-operator computes"),
            ("<< with inputs.tenant >>x<< end >>", "uses `with`"),
            ("<< if inputs.tenant >>x", "without its `end`"),
            ("<< range inputs.tenant >>x<< end >>", "only `range $x :="),
            ("<< inputs.tenant | toYaml | nindent 4 >>", "uses `toYaml`"),
            ("<< inputs.tenant", "unclosed"),
        ] {
            let e = render(template, Some(&i)).unwrap_err();
            assert!(e.contains(why), "{template}: {e}");
        }
        assert!(render("<< inputs.tenant >>", None).is_err());
    }

    /// The bundle pattern: one document per item of a list input, a field only when a boolean
    /// input is true (an unquoted `false` is false, as in the JSON the operator reads), `<<-`
    /// and `->>` trimming as Go does.
    #[test]
    fn renders_range_and_if() {
        let template = "<<- range $app := inputs.apps >>\n---\nname: << $app >>\n<<- if inputs.decryption >>\ndecrypt: yes\n<<- else >>\ndecrypt: no\n<<- end >>\n<<- end >>\n";
        let mut i = Inputs::new();
        i.insert(
            "apps".into(),
            Value::Seq(vec![
                Value::Str("a".into(), false),
                Value::Str("b".into(), false),
            ]),
        );
        i.insert("decryption".into(), Value::Str("true".into(), false));
        assert_eq!(
            render(template, Some(&i)).unwrap(),
            "\n---\nname: a\ndecrypt: yes\n---\nname: b\ndecrypt: yes\n"
        );
        i.insert("decryption".into(), Value::Str("false".into(), false));
        assert_eq!(
            render(template, Some(&i)).unwrap(),
            "\n---\nname: a\ndecrypt: no\n---\nname: b\ndecrypt: no\n"
        );
        // A quoted "false" is a non-empty string: true.
        i.insert("decryption".into(), Value::Str("false".into(), true));
        assert!(render(template, Some(&i)).unwrap().contains("decrypt: yes"));
    }
}
