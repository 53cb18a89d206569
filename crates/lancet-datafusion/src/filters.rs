//! DataFusion filters as lancet filters, where lancet answers them exactly.
//!
//! A filter DataFusion pushes into a scan is translated into lancet-filter's expression, built
//! directly (no text in between, so no quoting rules to get wrong). Only forms whose meaning
//! is the same in both engines are translated; each is then answered by lancet exactly
//! (through a BTree where one covers the column) and reported `Exact`. Anything else is
//! `Unsupported`: DataFusion evaluates it over the rows read, so an answer is never wrong,
//! only slower.
//!
//! Translated: a top-level column compared with a literal (`=`, `<>`, `<`, `<=`, `>`, `>=`,
//! either side), `AND`, `OR`, `NOT`, `IS [NOT] NULL`, `[NOT] IN (literals)`,
//! `[NOT] BETWEEN literal AND literal`, `[NOT] [I]LIKE 'pattern'` without an `ESCAPE`.
//! Literals: booleans, integers, finite non-zero floats, decimals, strings, binaries, dates,
//! and timestamps without a time zone. Not translated: arithmetic (overflow and division by
//! zero are errors in one engine and not the other), casts, functions, columns compared with
//! columns, fields inside structs, NaN, and a float zero (DataFusion orders -0.0 before 0.0,
//! lancet holds them equal, as Lance's indexes do).
//!
//! Only a literal of exactly the column's type is translated (DataFusion's planner has put it
//! there when the comparison allows), and it is typed in the column's type
//! (`Typing::Column`): no common type is looked for, so a `UInt32`, `LargeUtf8` or
//! `FixedSizeBinary` column compares as DataFusion compares it. A literal DataFusion left in
//! another type (a comparison it evaluates through a cast) is not translated.

use arrow_schema::{DataType, Schema, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use lancet::{Expr as LExpr, Leaf, Lit, Op, Typing};

/// `expr` as a lancet expression over `schema`'s top-level columns, or `None` when lancet
/// would not answer it exactly as DataFusion does.
pub fn translate(expr: &Expr, schema: &Schema) -> Option<LExpr> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => Some(LExpr::And(
                Box::new(translate(left, schema)?),
                Box::new(translate(right, schema)?),
            )),
            Operator::Or => Some(LExpr::Or(
                Box::new(translate(left, schema)?),
                Box::new(translate(right, schema)?),
            )),
            _ => comparison(left, *op, right, schema),
        },
        Expr::Not(inner) => Some(LExpr::Not(Box::new(translate(inner, schema)?))),
        Expr::IsNull(inner) => Some(leaf(column(inner, schema)?.0, Leaf::IsNull)),
        Expr::IsNotNull(inner) => Some(LExpr::Not(Box::new(leaf(
            column(inner, schema)?.0,
            Leaf::IsNull,
        )))),
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => {
            let (name, t) = column(expr, schema)?;
            let leaf_ = Leaf::Between(literal(low, t)?, literal(high, t)?);
            negate(*negated, leaf(name, leaf_))
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let (name, t) = column(expr, schema)?;
            let values = list
                .iter()
                .map(|v| literal(v, t))
                .collect::<Option<Vec<Lit>>>()?;
            negate(*negated, leaf(name, Leaf::In(values)))
        }
        Expr::Like(Like {
            negated,
            expr,
            pattern,
            escape_char: None,
            case_insensitive,
        }) => {
            let (name, t) = column(expr, schema)?;
            if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
                return None;
            }
            let Lit::Str(pattern) = literal(pattern, t)? else {
                return None;
            };
            let like = Leaf::Like {
                pattern,
                case_insensitive: *case_insensitive,
            };
            negate(*negated, leaf(name, like))
        }
        _ => None,
    }
}

/// `left op right` with a column on one side and a literal on the other.
fn comparison(left: &Expr, op: Operator, right: &Expr, schema: &Schema) -> Option<LExpr> {
    let (name, lit, op) = match (column(left, schema), column(right, schema)) {
        (Some((name, t)), None) => (name, literal(right, t)?, op),
        (None, Some((name, t))) => (name, literal(left, t)?, op.swap()?),
        _ => return None,
    };
    let (cmp, negated) = match op {
        Operator::Eq => (Op::Eq, false),
        Operator::NotEq => (Op::Eq, true),
        Operator::Lt => (Op::Lt, false),
        Operator::LtEq => (Op::LtEq, false),
        Operator::Gt => (Op::Gt, false),
        Operator::GtEq => (Op::GtEq, false),
        _ => return None,
    };
    negate(negated, leaf(name, Leaf::Cmp(cmp, lit)))
}

fn leaf(column: String, leaf: Leaf) -> LExpr {
    LExpr::Leaf {
        column,
        leaf,
        typing: Typing::Column,
    }
}

fn negate(negated: bool, e: LExpr) -> Option<LExpr> {
    Some(match negated {
        true => LExpr::Not(Box::new(e)),
        false => e,
    })
}

/// The name and type of the top-level column `e` is, when `schema` has it.
fn column<'a>(e: &Expr, schema: &'a Schema) -> Option<(String, &'a DataType)> {
    let Expr::Column(c) = e else {
        return None;
    };
    let field = schema.field_with_name(&c.name).ok()?;
    Some((c.name.clone(), field.data_type()))
}

