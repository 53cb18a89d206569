//! Queries a BTree answers. Scalars are one-element Arrow arrays of the index's value type.

use std::ops::Bound;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};

/// A sargable predicate on the indexed column.
#[derive(Debug, Clone)]
pub enum Query {
    /// `col = v`; a NULL `v` makes every row NULL.
    Equals(ArrayRef),
    /// `lo <(=) col <(=) hi`, either end possibly unbounded.
    Range(Bound<ArrayRef>, Bound<ArrayRef>),
    /// `col IN (values)`; `values` may contain NULL.
    IsIn(ArrayRef),
    /// `col IS NULL` (never NULL itself).
    IsNull,
    /// `col LIKE 'prefix%'` / `starts_with(col, prefix)` on string columns.
    LikePrefix(String),
}

/// The smallest string greater than every string starting with `prefix`: the last character
/// that can be incremented is (skipping the surrogate range), and the characters after it are
/// dropped. `None` when there is none (empty prefix, or only U+10FFFF).
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Floats compare in IEEE total order (NaN above +inf, as Lance sorts), except that SQL treats
/// -0.0 and +0.0 as equal. A bound at zero is widened or narrowed so that total order gives
/// SQL's answer: a lower bound `>= 0` starts at -0.0 and `> 0` starts after +0.0; an upper
/// bound `<= 0` ends at +0.0 and `< 0` ends before -0.0.
pub(crate) fn canonical_zero(bound: Bound<ArrayRef>, lower: bool) -> Bound<ArrayRef> {
    fn zero_as(v: &ArrayRef, negative: bool) -> Option<ArrayRef> {
        if let Some(a) = v.as_any().downcast_ref::<Float64Array>() {
            if a.len() == 1 && !a.is_null(0) && a.value(0) == 0.0 {
                let z = if negative { -0.0 } else { 0.0 };
                return Some(std::sync::Arc::new(Float64Array::from(vec![z])));
            }
        }
        if let Some(a) = v.as_any().downcast_ref::<Float32Array>() {
            if a.len() == 1 && !a.is_null(0) && a.value(0) == 0.0 {
                let z = if negative { -0.0f32 } else { 0.0 };
                return Some(std::sync::Arc::new(Float32Array::from(vec![z])));
            }
        }
        None
    }
    match bound {
        Bound::Included(v) => Bound::Included(zero_as(&v, lower).unwrap_or(v)),
        Bound::Excluded(v) => Bound::Excluded(zero_as(&v, !lower).unwrap_or(v)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_upper_bound("").as_deref(), None);
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}").as_deref(), None);
        assert_eq!(
            prefix_upper_bound("x\u{D7FF}").as_deref(),
            Some("x\u{E000}")
        );
        assert_eq!(prefix_upper_bound("é").as_deref(), Some("ê"));
    }
}
