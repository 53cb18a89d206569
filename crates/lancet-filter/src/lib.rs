//! Lance's filter language: the boolean SQL expressions pylance 14.0.2 accepts in
//! `to_table(filter=...)`, parsed with `sqlparser` into predicates on one column each,
//! combined with Kleene (three-valued) logic, and the typing of their literals by the column
//! they meet ([`typed`]). lancet's `Dataset::search` answers them; an engine embedding this
//! crate alone parses and types Lance's filters the same way.
//!
//! What lancet reads as Lance does (each checked against pylance in the interop tests):
//! - identifiers are bare or in backticks; `"x"` and `'x'` are both strings; a string has no
//!   backslash escapes (`''` is a quote);
//! - literals are typed by the column they meet, not coerced: an integer fits an integer,
//!   float or decimal column (`l_quantity < 2` on `decimal(15, 2)`, exactly), a decimal
//!   number only a float column, a string only a string column (`i = 2.0`, `s = 1` are
//!   errors, as in Lance; but see the differences below); `DATE '…'`, `TIMESTAMP '…'` and
//!   `CAST(literal AS type)` convert first (`CAST('NaN' AS DOUBLE)`,
//!   `CAST('-Infinity' AS DOUBLE)`);
//! - constant arithmetic (`+ - * / %`, unary minus, parentheses) is folded in the column's
//!   type, so `i = 7 / 2` is `i = 3` and `f = 3 / 2` is `f = 1.5` (on a decimal column,
//!   exactly: `d = 7 / 2` is `d = 3.5`);
//! - `LIKE`/`ILIKE` patterns escape with a backslash only (another `ESCAPE` character is an
//!   error, as in Lance); `starts_with(col, 'p')`; `IS [NOT] TRUE|FALSE`, `IS [NOT] DISTINCT
//!   FROM`, a bare boolean column, and the constants `TRUE`, `FALSE`, `NULL`.
//!
//! - column arithmetic and comparisons between computed values (`id % 7 = 3`, `a + b > 3`,
//!   `upper(s) = 'X'`): an [`Expr::Compare`] of two [`Scalar`]s, typed as DataFusion coerces
//!   (see [`scalar`]), answered by reading the columns it names; `UPDATE ... SET col = expr`
//!   right-hand sides are the same values ([`parse_assignment`]).
//!
//! - functions ([`functions`]): `starts_with(col, 'p')` as a prefix search, and in values or
//!   as predicates `upper`, `lower`, `concat`, `length`, `contains`, `ends_with`,
//!   `regexp_like`/`regexp_match`, `abs`, `array_length`, `array_has`/`array_contains`,
//!   `array_has_any`, `array_has_all`, list literals (`[1, 2]`), `now()`, `current_date()`.
//!
//! Not accepted (a typed [`FilterError::InvalidFilter`]): other functions; `IN`, `BETWEEN`,
//! `IS NULL` and `LIKE` on a computed value; `IS UNKNOWN` (Lance refuses it too).
//!
//! Deliberate differences from pylance 14.0.2, which refuses these (its literal coercion has
//! no conversion from a float literal to a decimal, nor from a string to a date, so the
//! filter fails to plan) where the answer is not in doubt:
//! - a decimal number against a decimal column (`l_discount BETWEEN 0.05 AND 0.07`,
//!   `l_tax = 0.08`) is answered exactly, the literal taken from its text
//!   ([`Lit::Decimal`]), never through a float: in the column's type when it fits,
//!   otherwise in a decimal wide enough for both, so `l_tax = 0.085` on scale 2 holds for
//!   no row and `l_tax < 0.085` holds for 0.08 (no rounding); the same exactness under NOT
//!   and in column arithmetic (`l_tax + 0.01 = 0.09`), where DataFusion would compare in
//!   Float64 (see [`typed`], [`scalar`]);
//! - a string against a date column (`l_shipdate >= '1994-01-01'`) is cast to the date
//!   type, as `DATE '1994-01-01'` is; a string that is no date is an error.
//!
//! Otherwise what Lance answers lancet answers alike; the one place a result may differ is
//! a decimal column against a decimal number under NOT (Lance compares in Float64 there),
//! and lancet's is then the exact one, as SQL's exact numerics give.
//!
//! [`answer`] evaluates a filter over row sets ([`NullableIdSet`]) in Kleene logic, with its
//! predicates answered by the caller (an index, or columns read).
//!
//! Filter text comes from users and scripts: nothing here panics on it (no `unwrap`,
//! `expect` or unchecked indexing outside tests), and a literal that does not fit its column
//! is an error, never a silent cast.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use arrow_schema::{DataType, TimeUnit};
use sqlparser::ast::{
    BinaryOperator, CastKind, DataType as SqlType, Expr as Sql, FunctionArg, FunctionArgExpr,
    FunctionArguments, UnaryOperator, Value,
};
use sqlparser::dialect::Dialect;
use sqlparser::parser::Parser;

mod answer;
mod error;
pub mod exprs;
pub mod functions;
pub mod scalar;
mod truths;
mod typing;

pub use answer::{answer, Answerer, Answering};
pub use error::{ErrorKind, FilterError, Result};
pub use functions::Func;
pub use scalar::Scalar;
pub use truths::{address_universe, NullableIdSet};
pub use typing::{
    cast_to, common_type, is_decimal, is_string, literal_value, natural, resolve, strict, typed,
    Conv,
};

