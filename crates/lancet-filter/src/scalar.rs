//! Values computed per row: column arithmetic in filters (`id % 7 = 3`, `a + b > 3`) and the
//! right-hand sides of `UPDATE ... SET col = expr`, evaluated on Arrow batches.
//!
//! Typing follows DataFusion's coercion, which Lance's filters and updates run through:
//! literals are typed by themselves (integers Int64, decimals Float64, strings Utf8), the
//! operands of arithmetic and comparisons meet in their common type ([`common_type`]: the
//! wider number, a float when either is), `+ - *` wrap on overflow, and `/` and `%` by zero
//! are errors. A value assigned to a column is cast to the column's type, refusing values
//! that do not fit.
//!
//! Decimals compute as DataFusion computes them, exactly: an integer operand as the decimal
//! holding its type's every value (`Int64` as `Decimal128(20, 0)`), `+ -` in the larger
//! scale with one more integer digit (`decimal(15, 2) + 1` is `Decimal128(23, 2)`), `*`
//! adding precisions (plus one) and scales, both capped at 38 digits, a result beyond its
//! precision an error; `/` as Arrow divides decimals (four more fractional digits,
//! truncated); a float operand makes it Float64. One deliberate difference: a constant
//! written with a decimal point beside a decimal value (`l_tax + 0.01`, `l_tax * 2 > 0.15`)
//! is that decimal exactly, where DataFusion would type it Float64 and compute in floats.
//! Assigned to a decimal column, a value is cast as Arrow casts (a scale reduced by rounding
//! half away from zero, a value beyond the precision an error).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::UInt32Array;
use arrow_array::{Array, ArrayRef, BooleanArray, Datum, RecordBatch, Scalar as ArrowScalar};
use arrow_schema::DataType;
use sqlparser::ast::{BinaryOperator, CastKind, Expr as Sql, FunctionArg, FunctionArgExpr};
use sqlparser::ast::{FunctionArguments, UnaryOperator};

use crate::functions::{call, Func};
use crate::typing::{
    arith_kernel, cast_to, common_type, decimal_operands, exact_decimal, is_decimal, natural,
    written_decimal,
};
use crate::{Arith, Lit, Op};

/// A value computed per row.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Column(String),
    Lit(Lit),
    Arith(Arith, Box<Scalar>, Box<Scalar>),
    Neg(Box<Scalar>),
    /// `CAST(e AS type)`.
    Cast(Box<Scalar>, DataType),
    /// `upper`, `lower`, `concat` and `||` on strings.
    Func(Func, Vec<Scalar>),
    /// A comparison as a boolean value (`x > 1`); `true`: negated (`<>` is a negated `=`).
    Compare(Op, bool, Box<Scalar>, Box<Scalar>),
    /// `a AND b` (`true`) or `a OR b` of boolean values, in Kleene logic.
    Logic(bool, Box<Scalar>, Box<Scalar>),
    /// `NOT a`.
    Not(Box<Scalar>),
    /// `a IS NULL` (`false`) or `a IS NOT NULL` (`true`).
    IsNull(Box<Scalar>, bool),
}

/// A computed value, evaluated: a column of the batch's length, or one value for every row.
enum Value {
    Array(ArrayRef),
    Const(ArrayRef),
}

impl Value {
    fn array(&self) -> &ArrayRef {
        match self {
            Value::Array(a) | Value::Const(a) => a,
        }
    }

    fn datum(&self) -> Box<dyn Datum + '_> {
        match self {
            Value::Array(a) => Box::new(a.clone()),
            Value::Const(a) => Box::new(ArrowScalar::new(a.clone())),
        }
    }

    fn map(self, f: impl FnOnce(ArrayRef) -> Result<ArrayRef, String>) -> Result<Value, String> {
        Ok(match self {
            Value::Array(a) => Value::Array(f(a)?),
            Value::Const(a) => Value::Const(f(a)?),
        })
    }

    /// As a column of `rows` values.
    fn into_array(self, rows: usize) -> Result<ArrayRef, String> {
        match self {
            Value::Array(a) => Ok(a),
            Value::Const(a) => {
                let zeros = UInt32Array::from(vec![0u32; rows]);
                arrow_select::take::take(&a, &zeros, None).map_err(|e| e.to_string())
            }
        }
    }
}

