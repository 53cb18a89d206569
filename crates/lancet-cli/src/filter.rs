//! The filter language of `lancet index search`: a Lance-SQL boolean expression over indexed
//! columns, parsed with `sqlparser` into leaves the BTree answers, combined with Kleene logic.

use sqlparser::ast::{
    BinaryOperator, Expr as Sql, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator,
    Value,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::error::CliError;

/// A literal of the filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Null,
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
    Prefix(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Leaf { column: String, leaf: Leaf },
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

fn unsupported(what: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("unsupported filter: {what}"))
}

/// Parses a filter such as `x >= 3 AND (name LIKE 'ab%' OR y IS NULL)`.
pub fn parse(filter: &str) -> Result<Expr, CliError> {
    let sql = Parser::new(&GenericDialect {})
        .try_with_sql(filter)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| CliError::Usage(format!("cannot parse filter {filter:?}: {e}")))?;
    convert(&sql)
}

fn column(e: &Sql) -> Option<String> {
    match e {
        Sql::Identifier(id) => Some(id.value.clone()),
        Sql::CompoundIdentifier(parts) if parts.len() == 1 => {
            parts.first().map(|p| p.value.clone())
        }
        Sql::Nested(inner) => column(inner),
        _ => None,
    }
}

fn literal(e: &Sql) -> Result<Lit, CliError> {
    match e {
        Sql::Value(v) => match &v.value {
            Value::Number(n, _) => n
                .parse::<i64>()
                .map(Lit::Int)
                .or_else(|_| n.parse::<f64>().map(Lit::Float))
                .map_err(|_| unsupported(format!("number {n}"))),
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Ok(Lit::Str(s.clone())),
            Value::Boolean(b) => Ok(Lit::Bool(*b)),
            Value::Null => Ok(Lit::Null),
            other => Err(unsupported(format!("literal {other}"))),
        },
        Sql::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Lit::Int(i) => Ok(Lit::Int(-i)),
            Lit::Float(f) => Ok(Lit::Float(-f)),
            other => Err(unsupported(format!("-{other:?}"))),
        },
        Sql::Nested(inner) => literal(inner),
        other => Err(unsupported(format!("{other} is not a literal"))),
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

fn leaf(column: String, leaf: Leaf) -> Expr {
    Expr::Leaf { column, leaf }
}

fn not(e: Expr) -> Expr {
    Expr::Not(Box::new(e))
}

/// `LIKE 'abc%'`: a literal prefix then one trailing `%`, no other wildcards.
fn like_prefix(pattern: &str) -> Option<String> {
    let prefix = pattern.strip_suffix('%')?;
    (!prefix.contains(['%', '_', '\\'])).then(|| prefix.to_string())
}

fn convert(e: &Sql) -> Result<Expr, CliError> {
    match e {
        Sql::Nested(inner) => convert(inner),
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(not(convert(expr)?)),
        Sql::BinaryOp { left, op, right } => {
            let cmp = match op {
                BinaryOperator::And => {
                    return Ok(Expr::And(
                        Box::new(convert(left)?),
                        Box::new(convert(right)?),
                    ))
                }
                BinaryOperator::Or => {
                    return Ok(Expr::Or(
                        Box::new(convert(left)?),
                        Box::new(convert(right)?),
                    ))
                }
                BinaryOperator::Eq => Some((Op::Eq, false)),
                BinaryOperator::NotEq => Some((Op::Eq, true)),
                BinaryOperator::Lt => Some((Op::Lt, false)),
                BinaryOperator::LtEq => Some((Op::LtEq, false)),
                BinaryOperator::Gt => Some((Op::Gt, false)),
                BinaryOperator::GtEq => Some((Op::GtEq, false)),
                _ => None,
            };
            let (op, negate) = cmp.ok_or_else(|| unsupported(format!("operator {op}")))?;
            let (col, lit, op) = match (column(left), column(right)) {
                (Some(c), None) => (c, literal(right)?, op),
                (None, Some(c)) => (c, literal(left)?, flip(op)),
                _ => {
                    return Err(unsupported(format!(
                        "{e}: compare one column with a literal"
                    )))
                }
            };
            let out = leaf(col, Leaf::Cmp(op, lit));
            Ok(if negate { not(out) } else { out })
        }
        Sql::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let col = column(expr).ok_or_else(|| unsupported(format!("{expr} is not a column")))?;
            let out = leaf(col, Leaf::Between(literal(low)?, literal(high)?));
            Ok(if *negated { not(out) } else { out })
        }
        Sql::InList {
            expr,
            list,
            negated,
        } => {
            let col = column(expr).ok_or_else(|| unsupported(format!("{expr} is not a column")))?;
            let values = list.iter().map(literal).collect::<Result<Vec<_>, _>>()?;
            let out = leaf(col, Leaf::In(values));
            Ok(if *negated { not(out) } else { out })
        }
        Sql::IsNull(expr) | Sql::IsNotNull(expr) => {
            let col = column(expr).ok_or_else(|| unsupported(format!("{expr} is not a column")))?;
            let out = leaf(col, Leaf::IsNull);
            Ok(if matches!(e, Sql::IsNotNull(_)) {
                not(out)
            } else {
                out
            })
        }
        Sql::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        } => {
            let col = column(expr).ok_or_else(|| unsupported(format!("{expr} is not a column")))?;
            let Lit::Str(p) = literal(pattern)? else {
                return Err(unsupported("LIKE needs a string pattern"));
            };
            let prefix = like_prefix(&p)
                .ok_or_else(|| unsupported(format!("LIKE {p:?}: only 'prefix%'")))?;
            let out = leaf(col, Leaf::Prefix(prefix));
            Ok(if *negated { not(out) } else { out })
        }
        Sql::Function(f) if f.name.to_string().eq_ignore_ascii_case("starts_with") => {
            let FunctionArguments::List(list) = &f.args else {
                return Err(unsupported("starts_with(col, 'prefix')"));
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
                [c, p] => {
                    let col = column(c).ok_or_else(|| unsupported("starts_with(col, 'prefix')"))?;
                    let Lit::Str(p) = literal(p)? else {
                        return Err(unsupported("starts_with needs a string prefix"));
                    };
                    Ok(leaf(col, Leaf::Prefix(p)))
                }
                _ => Err(unsupported("starts_with(col, 'prefix')")),
            }
        }
        other => Err(unsupported(other)),
    }
}

