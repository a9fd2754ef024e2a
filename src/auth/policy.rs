//! Who may read what: a dataset with `read = [...]` is private, readable by the callers
//! whose name or one of whose groups is listed (names and groups share one namespace);
//! every other dataset is public. A name no dataset has is public too: it names nothing,
//! and the route answers 404 for it as before.

use std::collections::{BTreeMap, BTreeSet};

use crate::auth::caller::Caller;

pub struct Policy {
    /// The read lists of the private datasets.
    read: BTreeMap<String, BTreeSet<String>>,
}

impl Policy {
    pub fn new<'a>(datasets: impl Iterator<Item = (&'a String, Option<&'a [String]>)>) -> Self {
        let read = datasets.filter_map(|(name, read)| Some((name.clone(), read?.iter().cloned().collect()))).collect();
        Self { read }
    }

    pub fn any_private(&self) -> bool {
        !self.read.is_empty()
    }

    pub fn is_private(&self, dataset: &str) -> bool {
        self.read.contains_key(dataset)
    }

    pub fn may_read(&self, caller: Option<&Caller>, dataset: &str) -> bool {
        let Some(allowed) = self.read.get(dataset) else { return true };
        caller.is_some_and(|c| allowed.contains(&c.name) || c.groups.iter().any(|g| allowed.contains(g)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::caller::Via;

    fn caller(name: &str, groups: &[&str]) -> Caller {
        Caller { name: name.into(), groups: groups.iter().map(|&g| g.into()).collect(), via: Via::ApiKey }
    }

    #[test]
    fn read_lists_name_callers_and_groups() {
        let lab = vec!["alice".to_owned(), "imaging".to_owned()];
        let nobody: Vec<String> = vec![];
        let names = ["lab".to_owned(), "open".to_owned(), "closed".to_owned()];
        let policy = Policy::new(
            [(&names[0], Some(lab.as_slice())), (&names[1], None), (&names[2], Some(nobody.as_slice()))].into_iter(),
        );
        let (alice, bob, carol) = (caller("alice", &[]), caller("bob", &["imaging"]), caller("carol", &["other"]));
        assert!(policy.any_private());
        assert_eq!(
            [policy.is_private("lab"), policy.is_private("open"), policy.is_private("nope")],
            [true, false, false]
        );
        for (who, dataset, expected) in [
            (None, "lab", false),
            (Some(&alice), "lab", true),
            (Some(&bob), "lab", true),
            (Some(&carol), "lab", false),
            (None, "open", true),
            (Some(&carol), "open", true),
            (Some(&alice), "closed", false),
            (None, "nope", true),
        ] {
            assert_eq!(policy.may_read(who, dataset), expected, "{who:?} {dataset}");
        }
        // A group named like a caller matches that caller: one namespace.
        assert!(policy.may_read(Some(&caller("x", &["alice"])), "lab"));
    }
}