impl Scalar {
    /// Whether the value may be NULL on a row of `schema`, as DataFusion decides a computed
    /// column's nullability (Lance 14.0.2's `add_columns` declares its new field so): a column
    /// as its field (a column `schema` lacks: maybe), a literal unless it is NULL, arithmetic
    /// and `||` when either side may be, a negation or cast as its operand, and the string
    /// functions always (DataFusion's functions declare nullable results).
    pub fn nullable(&self, schema: &arrow_schema::Schema) -> bool {
        match self {
            Scalar::Column(c) => schema.field_with_name(c).map_or(true, |f| f.is_nullable()),
            Scalar::Lit(l) => lit_is_null(l),
            Scalar::Arith(_, a, b) => a.nullable(schema) || b.nullable(schema),
            Scalar::Neg(a) | Scalar::Cast(a, _) => a.nullable(schema),
            Scalar::Func(Func::Concat { skip_nulls: false }, args) => {
                args.iter().any(|a| a.nullable(schema))
            }
            Scalar::Func(_, _) => true,
            Scalar::Compare(_, _, a, b) | Scalar::Logic(_, a, b) => {
                a.nullable(schema) || b.nullable(schema)
            }
            Scalar::Not(a) => a.nullable(schema),
            Scalar::IsNull(..) => false,
        }
    }

