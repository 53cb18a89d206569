//! [`Malformed`]: the error of lancet's pure decoders and checkers (a roaring bitmap, a
//! deletion file, a counts buffer, feature flags, a schema): which rule the bytes break, in
//! one line. Callers wrap it into their crate's typed error with the object path.

/// Stored bytes (or a value decoded from them) break a rule of their format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}")]
pub struct Malformed {
    /// The rule broken, and how.
    pub rule: String,
}

impl From<String> for Malformed {
    fn from(rule: String) -> Self {
        Malformed { rule }
    }
}

impl From<&str> for Malformed {
    fn from(rule: &str) -> Self {
        Malformed { rule: rule.into() }
    }
}

/// Internal checkers that build a longer message go on with the rule as text.
impl From<Malformed> for String {
    fn from(m: Malformed) -> Self {
        m.rule
    }
}
