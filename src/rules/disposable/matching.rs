//! Whether an object is disposable: the catalogue's matchers applied to the opt-in label or
//! annotation, the kind, the images a pod spec runs, a HelmRelease's chart and values.

use crate::model::{Model, ObjectIdx};
use crate::parse::Value;

use super::catalogue::Catalogue;

impl Catalogue {
    /// The catalogue reason an image is a disposable workload's, if it is one.
    pub fn image_reason(&self, image: &str) -> Option<&str> {
        let repo = image_repository(image);
        self.images
            .iter()
            .find(|r| r.patterns.iter().any(|p| glob(p, &repo)))
            .map(|r| r.reason.as_str())
    }

    /// Why an object is disposable (shown in the finding), or `None`. Namespaces and CRDs
    /// never are: what they hold would go with them.
    pub fn classify(&self, model: &Model, idx: ObjectIdx) -> Option<String> {
        let obj = model.object(idx);
        if obj.key.is_namespace() || obj.key.is_crd() {
            return None;
        }
        let yaml = &model.repo.file(obj.file).yaml;
        let metadata = yaml.lookup(obj.root, &["metadata"]);
        for (what, key) in [("label", "labels"), ("annotation", "annotations")] {
            let value = metadata
                .and_then(|m| yaml.lookup(m, &[key]))
                .and_then(|m| yaml.entry(m, &self.opt_in))
                .and_then(|(_, v)| yaml.scalar(v));
            match value {
                Some("true") => return Some(format!("{what} {}: \"true\"", self.opt_in)),
                Some("false") => return None,
                _ => {}
            }
        }
        let group = obj.key.group();
        if let Some(rule) = self
            .kinds
            .iter()
            .find(|k| k.group == group && k.names.iter().any(|n| *n == obj.key.kind))
        {
            return Some(format!("{} ({})", obj.key.kind, rule.reason));
        }
        if obj.key.is_helm_release() {
            return self.classify_release(model, idx);
        }
        let pod_spec: &[&str] = match (group, obj.key.kind.as_str()) {
            ("", "Pod") => &["spec"],
            ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
            | ("batch", "Job") => &["spec", "template", "spec"],
            ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template", "spec"],
            // KEDA runs one Job per queued CI job.
            ("keda.sh", "ScaledJob") => &["spec", "jobTargetRef", "template", "spec"],
            _ => return None,
        };
        let spec = yaml.lookup(obj.root, pod_spec)?;
        let containers = yaml.lookup(spec, &["containers"])?;
        yaml.items(containers).iter().find_map(|&c| {
            let image = yaml.lookup(c, &["image"]).and_then(|n| yaml.scalar(n))?;
            let reason = self.image_reason(image)?;
            Some(format!("runs image {image}: {reason}"))
        })
    }

    fn classify_release(&self, model: &Model, idx: ObjectIdx) -> Option<String> {
        let obj = model.object(idx);
        let yaml = &model.repo.file(obj.file).yaml;
        let chart = model.helm_chart(idx)?;
        let values = yaml
            .lookup(obj.root, &["spec", "values"])
            .and_then(|n| yaml.value(n).ok())
            .unwrap_or(Value::Null);
        for rule in &self.charts {
            if !rule.names.contains(&chart) {
                continue;
            }
            if let Some(source) = &rule.source
                && !chart_source_url(model, idx).is_some_and(|u| u.contains(source.as_str()))
            {
                continue;
            }
            let holds = rule.when.iter().all(|(path, equals)| {
                let keys: Vec<&str> = path.split('.').collect();
                values.path(&keys).and_then(Value::as_str) == Some(equals.as_str())
            });
            if holds {
                return Some(format!("HelmRelease of chart {chart}: {}", rule.reason));
            }
        }
        if let Some(generic) = self
            .values_image_charts
            .iter()
            .find(|r| r.names.contains(&chart))
        {
            let mut images = Vec::new();
            values_images(&values, &mut images);
            for image in images {
                if let Some(reason) = self.image_reason(&image) {
                    return Some(format!(
                        "HelmRelease of chart {chart} ({}) whose values run image {image}: {reason}",
                        generic.reason
                    ));
                }
            }
        }
        None
    }
}

/// An image reference's repository: without tag or digest, `docker.io/` and `library/` removed.
pub fn image_repository(image: &str) -> String {
    let image = image.split('@').next().unwrap_or(image);
    let last_slash = image.rfind('/').map_or(0, |i| i + 1);
    let repo = match image[last_slash..].find(':') {
        Some(i) => &image[..last_slash + i],
        None => image,
    };
    let repo = repo
        .strip_prefix("docker.io/")
        .or_else(|| repo.strip_prefix("index.docker.io/"))
        .unwrap_or(repo);
    repo.strip_prefix("library/").unwrap_or(repo).to_string()
}