    /// The columns this value reads, in first-use order, each once.
    pub fn columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Scalar::Column(c) => {
                if !out.contains(&c.as_str()) {
                    out.push(c)
                }
            }
            Scalar::Lit(_) => {}
            Scalar::Arith(_, a, b) => {
                a.columns(out);
                b.columns(out);
            }
            Scalar::Neg(a) | Scalar::Cast(a, _) | Scalar::Not(a) | Scalar::IsNull(a, _) => {
                a.columns(out)
            }
            Scalar::Func(_, args) => args.iter().for_each(|a| a.columns(out)),
            Scalar::Compare(_, _, a, b) | Scalar::Logic(_, a, b) => {
                a.columns(out);
                b.columns(out);
            }
        }
    }

    /// The value for every row of `batch` (which holds the columns it reads).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<ArrayRef, String> {
        self.value(batch)?.into_array(batch.num_rows())
    }

    /// The value for every row of `batch`, cast to `t` (a column it is assigned to); a value
    /// that does not fit is an error, never a silent NULL. A constant written with a decimal
    /// point assigned to a decimal column is its exact value, cast (never through a float).
    pub fn evaluate_as(&self, batch: &RecordBatch, t: &DataType) -> Result<ArrayRef, String> {
        let v = match self.exact_beside(t)? {
            Some(d) => Value::Const(d).into_array(batch.num_rows())?,
            None => self.evaluate(batch)?,
        };
        if v.data_type() == t {
            return Ok(v);
        }
        cast_to(v, t)
    }

    /// The constant this value is, as a literal (`None`: it reads a column or calls a function).
    fn as_lit(&self) -> Option<Lit> {
        match self {
            Scalar::Lit(l) => Some(l.clone()),
            Scalar::Neg(a) => Some(Lit::Neg(Box::new(a.as_lit()?))),
            Scalar::Arith(op, a, b) => Some(Lit::Arith(
                *op,
                Box::new(a.as_lit()?),
                Box::new(b.as_lit()?),
            )),
            _ => None,
        }
    }

    /// A constant written with a decimal point, at its exact value, when it meets a decimal
    /// of type `other`.
    fn exact_beside(&self, other: &DataType) -> Result<Option<ArrayRef>, String> {
        match self.as_lit() {
            Some(l) if is_decimal(other) && written_decimal(&l) => exact_decimal(&l),
            _ => Ok(None),
        }
    }

    fn value(&self, batch: &RecordBatch) -> Result<Value, String> {
        match self {
            Scalar::Column(c) => batch
                .column_by_name(c)
                .cloned()
                .map(Value::Array)
                .ok_or_else(|| format!("the table has no column {c:?}")),
            Scalar::Lit(l) => Ok(Value::Const(natural(l, &DataType::Null)?)),
            Scalar::Neg(a) => a
                .value(batch)?
                .map(|a| arrow_arith::numeric::neg_wrapping(&a).map_err(|e| e.to_string())),
            Scalar::Cast(a, t) => a.value(batch)?.map(|a| cast_to(a, t)),
            Scalar::Arith(op, a, b) => {
                let (a, b) = operands(a, b, batch)?;
                arith(*op, a, b)
            }
            Scalar::Func(f, args) => {
                let args = args
                    .iter()
                    .map(|a| a.value(batch)?.into_array(batch.num_rows()))
                    .collect::<Result<Vec<_>, _>>()?;
                call(*f, &args, batch.num_rows()).map(Value::Array)
            }
            Scalar::Compare(op, negated, a, b) => {
                let truth = compare(a, *op, b, batch)?;
                Ok(Value::Array(Arc::new(match negated {
                    true => arrow_arith::boolean::not(&truth).map_err(|e| e.to_string())?,
                    false => truth,
                })))
            }
            Scalar::Logic(and, a, b) => {
                let (a, b) = (a.truth(batch)?, b.truth(batch)?);
                let r = match and {
                    true => arrow_arith::boolean::and_kleene(&a, &b),
                    false => arrow_arith::boolean::or_kleene(&a, &b),
                };
                Ok(Value::Array(Arc::new(r.map_err(|e| e.to_string())?)))
            }
            Scalar::Not(a) => {
                let r = arrow_arith::boolean::not(&a.truth(batch)?).map_err(|e| e.to_string())?;
                Ok(Value::Array(Arc::new(r)))
            }
            Scalar::IsNull(a, negated) => {
                let a = a.evaluate(batch)?;
                let r = match negated {
                    true => arrow_arith::boolean::is_not_null(&a),
                    false => arrow_arith::boolean::is_null(&a),
                };
                Ok(Value::Array(Arc::new(r.map_err(|e| e.to_string())?)))
            }
        }
    }

    /// The value for every row as booleans (a value of another type is an error).
    fn truth(&self, batch: &RecordBatch) -> Result<BooleanArray, String> {
        let a = self.evaluate(batch)?;
        match a.data_type() {
            DataType::Boolean => Ok(a.as_boolean().clone()),
            DataType::Null => Ok(BooleanArray::new_null(a.len())),
            other => Err(format!("a value of type {other} is not true or false")),
        }
    }
}

/// `a` and `b` cast to their common type (both of a type `allowed` takes), and whether both
/// are constants; `what` names the operation in the error.
fn coerced(
    a: Value,
    b: Value,
    allowed: impl Fn(&DataType) -> bool,
    what: &str,
) -> Result<(Value, Value, bool), String> {
    let (ta, tb) = (a.array().data_type().clone(), b.array().data_type().clone());
    let t = common_type(&ta, &tb)
        .filter(|_| allowed(&ta) && allowed(&tb))
        .ok_or_else(|| format!("cannot {what} {ta} and {tb}"))?;
    let both_const = matches!((&a, &b), (Value::Const(_), Value::Const(_)));
    Ok((
        a.map(|x| cast_to(x, &t))?,
        b.map(|x| cast_to(x, &t))?,
        both_const,
    ))
}

