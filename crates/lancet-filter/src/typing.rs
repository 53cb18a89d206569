//! Literals typed by the column they meet, as Lance types them: [`resolve`] converts a literal
//! into the column's type, [`natural`] types one by itself, [`common_type`] is the type
//! DataFusion compares two types in, and [`typed`] picks, for a leaf, the values and the type
//! the comparison runs in.
//!
//! Decimal columns are answered exactly, never through floats: a number literal meeting one
//! is taken at its exact value ([`Lit::Decimal`] keeps the text it was written as), and when
//! it has more digits than the column holds (`l_tax = 0.085` on `decimal(15, 2)`) the
//! comparison runs in a decimal wide enough for both ([`common_type`]) instead of rounding.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Decimal256Type};
use arrow_array::{
    new_null_array, Array, ArrayRef, BinaryArray, BooleanArray, Datum, Float64Array, Int64Array,
    StringArray, UInt64Array,
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
///
/// A decimal column meets a literal with a decimal point at the literal's exact value in both
/// typings (Lance refuses it, DataFusion would compare as Float64): in the column's type when
/// the value fits it exactly, else in a decimal wide enough for both, so `l_tax < 0.085`
/// holds for 0.08 and `l_tax = 0.085` for no row. An integer it compares as Lance does: cast
/// into the column's type ([`Typing::Column`], an error when it does not fit), or in
/// DataFusion's common type ([`Typing::Common`]).
pub fn typed(
    lits: &[&Lit],
    typing: Typing,
    t: &DataType,
) -> Conv<(Option<DataType>, Vec<ArrayRef>)> {
    if typing == Typing::Column {
        if is_decimal(t) {
            return typed_in_decimal(lits, t);
        }
        let values = lits.iter().map(|l| resolve(l, t)).collect::<Conv<_>>()?;
        return Ok((None, values));
    }
    let naturals = lits
        .iter()
        .map(|l| match exact_beside(l, t)? {
            Some(v) => Ok(v),
            None => natural(l, t),
        })
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

/// [`Typing::Column`] on a decimal column `t`: each literal cast into `t` ([`resolve`]), or,
/// written with a decimal point and not fitting `t` exactly, at its exact value, all then
/// compared in a decimal wide enough for every one.
fn typed_in_decimal(lits: &[&Lit], t: &DataType) -> Conv<(Option<DataType>, Vec<ArrayRef>)> {
    let mut common = t.clone();
    let mut values = Vec::with_capacity(lits.len());
    for lit in lits {
        let v = match resolve(lit, t) {
            Ok(v) => v,
            Err(e) => match exact_beside(lit, t)? {
                Some(v) => v,
                None => return Err(e),
            },
        };
        if v.null_count() == 0 {
            common = common_type(&common, v.data_type())
                .ok_or_else(|| format!("cannot be compared with a {} literal", v.data_type()))?;
        }
        values.push(v);
    }
    if common == *t {
        return Ok((None, values));
    }
    let values = values
        .into_iter()
        .map(|v| cast_to(v, &common))
        .collect::<Conv<Vec<_>>>()?;
    Ok((Some(common), values))
}

/// A literal written with a decimal point, at its exact value, when it meets a decimal `t`.
fn exact_beside(lit: &Lit, t: &DataType) -> Conv<Option<ArrayRef>> {
    if is_decimal(t) && written_decimal(lit) {
        exact_decimal(lit)
    } else {
        Ok(None)
    }
}

/// Whether a decimal number written with a point or exponent takes part in `lit`.
pub(crate) fn written_decimal(lit: &Lit) -> bool {
    match lit {
        Lit::Decimal(_) => true,
        Lit::Neg(a) => written_decimal(a),
        Lit::Arith(_, a, b) => written_decimal(a) || written_decimal(b),
        _ => false,
    }
}

/// The type DataFusion compares a column of type `column` and a literal of type `literal`
/// in: numbers in the wider (a float when either is), a string as the other side's type,
/// a date against a timestamp as the timestamp. `None`: they cannot be compared.
///
/// Decimals meet as in DataFusion, in a decimal holding every value of both (an integer
/// type as the decimal holding its every value: `Int64` with `Decimal128(15, 2)` is
/// `Decimal128(22, 2)`), or `Float64` against a float; but past 38 digits in a
/// `Decimal256` rather than capped at 38, so that no value is lost.
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
        (a, b) if is_decimal(a) || is_decimal(b) => {
            if a.is_floating() || b.is_floating() {
                Some(Float64)
            } else {
                wider_decimal(a, b)
            }
        }
        (Date32, Timestamp(u, tz)) | (Timestamp(u, tz), Date32) => Some(Timestamp(*u, tz.clone())),
        (Timestamp(u, tz), Timestamp(..)) => Some(Timestamp(*u, tz.clone())),
        _ => None,
    }
}

