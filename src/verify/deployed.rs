//! The revision the cluster runs, as the transition gate plays from it ([`Base::Revision`]):
//! read beside the work tree, and modelled only when it differs from the work tree.

use crate::load::Repo;
use crate::model::{Model, ModelOptions};

use super::Base;

/// A revision the cluster runs, read beside the work tree (`fix --base`, or its default).
pub struct Deployed {
    /// The revision as people name it (`origin/main`), for reports.
    pub name: String,
    /// Its repository, unless the work tree's model is its model too.
    differs: Option<Repo>,
}

impl Deployed {
    /// The revision `name`, loaded as `repo` beside the work tree's `model`. A clean checkout's
    /// revision holds what its work tree holds ([`Model::is_model_of`]): its repository and git
    /// objects are then dropped, and `model` is the deployed model too, rather than a second
    /// model of the same files (issue 26).
    pub fn new(name: String, repo: Repo, model: &Model) -> Deployed {
        let differs = (!model.is_model_of(&repo)).then_some(repo);
        Deployed { name, differs }
    }

    /// Whether the revision is modelled on its own ([`Deployed::model`]).
    pub fn differs(&self) -> bool {
        self.differs.is_some()
    }

    /// The revision's model, built beside the work tree's `model` ([`Model::build_variant`]);
    /// `None` when `model` is its model.
    pub fn model(&self, model: &Model, options: &ModelOptions) -> Option<Model<'_>> {
        let repo = self.differs.as_ref()?;
        Some(model.build_variant(repo, options))
    }
}

/// The transition gate's base: the work tree when no revision was read (`deployed` is `None`);
/// else the revision, its rollout played from `built` ([`Deployed::model`]) or, when it holds
/// what the work tree holds, from the work tree's `model`.
pub fn base_of<'a>(
    deployed: Option<&'a Deployed>,
    built: Option<&'a Model<'a>>,
    model: &'a Model<'a>,
) -> Base<'a> {
    deployed.map_or(Base::WorkTree, |d| Base::Revision {
        name: &d.name,
        model: built.unwrap_or(model),
    })
}
