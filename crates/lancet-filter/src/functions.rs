//! The functions a filter or a computed value may call, as DataFusion (which Lance 14.0.2's
//! filters and updates run through) defines them:
//! - strings: `upper`, `lower`, `concat` and `||`, `length` (`char_length`,
//!   `character_length`: characters, Int32), `contains`, `starts_with`, `ends_with`,
//!   `regexp_like(s, pattern[, flags])` (and `regexp_match` as a predicate: whether it
//!   matches; its list of captures is not computed);
//! - numbers: `abs`;
//! - lists: `array_length` (Int64), `array_has` (`array_contains`), `array_has_any`,
//!   `array_has_all`, with list literals (`[1, 2]`);
//! - the clock: `now()` (`current_timestamp`) and `current_date()` (`today`), read once when
//!   the filter is parsed, as DataFusion reads them once per query (parsed in
//!   the `literal` module: they are constants).
//!
//! NULL follows DataFusion: a NULL argument makes a NULL result (a NULL list has no length
//! and contains nothing, so `array_has(NULL, 1)` is NULL; `array_has(l, NULL)` is NULL), an
//! empty list has length 0 and contains nothing (`array_has_any(l, [])` is FALSE,
//! `array_has_all(l, [])` TRUE). A boolean function may stand as a predicate
//! ([`Func::is_predicate`]).

use std::sync::Arc;

use arrow_array::builder::BooleanBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, StringArray, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field};

use crate::typing::{cast_to, common_type};

/// A function a computed value calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Upper,
    Lower,
    /// `concat(a, b, ...)` (NULL arguments are skipped, as DataFusion's concat does) and
    /// `a || b` (NULL when either is).
    Concat {
        skip_nulls: bool,
    },
    /// Characters in a string (Int32).
    Length,
    Contains,
    StartsWith,
    EndsWith,
    /// Whether a regular expression (Rust's `regex` syntax, as DataFusion's) matches
    /// somewhere in the string; a third argument gives flags (`'i'`).
    RegexpLike,
    Abs,
    /// Elements in a list, as Int64 (DataFusion's type is UInt64; lancet's common numeric
    /// type of UInt64 and an integer literal does not exist, and a length fits either).
    ArrayLength,
    /// Whether some element of the list equals the value.
    ArrayHas,
    /// Whether some element of the list equals some element of the second list.
    ArrayHasAny,
    /// Whether every element of the second list is in the list.
    ArrayHasAll,
    /// A list literal, `[a, b, ...]`.
    MakeArray,
}

impl Func {
    /// The function SQL names `name` (any case), if a value may call it.
    pub(crate) fn named(name: &str) -> Option<Func> {
        Some(match name.to_ascii_lowercase().as_str() {
            "upper" => Func::Upper,
            "lower" => Func::Lower,
            "concat" => Func::Concat { skip_nulls: true },
            "length" | "char_length" | "character_length" => Func::Length,
            "contains" => Func::Contains,
            "starts_with" => Func::StartsWith,
            "ends_with" => Func::EndsWith,
            "regexp_like" | "regexp_match" => Func::RegexpLike,
            "abs" => Func::Abs,
            "array_length" => Func::ArrayLength,
            "array_has" | "array_contains" | "list_has" | "list_contains" => Func::ArrayHas,
            "array_has_any" | "list_has_any" => Func::ArrayHasAny,
            "array_has_all" | "list_has_all" => Func::ArrayHasAll,
            "make_array" | "make_list" => Func::MakeArray,
            _ => return None,
        })
    }

    /// Whether its value is BOOLEAN, so that it may stand as a predicate.
    pub fn is_predicate(self) -> bool {
        matches!(
            self,
            Func::Contains
                | Func::StartsWith
                | Func::EndsWith
                | Func::RegexpLike
                | Func::ArrayHas
                | Func::ArrayHasAny
                | Func::ArrayHasAll
        )
    }