/// Whether `t` is a string type.
pub fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Whether `t` holds bytes (a binary literal's columns).
pub fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// Whether `t` is a decimal type.
pub fn is_decimal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

/// The most digits a decimal holds (`Decimal256`).
const MAX_DIGITS: usize = 76;

/// A decimal's precision and scale, and whether it needs 256 bits; an integer type as the
/// decimal holding its every value, as DataFusion takes it (`Int64` is `Decimal128(20, 0)`).
fn decimal_parts(t: &DataType) -> Option<(u8, i8, bool)> {
    use DataType::*;
    Some(match t {
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) => (*p, *s, false),
        Decimal256(p, s) => (*p, *s, true),
        Int8 | UInt8 => (3, 0, false),
        Int16 | UInt16 => (5, 0, false),
        Int32 | UInt32 => (10, 0, false),
        Int64 | UInt64 => (20, 0, false),
        _ => return None,
    })
}

fn decimal_type(p: u8, s: i8, wide: bool) -> DataType {
    if wide {
        DataType::Decimal256(p, s)
    } else {
        DataType::Decimal128(p, s)
    }
}

/// The decimal holding every value of `a` and of `b` (decimals or integers): the larger
/// scale, and the more integer digits; `Decimal256` past 38 digits (capped at 76).
fn wider_decimal(a: &DataType, b: &DataType) -> Option<DataType> {
    let (p1, s1, w1) = decimal_parts(a)?;
    let (p2, s2, w2) = decimal_parts(b)?;
    let scale = s1.max(s2);
    let whole = (i16::from(p1) - i16::from(s1)).max(i16::from(p2) - i16::from(s2));
    let digits = (whole + i16::from(scale)).max(i16::from(scale)).max(1);
    let p = u8::try_from(digits.min(MAX_DIGITS as i16)).ok()?;
    Some(decimal_type(p, scale, w1 || w2 || p > 38))
}

/// For arithmetic with a decimal operand: the types the two operands are cast to before
/// Arrow's decimal kernels (which type the result as DataFusion does: `+ -` keep the larger
/// scale with one more integer digit, `*` adds precisions and scales, each capped at 38
/// digits, or 76 in 256 bits): an integer as the decimal holding its every value, both of
/// one width, and both `Float64` when a float takes part. `None`: no decimal takes part.
pub(crate) fn decimal_operands(a: &DataType, b: &DataType) -> Option<Conv<(DataType, DataType)>> {
    if !is_decimal(a) && !is_decimal(b) {
        return None;
    }
    if a.is_floating() || b.is_floating() {
        return Some(Ok((DataType::Float64, DataType::Float64)));
    }
    Some(match (decimal_parts(a), decimal_parts(b)) {
        (Some((p1, s1, w1)), Some((p2, s2, w2))) => {
            let wide = w1 || w2;
            Ok((decimal_type(p1, s1, wide), decimal_type(p2, s2, wide)))
        }
        _ => Err(format!("cannot apply arithmetic to {a} and {b}")),
    })
}