/// A parsed filter: the expression, and the text it came from (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    text: String,
    expr: Expr,
}

impl Filter {
    /// Parses a filter such as `x >= 3 AND (name LIKE 'ab%' OR y IS NULL)`.
    pub fn parse(text: &str) -> Result<Filter> {
        let sql = parse_sql(text)?;
        let expr = convert(&sql, true).map_err(|reason| invalid(text, reason))?;
        Ok(Filter {
            text: text.to_string(),
            expr,
        })
    }

    /// A filter built in code (its text is the expression's debug form).
    pub fn from_expr(expr: Expr) -> Filter {
        Filter {
            text: format!("{expr:?}"),
            expr,
        }
    }

    /// The filter's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The expression, as parsed.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The columns the filter reads, in first-use order, each once.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.expr.columns(&mut out);
        out
    }
}

/// `text` as one SQL expression in Lance's dialect, nothing after it.
fn parse_sql(text: &str) -> Result<Sql> {
    Parser::new(&LanceDialect)
        .try_with_sql(text)
        .and_then(|mut p| {
            let e = p.parse_expr()?;
            p.expect_token(&sqlparser::tokenizer::Token::EOF)?;
            Ok(e)
        })
        .map_err(|e| invalid(text, format!("cannot parse: {e}")))
}

fn invalid(text: &str, reason: String) -> FilterError {
    FilterError::InvalidFilter {
        filter: text.to_string(),
        reason,
    }
}

/// Parses one assignment of `UPDATE ... SET`: `col = expr`, the column and its new value.
pub fn parse_assignment(text: &str) -> Result<(String, Scalar)> {
    let invalid = |reason: String| invalid(text, reason);
    match &parse_sql(text)? {
        Sql::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            let col = column(left).ok_or_else(|| invalid(format!("{left} is not a column")))?;
            Ok((col, scalar::scalar(right).map_err(invalid)?))
        }
        _ => Err(invalid("an assignment is `column = expression`".into())),
    }
}

/// Parses a value expression (`x * 2 + 1`, `CAST(v AS DECIMAL(10, 2))`, `'text'`): what an
/// update assigns or an added column holds.
pub fn parse_value(text: &str) -> Result<Scalar> {
    scalar::scalar(&parse_sql(text)?).map_err(|reason| invalid(text, reason))
}

/// The SQL dialect of Lance filters: backtick-quoted identifiers, no backslash escapes in
/// string literals, double quotes for strings.
#[derive(Debug)]
struct LanceDialect;

impl Dialect for LanceDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphanumeric() || ch == '_'
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }
}

/// A literal, typed when it meets its column (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    /// An integer that fits an `i64`.
    Int(i64),
    /// An integer above `i64::MAX` (only an unsigned column takes it).
    UInt(u64),
    /// A floating-point number built in code (the parser keeps a number with a decimal point
    /// or exponent as written, [`Lit::Decimal`]).
    Float(f64),
    /// A number with a decimal point or exponent, as written (`0.05`, `1e3`): a float column
    /// takes the nearest float, a decimal column its exact value.
    Decimal(String),
    Str(String),
    /// `X'616263'`: bytes, for a binary column.
    Bytes(Vec<u8>),
    Bool(bool),
    Null,
    /// `CAST(lit AS type)`, `DATE '…'`, `TIMESTAMP '…'`.
    Cast(Box<Lit>, DataType),
    /// `-lit`.
    Neg(Box<Lit>),
    /// Constant arithmetic, evaluated in the column's type.
    Arith(Arith, Box<Lit>, Box<Lit>),
}

/// An arithmetic operator of a constant expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A comparison operator, column on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// One predicate on one column.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    Cmp(Op, Lit),
    Between(Lit, Lit),
    In(Vec<Lit>),
    IsNull,
    /// Strings starting with this (unescaped) prefix: `LIKE 'p%'`, `starts_with`.
    Prefix(String),
    /// Any other `LIKE` pattern (backslash escapes), `ILIKE` when `case_insensitive`.
    Like {
        pattern: String,
        case_insensitive: bool,
    },
}

/// `e IS [NOT] TRUE|FALSE`: never NULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    NotTrue,
    NotFalse,
}

/// How a predicate's literals are typed (Lance 14 does both, by where the predicate is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    /// Converted into the column's type, or refused (`i = 2.5` is an error); constant
    /// arithmetic runs in the column's type (`f = 3 / 2` is 1.5). Lance does this for a
    /// comparison with the column on the left, reached from the top through AND/OR only.
    Column,
    /// Typed by themselves (integers Int64, decimals Float64, `3 / 2` is 1), then compared
    /// in the common type of column and literal, as DataFusion coerces (`NOT (i = 2.5)`
    /// compares as Float64). Under NOT, IS TRUE/FALSE, `= TRUE`, or literal on the left.
    Common,
}

/// A boolean expression over column predicates.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Leaf {
        column: String,
        leaf: Leaf,
        typing: Typing,
    },
    /// `TRUE`, `FALSE` or `NULL` (`None`) for every row.
    Const(Option<bool>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Is(Box<Expr>, Truth),
    /// `left op right` on computed values (`id % 7 = 3`, `a < b`): no index answers it.
    Compare {
        left: Scalar,
        op: Op,
        right: Scalar,
    },
}