    fn arity(self) -> std::ops::RangeInclusive<usize> {
        match self {
            Func::Upper | Func::Lower | Func::Length | Func::Abs | Func::ArrayLength => 1..=1,
            Func::Concat { .. } => 1..=usize::MAX,
            Func::MakeArray => 0..=usize::MAX,
            Func::RegexpLike => 2..=3,
            _ => 2..=2,
        }
    }
}

/// `f` over `args` (each evaluated, `rows` long).
pub(crate) fn call(f: Func, args: &[ArrayRef], rows: usize) -> Result<ArrayRef, String> {
    if !f.arity().contains(&args.len()) {
        return Err(format!("{f:?} does not take {} arguments", args.len()));
    }
    let e = |e: arrow_schema::ArrowError| e.to_string();
    Ok(match (f, args) {
        (Func::Upper | Func::Lower | Func::Concat { .. } | Func::Length, _) => {
            strings(f, args, rows)?
        }
        (Func::Contains | Func::StartsWith | Func::EndsWith, [a, b]) => {
            let (a, b) = (utf8(a)?, utf8(b)?);
            let out = match f {
                Func::Contains => arrow_string::like::contains(&a, &b),
                Func::StartsWith => arrow_string::like::starts_with(&a, &b),
                _ => arrow_string::like::ends_with(&a, &b),
            };
            Arc::new(out.map_err(e)?)
        }
        (Func::RegexpLike, [s, pattern, rest @ ..]) => {
            let (s, pattern) = (utf8(s)?, utf8(pattern)?);
            let flags = rest.first().map(utf8).transpose()?;
            let (s, pattern) = (s.as_string::<i32>(), pattern.as_string::<i32>());
            let flags = flags.as_ref().map(|f| f.as_string::<i32>());
            Arc::new(arrow_string::regexp::regexp_is_match(s, pattern, flags).map_err(e)?)
        }
        (Func::Abs, [a]) => abs(a)?,
        (Func::ArrayLength, [l]) => {
            let (offsets, _, nulls) = list_parts(l)?;
            let lengths = (0..l.len()).map(|i| {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                let n = offsets
                    .get(i + 1)
                    .zip(offsets.get(i))
                    .map(|(b, a)| b.saturating_sub(*a));
                n.filter(|_| valid)
                    .map(|n| i64::try_from(n).unwrap_or(i64::MAX))
            });
            Arc::new(lengths.collect::<Int64Array>())
        }
        (Func::ArrayHas, [l, v]) => {
            let v = list_of(std::slice::from_ref(v), rows)?;
            contained(l, &v, Quantifier::Any)?
        }
        (Func::ArrayHasAny, [l, wanted]) => contained(l, wanted, Quantifier::Any)?,
        (Func::ArrayHasAll, [l, wanted]) => contained(l, wanted, Quantifier::All)?,
        (Func::MakeArray, elements) => list_of(elements, rows)?,
        (f, args) => return Err(format!("{f:?} does not take {} arguments", args.len())),
    })
}

/// `a` as strings (any value casts, as DataFusion's string functions coerce their
/// arguments: `concat(name, id)`).
fn utf8(a: &ArrayRef) -> Result<ArrayRef, String> {
    cast_to(a.clone(), &DataType::Utf8)
}

/// The type two values meet in: NULL meets anything as that thing.
fn meet(a: &DataType, b: &DataType) -> Option<DataType> {
    match (a, b) {
        (DataType::Null, t) | (t, DataType::Null) => Some(t.clone()),
        _ => common_type(a, b),
    }
}