/// `x op y` with Arrow's kernels: integers wrap on overflow, decimals are checked (a result
/// beyond its precision is an error), division by zero is an error.
pub(crate) fn arith_kernel(op: Arith, x: &dyn Datum, y: &dyn Datum) -> Conv<ArrayRef> {
    use arrow_arith::numeric as n;
    let r = match op {
        Arith::Add => n::add_wrapping(x, y),
        Arith::Sub => n::sub_wrapping(x, y),
        Arith::Mul => n::mul_wrapping(x, y),
        Arith::Div => n::div(x, y),
        Arith::Rem => n::rem(x, y),
    }
    .map_err(|e| e.to_string())?;
    within_precision(r)
}

/// `r`, checked against its precision: Arrow's decimal kernels cap the precision they
/// declare, not the values.
fn within_precision(r: ArrayRef) -> Conv<ArrayRef> {
    let checked = match r.data_type() {
        DataType::Decimal128(p, _) => r
            .as_primitive::<Decimal128Type>()
            .validate_decimal_precision(*p),
        DataType::Decimal256(p, _) => r
            .as_primitive::<Decimal256Type>()
            .validate_decimal_precision(*p),
        _ => Ok(()),
    };
    checked.map_err(|e| format!("decimal overflow: {e}"))?;
    Ok(r)
}

/// A number literal (integers, decimals written with a point, their negations and constant
/// arithmetic) at its exact value, as a one-element decimal array of the fewest digits that
/// hold it; arithmetic as [`arith_kernel`] (a division keeps four more fractional digits,
/// truncated, as Arrow divides decimals). `None`: `lit` is not made of numbers only.
pub(crate) fn exact_decimal(lit: &Lit) -> Conv<Option<ArrayRef>> {
    let neg = |v: ArrayRef| arrow_arith::numeric::neg(&v).map_err(|e| e.to_string());
    Ok(Some(match lit {
        Lit::Int(i) => {
            let v = decimal_of(&i.unsigned_abs().to_string())?;
            if *i < 0 {
                neg(v)?
            } else {
                v
            }
        }
        Lit::UInt(u) => decimal_of(&u.to_string())?,
        Lit::Decimal(text) => decimal_of(text)?,
        Lit::Neg(a) => match exact_decimal(a)? {
            Some(v) => neg(v)?,
            None => return Ok(None),
        },
        Lit::Arith(op, a, b) => {
            let (Some(a), Some(b)) = (exact_decimal(a)?, exact_decimal(b)?) else {
                return Ok(None);
            };
            let (ta, tb) = decimal_operands(a.data_type(), b.data_type())
                .unwrap_or_else(|| Err("constant arithmetic without a decimal".into()))?;
            arith_kernel(*op, &cast_to(a, &ta)?, &cast_to(b, &tb)?)?
        }
        _ => return Ok(None),
    }))
}

/// A number written as `text` (digits, an optional point, an optional exponent) at its
/// exact value: the decimal of the fewest digits holding it (`0.050` is 0.05 in
/// `Decimal128(2, 2)`), in 256 bits past 38 digits; an error past 76.
fn decimal_of(text: &str) -> Conv<ArrayRef> {
    let bad = || format!("number {text} is not a decimal");
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().map_err(|_| bad())?),
        None => (text, 0),
    };
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = whole
        .bytes()
        .chain(frac.bytes())
        .all(|b| b.is_ascii_digit());
    if !all_digits || (whole.is_empty() && frac.is_empty()) {
        return Err(bad());
    }
    let mut digits: String = whole
        .chars()
        .chain(frac.chars())
        .skip_while(|c| *c == '0')
        .collect();
    let mut scale = i64::try_from(frac.len())
        .map_err(|_| bad())?
        .saturating_sub(exp);
    while scale > 0 && digits.ends_with('0') {
        digits.pop();
        scale -= 1;
    }
    if digits.is_empty() {
        digits.push('0');
        scale = 0;
    }
    let too_many = || format!("number {text} has more than {MAX_DIGITS} digits");
    let len = i64::try_from(digits.len()).map_err(|_| too_many())?;
    if len.saturating_sub(scale.min(0)) > MAX_DIGITS as i64 || scale > MAX_DIGITS as i64 {
        return Err(too_many());
    }
    if scale < 0 {
        digits.extend(std::iter::repeat_n('0', scale.unsigned_abs() as usize));
        scale = 0;
    }
    let p = u8::try_from(digits.len().max(1))
        .map_err(|_| too_many())?
        .max(u8::try_from(scale).map_err(|_| too_many())?);
    let s = i8::try_from(scale).map_err(|_| too_many())?;
    let unscaled = cast_to(
        Arc::new(StringArray::from(vec![digits.as_str()])),
        &DataType::Decimal256(p, 0),
    )?;
    let v = unscaled
        .as_primitive::<Decimal256Type>()
        .clone()
        .with_precision_and_scale(p, s)
        .map_err(|e| e.to_string())?;
    let v: ArrayRef = Arc::new(v);
    if p <= 38 {
        cast_to(v, &DataType::Decimal128(p, s))
    } else {
        Ok(v)
    }
}