impl Expr {
    /// The columns the expression reads, in first-use order, each once.
    pub fn columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Leaf { column, .. } => {
                if !out.contains(&column.as_str()) {
                    out.push(column)
                }
            }
            Expr::Const(_) => {}
            Expr::Not(e) | Expr::Is(e, _) => e.columns(out),
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.columns(out);
                b.columns(out);
            }
            Expr::Compare { left, right, .. } => {
                left.columns(out);
                right.columns(out);
            }
        }
    }

    /// The operands of an AND chain, in order (the expression itself when it is no AND).
    pub fn conjuncts<'a>(&'a self, out: &mut Vec<&'a Expr>) {
        match self {
            Expr::And(a, b) => {
                a.conjuncts(out);
                b.conjuncts(out);
            }
            other => out.push(other),
        }
    }
}

pub(crate) fn column(e: &Sql) -> Option<String> {
    match e {
        Sql::Identifier(id) => Some(id.value.clone()),
        // `source.v`: the column named with its qualifier (a merge_insert condition's source
        // and target columns are named so)
        Sql::CompoundIdentifier(parts) if !parts.is_empty() => Some(
            parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
        ),
        Sql::Nested(inner) => column(inner),
        _ => None,
    }
}

/// The Arrow type of a SQL type name, as DataFusion maps them.
pub(crate) fn arrow_type(t: &SqlType) -> Conv<DataType> {
    Ok(match t {
        SqlType::TinyInt(_) => DataType::Int8,
        SqlType::SmallInt(_) | SqlType::Int2(_) => DataType::Int16,
        SqlType::Int(_) | SqlType::Integer(_) | SqlType::Int4(_) | SqlType::Int32 => {
            DataType::Int32
        }
        SqlType::BigInt(_) | SqlType::Int8(_) | SqlType::Int64 => DataType::Int64,
        SqlType::BigIntUnsigned(_) => DataType::UInt64,
        SqlType::Float(_) | SqlType::Float4 | SqlType::Float32 | SqlType::Real => DataType::Float32,
        SqlType::Double(_) | SqlType::DoublePrecision | SqlType::Float8 | SqlType::Float64 => {
            DataType::Float64
        }
        SqlType::Varchar(_) | SqlType::Char(_) | SqlType::Text | SqlType::String(_) => {
            DataType::Utf8
        }
        SqlType::Bool | SqlType::Boolean => DataType::Boolean,
        SqlType::Date => DataType::Date32,
        SqlType::Timestamp(_, sqlparser::ast::TimezoneInfo::None) | SqlType::Datetime(_) => {
            DataType::Timestamp(TimeUnit::Nanosecond, None)
        }
        // DataFusion's DECIMAL: precision 38 and scale 10 when unsaid, a precision up to 38
        // (76 as Decimal256), a scale not above the precision
        SqlType::Decimal(info) | SqlType::Numeric(info) => {
            use sqlparser::ast::ExactNumberInfo;
            let (p, s) = match info {
                ExactNumberInfo::None => (38, 10),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
            };
            let bad = || format!("type {t}: precision 1 to 76, scale at most the precision");
            let p = u8::try_from(p).map_err(|_| bad())?;
            let s = i8::try_from(s).map_err(|_| bad())?;
            if p == 0 || s < 0 || s as u8 > p {
                return Err(bad());
            }
            match p {
                1..=38 => DataType::Decimal128(p, s),
                39..=76 => DataType::Decimal256(p, s),
                _ => return Err(bad()),
            }
        }
        other => return Err(format!("type {other} is not supported")),
    })
}

/// The bytes a hex literal's digits spell (`616263`: `abc`). An odd count or another
/// character is an error (Lance 14.0.2 reads such a literal as matching nothing).
fn hex_bytes(digits: &str) -> Conv<Vec<u8>> {
    hex::decode(digits).map_err(|e| format!("X'{digits}' is not a binary literal: {e}"))
}

pub(crate) fn literal(e: &Sql) -> Conv<Lit> {
    match e {
        Sql::Value(v) => match &v.value {
            Value::Number(n, _) => {
                if let Ok(i) = n.parse::<i64>() {
                    Ok(Lit::Int(i))
                } else if let Ok(u) = n.parse::<u64>() {
                    Ok(Lit::UInt(u))
                } else if n.parse::<f64>().is_ok() {
                    Ok(Lit::Decimal(n.clone()))
                } else {
                    Err(format!("number {n} is not supported"))
                }
            }
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Ok(Lit::Str(s.clone())),
            Value::HexStringLiteral(h) => hex_bytes(h).map(Lit::Bytes),
            Value::Boolean(b) => Ok(Lit::Bool(*b)),
            Value::Null => Ok(Lit::Null),
            other => Err(format!("literal {other} is not supported")),
        },
        Sql::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => Ok(Lit::Neg(Box::new(literal(expr)?))),
        Sql::BinaryOp { left, op, right } => {
            let a = match op {
                BinaryOperator::Plus => Arith::Add,
                BinaryOperator::Minus => Arith::Sub,
                BinaryOperator::Multiply => Arith::Mul,
                BinaryOperator::Divide => Arith::Div,
                BinaryOperator::Modulo => Arith::Rem,
                _ => return Err(format!("{e} is not a constant")),
            };
            Ok(Lit::Arith(
                a,
                Box::new(literal(left)?),
                Box::new(literal(right)?),
            ))
        }
        Sql::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
        } => Ok(Lit::Cast(Box::new(literal(expr)?), arrow_type(data_type)?)),
        Sql::TypedString(t) => {
            let (Value::SingleQuotedString(s) | Value::DoubleQuotedString(s)) = &t.value.value
            else {
                return Err(format!("{e}: a typed literal needs a string"));
            };
            Ok(Lit::Cast(
                Box::new(Lit::Str(s.clone())),
                arrow_type(&t.data_type)?,
            ))
        }
        Sql::Nested(inner) => literal(inner),
        Sql::Function(f) if f.name.to_string().eq_ignore_ascii_case("arrow_cast") => arrow_cast(f),
        Sql::Function(f) => clock(f).ok_or_else(|| format!("{e} is not a constant")),
        Sql::Identifier(_) | Sql::CompoundIdentifier(_) => Err(format!(
            "{e}: arithmetic on columns and comparisons between columns are not supported"
        )),
        other => Err(format!("{other} is not a literal")),
    }
}

