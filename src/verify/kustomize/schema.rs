//! The fields kustomize v5.5 knows (`api/types`): a kustomization's, and each builtin plugin's
//! configuration, with the shape of each value and what the gate refuses.

/// How kustomize follows a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefKind {
    /// `resources`, `bases`: a file, a directory, or else a remote base.
    Resource,
    /// `components`: a directory.
    Component,
    /// A file read as data: patches, CRDs, transformer configurations, an OpenAPI schema,
    /// replacements, env files.
    File,
    /// A generator's `files` entry: `path`, or `key=path`.
    KeyFile,
    /// A strategic-merge patch: inline when it parses as objects, else a file.
    PatchOrPath,
    /// A generator, transformer or validator: inline configurations when the string parses as
    /// objects, else a file or a directory of them.
    Plugin,
}

/// The shape of a value in kustomize's Go types.
#[derive(Clone, Copy)]
pub(super) enum Shape {
    Str,
    Bool,
    Int,
    /// `map[string]string`
    StrMap,
    /// `map[string]bool`
    BoolMap,
    /// `[]string`
    Strs,
    List(&'static Shape),
    Struct(&'static [Field]),
    Ref(RefKind),
    Refs(RefKind),
    /// `map[string]string` whose `path` entry is a file (`openapi`).
    OpenApi,
    /// Refused wherever it appears, with the reason.
    Refused(&'static str),
}

pub(super) type Field = (&'static str, Shape);

pub(super) const HELM: Shape = Shape::Refused("a Helm chart, which the gate never inflates");

pub(super) const OBJECT_META: Shape = Shape::Struct(&[
    ("name", Shape::Str),
    ("namespace", Shape::Str),
    ("labels", Shape::StrMap),
    ("annotations", Shape::StrMap),
]);
pub(super) const FIELD_SPEC: Shape = Shape::Struct(&[
    ("group", Shape::Str),
    ("version", Shape::Str),
    ("kind", Shape::Str),
    ("path", Shape::Str),
    ("create", Shape::Bool),
]);
pub(super) const FIELD_SPECS: Shape = Shape::List(&FIELD_SPEC);
pub(super) const SELECTOR: Shape = Shape::Struct(&[
    ("group", Shape::Str),
    ("version", Shape::Str),
    ("kind", Shape::Str),
    ("name", Shape::Str),
    ("namespace", Shape::Str),
    ("annotationSelector", Shape::Str),
    ("labelSelector", Shape::Str),
]);
pub(super) const LABEL: Shape = Shape::Struct(&[
    ("pairs", Shape::StrMap),
    ("includeSelectors", Shape::Bool),
    ("includeTemplates", Shape::Bool),
    ("fields", FIELD_SPECS),
]);
pub(super) const PATCH: Shape = Shape::Struct(&[
    ("path", Shape::Ref(RefKind::File)),
    ("patch", Shape::Str),
    ("target", SELECTOR),
    ("options", Shape::BoolMap),
]);
pub(super) const IMAGE: Shape = Shape::Struct(&[
    ("name", Shape::Str),
    ("newName", Shape::Str),
    ("tagSuffix", Shape::Str),
    ("newTag", Shape::Str),
    ("digest", Shape::Str),
]);
pub(super) const FIELD_OPTIONS: Shape = Shape::Struct(&[
    ("delimiter", Shape::Str),
    ("index", Shape::Int),
    ("encoding", Shape::Str),
    ("create", Shape::Bool),
]);
pub(super) const SOURCE_SELECTOR: Shape = Shape::Struct(&[
    ("group", Shape::Str),
    ("version", Shape::Str),
    ("kind", Shape::Str),
    ("name", Shape::Str),
    ("namespace", Shape::Str),
    ("fieldPath", Shape::Str),
    ("options", FIELD_OPTIONS),
]);
pub(super) const TARGET_SELECTOR: Shape = Shape::Struct(&[
    ("select", SELECTOR),
    ("reject", Shape::List(&SELECTOR)),
    ("fieldPaths", Shape::Strs),
    ("options", FIELD_OPTIONS),
]);
pub(super) const REPLACEMENT: Shape = Shape::Struct(&[
    ("source", SOURCE_SELECTOR),
    ("targets", Shape::List(&TARGET_SELECTOR)),
]);
pub(super) const REPLACEMENT_FIELD: Shape = Shape::Struct(&[
    ("source", SOURCE_SELECTOR),
    ("targets", Shape::List(&TARGET_SELECTOR)),
    ("path", Shape::Ref(RefKind::File)),
]);
pub(super) const REPLICA: Shape = Shape::Struct(&[("name", Shape::Str), ("count", Shape::Int)]);
pub(super) const VAR: Shape = Shape::Struct(&[
    ("name", Shape::Str),
    (
        "objref",
        Shape::Struct(&[
            ("apiVersion", Shape::Str),
            ("group", Shape::Str),
            ("version", Shape::Str),
            ("kind", Shape::Str),
            ("name", Shape::Str),
            ("namespace", Shape::Str),
        ]),
    ),
    ("fieldref", Shape::Struct(&[("fieldPath", Shape::Str)])),
]);
pub(super) const SORT_OPTIONS: Shape = Shape::Struct(&[
    ("order", Shape::Str),
    (
        "legacySortOptions",
        Shape::Struct(&[("orderFirst", Shape::Strs), ("orderLast", Shape::Strs)]),
    ),
]);
pub(super) const GENERATOR_OPTIONS: Shape = Shape::Struct(&[
    ("labels", Shape::StrMap),
    ("annotations", Shape::StrMap),
    ("disableNameSuffixHash", Shape::Bool),
    ("immutable", Shape::Bool),
]);
/// `GeneratorArgs` with its `KvPairSources`, as both generators (and their plugins) inline it.
pub(super) const GENERATOR_ARGS: [Field; 8] = [
    ("namespace", Shape::Str),
    ("name", Shape::Str),
    ("behavior", Shape::Str),
    ("literals", Shape::Strs),
    ("files", Shape::Refs(RefKind::KeyFile)),
    ("envs", Shape::Refs(RefKind::File)),
    ("env", Shape::Ref(RefKind::File)),
    ("options", GENERATOR_OPTIONS),
];
pub(super) const fn with_type(args: &[Field; 8]) -> [Field; 9] {
    let mut out = [("type", Shape::Str); 9];
    let mut i = 0;
    while i < 8 {
        out[i] = args[i];
        i += 1;
    }
    out
}
pub(super) const SECRET_ARGS: [Field; 9] = with_type(&GENERATOR_ARGS);

/// `types.Kustomization` of kustomize v5.5, every field.
pub(super) const KUSTOMIZATION: &[Field] = &[
    ("kind", Shape::Str),
    ("apiVersion", Shape::Str),
    ("metadata", OBJECT_META),
    ("openapi", Shape::OpenApi),
    ("namePrefix", Shape::Str),
    ("nameSuffix", Shape::Str),
    ("namespace", Shape::Str),
    ("commonLabels", Shape::StrMap),
    ("labels", Shape::List(&LABEL)),
    ("commonAnnotations", Shape::StrMap),
    ("patchesStrategicMerge", Shape::Refs(RefKind::PatchOrPath)),
    ("patchesJson6902", Shape::List(&PATCH)),
    ("patches", Shape::List(&PATCH)),
    ("images", Shape::List(&IMAGE)),
    ("imageTags", Shape::List(&IMAGE)),
    ("replacements", Shape::List(&REPLACEMENT_FIELD)),
    ("replicas", Shape::List(&REPLICA)),
    ("vars", Shape::List(&VAR)),
    ("sortOptions", SORT_OPTIONS),
    ("resources", Shape::Refs(RefKind::Resource)),
    ("components", Shape::Refs(RefKind::Component)),
    ("crds", Shape::Refs(RefKind::File)),
    ("bases", Shape::Refs(RefKind::Resource)),
    (
        "configMapGenerator",
        Shape::List(&Shape::Struct(&GENERATOR_ARGS)),
    ),
    ("secretGenerator", Shape::List(&Shape::Struct(&SECRET_ARGS))),
    ("helmGlobals", HELM),
    ("helmCharts", HELM),
    ("helmChartInflationGenerator", HELM),
    ("generatorOptions", GENERATOR_OPTIONS),
    ("configurations", Shape::Refs(RefKind::File)),
    ("generators", Shape::Refs(RefKind::Plugin)),
    ("transformers", Shape::Refs(RefKind::Plugin)),
    ("validators", Shape::Refs(RefKind::Plugin)),
    ("buildMetadata", Shape::Strs),
];

/// The fields a kustomization may have when it is built for plugin configurations (a
/// `transformers:` entry naming a directory): only what places and names them. Anything that
/// rewrites objects (patches, replacements, custom field specs) could rewrite a configuration's
/// file path after fluxmend read it.
pub(super) const PLUGIN_DIRECTORY_FIELDS: &[&str] = &[
    "kind",
    "apiVersion",
    "metadata",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "commonLabels",
    "commonAnnotations",
    "resources",
    "bases",
    "buildMetadata",
    "sortOptions",
];

pub(super) const PREFIX_FIELDS: &[Field] = &[("prefix", Shape::Str), ("fieldSpecs", FIELD_SPECS)];
pub(super) const SUFFIX_FIELDS: &[Field] = &[("suffix", Shape::Str), ("fieldSpecs", FIELD_SPECS)];
pub(super) const fn with_metadata(args: &[Field; 8]) -> [Field; 9] {
    let mut out = [("metadata", OBJECT_META); 9];
    let mut i = 0;
    while i < 8 {
        out[i + 1] = args[i];
        i += 1;
    }
    out
}
pub(super) const CONFIG_MAP_GENERATOR: [Field; 9] = with_metadata(&GENERATOR_ARGS);
pub(super) const SECRET_GENERATOR: [Field; 10] = {
    let mut out = [("type", Shape::Str); 10];
    let mut i = 0;
    while i < 9 {
        out[i] = CONFIG_MAP_GENERATOR[i];
        i += 1;
    }
    out
};

/// The builtin plugins (`apiVersion: builtin`) kustomize v5.5 can configure, with the fields
/// of each (`api/internal/builtins`). Helm's is refused.
pub(super) const PLUGINS: &[(&str, Option<&[Field]>)] = &[
    (
        "AnnotationsTransformer",
        Some(&[("annotations", Shape::StrMap), ("fieldSpecs", FIELD_SPECS)]),
    ),
    ("ConfigMapGenerator", Some(&CONFIG_MAP_GENERATOR)),
    ("SecretGenerator", Some(&SECRET_GENERATOR)),
    ("HashTransformer", Some(&[])),
    (
        "IAMPolicyGenerator",
        Some(&[
            ("cloud", Shape::Str),
            (
                "kubernetesService",
                Shape::Struct(&[("name", Shape::Str), ("namespace", Shape::Str)]),
            ),
            (
                "serviceAccount",
                Shape::Struct(&[("name", Shape::Str), ("projectId", Shape::Str)]),
            ),
        ]),
    ),
    (
        "ImageTagTransformer",
        Some(&[("imageTag", IMAGE), ("fieldSpecs", FIELD_SPECS)]),
    ),
    (
        "LabelTransformer",
        Some(&[("labels", Shape::StrMap), ("fieldSpecs", FIELD_SPECS)]),
    ),
    (
        "NamespaceTransformer",
        Some(&[
            ("metadata", OBJECT_META),
            ("fieldSpecs", FIELD_SPECS),
            ("unsetOnly", Shape::Bool),
            ("setRoleBindingSubjects", Shape::Str),
        ]),
    ),
    (
        "PatchJson6902Transformer",
        Some(&[
            ("target", SELECTOR),
            ("path", Shape::Ref(RefKind::File)),
            ("jsonOp", Shape::Str),
        ]),
    ),
    (
        "PatchStrategicMergeTransformer",
        Some(&[
            ("paths", Shape::Refs(RefKind::PatchOrPath)),
            ("patches", Shape::Str),
        ]),
    ),
    (
        "PatchTransformer",
        Some(&[
            ("path", Shape::Ref(RefKind::File)),
            ("patch", Shape::Str),
            ("target", SELECTOR),
            ("options", Shape::BoolMap),
        ]),
    ),
    ("PrefixTransformer", Some(PREFIX_FIELDS)),
    ("SuffixTransformer", Some(SUFFIX_FIELDS)),
    (
        "ReplacementTransformer",
        Some(&[
            ("replacements", Shape::List(&REPLACEMENT_FIELD)),
            // `json:"omitempty"` names the field `omitempty`.
            ("omitempty", Shape::List(&REPLACEMENT)),
        ]),
    ),
    (
        "ReplicaCountTransformer",
        Some(&[("replica", REPLICA), ("fieldSpecs", FIELD_SPECS)]),
    ),
    (
        "ValueAddTransformer",
        Some(&[
            ("value", Shape::Str),
            (
                "targets",
                Shape::List(&Shape::Struct(&[
                    ("selector", SELECTOR),
                    ("fieldPath", Shape::Str),
                    ("filePathPosition", Shape::Int),
                ])),
            ),
            ("targetFilePath", Shape::Ref(RefKind::File)),
        ]),
    ),
    ("HelmChartInflationGenerator", None),
];

pub(super) fn refused(shape: Shape) -> &'static str {
    match shape {
        Shape::Refused(why) => why,
        _ => "refused",
    }
}
