//! Literals typed by the column they meet, as Lance types them: [`resolve`] converts a literal
//! into the column's type, [`natural`] types one by itself, [`common_type`] is the type
//! DataFusion compares two types in, and [`typed`] picks, for a leaf, the values and the type
//! the comparison runs in.

use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray,
    UInt64Array,
};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;

use crate::{Arith, Lit, Typing};

/// The literals of a leaf as one-element arrays, and the type they compare in.
///
/// [`Typing::Column`] converts each into the column's type `t` ([`resolve`]).
/// [`Typing::Common`] types each by itself ([`natural`]), finds the common type of column
/// and literals ([`common_type`]) and compares there; when every literal survives a round
/// trip through `t` unchanged, comparing in `t` gives the same answer (the casts are
/// monotonic), so the column's own type (and its index) is used.
pub fn typed(
    lits: &[&Lit],
    typing: Typing,
    t: &DataType,
) -> Conv<(Option<DataType>, Vec<ArrayRef>)> {
    if typing == Typing::Column {
        let values = lits.iter().map(|l| resolve(l, t)).collect::<Conv<_>>()?;
        return Ok((None, values));
    }
    let naturals = lits
        .iter()
        .map(|l| natural(l, t))
        .collect::<Conv<Vec<_>>>()?;
    let mut common = t.clone();
    for v in naturals.iter().filter(|v| v.null_count() == 0) {
        common = common_type(&common, v.data_type())
            .ok_or_else(|| format!("cannot be compared with a {} literal", v.data_type()))?;
    }
    let values = naturals
        .into_iter()
        .map(|v| cast_to(v, &common))
        .collect::<Conv<Vec<_>>>()?;
    if common == *t {
        return Ok((None, values));
    }
    let in_column_type: Option<Vec<ArrayRef>> = values
        .iter()
        .map(|v| {
            let there = cast_to(v.clone(), t).ok()?;
            let back = cast_to(there.clone(), &common).ok()?;
            (back.as_ref() == v.as_ref()).then_some(there)
        })
        .collect();
    Ok(match in_column_type {
        Some(values) => (None, values),
        None => (Some(common), values),
    })
}

/// The type DataFusion compares a column of type `column` and a literal of type `literal`
/// in: numbers in the wider (a float when either is), a string as the other side's type,
/// a date against a timestamp as the timestamp. `None`: they cannot be compared.
pub fn common_type(column: &DataType, literal: &DataType) -> Option<DataType> {
    use DataType::*;
    if column == literal {
        return Some(column.clone());
    }
    let numeric = |t: &DataType| t.is_integer() || t.is_floating();
    match (column, literal) {
        (a, b) if numeric(a) && numeric(b) => {
            if *a == Float64 || *b == Float64 {
                Some(Float64)
            } else if *a == Float32 || *b == Float32 {
                Some(Float32)
            } else if a.is_signed_integer() == b.is_signed_integer() {
                let width = |t: &DataType| t.primitive_width().unwrap_or(0);
                Some(if width(a) >= width(b) { a } else { b }.clone())
            } else {
                None
            }
        }
        (s, other) | (other, s) if is_string(s) && !is_string(other) => Some(other.clone()),
        (Date32, Timestamp(u, tz)) | (Timestamp(u, tz), Date32) => Some(Timestamp(*u, tz.clone())),
        (Timestamp(u, tz), Timestamp(..)) => Some(Timestamp(*u, tz.clone())),
        _ => None,
    }
}

/// Whether `t` is a string type.
pub fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// A conversion's result: the reason as text when it fails.
pub type Conv<T> = std::result::Result<T, String>;

/// Cast options that fail instead of producing NULL.
pub fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

/// `a` cast to `t` under [`strict`] options.
pub fn cast_to(a: ArrayRef, t: &DataType) -> Conv<ArrayRef> {
    cast_with_options(&a, t, &strict()).map_err(|e| e.to_string())
}