/// `arrow_cast(literal, 'type')`, DataFusion's cast to an Arrow type named as Arrow prints
/// it (`'Time32(Second)'`, `'Duration(Millisecond)'`, `'Timestamp(Microsecond, Some("UTC"))'`):
/// how Lance filters name times and durations.
fn arrow_cast(f: &sqlparser::ast::Function) -> Conv<Lit> {
    let FunctionArguments::List(list) = &f.args else {
        return Err(format!("{f}: arrow_cast takes a value and a type"));
    };
    let args: Vec<&Sql> = (list.args.iter())
        .filter_map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect();
    let [value, Sql::Value(t)] = args.as_slice() else {
        return Err(format!("{f}: arrow_cast takes a value and a type's name"));
    };
    let Value::SingleQuotedString(name) = &t.value else {
        return Err(format!("{f}: arrow_cast's type is a quoted name"));
    };
    let to: DataType = name
        .parse()
        .map_err(|e| format!("{f}: {name:?} is not an Arrow type: {e}"))?;
    Ok(Lit::Cast(Box::new(literal(value)?), to))
}

/// `now()` (`current_timestamp()`: a timestamp in nanoseconds, UTC, without a zone) and
/// `current_date()` (`today()`), read from the clock now: DataFusion reads them once per
/// query, and a filter is parsed once per query.
fn clock(f: &sqlparser::ast::Function) -> Option<Lit> {
    let no_args = match &f.args {
        FunctionArguments::None => true,
        FunctionArguments::List(l) => l.args.is_empty(),
        FunctionArguments::Subquery(_) => false,
    };
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let nanos = i64::try_from(since.as_nanos()).ok()?;
    let days = i64::try_from(since.as_secs() / 86_400).ok()?;
    match f.name.to_string().to_ascii_lowercase().as_str() {
        "now" | "current_timestamp" if no_args => Some(Lit::Cast(
            Box::new(Lit::Int(nanos)),
            DataType::Timestamp(TimeUnit::Nanosecond, None),
        )),
        "current_date" | "today" if no_args => Some(Lit::Cast(
            Box::new(Lit::Cast(Box::new(Lit::Int(days)), DataType::Int32)),
            DataType::Date32,
        )),
        _ => None,
    }
}

fn flip(op: Op) -> Op {
    match op {
        Op::Lt => Op::Gt,
        Op::LtEq => Op::GtEq,
        Op::Gt => Op::Lt,
        Op::GtEq => Op::LtEq,
        Op::Eq => Op::Eq,
    }
}

fn leaf(column: String, leaf: Leaf, strict: bool) -> Expr {
    let typing = if strict {
        Typing::Column
    } else {
        Typing::Common
    };
    Expr::Leaf {
        column,
        leaf,
        typing,
    }
}

fn not(e: Expr) -> Expr {
    Expr::Not(Box::new(e))
}

fn negated_if(negated: bool, e: Expr) -> Expr {
    if negated {
        not(e)
    } else {
        e
    }
}

/// A LIKE pattern as a leaf: a literal string (no unescaped wildcard) is an equality, a
/// literal prefix followed by one `%` a prefix search; anything else stays a pattern.
fn like_leaf(pattern: &str) -> Leaf {
    let mut literal = String::new();
    let mut chars = pattern.chars();
    loop {
        match chars.next() {
            None => return Leaf::Cmp(Op::Eq, Lit::Str(literal)),
            Some('\\') => match chars.next() {
                Some(escaped) => literal.push(escaped),
                // a dangling escape: the LIKE kernel decides
                None => break,
            },
            Some('%') if chars.as_str().is_empty() => return Leaf::Prefix(literal),
            Some('%' | '_') => break,
            Some(c) => literal.push(c),
        }
    }
    Leaf::Like {
        pattern: pattern.to_string(),
        case_insensitive: false,
    }
}

fn like(
    expr: &Sql,
    pattern: &Sql,
    escape: &Option<Value>,
    negated: bool,
    case_insensitive: bool,
    strict: bool,
) -> Conv<Expr> {
    match escape {
        None => {}
        Some(Value::SingleQuotedString(c)) if c == "\\" => {}
        Some(other) => {
            return Err(format!(
                "LIKE supports no escape character but the backslash, not {other}"
            ))
        }
    }
    let col = column(expr).ok_or_else(|| format!("{expr} is not a column"))?;
    let Lit::Str(p) = literal(pattern)? else {
        return Err("LIKE needs a string pattern".into());
    };
    let l = if case_insensitive {
        Leaf::Like {
            pattern: p,
            case_insensitive: true,
        }
    } else {
        like_leaf(&p)
    };
    Ok(negated_if(negated, leaf(col, l, strict)))
}