/// Pushes NOT down to the leaves where SQL's three-valued logic allows it, so a negated
/// comparison reads the pages of its complement instead of every page: `NOT (x > v)` is
/// `x <= v` (NULL stays NULL either way), `NOT (x = v)` is `x < v OR x > v`, `NOT (x BETWEEN a
/// AND b)` is `x < a OR x > b`, and De Morgan's laws hold in Kleene logic. Negated IN, IS NULL
/// and LIKE stay as NOT, evaluated as a complement.
pub fn push_not(e: Expr) -> Expr {
    negate_if(e, false)
}

fn negate_if(e: Expr, negate: bool) -> Expr {
    match e {
        Expr::Not(inner) => negate_if(*inner, !negate),
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
        Expr::Leaf { column, leaf } if negate => match leaf {
            Leaf::Cmp(_, Lit::Null) => Expr::Leaf { column, leaf },
            Leaf::Cmp(op, v) => {
                let cmp = |op| Expr::Leaf {
                    column: column.clone(),
                    leaf: Leaf::Cmp(op, v.clone()),
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
                }),
                Box::new(Expr::Leaf {
                    column,
                    leaf: Leaf::Cmp(Op::Gt, b),
                }),
            ),
            leaf => Expr::Not(Box::new(Expr::Leaf { column, leaf })),
        },
        leaf => leaf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(c: &str, leaf: Leaf) -> Expr {
        Expr::Leaf {
            column: c.into(),
            leaf,
        }
    }

    #[test]
    fn parses_every_operator() {
        assert_eq!(
            parse("x = 3").unwrap(),
            l("x", Leaf::Cmp(Op::Eq, Lit::Int(3)))
        );
        assert_eq!(
            parse("3 < x").unwrap(),
            l("x", Leaf::Cmp(Op::Gt, Lit::Int(3)))
        );
        assert_eq!(
            parse("x != -1.5").unwrap(),
            not(l("x", Leaf::Cmp(Op::Eq, Lit::Float(-1.5))))
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
            parse("starts_with(s, 'é')").unwrap(),
            l("s", Leaf::Prefix("é".into()))
        );
        assert!(matches!(
            parse("NOT (x > 1 OR y <= 2) AND z = 'q'").unwrap(),
            Expr::And(..)
        ));
        let pushed = push_not(parse("NOT (x > 1 OR NOT y = 2)").unwrap());
        assert_eq!(
            pushed,
            Expr::And(
                Box::new(l("x", Leaf::Cmp(Op::LtEq, Lit::Int(1)))),
                Box::new(l("y", Leaf::Cmp(Op::Eq, Lit::Int(2))))
            )
        );
        assert_eq!(
            push_not(parse("NOT x IS NULL").unwrap()),
            not(l("x", Leaf::IsNull))
        );
        for bad in [
            "x + 1 = 2",
            "s LIKE '%ab'",
            "s LIKE 'a_b%'",
            "x = y",
            "f(x) = 1",
            "x =",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
