//! JSON output: the typed, versioned documents ([`v1`]) and how they are written.
//!
//! Every document is written pretty-printed, newline-terminated, with the keys of every object
//! in alphabetical order. That order is what the output has always had (`serde_json`'s map is
//! sorted), so it is kept whatever order a type declares its fields in, `#[serde(flatten)]`
//! included: a document is written through [`Sorted`].

pub mod v1;

use serde::Serialize;

/// `doc` as fluxmend prints JSON (see the module documentation).
pub fn to_string<T: Serialize>(doc: &T) -> String {
    serde_json::to_string_pretty(&Sorted(doc)).expect("JSON of plain data") + "\n"
}

/// `T` with the keys of every object in alphabetical order: serialised through a
/// [`serde_json::Value`], whose maps are sorted. A report too large to hold twice (`graph` of a
/// fleet) sorts each part on its own, one at a time.
pub struct Sorted<T>(pub T);

impl<T: Serialize> Serialize for Sorted<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::to_value(&self.0)
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}
