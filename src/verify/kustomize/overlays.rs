//! What a Flux Kustomization adds to a build, as Flux's kustomize generator adds it: the
//! overlays read from its spec, and the kustomization kubectl builds for a job with them
//! added. A file of its own because it is Flux's behaviour, where `sandbox` is kustomize's:
//! which files a build reaches.

use serde_json::{Map, Value as Json};

use crate::model::{Layer, Model};
use crate::parse::Value;

use super::go_yaml::first_tag;
use super::kustfile::canonical;

/// What a Flux Kustomization adds to the build (fluxcd/pkg's kustomize generator): its
/// `targetNamespace`, `namePrefix`, `nameSuffix`, `patches` (`patch` and `target` only: Flux's
/// API has no other field), `images` and `components`, as Flux's API reads them.
pub struct Overlays {
    /// The fields as a JSON object (`""` when there are none).
    pub json: String,
    pub components: Vec<String>,
}

pub fn flux_overlays(model: &Model, layer: &Layer) -> Result<Overlays, String> {
    let none = Overlays {
        json: String::new(),
        components: Vec::new(),
    };
    let Some(obj) = layer.object.map(|o| model.object(o)) else {
        return Ok(none);
    };
    let source = model.repo.file(obj.file);
    let yaml = &source.yaml;
    let Ok(doc) = yaml.value(obj.root) else {
        return Ok(none);
    };
    let Some(spec) = doc.get("spec") else {
        return Ok(none);
    };
    let region = yaml.docs().get(obj.doc()).map_or(yaml.text(), |d| {
        &yaml.text()[d.region().start..d.region().end]
    });
    if let Some((line, _)) = first_tag(region) {
        let first = yaml
            .docs()
            .get(obj.doc())
            .map_or(1, |d| yaml.line_of(d.region().start));
        return Err(format!(
            "{}:{}: a tag (`!…`) in the Flux Kustomization: decoded into other bytes than fluxmend reads",
            source.path,
            first + line - 1
        ));
    }
    let string = |v: &Value| v.as_str().map(|s| Json::String(s.to_string()));
    let mut out = Map::new();
    for (flux, kustomize) in [
        ("targetNamespace", "namespace"),
        ("namePrefix", "namePrefix"),
        ("nameSuffix", "nameSuffix"),
    ] {
        if let Some(v) = spec.get(flux).and_then(string).filter(|v| v != "") {
            out.insert(kustomize.into(), v);
        }
    }
    let pick = |item: &Value, fields: &[&str]| -> Json {
        Json::Object(
            fields
                .iter()
                .filter_map(|f| Some(((*f).to_string(), item.get(f).and_then(string)?)))
                .collect(),
        )
    };
    let patches: Vec<Json> = spec
        .get("patches")
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let mut patch = Map::new();
            if let Some(text) = p.get("patch").and_then(string) {
                patch.insert("patch".into(), text);
            }
            if let Some(target) = p.get("target") {
                patch.insert(
                    "target".into(),
                    pick(
                        target,
                        &[
                            "group",
                            "version",
                            "kind",
                            "name",
                            "namespace",
                            "labelSelector",
                            "annotationSelector",
                        ],
                    ),
                );
            }
            Json::Object(patch)
        })
        .collect();
    let images: Vec<Json> = spec
        .get("images")
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .map(|i| pick(i, &["name", "newName", "newTag", "digest"]))
        .collect();
    let components: Vec<String> = spec
        .get("components")
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    for (key, list) in [
        ("patches", patches),
        ("images", images),
        (
            "components",
            components.iter().cloned().map(Json::String).collect(),
        ),
    ] {
        if !list.is_empty() {
            out.insert(key.into(), Json::Array(list));
        }
    }
    Ok(Overlays {
        json: if out.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&Json::Object(out)).expect("JSON values serialise")
        },
        components,
    })
}

/// The kustomization kubectl builds for a job: the variant's own (canonical) or the one Flux
/// generates (`resources` listing what the sandbox holds below the directory), with the Flux
/// overlays added — a field the file has is replaced (`namespace`, prefixes) or extended
/// (`components`, `patches`, `images`).
pub fn job_kustomization(
    own: Option<&str>,
    generated_resources: &[String],
    overlays: &str,
) -> Result<String, String> {
    let mut doc: Map<String, Json> = match own {
        Some(text) => match serde_json::from_str(text) {
            Ok(Json::Object(map)) => map,
            _ => return Err("the kustomization written for the build is not an object".into()),
        },
        None => {
            let mut map = Map::new();
            map.insert(
                "apiVersion".into(),
                Json::String("kustomize.config.k8s.io/v1beta1".into()),
            );
            map.insert("kind".into(), Json::String("Kustomization".into()));
            map.insert(
                "resources".into(),
                Json::Array(
                    generated_resources
                        .iter()
                        .cloned()
                        .map(Json::String)
                        .collect(),
                ),
            );
            map
        }
    };
    if !overlays.is_empty() {
        let Ok(Json::Object(add)) = serde_json::from_str::<Json>(overlays) else {
            return Err("overlays".into());
        };
        for (k, v) in add {
            match (doc.get_mut(&k), v) {
                (Some(Json::Array(existing)), Json::Array(more)) => existing.extend(more),
                (_, v) => {
                    doc.insert(k, v);
                }
            }
        }
    }
    Ok(canonical(&Json::Object(doc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlays_extend_or_replace() {
        let text = job_kustomization(
            Some("{\"resources\":[\"a.yaml\"],\"namespace\":\"x\",\"patches\":[{\"path\":\"p.yaml\"}]}"),
            &[],
            "{\"namespace\":\"y\",\"patches\":[{\"patch\":\"q\"}]}",
        )
        .unwrap();
        let json: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"resources": ["a.yaml"], "namespace": "y", "patches": [{"path": "p.yaml"}, {"patch": "q"}]})
        );
    }
}