/// `*` matches any run of characters (`/` included); everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Images named in Helm values: `image: repo:tag` scalars and `repository:` (+ `tag:`) mappings.
fn values_images(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Map(entries) => {
            if let Some(repo) = value.str_at(&["repository"]) {
                let image = match value.str_at(&["tag"]) {
                    Some(tag) => format!("{repo}:{tag}"),
                    None => repo.to_string(),
                };
                if !out.contains(&image) {
                    out.push(image);
                }
            }
            for (k, v) in entries {
                if k.as_str() == Some("image")
                    && let Some(s) = v.as_str()
                    && !out.iter().any(|o| o == s)
                {
                    out.push(s.to_string());
                }
                values_images(v, out);
            }
        }
        Value::Seq(items) => items.iter().for_each(|i| values_images(i, out)),
        _ => {}
    }
}

/// The URL of the source a HelmRelease's chart comes from (HelmRepository, OCIRepository, …).
fn chart_source_url(model: &Model, idx: ObjectIdx) -> Option<String> {
    let obj = model.object(idx);
    let yaml = &model.repo.file(obj.file).yaml;
    let scalar = |keys: &[&str]| yaml.lookup(obj.root, keys).and_then(|n| yaml.scalar(n));
    let (kind, name, ns) =
        if let Some(kind) = scalar(&["spec", "chart", "spec", "sourceRef", "kind"]) {
            (
                kind,
                scalar(&["spec", "chart", "spec", "sourceRef", "name"])?,
                scalar(&["spec", "chart", "spec", "sourceRef", "namespace"]),
            )
        } else {
            (
                scalar(&["spec", "chartRef", "kind"])?,
                scalar(&["spec", "chartRef", "name"])?,
                scalar(&["spec", "chartRef", "namespace"]),
            )
        };
    let ns = ns.or(obj.key.namespace.as_deref());
    let target = model.object(model.find_object(kind, name, ns)?);
    let tyaml = &model.repo.file(target.file).yaml;
    tyaml
        .lookup(target.root, &["spec", "url"])
        .and_then(|n| tyaml.scalar(n))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_repositories_and_globs() {
        assert_eq!(
            image_repository("data.forgejo.org/forgejo/runner:11.1.2"),
            "data.forgejo.org/forgejo/runner"
        );
        assert_eq!(image_repository("docker.io/library/nginx:1"), "nginx");
        assert_eq!(
            image_repository("localhost:5000/ci/runner@sha256:abc"),
            "localhost:5000/ci/runner"
        );
        assert!(glob("*/forgejo/runner", "code.forgejo.org/forgejo/runner"));
        assert!(!glob("*/forgejo/runner", "forgejo/runner"));
        assert!(glob("*/drone-runner-*", "drone/drone-runner-kube"));
        assert!(!glob(
            "*/actions-runner",
            "ghcr.io/falcondev-oss/github-actions-cache-server"
        ));
        let c = Catalogue::builtin();
        for (image, matched) in [
            ("code.forgejo.org/forgejo/runner:6.3.1", true),
            ("gitea/act_runner:0.2.11", true),
            ("docker.gitea.com/act_runner:nightly", true),
            ("ghcr.io/actions/actions-runner:2.327.1", true),
            ("summerwind/actions-runner-dind:latest", true),
            ("gitlab/gitlab-runner:alpine", true),
            ("registry.gitlab.com/gitlab-org/gitlab-runner:v17", true),
            ("woodpeckerci/woodpecker-agent:v3", true),
            ("buildkite/agent:3", true),
            ("drone/drone-runner-kube:latest", true),
            ("jenkins/inbound-agent:latest", true),
            ("vegardit/gitea-act-runner:dind-rootless-0.2.13", true),
            ("ghcr.io/rpenziol/gitea-actions-runner-dind:latest", true),
            ("ghcr.io/falcondev-oss/github-actions-cache-server:8", false),
            ("codeberg.org/forgejo/forgejo:11", false),
            ("docker:28.3.2-dind", false),
            ("ghcr.io/renovatebot/renovate:41", false),
            ("my-runner:1", false),
        ] {
            assert_eq!(c.image_reason(image).is_some(), matched, "{image}");
        }
    }

    #[test]
    fn repository_catalogue_errors_carry_lines() {
        let err = Catalogue::from_text("images:\n  - match: [a/b]\n", "x.yaml").unwrap_err();
        assert_eq!(
            (err.line, err.message.as_str()),
            (2, "every matcher needs a `reason`")
        );
        let err = Catalogue::from_text("imgs: []\n", "x.yaml").unwrap_err();
        assert!(err.message.contains("unknown key `imgs`"), "{err}");
        let c = Catalogue::from_text(
            "images:\n  - reason: in-house runner\n    match: registry.example.com/ci/runner\n",
            "x.yaml",
        )
        .unwrap();
        assert_eq!(
            c.image_reason("registry.example.com/ci/runner:3"),
            Some("in-house runner")
        );
    }
}
