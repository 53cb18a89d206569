//! [`ObjectRef`]: where a corruption is, in every crate's `Corrupt` error.

use std::fmt;

/// The stored object a rule was broken in (its path in the store, or a URI) and, when the
/// rule concerns one part of it, which part ("fragment 7", "page 3", "field 12").
///
/// Every crate's `Corrupt` variant carries one, so a caller finds the object to repair (or to
/// report) the same way whichever subsystem decoded it: `lancet::Error::object()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// The object's path in its store, or a URI.
    pub object: String,
    /// The part of the object the rule is about, when narrower than the whole object.
    pub within: Option<String>,
}

impl ObjectRef {
    /// The whole object at `object`.
    pub fn new(object: impl Into<String>) -> Self {
        Self {
            object: object.into(),
            within: None,
        }
    }

    /// The same object, narrowed to `part`.
    pub fn within(mut self, part: impl Into<String>) -> Self {
        self.within = Some(part.into());
        self
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.within {
            None => write!(f, "{}", self.object),
            Some(part) => write!(f, "{} ({part})", self.object),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_the_object_and_the_part() {
        assert_eq!(
            ObjectRef::new("t/_versions/1.manifest").to_string(),
            "t/_versions/1.manifest"
        );
        let r = ObjectRef::new("t/_indices/u/page_lookup.lance").within("page 3");
        assert_eq!(r.to_string(), "t/_indices/u/page_lookup.lance (page 3)");
        assert_eq!(r.within.as_deref(), Some("page 3"));
    }
}