/// `strict`: Lance types the literals of this predicate by its column (a comparison with
/// the column on the left, at the top or under AND/OR); under NOT, IS TRUE/FALSE, `= TRUE`
/// or with the literal on the left it leaves typing to DataFusion's coercion.
fn convert(e: &Sql, strict: bool) -> Conv<Expr> {
    match e {
        Sql::Nested(inner) => convert(inner, strict),
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(not(convert(expr, false)?)),
        Sql::Value(v) => match &v.value {
            Value::Boolean(b) => Ok(Expr::Const(Some(*b))),
            Value::Null => Ok(Expr::Const(None)),
            other => Err(format!("{other} is not a boolean")),
        },
        // a bare (boolean) column
        Sql::Identifier(_) | Sql::CompoundIdentifier(_) => {
            let col = column(e).ok_or_else(|| format!("{e} is not a column"))?;
            Ok(leaf(col, Leaf::Cmp(Op::Eq, Lit::Bool(true)), strict))
        }
        Sql::BinaryOp { left, op, right } => {
            let cmp = match op {
                BinaryOperator::And => {
                    if let Some(folded) = fold_in_lists(left, right, true) {
                        return Ok(folded);
                    }
                    return Ok(Expr::And(
                        Box::new(convert(left, strict)?),
                        Box::new(convert(right, strict)?),
                    ));
                }
                BinaryOperator::Or => {
                    if let Some(folded) = fold_in_lists(left, right, false) {
                        return Ok(folded);
                    }
                    return Ok(Expr::Or(
                        Box::new(convert(left, strict)?),
                        Box::new(convert(right, strict)?),
                    ));
                }
                BinaryOperator::Eq => Some((Op::Eq, false)),
                BinaryOperator::NotEq => Some((Op::Eq, true)),
                BinaryOperator::Lt => Some((Op::Lt, false)),
                BinaryOperator::LtEq => Some((Op::LtEq, false)),
                BinaryOperator::Gt => Some((Op::Gt, false)),
                BinaryOperator::GtEq => Some((Op::GtEq, false)),
                _ => None,
            };
            let (op, negate) = cmp.ok_or_else(|| format!("operator {op} is not supported"))?;
            // `pred = TRUE` / `pred = FALSE` on a boolean sub-expression
            if op == Op::Eq {
                for (p, v) in [(left, right), (right, left)] {
                    if let (Ok(Lit::Bool(b)), true) = (literal(v), column(p).is_none()) {
                        let inner = convert(p, false)?;
                        return Ok(negated_if(negate == b, inner));
                    }
                }
            }
            let (col, lit, op, strict) = match (column(left), column(right)) {
                (Some(c), None) if !scalar::reads_column(right) => (c, literal(right)?, op, strict),
                (None, Some(c)) if !scalar::reads_column(left) => {
                    (c, literal(left)?, flip(op), false)
                }
                // computed values, or two columns
                _ => {
                    let compare = Expr::Compare {
                        left: scalar::scalar(left)?,
                        op,
                        right: scalar::scalar(right)?,
                    };
                    return Ok(negated_if(negate, compare));
                }
            };
            Ok(negated_if(negate, leaf(col, Leaf::Cmp(op, lit), strict)))
        }
        Sql::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let col = column(expr).ok_or_else(|| format!("{expr} is not a column"))?;
            let out = leaf(col, Leaf::Between(literal(low)?, literal(high)?), strict);
            Ok(negated_if(*negated, out))
        }
        Sql::InList {
            expr,
            list,
            negated,
        } => {
            let col = column(expr).ok_or_else(|| format!("{expr} is not a column"))?;
            let values = list.iter().map(literal).collect::<Conv<Vec<_>>>()?;
            Ok(negated_if(*negated, leaf(col, Leaf::In(values), strict)))
        }
        Sql::IsNull(expr) | Sql::IsNotNull(expr) => {
            let col = column(expr).ok_or_else(|| format!("{expr} is not a column"))?;
            Ok(negated_if(
                matches!(e, Sql::IsNotNull(_)),
                leaf(col, Leaf::IsNull, strict),
            ))
        }
        Sql::IsTrue(inner) => Ok(Expr::Is(Box::new(convert(inner, false)?), Truth::True)),
        Sql::IsFalse(inner) => Ok(Expr::Is(Box::new(convert(inner, false)?), Truth::False)),
        Sql::IsNotTrue(inner) => Ok(Expr::Is(Box::new(convert(inner, false)?), Truth::NotTrue)),
        Sql::IsNotFalse(inner) => Ok(Expr::Is(Box::new(convert(inner, false)?), Truth::NotFalse)),
        Sql::IsUnknown(_) | Sql::IsNotUnknown(_) => {
            Err("IS [NOT] UNKNOWN is not supported (nor by Lance)".into())
        }
        Sql::IsDistinctFrom(a, b) | Sql::IsNotDistinctFrom(a, b) => {
            let distinct = matches!(e, Sql::IsDistinctFrom(..));
            let (col, lit, strict) = match (column(a), column(b)) {
                (Some(c), None) => (c, literal(b)?, strict),
                (None, Some(c)) => (c, literal(a)?, false),
                _ => return Err(format!("{e}: compare one column with a constant")),
            };
            Ok(if lit == Lit::Null {
                negated_if(distinct, leaf(col, Leaf::IsNull, strict))
            } else {
                let truth = if distinct {
                    Truth::NotTrue
                } else {
                    Truth::True
                };
                Expr::Is(Box::new(leaf(col, Leaf::Cmp(Op::Eq, lit), strict)), truth)
            })
        }
        Sql::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char,
        } => like(expr, pattern, escape_char, *negated, false, strict),
        Sql::ILike {
            negated,
            any: false,
            expr,
            pattern,
            escape_char,
        } => like(expr, pattern, escape_char, *negated, true, strict),
        Sql::Function(f) if f.name.to_string().eq_ignore_ascii_case("starts_with") => {
            let usage = || "use starts_with(column, 'prefix')".to_string();
            let FunctionArguments::List(list) = &f.args else {
                return Err(usage());
            };
            let args: Vec<&Sql> = list
                .args
                .iter()
                .filter_map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect();
            match args.as_slice() {
                [c, p] if args.len() == list.args.len() => {
                    let col = column(c).ok_or_else(usage)?;
                    let Lit::Str(p) = literal(p)? else {
                        return Err(usage());
                    };
                    Ok(leaf(col, Leaf::Prefix(p), strict))
                }
                _ => Err(usage()),
            }
        }
        // a boolean function (`regexp_like(s, 'a.')`, `array_has(tags, 3)`) as `f(...) = TRUE`,
        // which is TRUE, FALSE or NULL exactly where the function is
        Sql::Function(_) => {
            let value = scalar::scalar(e)?;
            match &value {
                Scalar::Func(f, _) if f.is_predicate() => Ok(Expr::Compare {
                    left: value,
                    op: Op::Eq,
                    right: Scalar::Lit(Lit::Bool(true)),
                }),
                _ => Err(format!("{e} is not a boolean")),
            }
        }
        other => Err(format!("{other} is not supported")),
    }
}