/// A literal as a one-element array of the column's type `t`, by Lance's rule: an integer
/// fits an integer or float column, a decimal number a float column, a string a string
/// column, a boolean a boolean column; a CAST converts to its type, then to `t`. Constant
/// arithmetic runs in `t` (wrapping on overflow, an error on division by zero).
pub fn resolve(lit: &Lit, t: &DataType) -> Conv<ArrayRef> {
    let numeric = t.is_integer() || t.is_floating();
    match lit {
        Lit::Null => Ok(new_null_array(t, 1)),
        Lit::Int(i) if numeric => cast_to(Arc::new(Int64Array::from(vec![*i])), t),
        Lit::UInt(u) if numeric => cast_to(Arc::new(UInt64Array::from(vec![*u])), t),
        Lit::Float(f) if t.is_floating() => cast_to(Arc::new(Float64Array::from(vec![*f])), t),
        Lit::Str(s) if is_string(t) => cast_to(Arc::new(StringArray::from(vec![s.as_str()])), t),
        Lit::Bool(b) if *t == DataType::Boolean => Ok(Arc::new(BooleanArray::from(vec![*b]))),
        Lit::Cast(inner, to) => cast_to(cast_to(natural(inner, to)?, to)?, t),
        Lit::Neg(inner) if numeric => {
            arrow_arith::numeric::neg_wrapping(&resolve(inner, t)?).map_err(|e| e.to_string())
        }
        Lit::Arith(op, a, b) if numeric => {
            let (a, b) = (resolve(a, t)?, resolve(b, t)?);
            let r = match op {
                Arith::Add => arrow_arith::numeric::add_wrapping(&a, &b),
                Arith::Sub => arrow_arith::numeric::sub_wrapping(&a, &b),
                Arith::Mul => arrow_arith::numeric::mul_wrapping(&a, &b),
                Arith::Div => arrow_arith::numeric::div(&a, &b),
                Arith::Rem => arrow_arith::numeric::rem(&a, &b),
            };
            r.map_err(|e| e.to_string())
        }
        other => Err(format!("literal {other:?} cannot be compared with it")),
    }
}

/// A constant by itself (as [`natural`] types it; NULL as the Null type), for comparing
/// literals before any column is known. `None` when it does not evaluate.
pub fn literal_value(lit: &Lit) -> Option<ArrayRef> {
    natural(lit, &DataType::Null).ok()
}