/// `a` and `b` evaluated, a constant written with a decimal point beside a decimal value
/// taken at its exact value (see the module docs).
fn operands(a: &Scalar, b: &Scalar, batch: &RecordBatch) -> Result<(Value, Value), String> {
    let (mut va, mut vb) = (a.value(batch)?, b.value(batch)?);
    let (ta, tb) = (
        va.array().data_type().clone(),
        vb.array().data_type().clone(),
    );
    if let Some(d) = b.exact_beside(&ta)? {
        vb = Value::Const(d);
    }
    if let Some(d) = a.exact_beside(&tb)? {
        va = Value::Const(d);
    }
    Ok((va, vb))
}

/// `a op b` in their common type; with a decimal, in the types [`decimal_operands`] gives.
fn arith(op: Arith, a: Value, b: Value) -> Result<Value, String> {
    let what = format!("apply {op:?} to");
    let (ta, tb) = (a.array().data_type().clone(), b.array().data_type().clone());
    let (a, b, both_const) = match decimal_operands(&ta, &tb) {
        Some(types) => {
            let (ta, tb) = types.map_err(|_| format!("cannot {what} {ta} and {tb}"))?;
            let both_const = matches!((&a, &b), (Value::Const(_), Value::Const(_)));
            (
                a.map(|x| cast_to(x, &ta))?,
                b.map(|x| cast_to(x, &tb))?,
                both_const,
            )
        }
        None => {
            let numeric = |t: &DataType| t.is_integer() || t.is_floating() || *t == DataType::Null;
            coerced(a, b, numeric, &what)?
        }
    };
    let (x, y) = (a.datum(), b.datum());
    let r = arith_kernel(op, x.as_ref(), y.as_ref())?;
    Ok(if both_const {
        Value::Const(r)
    } else {
        Value::Array(r)
    })
}

/// `upper`, `lower` or a concatenation over `args` (each `rows` long).
/// `left op right` per row of `batch`, in the common type of the two sides: TRUE, FALSE, or
/// NULL where either side is NULL.
pub fn compare(
    left: &Scalar,
    op: Op,
    right: &Scalar,
    batch: &RecordBatch,
) -> Result<BooleanArray, String> {
    let (a, b) = operands(left, right, batch)?;
    let (a, b, both_const) = coerced(a, b, |_| true, "compare")?;
    let (x, y) = (a.datum(), b.datum());
    use arrow_ord::cmp;
    let r = match op {
        Op::Eq => cmp::eq(x.as_ref(), y.as_ref()),
        Op::Lt => cmp::lt(x.as_ref(), y.as_ref()),
        Op::LtEq => cmp::lt_eq(x.as_ref(), y.as_ref()),
        Op::Gt => cmp::gt(x.as_ref(), y.as_ref()),
        Op::GtEq => cmp::gt_eq(x.as_ref(), y.as_ref()),
    }
    .map_err(|e| e.to_string())?;
    if both_const {
        let v = Value::Const(Arc::new(r));
        return v
            .into_array(batch.num_rows())
            .map(|a| a.as_boolean().clone());
    }
    Ok(r)
}

/// Whether a literal is NULL (`NULL`, a cast or negation of it, arithmetic with it).
fn lit_is_null(l: &Lit) -> bool {
    match l {
        Lit::Null => true,
        Lit::Cast(l, _) | Lit::Neg(l) => lit_is_null(l),
        Lit::Arith(_, a, b) => lit_is_null(a) || lit_is_null(b),
        _ => false,
    }
}