/// DataFusion's IN-list simplification, which pylance 14 applies to every filter: two IN
/// lists on one column joined directly by AND/OR become one list, and an empty result
/// becomes a constant, without regard to NULL: `x IN A AND x IN B` with no common value is
/// FALSE (a NULL `x` included, where SQL says NULL), so is `x IN A AND x NOT IN B` with
/// `A ⊆ B`, and `x NOT IN A OR x NOT IN B` with no common value is TRUE. lancet folds the
/// same pairs to the same constants so that it answers as Lance does (visible under NOT and
/// for NULL rows); the other merges DataFusion makes change no answer. Lists of constants
/// of one type only.
fn fold_in_lists(left: &Sql, right: &Sql, and: bool) -> Option<Expr> {
    fn strip(e: &Sql) -> &Sql {
        match e {
            Sql::Nested(inner) => strip(inner),
            other => other,
        }
    }
    /// Each literal as (type, value text): constants are compared after evaluation, so
    /// `DATE '2024-01-02'` and `CAST('2024-01-02' AS DATE)` are one value.
    type Typed = (String, String);
    fn list(e: &Sql) -> Option<(String, Vec<Typed>, bool)> {
        let Sql::InList {
            expr,
            list,
            negated,
        } = strip(e)
        else {
            return None;
        };
        let values = list
            .iter()
            .map(|item| {
                let lit = literal(item).ok()?;
                let v = crate::typing::literal_value(&lit)?;
                let text = arrow_cast::display::array_value_to_string(&v, 0).ok()?;
                Some((v.data_type().to_string(), text))
            })
            .collect::<Option<Vec<_>>>()?;
        Some((column(expr)?, values, *negated))
    }
    let (ca, a, na) = list(left)?;
    let (cb, b, nb) = list(right)?;
    let null = DataType::Null.to_string();
    let mut kinds = a.iter().chain(&b).map(|(t, _)| t).filter(|t| **t != null);
    let first = kinds.next();
    if ca != cb || kinds.any(|t| Some(t) != first) {
        return None;
    }
    let disjoint = !a.iter().any(|x| b.contains(x));
    let subset = |x: &[Typed], y: &[Typed]| x.iter().all(|v| y.contains(v));
    match (and, na, nb) {
        (true, false, false) if disjoint => Some(Expr::Const(Some(false))),
        (true, false, true) if subset(&a, &b) => Some(Expr::Const(Some(false))),
        (true, true, false) if subset(&b, &a) => Some(Expr::Const(Some(false))),
        (false, true, true) if disjoint => Some(Expr::Const(Some(true))),
        _ => None,
    }
}

impl Expr {
    /// Pushes NOT down to the leaves where SQL's three-valued logic allows it, so a negated
    /// comparison reads the pages of its complement instead of every page: `NOT (x > v)` is
    /// `x <= v` (NULL stays NULL either way), `NOT (x = v)` is `x < v OR x > v`, `NOT (x
    /// BETWEEN a AND b)` is `x < a OR x > b`, and De Morgan's laws hold in Kleene logic.
    /// Negated IN, IS NULL and LIKE stay as NOT, evaluated as a complement.
    pub fn push_not(self) -> Expr {
        negate_if(self, false)
    }
}