/// `v` cast into the decimal `t` when that keeps its value exactly; else an error.
fn fit_exactly(v: ArrayRef, t: &DataType) -> Conv<ArrayRef> {
    let shown = arrow_cast::display::array_value_to_string(&v, 0).unwrap_or_default();
    let there = cast_to(v.clone(), t).map_err(|e| format!("{shown} does not fit {t}: {e}"))?;
    match cast_to(there.clone(), v.data_type()) {
        Ok(back) if back.as_ref() == v.as_ref() => Ok(there),
        _ => Err(format!("{shown} has more digits than {t} holds")),
    }
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
/// fits an integer, float or decimal column, a decimal number a float column, a string a
/// string column, bytes (`X'..'`) a binary column of any width (a fixed-size one of theirs),
/// a boolean a boolean column; a CAST converts to its type, then to `t`.
/// Constant arithmetic runs in `t` (wrapping on overflow, an error on division by zero).
///
/// Beyond Lance (which refuses them): a decimal number fits a decimal column when its exact
/// value does (`0.05` in `decimal(15, 2)`, never through a float), constant arithmetic on a
/// decimal column is exact decimal arithmetic, and a date string fits a date column (an
/// unparsable one is an error).
pub fn resolve(lit: &Lit, t: &DataType) -> Conv<ArrayRef> {
    if is_decimal(t) {
        if let Some(v) = exact_decimal(lit)? {
            return fit_exactly(v, t);
        }
    }
    let numeric = t.is_integer() || t.is_floating();
    let date = matches!(t, DataType::Date32 | DataType::Date64);
    match lit {
        Lit::Null => Ok(new_null_array(t, 1)),
        Lit::Int(i) if numeric => cast_to(Arc::new(Int64Array::from(vec![*i])), t),
        Lit::UInt(u) if numeric => cast_to(Arc::new(UInt64Array::from(vec![*u])), t),
        Lit::Float(f) if t.is_floating() => cast_to(Arc::new(Float64Array::from(vec![*f])), t),
        Lit::Decimal(text) if t.is_floating() => {
            let f = text
                .parse::<f64>()
                .map_err(|_| format!("number {text} is not supported"))?;
            cast_to(Arc::new(Float64Array::from(vec![f])), t)
        }
        Lit::Str(s) if is_string(t) || date => {
            cast_to(Arc::new(StringArray::from(vec![s.as_str()])), t)
        }
        Lit::Bytes(b) if is_binary(t) => {
            cast_to(Arc::new(BinaryArray::from(vec![b.as_slice()])), t)
        }
        Lit::Bool(b) if *t == DataType::Boolean => Ok(Arc::new(BooleanArray::from(vec![*b]))),
        Lit::Cast(inner, to) => cast_to(cast_to(natural(inner, to)?, to)?, t),
        Lit::Neg(inner) if numeric => {
            arrow_arith::numeric::neg_wrapping(&resolve(inner, t)?).map_err(|e| e.to_string())
        }
        Lit::Arith(op, a, b) if numeric => arith_kernel(*op, &resolve(a, t)?, &resolve(b, t)?),
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
            Lit::Float(_) | Lit::Decimal(_) => true,
            Lit::Neg(a) => has_float(a),
            Lit::Arith(_, a, b) => has_float(a) || has_float(b),
            _ => false,
        }
    }
    match lit {
        Lit::Null => Ok(new_null_array(to, 1)),
        Lit::Int(_)
        | Lit::UInt(_)
        | Lit::Float(_)
        | Lit::Decimal(_)
        | Lit::Neg(_)
        | Lit::Arith(..) => {
            let t = match lit {
                Lit::UInt(_) => DataType::UInt64,
                l if has_float(l) => DataType::Float64,
                _ => DataType::Int64,
            };
            resolve(lit, &t)
        }
        Lit::Str(_) => resolve(lit, &DataType::Utf8),
        Lit::Bytes(_) => resolve(lit, &DataType::Binary),
        Lit::Bool(_) => resolve(lit, &DataType::Boolean),
        Lit::Cast(inner, t) => cast_to(natural(inner, t)?, t),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::{Expr, Filter, Leaf, Op};
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

    #[test]
    fn arrow_cast_names_times_and_durations_by_their_arrow_types() {
        let t = DataType::Time32(TimeUnit::Second);
        let time = resolve(&lit_of("t = arrow_cast('03:00:01', 'Time32(Second)')"), &t).unwrap();
        assert_eq!(
            time.as_primitive::<arrow_array::types::Time32SecondType>()
                .value(0),
            10_801
        );
        let d = DataType::Duration(TimeUnit::Millisecond);
        let five = resolve(&lit_of("d < arrow_cast(5, 'Duration(Millisecond)')"), &d).unwrap();
        assert_eq!(
            five.as_primitive::<arrow_array::types::DurationMillisecondType>()
                .value(0),
            5
        );
        for bad in [
            "t = arrow_cast(1, 'NoSuchType')",
            "t = arrow_cast(1)",
            "t = arrow_cast(1, x)",
        ] {
            let e = Filter::parse(bad).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn hex_literals_are_bytes_for_binary_columns_of_any_width() {
        let lit = lit_of("b = X'00ff61'");
        assert_eq!(lit, Lit::Bytes(vec![0, 255, b'a']));
        assert_eq!(lit_of("b = x''"), Lit::Bytes(vec![]));
        for t in [
            DataType::Binary,
            DataType::LargeBinary,
            DataType::BinaryView,
        ] {
            let a = resolve(&lit, &t).unwrap();
            assert_eq!(a.data_type(), &t);
            let back = cast_to(a, &DataType::Binary).unwrap();
            assert_eq!(back.as_binary::<i32>().value(0), [0, 255, b'a']);
        }
        let fixed = resolve(&lit, &DataType::FixedSizeBinary(3)).unwrap();
        assert_eq!(fixed.as_fixed_size_binary().value(0), [0, 255, b'a']);
        // another width, a string column, a string literal for bytes: refused, as Lance's
        assert!(resolve(&lit, &DataType::FixedSizeBinary(2)).is_err());
        assert!(resolve(&lit, &DataType::Utf8).is_err());
        assert!(resolve(&lit_of("b = 'abc'"), &DataType::Binary).is_err());
        // digits that spell no bytes do not parse
        for bad in ["b = X'6'", "b = X'zz'"] {
            let e = Filter::parse(bad).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidInput, "{bad}");
            assert!(e.to_string().contains("not a binary literal"), "{e}");
        }
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
        // a date string meets a date column (Lance refuses it; see the crate docs)
        let d = resolve(&lit_of("d = '2024-01-02'"), &DataType::Date32).unwrap();
        assert_eq!(d.as_primitive::<Date32Type>().value(0), 19724);
        assert!(resolve(&lit_of("d = '2024-13-01'"), &DataType::Date32).is_err());
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

    /// A leaf of `filter` answered on `column` as the BTree answers it unindexed: the literals
    /// typed by [`typed`] with `typing`, the column cast to the type they compare in.
    fn answer(filter: &str, typing: Typing, column: &ArrayRef) -> Conv<Vec<Option<bool>>> {
        use arrow_arith::boolean::{and_kleene, or_kleene};
        use arrow_array::Scalar;
        use arrow_ord::cmp;
        let leaf = match Filter::parse(filter).unwrap().expr() {
            Expr::Leaf { leaf, .. } => leaf.clone(),
            other => panic!("{other:?}"),
        };
        let lits: Vec<&Lit> = match &leaf {
            Leaf::Cmp(_, l) => vec![l],
            Leaf::Between(a, b) => vec![a, b],
            Leaf::In(list) => list.iter().collect(),
            other => panic!("{other:?}"),
        };
        let (compare_as, values) = typed(&lits, typing, column.data_type())?;
        let col = match compare_as {
            Some(t) => cast_to(column.clone(), &t)?,
            None => column.clone(),
        };
        let v = |i: usize| Scalar::new(values[i].clone());
        let r = match &leaf {
            Leaf::Cmp(op, _) => match op {
                Op::Eq => cmp::eq(&col, &v(0)),
                Op::Lt => cmp::lt(&col, &v(0)),
                Op::LtEq => cmp::lt_eq(&col, &v(0)),
                Op::Gt => cmp::gt(&col, &v(0)),
                Op::GtEq => cmp::gt_eq(&col, &v(0)),
            }
            .unwrap(),
            Leaf::Between(..) => and_kleene(
                &cmp::gt_eq(&col, &v(0)).unwrap(),
                &cmp::lt_eq(&col, &v(1)).unwrap(),
            )
            .unwrap(),
            _ => (1..values.len()).fold(cmp::eq(&col, &v(0)).unwrap(), |acc, i| {
                or_kleene(&acc, &cmp::eq(&col, &v(i)).unwrap()).unwrap()
            }),
        };
        Ok(r.iter().collect())
    }

    /// `decimal(15, 2)`: 1.00, 0.08, -3.50, NULL, 100000.50, 0.05, 0.07.
    fn decimals() -> ArrayRef {
        let values = [
            Some(100),
            Some(8),
            Some(-350),
            None,
            Some(10_000_050),
            Some(5),
            Some(7),
        ];
        Arc::new(
            arrow_array::Decimal128Array::from(values.to_vec())
                .with_precision_and_scale(15, 2)
                .unwrap(),
        )
    }

    /// `T`, `F` and `N` (NULL) for each row, from a pattern such as "TF-N".
    fn rows(pattern: &str) -> Vec<Option<bool>> {
        pattern
            .chars()
            .map(|c| match c {
                'T' => Some(true),
                'F' => Some(false),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn decimal_columns_compare_exactly_with_integers_and_decimals() {
        let q = decimals();
        for (filter, want) in [
            ("q < 2", "TTTNFTT"),
            ("q > 100000", "FFFNTFF"),
            ("q >= 100000.50", "FFFNTFF"),
            ("q = 0.08", "FTFNFFF"),
            ("q = 0.080", "FTFNFFF"),
            ("q = 0.085", "FFFNFFF"),
            ("q < 0.085", "FTTNFTT"),
            ("q <= 0.08", "FTTNFTT"),
            ("q > 0.079", "TTFNTFF"),
            ("q = -3.5", "FFTNFFF"),
            ("q < -3.499", "FFTNFFF"),
            ("q > -3.505", "TTTNTTT"),
            ("q < 1e0", "FTTNFTT"),
            ("q = 8e-2", "FTFNFFF"),
            ("q = 0.01 * 8", "FTFNFFF"),
            ("q = 7 / 2 - 2.5", "TFFNFFF"),
            ("q BETWEEN 0.05 AND 0.07", "FFFNFTT"),
            ("q BETWEEN 0.051 AND 0.08", "FTFNFFT"),
            ("q BETWEEN -4 AND 1", "TTTNFTT"),
            ("q IN (0.08, 1, 0.085)", "TTFNFFF"),
            ("q IN (0.085, NULL)", "NNNNNNN"),
            ("q < 100000000000000000.5", "TTTNTTT"),
            ("q = NULL", "NNNNNNN"),
        ] {
            for typing in [Typing::Column, Typing::Common] {
                assert_eq!(
                    answer(filter, typing, &q),
                    Ok(rows(want)),
                    "{filter} {typing:?}"
                );
            }
        }
        // a literal the column holds compares in its type (an index answers it); one with
        // more digits in a decimal holding both, never rounded
        let t = q.data_type();
        let (compare_as, _) = typed(&[&lit_of("q = 0.08")], Typing::Column, t).unwrap();
        assert_eq!(compare_as, None);
        let (compare_as, _) = typed(&[&lit_of("q = 2")], Typing::Common, t).unwrap();
        assert_eq!(compare_as, None);
        let (compare_as, _) = typed(&[&lit_of("q = 0.085")], Typing::Column, t).unwrap();
        assert_eq!(compare_as, Some(DataType::Decimal128(16, 3)));
        // an integer the column cannot hold: refused where Lance casts it into the column
        // (as for an integer column), compared in DataFusion's common type where it does not
        let big = "q < 10000000000000000";
        assert!(answer(big, Typing::Column, &q).is_err());
        assert_eq!(answer(big, Typing::Common, &q), Ok(rows("TTTNTTT")));
        let (compare_as, _) = typed(&[&lit_of(big)], Typing::Common, t).unwrap();
        assert_eq!(compare_as, Some(DataType::Decimal128(22, 2)));
        for refused in [
            "q = 1e400",
            "q = 'x'",
            "q = TRUE",
            "q = 1 / 0",
            "q = 0.1 / 0",
        ] {
            assert!(answer(refused, Typing::Column, &q).is_err(), "{refused}");
        }
        // a 256-bit column, and literals past 38 digits
        let wide = cast_to(q.clone(), &DataType::Decimal256(40, 2)).unwrap();
        assert_eq!(answer("q < 2", Typing::Column, &wide), Ok(rows("TTTNFTT")));
        assert_eq!(
            answer("q = 0.085", Typing::Column, &wide),
            Ok(rows("FFFNFFF"))
        );
        let long = "q < 1234567890123456789012345678901234567890.5";
        assert_eq!(answer(long, Typing::Column, &q), Ok(rows("TTTNTTT")));
        // the literal is exact from its text: no float nearest to it
        let v = resolve(&lit_of("q = 0.1"), &DataType::Decimal128(38, 37)).unwrap();
        let v = v
            .as_primitive::<arrow_array::types::Decimal128Type>()
            .value(0);
        assert_eq!(v, 10i128.pow(36));
    }

    #[test]
    fn decimal_literals_stay_floats_for_float_columns() {
        assert_eq!(f64_of("f = 0.1"), 0.1);
        assert_eq!(f64_of("f = 1e3"), 1000.0);
        assert_eq!(f64_of("f = -2.5 * 2"), -5.0);
        assert!(i64_of("i = 1.5").is_err());
        let f = Arc::new(arrow_array::Float64Array::from(vec![
            Some(0.1),
            None,
            Some(0.3),
        ]));
        let f: ArrayRef = f;
        assert_eq!(answer("f < 0.2", Typing::Column, &f), Ok(rows("TNF")));
        assert_eq!(answer("f = 0.1 + 0.2", Typing::Common, &f), Ok(rows("FNF")));
    }

    #[test]
    fn date_columns_take_date_strings() {
        // 2024-01-02, 1994-01-01, NULL, 1993-12-31
        let d: ArrayRef = Arc::new(arrow_array::Date32Array::from(vec![
            Some(19724),
            Some(8766),
            None,
            Some(8765),
        ]));
        for (filter, want) in [
            ("d >= '1994-01-01'", "TTNF"),
            ("d = '2024-1-2'", "TFNF"),
            ("d < DATE '1994-01-01'", "FFNT"),
            ("d BETWEEN '1994-01-01' AND '1995-01-01'", "FTNF"),
            ("d IN ('1993-12-31', '2024-01-02')", "TFNT"),
        ] {
            for typing in [Typing::Column, Typing::Common] {
                assert_eq!(
                    answer(filter, typing, &d),
                    Ok(rows(want)),
                    "{filter} {typing:?}"
                );
            }
        }
        for refused in ["d = 'yesterday'", "d = '1994-02-30'", "d = 19724"] {
            assert!(answer(refused, Typing::Column, &d).is_err(), "{refused}");
        }
    }
}