/// The literal `e` is, when it is of the column's type `t` and lancet reads it as DataFusion
/// does.
fn literal(e: &Expr, t: &DataType) -> Option<Lit> {
    let Expr::Literal(value, _) = e else {
        return None;
    };
    if value.data_type() != *t {
        return None;
    }
    if value.is_null() {
        return Some(Lit::Null);
    }
    let int = |v: i64| Some(Lit::Int(v));
    match value {
        ScalarValue::Boolean(Some(b)) => Some(Lit::Bool(*b)),
        ScalarValue::Int8(Some(v)) => int((*v).into()),
        ScalarValue::Int16(Some(v)) => int((*v).into()),
        ScalarValue::Int32(Some(v)) => int((*v).into()),
        ScalarValue::Int64(Some(v)) => int(*v),
        ScalarValue::UInt8(Some(v)) => int((*v).into()),
        ScalarValue::UInt16(Some(v)) => int((*v).into()),
        ScalarValue::UInt32(Some(v)) => int((*v).into()),
        ScalarValue::UInt64(Some(v)) => Some(Lit::UInt(*v)),
        // a zero of either sign: DataFusion's order and lancet's differ there
        ScalarValue::Float32(Some(v)) if v.is_finite() && *v != 0.0 => {
            Some(Lit::Float((*v).into()))
        }
        ScalarValue::Float64(Some(v)) if v.is_finite() && *v != 0.0 => Some(Lit::Float(*v)),
        ScalarValue::Decimal128(Some(v), _, scale) => {
            let magnitude = Lit::Decimal(decimal(v.unsigned_abs(), *scale));
            Some(match *v < 0 {
                true => Lit::Neg(Box::new(magnitude)),
                false => magnitude,
            })
        }
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(Lit::Str(s.clone())),
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b))
        | ScalarValue::FixedSizeBinary(_, Some(b)) => Some(Lit::Bytes(b.clone())),
        ScalarValue::Date32(Some(_)) => typed(value, DataType::Date32),
        ScalarValue::TimestampSecond(Some(_), None) => {
            typed(value, DataType::Timestamp(TimeUnit::Second, None))
        }
        ScalarValue::TimestampMillisecond(Some(_), None) => {
            typed(value, DataType::Timestamp(TimeUnit::Millisecond, None))
        }
        ScalarValue::TimestampMicrosecond(Some(_), None) => {
            typed(value, DataType::Timestamp(TimeUnit::Microsecond, None))
        }
        ScalarValue::TimestampNanosecond(Some(_), None) => {
            typed(value, DataType::Timestamp(TimeUnit::Nanosecond, None))
        }
        _ => None,
    }
}

/// A date or timestamp literal as lancet writes one (`DATE '…'`, `TIMESTAMP '…'`): its
/// text in `to`, the type it is cast to; only when the text casts back to the same value.
fn typed(value: &ScalarValue, to: DataType) -> Option<Lit> {
    let text = value.to_string();
    let back = ScalarValue::Utf8(Some(text.clone())).cast_to(&to).ok()?;
    (back == *value).then(|| Lit::Cast(Box::new(Lit::Str(text)), to))
}

/// The decimal `unscaled * 10^-scale` as digits (`5, 2` is `0.05`).
fn decimal(unscaled: u128, scale: i8) -> String {
    let digits = unscaled.to_string();
    match usize::try_from(scale) {
        Ok(0) => digits,
        Ok(scale) => {
            let padded = format!("{digits:0>width$}", width = scale + 1);
            let (whole, frac) = padded.split_at(padded.len() - scale);
            format!("{whole}.{frac}")
        }
        // a negative scale: trailing zeros
        Err(_) => format!("{digits}{}", "0".repeat(usize::from(scale.unsigned_abs()))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_schema::Field;
    use datafusion::prelude::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("d", DataType::Date32, true),
        ])
    }

    #[test]
    fn decimals_are_written_with_their_scale() {
        assert_eq!(decimal(5, 2), "0.05");
        assert_eq!(decimal(1234, 2), "12.34");
        assert_eq!(decimal(7, 0), "7");
        assert_eq!(decimal(7, -2), "700");
    }

    #[test]
    fn comparisons_logic_and_lists_translate_others_do_not() {
        let s = schema();
        let ok = [
            col("id").eq(lit(5i64)),
            lit(5i64).lt(col("id")),
            col("id").not_eq(lit(5i64)),
            col("id").gt(lit(1i64)).and(col("name").is_null()),
            col("id").between(lit(1i64), lit(9i64)),
            col("id").in_list(vec![lit(1i64), lit(2i64)], true),
            col("name").like(lit("a%")),
            col("name").is_not_null().or(col("id").lt_eq(lit(0i64))),
            col("d").gt_eq(lit(ScalarValue::Date32(Some(9000)))),
        ];
        for e in &ok {
            assert!(translate(e, &s).is_some(), "{e}");
        }
        let refused = [
            (col("id") + lit(1i64)).eq(lit(5i64)),
            col("id").eq(col("id")),
            col("missing").eq(lit(1i64)),
            col("id").eq(lit(f64::NAN)),
            // a literal of another type than the column's: DataFusion compares through a cast
            col("id").eq(lit(5i32)),
            col("name").eq(lit(ScalarValue::LargeUtf8(Some("a".into())))),
            col("id").in_list(vec![lit(1i64), col("id")], false),
            col("id")
                .eq(lit(1i64))
                .and((col("id") * lit(2i64)).gt(lit(3i64))),
        ];
        for e in &refused {
            assert!(translate(e, &s).is_none(), "{e}");
        }
        // literal on the left: the operator turns around
        let LExpr::Leaf { leaf, .. } = translate(&lit(5i64).lt(col("id")), &s).unwrap() else {
            panic!("a leaf")
        };
        assert_eq!(leaf, Leaf::Cmp(Op::Gt, Lit::Int(5)));
    }
}