fn negate_if(e: Expr, negate: bool) -> Expr {
    match e {
        Expr::Not(inner) => negate_if(*inner, !negate),
        Expr::Const(v) if negate => Expr::Const(v.map(|b| !b)),
        Expr::Const(v) => Expr::Const(v),
        Expr::Is(inner, t) => {
            let t = match (t, negate) {
                (t, false) => t,
                (Truth::True, true) => Truth::NotTrue,
                (Truth::NotTrue, true) => Truth::True,
                (Truth::False, true) => Truth::NotFalse,
                (Truth::NotFalse, true) => Truth::False,
            };
            Expr::Is(Box::new(negate_if(*inner, false)), t)
        }
        Expr::And(a, b) if negate => {
            Expr::Or(Box::new(negate_if(*a, true)), Box::new(negate_if(*b, true)))
        }
        Expr::Or(a, b) if negate => {
            Expr::And(Box::new(negate_if(*a, true)), Box::new(negate_if(*b, true)))
        }
        Expr::And(a, b) => Expr::And(
            Box::new(negate_if(*a, false)),
            Box::new(negate_if(*b, false)),
        ),
        Expr::Or(a, b) => Expr::Or(
            Box::new(negate_if(*a, false)),
            Box::new(negate_if(*b, false)),
        ),
        Expr::Leaf {
            column,
            leaf,
            typing,
        } if negate => match leaf {
            Leaf::Cmp(_, Lit::Null) => Expr::Leaf {
                column,
                leaf,
                typing,
            },
            Leaf::Cmp(op, v) => {
                let cmp = |op| Expr::Leaf {
                    column: column.clone(),
                    leaf: Leaf::Cmp(op, v.clone()),
                    typing,
                };
                match op {
                    Op::Eq => Expr::Or(Box::new(cmp(Op::Lt)), Box::new(cmp(Op::Gt))),
                    Op::Lt => cmp(Op::GtEq),
                    Op::LtEq => cmp(Op::Gt),
                    Op::Gt => cmp(Op::LtEq),
                    Op::GtEq => cmp(Op::Lt),
                }
            }
            Leaf::Between(a, b) if a != Lit::Null && b != Lit::Null => Expr::Or(
                Box::new(Expr::Leaf {
                    column: column.clone(),
                    leaf: Leaf::Cmp(Op::Lt, a),
                    typing,
                }),
                Box::new(Expr::Leaf {
                    column,
                    leaf: Leaf::Cmp(Op::Gt, b),
                    typing,
                }),
            ),
            leaf => not(Expr::Leaf {
                column,
                leaf,
                typing,
            }),
        },
        compare @ Expr::Compare { .. } if negate => not(compare),
        leaf => leaf,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn l(c: &str, leaf: Leaf) -> Expr {
        Expr::Leaf {
            column: c.into(),
            leaf,
            typing: Typing::Column,
        }
    }

    fn common(c: &str, leaf: Leaf) -> Expr {
        Expr::Leaf {
            column: c.into(),
            leaf,
            typing: Typing::Common,
        }
    }

    fn parse(s: &str) -> Result<Expr> {
        Filter::parse(s).map(|f| f.expr)
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(
            parse("x = 3").unwrap(),
            l("x", Leaf::Cmp(Op::Eq, Lit::Int(3)))
        );
        assert_eq!(
            parse("3 < `x`").unwrap(),
            common("x", Leaf::Cmp(Op::Gt, Lit::Int(3)))
        );
        assert_eq!(
            parse("x != -1.5").unwrap(),
            not(l(
                "x",
                Leaf::Cmp(Op::Eq, Lit::Neg(Box::new(Lit::Decimal("1.5".into()))))
            ))
        );
        assert_eq!(
            parse("x = 9223372036854775808").unwrap(),
            l("x", Leaf::Cmp(Op::Eq, Lit::UInt(1 << 63)))
        );
        assert_eq!(
            parse("x BETWEEN 1 AND 2").unwrap(),
            l("x", Leaf::Between(Lit::Int(1), Lit::Int(2)))
        );
        assert_eq!(
            parse("x NOT IN (1, NULL)").unwrap(),
            not(l("x", Leaf::In(vec![Lit::Int(1), Lit::Null])))
        );
        assert_eq!(parse("x IS NOT NULL").unwrap(), not(l("x", Leaf::IsNull)));
        assert_eq!(
            parse("s LIKE 'ab%'").unwrap(),
            l("s", Leaf::Prefix("ab".into()))
        );
        assert_eq!(
            parse(r"s LIKE 'a\%b\_%'").unwrap(),
            l("s", Leaf::Prefix("a%b_".into()))
        );
        assert_eq!(
            parse(r"s LIKE 'a\%'").unwrap(),
            l("s", Leaf::Cmp(Op::Eq, Lit::Str("a%".into())))
        );
        assert_eq!(
            parse("s LIKE 'a%b'").unwrap(),
            l(
                "s",
                Leaf::Like {
                    pattern: "a%b".into(),
                    case_insensitive: false
                }
            )
        );
        assert_eq!(
            parse("s = 'it''s' OR s = \"q\"").unwrap(),
            Expr::Or(
                Box::new(l("s", Leaf::Cmp(Op::Eq, Lit::Str("it's".into())))),
                Box::new(l("s", Leaf::Cmp(Op::Eq, Lit::Str("q".into()))))
            )
        );
        assert_eq!(
            parse("starts_with(s, 'é')").unwrap(),
            l("s", Leaf::Prefix("é".into()))
        );
        assert_eq!(
            parse("d > DATE '2024-01-01'").unwrap(),
            l(
                "d",
                Leaf::Cmp(
                    Op::Gt,
                    Lit::Cast(Box::new(Lit::Str("2024-01-01".into())), DataType::Date32)
                )
            )
        );
        assert_eq!(
            parse("f = CAST('NaN' AS DOUBLE)").unwrap(),
            l(
                "f",
                Leaf::Cmp(
                    Op::Eq,
                    Lit::Cast(Box::new(Lit::Str("NaN".into())), DataType::Float64)
                )
            )
        );
        assert_eq!(
            parse("i = (7 / 2)").unwrap(),
            l(
                "i",
                Leaf::Cmp(
                    Op::Eq,
                    Lit::Arith(Arith::Div, Box::new(Lit::Int(7)), Box::new(Lit::Int(2)))
                )
            )
        );
        assert_eq!(
            parse("b").unwrap(),
            l("b", Leaf::Cmp(Op::Eq, Lit::Bool(true)))
        );
        assert_eq!(
            parse("(i > 1) = FALSE").unwrap(),
            not(common("i", Leaf::Cmp(Op::Gt, Lit::Int(1))))
        );
        assert_eq!(
            parse("i IS DISTINCT FROM 2").unwrap(),
            Expr::Is(
                Box::new(l("i", Leaf::Cmp(Op::Eq, Lit::Int(2)))),
                Truth::NotTrue
            )
        );
        assert_eq!(
            parse("i IS NOT DISTINCT FROM NULL").unwrap(),
            l("i", Leaf::IsNull)
        );
        assert_eq!(parse("TRUE").unwrap(), Expr::Const(Some(true)));
        assert!(matches!(
            parse("NOT (x > 1 OR y <= 2) AND z = 'q'").unwrap(),
            Expr::And(..)
        ));
    }

    #[test]
    fn not_is_pushed_to_the_leaves() {
        let pushed = parse("NOT (x > 1 OR NOT y = 2)").unwrap().push_not();
        assert_eq!(
            pushed,
            Expr::And(
                Box::new(common("x", Leaf::Cmp(Op::LtEq, Lit::Int(1)))),
                Box::new(common("y", Leaf::Cmp(Op::Eq, Lit::Int(2))))
            )
        );
        assert_eq!(
            parse("NOT x IS NULL").unwrap().push_not(),
            not(common("x", Leaf::IsNull))
        );
        assert_eq!(
            parse("NOT (b IS TRUE)").unwrap().push_not(),
            Expr::Is(
                Box::new(common("b", Leaf::Cmp(Op::Eq, Lit::Bool(true)))),
                Truth::NotTrue
            )
        );
        assert_eq!(parse("NOT NULL").unwrap().push_not(), Expr::Const(None));
    }

    #[test]
    fn in_lists_fold_as_datafusion_folds_them() {
        let f = |s: &str| parse(s).unwrap();
        assert_eq!(
            f("s IN ('a') AND (s IN ('b', NULL))"),
            Expr::Const(Some(false))
        );
        assert_eq!(
            f("s IN ('a') AND s NOT IN ('a', 'b')"),
            Expr::Const(Some(false))
        );
        assert_eq!(
            f("s NOT IN ('a') OR s NOT IN ('b')"),
            Expr::Const(Some(true))
        );
        for kept in [
            "s IN ('a', 'b') AND s IN ('b')",
            "s IN ('a') AND t IN ('b')",
            "s IN ('a') AND s = 'b'",
            "i IN (1) AND i IN (1.0)",
            "s IN ('a') OR s IN ('b')",
        ] {
            assert!(matches!(f(kept), Expr::And(..) | Expr::Or(..)), "{kept}");
        }
    }

    #[test]
    fn computed_values_compare_and_negate() {
        let (x, y) = (Scalar::Column("x".into()), Scalar::Column("y".into()));
        assert_eq!(
            parse("x = y").unwrap(),
            Expr::Compare {
                left: x.clone(),
                op: Op::Eq,
                right: y.clone()
            }
        );
        let sum = Scalar::Arith(Arith::Add, Box::new(x), Box::new(Scalar::Lit(Lit::Int(1))));
        let cmp = Expr::Compare {
            left: sum,
            op: Op::Gt,
            right: Scalar::Lit(Lit::Int(2)),
        };
        assert_eq!(parse("x + 1 > 2").unwrap(), cmp);
        // NOT stays over a computed comparison (it has no complement range)
        let negated = parse("NOT (x + 1 > 2)").unwrap().push_not();
        assert_eq!(negated, Expr::Not(Box::new(cmp)));
        let f = Filter::parse("id % 10 = 0 AND s = 'a'").unwrap();
        assert_eq!(f.columns(), ["id", "s"]);
    }

    #[test]
    fn what_lance_refuses_is_refused() {
        for bad in [
            "f(x) = 1",
            "x + 1 IN (1, 2)",
            "x =",
            "x = 1 x",
            "s = 'it\\'s'",
            "b IS UNKNOWN",
            "s LIKE 'a!%%' ESCAPE '!'",
            "i = +2",
            "s LIKE x",
        ] {
            match parse(bad) {
                Err(FilterError::InvalidFilter { filter, .. }) => assert_eq!(filter, bad),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod value_tests {
    use super::*;

    #[test]
    fn a_value_parses_as_the_right_side_of_an_assignment_does() {
        for text in ["x * 2 + 1", "'text'", "CAST(v AS DECIMAL(10, 2))", "-3"] {
            let (_, assigned) = parse_assignment(&format!("c = {text}")).unwrap();
            assert_eq!(parse_value(text).unwrap(), assigned, "{text}");
        }
        for bad in ["", "x = ", "1 2", "SELECT 1"] {
            assert!(parse_value(bad).is_err(), "{bad:?}");
        }
    }
}