fn strings(f: Func, args: &[ArrayRef], rows: usize) -> Result<ArrayRef, String> {
    let texts = args
        .iter()
        .map(|a| utf8(a).map(|a| a.as_string::<i32>().clone()))
        .collect::<Result<Vec<_>, _>>()?;
    match (f, texts.as_slice()) {
        (Func::Length, [a]) => {
            let n = |s: &str| i32::try_from(s.chars().count()).unwrap_or(i32::MAX);
            Ok(Arc::new(a.iter().map(|v| v.map(n)).collect::<Int32Array>()))
        }
        (Func::Upper | Func::Lower, [a]) => {
            let out: StringArray = a
                .iter()
                .map(|v| {
                    v.map(|s| match f {
                        Func::Upper => s.to_uppercase(),
                        _ => s.to_lowercase(),
                    })
                })
                .collect();
            Ok(Arc::new(out))
        }
        (Func::Concat { skip_nulls }, args) => {
            let out: StringArray = (0..rows)
                .map(|i| {
                    let mut out = String::new();
                    for a in args {
                        match a.is_valid(i) {
                            true => out.push_str(a.value(i)),
                            false if skip_nulls => {}
                            false => return None,
                        }
                    }
                    Some(out)
                })
                .collect();
            Ok(Arc::new(out))
        }
        (f, args) => Err(format!("{f:?} does not take {} arguments", args.len())),
    }
}

/// `|a|`: a number's magnitude, in its own type (`abs(i64::MIN)` wraps, as DataFusion's
/// does not: it errs; lancet refuses it too).
fn abs(a: &ArrayRef) -> Result<ArrayRef, String> {
    let t = a.data_type();
    if !t.is_numeric() {
        return Err(format!("abs needs a number, not {t}"));
    }
    if t.is_unsigned_integer() {
        return Ok(a.clone());
    }
    let zero = cast_to(Arc::new(Int64Array::from(vec![0i64])), t)?;
    let zero = arrow_array::Scalar::new(zero);
    let negative = arrow_ord::cmp::lt(a, &zero).map_err(|e| e.to_string())?;
    let negated = arrow_arith::numeric::neg(a).map_err(|e| format!("abs: {e}"))?;
    arrow_select::zip::zip(&negative, &negated, a).map_err(|e| e.to_string())
}

/// A list array's offsets (as `usize`), values and validity.
fn list_parts(
    l: &ArrayRef,
) -> Result<(Vec<usize>, ArrayRef, Option<arrow_buffer::NullBuffer>), String> {
    let as_usize = |o: &[i64]| o.iter().map(|&x| usize::try_from(x).unwrap_or(0)).collect();
    match l.data_type() {
        DataType::List(_) => {
            let l = l.as_list::<i32>();
            let offsets: Vec<i64> = l.offsets().iter().map(|&o| i64::from(o)).collect();
            Ok((as_usize(&offsets), l.values().clone(), l.nulls().cloned()))
        }
        DataType::LargeList(_) => {
            let l = l.as_list::<i64>();
            Ok((
                as_usize(l.offsets()),
                l.values().clone(),
                l.nulls().cloned(),
            ))
        }
        DataType::FixedSizeList(_, n) => {
            let l = l.as_fixed_size_list();
            let n = usize::try_from(*n).unwrap_or(0);
            let offsets = (0..=l.len()).map(|i| i * n).collect();
            Ok((offsets, l.values().clone(), l.nulls().cloned()))
        }
        other => Err(format!("a list function needs a list, not {other}")),
    }
}

/// One list per row: row `i` holds `elements[k][i]` for every `k`, in their common type.
fn list_of(elements: &[ArrayRef], rows: usize) -> Result<ArrayRef, String> {
    let mut t = DataType::Null;
    for e in elements {
        t = meet(&t, e.data_type())
            .ok_or_else(|| format!("a list of {t} and {}", e.data_type()))?;
    }
    let cast = elements
        .iter()
        .map(|e| cast_to(e.clone(), &t))
        .collect::<Result<Vec<_>, _>>()?;
    let n = cast.len();
    let values = if n == 0 {
        arrow_array::new_empty_array(&t)
    } else {
        let refs: Vec<&dyn Array> = cast.iter().map(|a| a.as_ref()).collect();
        let all = arrow_select::concat::concat(&refs).map_err(|e| e.to_string())?;
        // row-major: row i's elements are at k * rows + i
        let order = (0..rows).flat_map(|i| (0..n).map(move |k| k * rows + i));
        let order = order
            .map(|x| u32::try_from(x).map_err(|_| "a list literal too long".to_string()))
            .collect::<Result<UInt32Array, _>>()?;
        arrow_select::take::take(&all, &order, None).map_err(|e| e.to_string())?
    };
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(n, rows));
    let field = Arc::new(Field::new("item", t, true));
    let list = arrow_array::ListArray::try_new(field, offsets, values, None);
    Ok(Arc::new(list.map_err(|e| e.to_string())?))
}