/// The SQL expression as a computed value.
pub(crate) fn scalar(e: &Sql) -> Result<Scalar, String> {
    match e {
        Sql::Nested(inner) => scalar(inner),
        Sql::Identifier(_) | Sql::CompoundIdentifier(_) => crate::column(e)
            .map(Scalar::Column)
            .ok_or_else(|| format!("{e} is not a column")),
        Sql::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => Ok(Scalar::Neg(Box::new(scalar(expr)?))),
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(Scalar::Not(Box::new(scalar(expr)?))),
        Sql::IsNull(e) => Ok(Scalar::IsNull(Box::new(scalar(e)?), false)),
        Sql::IsNotNull(e) => Ok(Scalar::IsNull(Box::new(scalar(e)?), true)),
        Sql::BinaryOp { left, op, right } => {
            let (a, b) = (scalar(left)?, scalar(right)?);
            let op = match op {
                BinaryOperator::Plus => Arith::Add,
                BinaryOperator::Minus => Arith::Sub,
                BinaryOperator::Multiply => Arith::Mul,
                BinaryOperator::Divide => Arith::Div,
                BinaryOperator::Modulo => Arith::Rem,
                BinaryOperator::StringConcat => {
                    return Ok(Scalar::Func(Func::Concat { skip_nulls: false }, vec![a, b]))
                }
                BinaryOperator::And | BinaryOperator::Or => {
                    let and = matches!(op, BinaryOperator::And);
                    return Ok(Scalar::Logic(and, Box::new(a), Box::new(b)));
                }
                BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq => {
                    let (op, negated) = match op {
                        BinaryOperator::Eq => (Op::Eq, false),
                        BinaryOperator::NotEq => (Op::Eq, true),
                        BinaryOperator::Lt => (Op::Lt, false),
                        BinaryOperator::LtEq => (Op::LtEq, false),
                        BinaryOperator::Gt => (Op::Gt, false),
                        _ => (Op::GtEq, false),
                    };
                    return Ok(Scalar::Compare(op, negated, Box::new(a), Box::new(b)));
                }
                other => return Err(format!("operator {other} is not supported in a value")),
            };
            Ok(Scalar::Arith(op, Box::new(a), Box::new(b)))
        }
        Sql::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
        } if crate::literal(expr).is_err() => Ok(Scalar::Cast(
            Box::new(scalar(expr)?),
            crate::arrow_type(data_type)?,
        )),
        Sql::Function(f) if Func::named(&f.name.to_string()).is_some() => {
            let name = f.name.to_string();
            let func =
                Func::named(&name).ok_or_else(|| format!("function {name} is not supported"))?;
            let FunctionArguments::List(list) = &f.args else {
                return Err(format!("{name} needs arguments"));
            };
            let args = list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => scalar(e),
                    other => Err(format!("argument {other} is not supported")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Scalar::Func(func, args))
        }
        Sql::Function(f) if crate::literal(e).is_err() => {
            Err(format!("function {} is not supported", f.name))
        }
        // a list literal, `[1, 2]`
        Sql::Array(a) => {
            let elements = a.elem.iter().map(scalar).collect::<Result<Vec<_>, _>>()?;
            Ok(Scalar::Func(Func::MakeArray, elements))
        }
        other => crate::literal(other).map(Scalar::Lit),
    }
}