/// A CAST's operand in its own type: integers as Int64 (UInt64 past its range), decimals
/// as Float64, strings as Utf8; arithmetic in Float64 when a decimal takes part.
pub fn natural(lit: &Lit, to: &DataType) -> Conv<ArrayRef> {
    fn has_float(l: &Lit) -> bool {
        match l {
            Lit::Float(_) => true,
            Lit::Neg(a) => has_float(a),
            Lit::Arith(_, a, b) => has_float(a) || has_float(b),
            _ => false,
        }
    }
    match lit {
        Lit::Null => Ok(new_null_array(to, 1)),
        Lit::Int(_) | Lit::UInt(_) | Lit::Float(_) | Lit::Neg(_) | Lit::Arith(..) => {
            let t = match lit {
                Lit::UInt(_) => DataType::UInt64,
                l if has_float(l) => DataType::Float64,
                _ => DataType::Int64,
            };
            resolve(lit, &t)
        }
        Lit::Str(_) => resolve(lit, &DataType::Utf8),
        Lit::Bool(_) => resolve(lit, &DataType::Boolean),
        Lit::Cast(inner, t) => cast_to(natural(inner, t)?, t),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::{Expr, Filter, Leaf};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Date32Type, Float32Type, Float64Type, Int32Type, Int64Type};
    use arrow_schema::TimeUnit;

    fn lit_of(filter: &str) -> Lit {
        match Filter::parse(filter).unwrap().expr() {
            Expr::Leaf {
                leaf: Leaf::Cmp(_, l),
                ..
            } => l.clone(),
            other => panic!("{other:?}"),
        }
    }

    fn i64_of(filter: &str) -> Conv<i64> {
        resolve(&lit_of(filter), &DataType::Int64).map(|a| a.as_primitive::<Int64Type>().value(0))
    }

    fn f64_of(filter: &str) -> f64 {
        resolve(&lit_of(filter), &DataType::Float64)
            .unwrap()
            .as_primitive::<Float64Type>()
            .value(0)
    }

    #[test]
    fn literals_are_typed_by_their_column_as_lance_types_them() {
        assert_eq!(i64_of("i = 7 / 2"), Ok(3));
        assert_eq!(i64_of("i = 7 % 4"), Ok(3));
        assert_eq!(i64_of("i = -(-2) * 3 - 1"), Ok(5));
        assert_eq!(i64_of("i = 9223372036854775807 + 1"), Ok(i64::MIN));
        assert_eq!(i64_of("i = CAST(2.7 AS BIGINT)"), Ok(2));
        assert_eq!(i64_of("i = CAST('2' AS BIGINT)"), Ok(2));
        for refused in [
            "i = 2.0",
            "i = '2'",
            "i = 9223372036854775808",
            "i = 7 / 0",
            "i = CAST('2.7' AS BIGINT)",
            "i = TRUE",
        ] {
            assert!(i64_of(refused).is_err(), "{refused}");
        }
        assert_eq!(f64_of("f = 3 / 2"), 1.5);
        assert_eq!(f64_of("f = 1e400"), f64::INFINITY);
        assert!(f64_of("f = CAST('NaN' AS DOUBLE)").is_nan());
        assert_eq!(f64_of("f = CAST('Infinity' AS DOUBLE)"), f64::INFINITY);
        assert_eq!(f64_of("f = CAST('-Infinity' AS DOUBLE)"), f64::NEG_INFINITY);
        assert_eq!(f64_of("f = -CAST('inf' AS DOUBLE)"), f64::NEG_INFINITY);
        assert!(f64_of("f = -0.0").is_sign_negative());
        let f32 = resolve(&lit_of("f = 1.5"), &DataType::Float32).unwrap();
        assert_eq!(f32.as_primitive::<Float32Type>().value(0), 1.5);
        assert!(resolve(&lit_of("i = 3000000000"), &DataType::Int32).is_err());
        let i32 = resolve(&lit_of("i = 2"), &DataType::Int32).unwrap();
        assert_eq!(i32.as_primitive::<Int32Type>().value(0), 2);
        let d = resolve(&lit_of("d = DATE '2024-1-2'"), &DataType::Date32).unwrap();
        assert_eq!(d.as_primitive::<Date32Type>().value(0), 19724);
        assert!(resolve(&lit_of("d = '2024-01-01'"), &DataType::Date32).is_err());
        assert!(resolve(&lit_of("d = DATE '2024-13-01'"), &DataType::Date32).is_err());
        // a timestamp literal meets a date column, a date literal a timestamp column
        let d = resolve(
            &lit_of("d = TIMESTAMP '2024-01-02 10:00:00'"),
            &DataType::Date32,
        )
        .unwrap();
        assert_eq!(d.as_primitive::<Date32Type>().value(0), 19724);
        let us = DataType::Timestamp(TimeUnit::Microsecond, None);
        for (text, want) in [
            ("ts = DATE '2024-01-02'", 1_704_153_600_000_000i64),
            (
                "ts = TIMESTAMP '2024-01-02T00:00:01'",
                1_704_153_601_000_000,
            ),
            (
                "ts = TIMESTAMP '2024-01-02 02:00:00+02:00'",
                1_704_153_600_000_000,
            ),
            (
                "ts = CAST('2024-01-02' AS TIMESTAMP)",
                1_704_153_600_000_000,
            ),
        ] {
            let v = resolve(&lit_of(text), &us).unwrap();
            let v = v
                .as_primitive::<arrow_array::types::TimestampMicrosecondType>()
                .value(0);
            assert_eq!(v, want, "{text}");
        }
        assert!(resolve(&lit_of("s = 1"), &DataType::Utf8).is_err());
        assert!(resolve(&lit_of("b = 1"), &DataType::Boolean).is_err());
    }
}
