//! Columns named by path, as Lance resolves a scan's column names and a filter's
//! identifiers: a top-level column (`id`), or a field inside a struct column (`s.x`,
//! `` `outer field`.`inner field` ``). A name that is a top-level column is that column, dots
//! and all; otherwise it is split at the dots outside backticks, its first part names a
//! top-level column and each next part a child field of the struct before it.
//!
//! A path is read as its top-level column, then the field is taken out of the struct, NULL
//! wherever a struct above it is NULL (as DataFusion's `get_field`, which Lance plans for a
//! nested column). A scan's output column keeps the name as asked, as pylance names it.

use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use lancet_file::{Column, Rows};
use lancet_proto::file::Field as LanceField;
use lancet_proto::table::DataFragment;

use crate::error::{Error, Result};
use crate::row_columns::RowColumn;
use crate::rows;
use crate::snapshot::Snapshot;

/// A column a read names: which top-level column holds it and the child fields below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    /// The top-level column's name.
    pub top: String,
    /// The child fields from the top-level column down (empty: the column itself).
    pub children: Vec<String>,
    /// The top-level column's field id.
    pub top_id: i32,
    /// The field id of the field named (`top_id` when `children` is empty).
    pub id: i32,
}

/// `name` split at the dots outside backticks, backticks removed (`` `a.b`.c `` is
/// `["a.b", "c"]`).
pub fn parts(name: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for c in name.chars() {
        match c {
            '`' => quoted = !quoted,
            '.' if !quoted => out.push(String::new()),
            c => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out
}

/// The field `name` names among the table's `fields` (see the module docs); `None` when
/// none.
pub fn resolve(fields: &[LanceField], name: &str) -> Option<FieldPath> {
    if let Some(f) = lancet_txn::fields::top_level(fields, name) {
        return Some(FieldPath {
            top: f.name.clone(),
            children: Vec::new(),
            top_id: f.id,
            id: f.id,
        });
    }
    let parts = parts(name);
    let (top, children) = parts.split_first()?;
    let top = lancet_txn::fields::top_level(fields, top)?;
    let mut field = top;
    for child in children {
        field = fields
            .iter()
            .find(|f| f.parent_id == field.id && &f.name == child)?;
    }
    Some(FieldPath {
        top: top.name.clone(),
        children: children.to_vec(),
        top_id: top.id,
        id: field.id,
    })
}

/// The path of field `id` among the table's `fields` (an index's field, say); `None` when
/// the schema has no such field, or its parents do not lead to a top-level column.
pub fn of_id(fields: &[LanceField], id: i32) -> Option<FieldPath> {
    let mut field = fields.iter().find(|f| f.id == id)?;
    let mut children = Vec::new();
    // a well-formed schema's parents end at the top within as many steps as it has fields
    for _ in 0..=fields.len() {
        if field.parent_id == -1 {
            children.reverse();
            return Some(FieldPath {
                top: field.name.clone(),
                children,
                top_id: field.id,
                id,
            });
        }
        children.push(field.name.clone());
        field = fields.iter().find(|f| f.id == field.parent_id)?;
    }
    None
}

impl FieldPath {
    /// The path as Lance names a nested field (`s.x`), or the column's name.
    pub fn name(&self) -> String {
        std::iter::once(self.top.as_str())
            .chain(self.children.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(".")
    }
}

/// The field at `children` below `array` (a struct column), NULL wherever a struct above
/// it is NULL; the reason when a step is not a struct or has no such child.
pub fn extract(array: &ArrayRef, children: &[String]) -> std::result::Result<ArrayRef, String> {
    let mut out = array.clone();
    for child in children {
        let Some(parent) = out.as_any().downcast_ref::<StructArray>() else {
            return Err(format!("{child:?} is below a column that is not a struct"));
        };
        let values = parent
            .column_by_name(child)
            .ok_or_else(|| format!("the struct has no field {child:?}"))?;
        let nulls = arrow_buffer::NullBuffer::union(parent.nulls(), values.nulls());
        let data = values.to_data().into_builder().nulls(nulls).build();
        out = make_array(data.map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// The Arrow field at `children` below `field`, named `name`.
fn field_at(field: &FieldRef, children: &[String], name: &str) -> Option<FieldRef> {
    if children.is_empty() {
        return Some(Arc::new(field.as_ref().clone().with_name(name)));
    }
    let mut t = field.data_type();
    let mut leaf = None;
    for child in children {
        let DataType::Struct(fields) = t else {
            return None;
        };
        let f = fields.iter().find(|f| f.name() == child)?;
        t = f.data_type();
        leaf = Some(f);
    }
    leaf.map(|f| Arc::new(Field::new(name, f.data_type().clone(), true)))
}

/// The columns a read returns, by name, and the top-level columns it reads for them.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The top-level columns read, each once.
    pub read: Vec<Column>,
    /// Each output column: its field, the position of its column in `read`, the path below.
    outputs: Vec<(FieldRef, usize, Vec<String>)>,
    /// The output columns' schema (made once: every chunk read uses it).
    columns: SchemaRef,
}

impl Projection {
    fn new(read: Vec<Column>, outputs: Vec<(FieldRef, usize, Vec<String>)>) -> Self {
        let fields: Vec<FieldRef> = outputs.iter().map(|(f, _, _)| f.clone()).collect();
        Projection {
            read,
            outputs,
            columns: Arc::new(Schema::new(fields)),
        }
    }

    /// The output columns' fields, in the order asked.
    pub fn fields(&self) -> Vec<FieldRef> {
        self.outputs.iter().map(|(f, _, _)| f.clone()).collect()
    }

    /// How many columns the read returns.
    pub fn len(&self) -> usize {
        self.outputs.len()
    }

    /// Whether the read returns no column (a count).
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// The output schema, with `row_columns` after the columns.
    pub fn schema(&self, row_columns: &[RowColumn]) -> SchemaRef {
        let mut fields = self.fields();
        for c in row_columns {
            fields.push(Arc::new(Field::new(c.name(), DataType::UInt64, true)));
        }
        Arc::new(Schema::new(fields))
    }

    /// `fragment`'s rows `rows`, as the output columns.
    pub async fn read_rows(
        &self,
        snap: &Snapshot,
        fragment: &DataFragment,
        rows: Rows<'_>,
    ) -> Result<RecordBatch> {
        let read = rows::read_rows(snap, fragment, &self.read, rows).await?;
        let options = RecordBatchOptions::new().with_row_count(Some(read.num_rows()));
        RecordBatch::try_new_with_options(self.columns.clone(), self.apply(&read)?, &options)
            .map_err(|e| Error::Internal(format!("assembling the columns read: {e}")))
    }

    /// The output columns of `batch` (the `read` columns' rows).
    pub fn apply(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        (self.outputs.iter())
            .map(|(field, at, children)| {
                let column = batch.columns().get(*at).ok_or_else(|| {
                    Error::Internal(format!("column {} was not read", field.name()))
                })?;
                extract(column, children).map_err(|reason| Error::InvalidArgument {
                    what: format!("column {:?}", field.name()),
                    reason,
                })
            })
            .collect()
    }
}

/// The read of `names` (every top-level column when `None`); a name the table has no field
/// for is refused, naming it.
pub fn projection(snap: &Snapshot, names: Option<&[String]>) -> Result<Projection> {
    let all = rows::projection(snap, None)?;
    let Some(names) = names else {
        let outputs = (all.iter().enumerate())
            .map(|(i, c)| (c.field.clone(), i, Vec::new()))
            .collect();
        return Ok(Projection::new(all, outputs));
    };
    let fields = &snap.manifest().fields;
    let mut read: Vec<Column> = Vec::new();
    let mut outputs = Vec::with_capacity(names.len());
    for name in names {
        let missing = || Error::InvalidArgument {
            what: format!("column {name:?}"),
            reason: "the table has no such column".into(),
        };
        let path = resolve(fields, name).ok_or_else(missing)?;
        let column = (all.iter())
            .find(|c| c.field.name() == &path.top)
            .ok_or_else(missing)?;
        let at = match read.iter().position(|c| c.field.name() == &path.top) {
            Some(at) => at,
            None => {
                read.push(column.clone());
                read.len() - 1
            }
        };
        let field = field_at(&column.field, &path.children, name).ok_or_else(missing)?;
        outputs.push((field, at, path.children));
    }
    Ok(Projection::new(read, outputs))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;
    use arrow_buffer::NullBuffer;

    fn field(id: i32, parent_id: i32, name: &str) -> LanceField {
        LanceField {
            id,
            parent_id,
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn names_split_at_dots_outside_backticks() {
        assert_eq!(parts("s.x"), ["s", "x"]);
        assert_eq!(
            parts("`outer field`.`inner field`"),
            ["outer field", "inner field"]
        );
        assert_eq!(parts("`a.b`.c"), ["a.b", "c"]);
        assert_eq!(parts("id"), ["id"]);
    }

    #[test]
    fn a_top_level_name_wins_then_paths_resolve_through_children() {
        let fields = [
            field(0, -1, "s"),
            field(1, 0, "x"),
            field(2, 0, "inner"),
            field(3, 2, "y"),
            field(4, -1, "s.x"),
        ];
        let at = |name| resolve(&fields, name).map(|p| (p.top, p.children, p.id));
        let named = |id| of_id(&fields, id).map(|p| (p.name(), p.top_id));
        assert_eq!(named(3), Some(("s.inner.y".into(), 0)));
        assert_eq!(named(4), Some(("s.x".into(), 4)));
        assert_eq!(named(9), None);
        let cycle = [field(0, 1, "a"), field(1, 0, "b")];
        assert!(
            of_id(&cycle, 0).is_none(),
            "parents that never reach the top"
        );
        assert_eq!(
            at("s.x"),
            Some(("s.x".into(), vec![], 4)),
            "the column named s.x"
        );
        assert_eq!(at("`s`.`x`"), Some(("s".into(), vec!["x".into()], 1)));
        assert_eq!(
            at("s.inner.y"),
            Some(("s".into(), vec!["inner".into(), "y".into()], 3))
        );
        assert_eq!(at("s.nope"), None);
        assert_eq!(at("nope.x"), None);
    }

    #[test]
    fn a_child_is_null_where_its_struct_is() {
        let x: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
        let s: ArrayRef = Arc::new(StructArray::new(
            vec![Field::new("x", DataType::Int64, true)].into(),
            vec![x],
            Some(NullBuffer::from(vec![true, true, false])),
        ));
        let got = extract(&s, &["x".into()]).unwrap();
        let got = got.as_primitive::<Int64Type>();
        assert_eq!(got.iter().collect::<Vec<_>>(), [Some(1), None, None]);
        assert!(extract(&s, &["y".into()]).unwrap_err().contains("no field"));
        let x = s
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap()
            .column(0)
            .clone();
        assert!(extract(&x, &["z".into()])
            .unwrap_err()
            .contains("not a struct"));
    }
}