/// Whether the SQL expression reads a column.
pub(crate) fn reads_column(e: &Sql) -> bool {
    scalar(e).is_ok_and(|s| {
        let mut out = Vec::new();
        s.columns(&mut out);
        !out.is_empty()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::{parse_assignment, Expr, Filter};
    use arrow_array::types::{Float64Type, Int32Type};
    use arrow_array::{Float64Array, Int32Array, Int64Array, StringArray};
    use arrow_schema::{Field, Schema};

    #[test]
    fn comparisons_and_logic_are_boolean_values_in_kleene_logic() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(3), None, Some(5)])),
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    None,
                    Some("c"),
                    Some("a"),
                ])),
            ],
        )
        .unwrap();
        let eval = |text: &str| -> Vec<Option<bool>> {
            let v = crate::parse_value(text).unwrap().evaluate(&batch).unwrap();
            v.as_boolean().iter().collect()
        };
        let (t, f, n) = (Some(true), Some(false), None);
        assert_eq!(eval("x > 2"), [f, t, n, t]);
        assert_eq!(eval("x <> 3"), [t, f, n, t]);
        assert_eq!(eval("x + 1 >= 4 AND s = 'a'"), [f, n, f, t]);
        assert_eq!(eval("x > 2 OR s = 'a'"), [t, t, n, t]);
        assert_eq!(eval("NOT (x > 2)"), [t, f, n, f]);
        assert_eq!(eval("s IS NULL"), [f, t, f, f]);
        assert_eq!(eval("x IS NOT NULL AND x < 4"), [t, t, f, f]);
        // declared not nullable where neither side may be NULL, as DataFusion declares it
        let strict = Schema::new(vec![Field::new("x", DataType::Int64, false)]);
        let nullable = |text: &str| crate::parse_value(text).unwrap().nullable(&strict);
        assert!(!nullable("x > 1") && !nullable("x IS NULL") && !nullable("NOT (x = 2)"));
        assert!(nullable("x > CAST(NULL AS bigint)"));
        // a value that is not true or false under AND is the caller's error
        let v = crate::parse_value("x AND x > 1").unwrap();
        assert!(v
            .evaluate(&batch)
            .unwrap_err()
            .contains("not true or false"));
    }

    #[test]
    fn a_computed_value_is_nullable_as_datafusion_declares_it() {
        let schema = Schema::new(vec![
            Field::new("v", DataType::Int64, false),
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, false),
        ]);
        let nullable = |text: &str| crate::parse_value(text).unwrap().nullable(&schema);
        for (text, want) in [
            ("v * 2", false),
            ("-v + 1", false),
            ("CAST(v AS double)", false),
            ("7", false),
            ("s || 'x'", false),
            ("n * 2", true),
            ("v + n", true),
            ("NULL", true),
            ("v + CAST(NULL AS bigint)", true),
            ("upper(s)", true),
            ("missing", true),
        ] {
            assert_eq!(nullable(text), want, "{text}");
        }
    }

    fn batch() -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, true),
                Field::new("a", DataType::Int32, true),
                Field::new("x", DataType::Float64, true),
                Field::new("s", DataType::Utf8, true),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![Some(0), Some(3), Some(10), None])),
                Arc::new(Int32Array::from(vec![Some(1), Some(2), None, Some(4)])),
                Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, 3.5])),
                Arc::new(StringArray::from(vec![
                    Some("ab"),
                    None,
                    Some("Cd"),
                    Some("e"),
                ])),
            ],
        )
        .unwrap()
    }

    fn compare_of(filter: &str) -> Result<BooleanArray, String> {
        match Filter::parse(filter).unwrap().expr() {
            Expr::Compare { left, op, right } => compare(left, *op, right, &batch()),
            Expr::Not(inner) => match inner.as_ref() {
                Expr::Compare { left, op, right } => {
                    let b = compare(left, *op, right, &batch())?;
                    Ok(arrow_arith::boolean::not(&b).unwrap())
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{filter}: {other:?}"),
        }
    }

    fn truths(b: &BooleanArray) -> Vec<Option<bool>> {
        b.iter().collect()
    }

    #[test]
    fn column_arithmetic_compares_per_row_with_nulls() {
        let t = |f| truths(&compare_of(f).unwrap());
        assert_eq!(t("id % 7 = 3"), [Some(false), Some(true), Some(true), None]);
        // Int64 + Int32 meet in Int64; a NULL operand makes the row NULL
        assert_eq!(t("id + a > 3"), [Some(false), Some(true), None, None]);
        assert_eq!(t("a < id"), [Some(false), Some(true), None, None]);
        assert_eq!(
            t("x * 2 = 3"),
            [Some(false), Some(true), Some(false), Some(false)]
        );
        // an integer column against a decimal: compared as Float64
        assert_eq!(
            t("id / 2 = 1.5"),
            [Some(false), Some(false), Some(false), None]
        );
        assert_eq!(t("id <> a"), [Some(true), Some(true), None, None]);
        assert_eq!(
            t("upper(s) = 'CD'"),
            [Some(false), None, Some(true), Some(false)]
        );
        assert_eq!(t("1 = 1"), [Some(true); 4]);
    }

    #[test]
    fn bad_arithmetic_is_an_error_not_a_panic() {
        assert!(compare_of("id % 0 = 1")
            .unwrap_err()
            .contains("ivide by zero"));
        assert!(compare_of("s + 1 = 2")
            .unwrap_err()
            .contains("cannot apply"));
        assert!(compare_of("nope + 1 = 2")
            .unwrap_err()
            .contains("no column"));
        assert!(Filter::parse("sqrt(id) = 2").is_err());
    }

    #[test]
    fn assignments_are_cast_to_their_column() {
        let (col, v) = parse_assignment("x = x * 2").unwrap();
        assert_eq!(col, "x");
        let out = v.evaluate_as(&batch(), &DataType::Float64).unwrap();
        assert_eq!(
            out.as_primitive::<Float64Type>().values(),
            &[1.0, 3.0, 5.0, 7.0]
        );
        let (_, v) = parse_assignment("a = a + 1").unwrap();
        let out = v.evaluate_as(&batch(), &DataType::Int32).unwrap();
        let got: Vec<Option<i32>> = out.as_primitive::<Int32Type>().iter().collect();
        assert_eq!(got, [Some(2), Some(3), None, Some(5)]);
        // a constant fills every row
        let (_, v) = parse_assignment("s = 'u'").unwrap();
        assert_eq!(v.evaluate(&batch()).unwrap().len(), 4);
        let (_, v) = parse_assignment("s = concat(s, '-', id)").unwrap();
        let out = v.evaluate_as(&batch(), &DataType::Utf8).unwrap();
        let got: Vec<Option<&str>> = out.as_string::<i32>().iter().collect();
        assert_eq!(got, [Some("ab-0"), Some("-3"), Some("Cd-10"), Some("e-")]);
        // a value that does not fit its column is refused, never NULL
        let (_, v) = parse_assignment("a = id * 1000000000000").unwrap();
        assert!(v.evaluate_as(&batch(), &DataType::Int32).is_err());
        let (_, v) = parse_assignment("id = id || 'x'").unwrap();
        assert!(v.evaluate_as(&batch(), &DataType::Int64).is_err());
        assert!(parse_assignment("x + 1 = 2").is_err());
        assert!(parse_assignment("x").is_err());
    }

    /// `decimal(15, 2)` columns q (quantity), p (price), d (discount), and a float x.
    fn decimals() -> RecordBatch {
        let dec = |v: Vec<Option<i128>>| -> ArrayRef {
            Arc::new(
                arrow_array::Decimal128Array::from(v)
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            )
        };
        let d = DataType::Decimal128(15, 2);
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("q", d.clone(), true),
                Field::new("p", d.clone(), true),
                Field::new("d", d, true),
                Field::new("x", DataType::Float64, true),
            ])),
            vec![
                dec(vec![Some(100), Some(1750), None, Some(-225)]),
                dec(vec![
                    Some(100_000),
                    Some(2599),
                    Some(300),
                    Some(999_999_999_999_999),
                ]),
                dec(vec![Some(5), Some(10), Some(7), None]),
                Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, 3.5])),
            ],
        )
        .unwrap()
    }

    /// The value of `expr` on [`decimals`], as its type and its rows as text.
    fn decimal_value(expr: &str) -> Result<(DataType, Vec<String>), String> {
        let (_, v) = parse_assignment(&format!("q = {expr}")).unwrap();
        let out = v.evaluate(&decimals())?;
        Ok((out.data_type().clone(), shown(&out)))
    }

    fn shown(a: &ArrayRef) -> Vec<String> {
        (0..a.len())
            .map(|i| match a.is_valid(i) {
                true => arrow_cast::display::array_value_to_string(a, i).unwrap(),
                false => "NULL".into(),
            })
            .collect()
    }

    #[test]
    fn decimal_arithmetic_is_exact_and_typed_as_datafusion_types_it() {
        let v = |e: &str| decimal_value(e).unwrap();
        let d = DataType::Decimal128;
        assert_eq!(v("q + 1").0, d(23, 2));
        assert_eq!(v("q + 1").1, ["2.00", "18.50", "NULL", "-1.25"]);
        assert_eq!(v("q * 2").0, d(36, 2));
        assert_eq!(v("q * 2").1, ["2.00", "35.00", "NULL", "-4.50"]);
        assert_eq!(v("-q").1, ["-1.00", "-17.50", "NULL", "2.25"]);
        assert_eq!(v("p - d").0, d(16, 2));
        assert_eq!(v("p - d").1, ["999.95", "25.89", "2.93", "NULL"]);
        assert_eq!(v("q * d").0, d(31, 4));
        // a constant with a point beside a decimal is that decimal exactly
        assert_eq!(v("q + 0.5").0, d(16, 2));
        assert_eq!(v("q + 0.5").1, ["1.50", "18.00", "NULL", "-1.75"]);
        assert_eq!(v("d * 1.1").1, ["0.055", "0.110", "0.077", "NULL"]);
        assert_eq!(v("0.01 + d").1, ["0.06", "0.11", "0.08", "NULL"]);
        // with a float, in floats (as DataFusion)
        assert_eq!(v("q + x").0, DataType::Float64);
        // a result beyond its precision is an error, never wrapped
        assert!(decimal_value("p * 100000000000000000000000000").is_err());
        assert!(decimal_value("q / 0")
            .unwrap_err()
            .contains("ivide by zero"));
    }

    #[test]
    fn decimal_assignments_are_cast_to_their_column() {
        let t = DataType::Decimal128(15, 2);
        let set = |text: &str| -> Result<Vec<String>, String> {
            let (_, v) = parse_assignment(text).unwrap();
            v.evaluate_as(&decimals(), &t).map(|a| {
                assert_eq!(a.data_type(), &t);
                shown(&a)
            })
        };
        assert_eq!(
            set("q = q + 1").unwrap(),
            ["2.00", "18.50", "NULL", "-1.25"]
        );
        assert_eq!(
            set("q = q * 2 - d").unwrap(),
            ["1.95", "34.90", "NULL", "NULL"]
        );
        assert_eq!(set("q = 0.08").unwrap(), ["0.08"; 4]);
        assert_eq!(set("q = -3").unwrap(), ["-3.00"; 4]);
        // more digits than the column holds: rounded half away from zero, as Arrow casts
        assert_eq!(
            set("d = d * 1.1").unwrap(),
            ["0.06", "0.11", "0.08", "NULL"]
        );
        assert_eq!(set("d = 0.085").unwrap(), ["0.09"; 4]);
        // beyond the precision: an error, never NULL
        assert!(set("p = p + 1").is_err());
        assert!(set("q = 10000000000000").is_err());
        assert!(set("q = 1e20").is_err());
    }

    #[test]
    fn decimal_comparisons_of_computed_values_are_exact() {
        let t = |f: &str| -> Vec<Option<bool>> {
            match Filter::parse(f).unwrap().expr() {
                Expr::Compare { left, op, right } => {
                    truths(&compare(left, *op, right, &decimals()).unwrap())
                }
                other => panic!("{f}: {other:?}"),
            }
        };
        assert_eq!(t("q + 1 > 2"), [Some(false), Some(true), None, Some(false)]);
        // in floats 0.05 + 0.01 is not 0.06
        assert_eq!(
            t("d + 0.01 = 0.06"),
            [Some(true), Some(false), Some(false), None]
        );
        assert_eq!(
            t("d * 2 >= 0.14"),
            [Some(false), Some(true), Some(true), None]
        );
        assert_eq!(t("q > d"), [Some(true), Some(true), None, None]);
        assert_eq!(
            t("q * 1 = -2.25"),
            [Some(false), Some(false), None, Some(true)]
        );
        assert_eq!(t("q - 1 < x"), [Some(true), Some(false), None, Some(true)]);
    }
}