#[derive(Clone, Copy)]
enum Quantifier {
    Any,
    All,
}

/// Per row: whether any (every) element of `wanted`'s list is an element of `l`'s; NULL
/// where either list is NULL, and for `Any` where the one wanted element is NULL
/// (`array_has(l, NULL)`).
fn contained(l: &ArrayRef, wanted: &ArrayRef, q: Quantifier) -> Result<ArrayRef, String> {
    let (lo, lv, ln) = list_parts(l)?;
    let (wo, wv, wn) = list_parts(wanted)?;
    let t = meet(lv.data_type(), wv.data_type()).ok_or_else(|| {
        format!(
            "cannot look for {} in a list of {}",
            wv.data_type(),
            lv.data_type()
        )
    })?;
    let (lv, wv) = (cast_to(lv, &t)?, cast_to(wv, &t)?);
    let mut out = BooleanBuilder::with_capacity(l.len());
    for i in 0..l.len() {
        let valid = |n: &Option<arrow_buffer::NullBuffer>| n.as_ref().is_none_or(|n| n.is_valid(i));
        if !valid(&ln) || !valid(&wn) {
            out.append_null();
            continue;
        }
        let bounds = |o: &[usize]| o.get(i).copied().zip(o.get(i + 1).copied());
        let (Some((l0, l1)), Some((w0, w1))) = (bounds(&lo), bounds(&wo)) else {
            return Err("a list's offsets are out of range".into());
        };
        let have = lv.slice(l0, l1.saturating_sub(l0));
        let mut answer = matches!(q, Quantifier::All);
        let mut unknown = false;
        for k in w0..w1 {
            if wv.is_null(k) {
                unknown = true;
                continue;
            }
            let one = arrow_array::Scalar::new(wv.slice(k, 1));
            let eq = arrow_ord::cmp::eq(&have, &one).map_err(|e| e.to_string())?;
            let found = eq.true_count() > 0;
            match q {
                Quantifier::Any if found => answer = true,
                Quantifier::All if !found => answer = false,
                _ => {}
            }
        }
        match q {
            // `array_has(l, NULL)`: NULL
            Quantifier::Any if !answer && unknown && w1 - w0 == 1 => out.append_null(),
            _ => out.append_value(answer),
        }
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use arrow_array::types::Int64Type;
    use arrow_array::ListArray;

    fn lists() -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3), None]),
            None,
            Some(vec![]),
        ]))
    }

    fn ints(v: Vec<Option<i64>>) -> ArrayRef {
        Arc::new(Int64Array::from(v))
    }

    fn bools(a: ArrayRef) -> Vec<Option<bool>> {
        a.as_boolean().iter().collect()
    }

    #[test]
    fn list_functions_answer_as_datafusion() {
        let l = lists();
        let one = |v: i64| ints(vec![Some(v); 4]);
        let has = |v| bools(call(Func::ArrayHas, &[l.clone(), one(v)], 4).unwrap());
        assert_eq!(has(3), [Some(false), Some(true), None, Some(false)]);
        let null = ints(vec![None; 4]);
        let has_null = bools(call(Func::ArrayHas, &[l.clone(), null], 4).unwrap());
        assert_eq!(has_null, [None, None, None, None]);
        let wanted = list_of(&[one(1), one(9)], 4).unwrap();
        let any = bools(call(Func::ArrayHasAny, &[l.clone(), wanted.clone()], 4).unwrap());
        assert_eq!(any, [Some(true), Some(false), None, Some(false)]);
        let all = bools(call(Func::ArrayHasAll, &[l.clone(), wanted], 4).unwrap());
        assert_eq!(all, [Some(false), Some(false), None, Some(false)]);
        let none = list_of(&[], 4).unwrap();
        let all = bools(call(Func::ArrayHasAll, &[l.clone(), none.clone()], 4).unwrap());
        assert_eq!(all, [Some(true), Some(true), None, Some(true)]);
        let any = bools(call(Func::ArrayHasAny, &[l.clone(), none], 4).unwrap());
        assert_eq!(any, [Some(false), Some(false), None, Some(false)]);
        let lengths = call(Func::ArrayLength, &[l], 4).unwrap();
        let lengths: Vec<_> = lengths.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(lengths, [Some(2), Some(2), None, Some(0)]);
    }

    #[test]
    fn string_and_number_functions_answer_as_datafusion() {
        let s: ArrayRef = Arc::new(StringArray::from(vec![
            Some("abc"),
            Some("xbz"),
            None,
            Some("ABC"),
        ]));
        let p = |v: &str| -> ArrayRef { Arc::new(StringArray::from(vec![v; 4])) };
        let like = bools(call(Func::RegexpLike, &[s.clone(), p("^a")], 4).unwrap());
        assert_eq!(like, [Some(true), Some(false), None, Some(false)]);
        let like = bools(call(Func::RegexpLike, &[s.clone(), p("^a"), p("i")], 4).unwrap());
        assert_eq!(like, [Some(true), Some(false), None, Some(true)]);
        assert!(call(Func::RegexpLike, &[s.clone(), p("(")], 4).is_err());
        let ends = bools(call(Func::EndsWith, &[s.clone(), p("c")], 4).unwrap());
        assert_eq!(ends, [Some(true), Some(false), None, Some(false)]);
        let contains = bools(call(Func::Contains, &[s.clone(), p("b")], 4).unwrap());
        assert_eq!(contains, [Some(true), Some(true), None, Some(false)]);
        let n: ArrayRef = Arc::new(StringArray::from(vec![Some("héé"), None]));
        let len = call(Func::Length, &[n], 2).unwrap();
        assert_eq!(
            len.as_primitive::<arrow_array::types::Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            [Some(3), None]
        );
        let a = call(Func::Abs, &[ints(vec![Some(-2), Some(3), None])], 3).unwrap();
        assert_eq!(
            a.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(),
            [Some(2), Some(3), None]
        );
        assert!(call(Func::Abs, &[ints(vec![Some(i64::MIN)])], 1).is_err());
        assert!(call(Func::Abs, std::slice::from_ref(&s), 4).is_err());
        assert!(call(Func::ArrayHas, &[s, p("a")], 4).is_err());
    }

    #[test]
    fn calls_parse_as_predicates_values_and_constants() {
        use crate::{Expr, Filter, Leaf, Lit};
        let f = Filter::parse("NOT regexp_like(s, '^a')").unwrap();
        assert!(matches!(f.expr(), Expr::Not(e) if matches!(**e, Expr::Compare { .. })));
        let f = Filter::parse("array_has_any(l, [1, 3]) AND length(s) > 2").unwrap();
        assert_eq!(f.columns(), ["l", "s"]);
        // a value that is not boolean is no predicate; an unknown function is refused
        for bad in ["length(s)", "no_such_function(s)", "upper(s)", "now(1) > 3"] {
            assert!(Filter::parse(bad).is_err(), "{bad}");
        }
        // the clock is a constant, compared with a column as any literal is
        let f = Filter::parse("d < current_date()").unwrap();
        let Expr::Leaf {
            leaf: Leaf::Cmp(_, Lit::Cast(_, t)),
            ..
        } = f.expr()
        else {
            panic!("{:?}", f.expr())
        };
        assert_eq!(*t, DataType::Date32);
    }
}
