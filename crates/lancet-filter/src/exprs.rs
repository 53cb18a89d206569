//! What an update's assignments and a computed column take (the facade's `Dataset::update`
//! and `Dataset::add_column`): SQL text, parsed as Lance parses an `UPDATE ... SET`
//! (`"x = x + 1"`, `"upper(name)"`), or a value already parsed. Text that does not parse is
//! a [`FilterError`](crate::FilterError) naming it.

use crate::error::Result;
use crate::Scalar;

/// A value computed per row: `"id * 2"`, or a parsed [`Scalar`].
pub trait ValueExpr {
    /// The value, parsed.
    fn to_scalar(&self) -> Result<Scalar>;
}

impl ValueExpr for str {
    fn to_scalar(&self) -> Result<Scalar> {
        crate::parse_value(self)
    }
}

impl ValueExpr for String {
    fn to_scalar(&self) -> Result<Scalar> {
        self.as_str().to_scalar()
    }
}

impl ValueExpr for Scalar {
    fn to_scalar(&self) -> Result<Scalar> {
        Ok(self.clone())
    }
}

impl<T: ValueExpr + ?Sized> ValueExpr for &T {
    fn to_scalar(&self) -> Result<Scalar> {
        (**self).to_scalar()
    }
}

/// One assignment of an update: `"x = x + 1"`, or a column and its parsed value.
pub trait Assignment {
    /// The column assigned and its value, parsed.
    fn to_assignment(&self) -> Result<(String, Scalar)>;
}

impl Assignment for str {
    fn to_assignment(&self) -> Result<(String, Scalar)> {
        crate::parse_assignment(self)
    }
}

impl Assignment for String {
    fn to_assignment(&self) -> Result<(String, Scalar)> {
        self.as_str().to_assignment()
    }
}

impl<V: ValueExpr> Assignment for (String, V) {
    fn to_assignment(&self) -> Result<(String, Scalar)> {
        Ok((self.0.clone(), self.1.to_scalar()?))
    }
}

impl<V: ValueExpr> Assignment for (&str, V) {
    fn to_assignment(&self) -> Result<(String, Scalar)> {
        Ok((self.0.to_string(), self.1.to_scalar()?))
    }
}

impl<T: Assignment + ?Sized> Assignment for &T {
    fn to_assignment(&self) -> Result<(String, Scalar)> {
        (**self).to_assignment()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn text_and_parsed_values_are_one_value() {
        let parsed = crate::parse_value("id * 2").unwrap();
        assert_eq!(
            format!("{:?}", "id * 2".to_scalar().unwrap()),
            format!("{parsed:?}")
        );
        assert_eq!(
            format!("{:?}", parsed.to_scalar().unwrap()),
            format!("{parsed:?}")
        );
        let (column, value) = "x = x + 1".to_assignment().unwrap();
        assert_eq!(column, "x");
        let pair = ("x", "x + 1").to_assignment().unwrap();
        assert_eq!(
            (pair.0, format!("{:?}", pair.1)),
            (column, format!("{value:?}"))
        );
    }

    #[test]
    fn text_that_does_not_parse_is_invalid_input() {
        assert_eq!(
            "x = ".to_assignment().unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            "x +".to_scalar().unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            "1 + 1".to_assignment().unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
}
