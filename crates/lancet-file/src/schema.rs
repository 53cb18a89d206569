use arrow_schema::{Field, Schema};

/// Compares two schemas exactly: same fields in the same order, with equal names, nullability
/// and data types (nested fields, list item names and dictionary key/value types included).
/// Field and schema metadata are not compared. Returns the first difference.
pub fn check_schema_exact(
    actual: &Schema,
    expected: &Schema,
) -> Result<(), lancet_proto::Malformed> {
    schema_difference(actual, expected).map_err(lancet_proto::Malformed::from)
}

fn schema_difference(actual: &Schema, expected: &Schema) -> Result<(), String> {
    if actual.fields().len() != expected.fields().len() {
        return Err(format!(
            "{} fields, expected {} ({:?})",
            actual.fields().len(),
            expected.fields().len(),
            expected
                .fields()
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
        ));
    }
    for (a, e) in actual.fields().iter().zip(expected.fields()) {
        check_field(a, e)?;
    }
    Ok(())
}

fn check_field(a: &Field, e: &Field) -> Result<(), String> {
    if a.name() != e.name() {
        return Err(format!(
            "field {:?} found where {:?} is expected",
            a.name(),
            e.name()
        ));
    }
    if a.is_nullable() != e.is_nullable() {
        return Err(format!(
            "field {:?} nullable = {}, expected {}",
            a.name(),
            a.is_nullable(),
            e.is_nullable()
        ));
    }
    if !types_match(a.data_type(), e.data_type()) {
        return Err(format!(
            "field {:?} has type {}, expected {}",
            a.name(),
            a.data_type(),
            e.data_type()
        ));
    }
    Ok(())
}

/// Type equality that ignores metadata on nested fields but not their names or nullability.
fn types_match(a: &arrow_schema::DataType, e: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType::*;
    match (a, e) {
        (List(a), List(e)) | (LargeList(a), LargeList(e)) => check_field(a, e).is_ok(),
        (FixedSizeList(a, n), FixedSizeList(e, m)) => n == m && check_field(a, e).is_ok(),
        (Struct(a), Struct(e)) => {
            a.len() == e.len()
                && a.iter()
                    .zip(e.iter())
                    .all(|(a, e)| check_field(a, e).is_ok())
        }
        (Dictionary(ak, av), Dictionary(ek, ev)) => ak == ek && types_match(av, ev),
        _ => a == e,
    }
}

/// The `lance.file.Field` list a manifest records for `schema` (ids assigned depth-first from 0,
/// Lance's logical type names), produced by lance-core's own Arrow conversion so that lancet
/// names types exactly as pylance does.
pub fn manifest_fields(
    schema: &Schema,
) -> Result<Vec<lancet_proto::file::Field>, crate::FileError> {
    use prost::Message;
    let invalid = |rule: String| crate::FileError::InvalidInput {
        path: object_store::path::Path::default(),
        rule,
    };
    let lance_schema =
        lance_core::datatypes::Schema::try_from(schema).map_err(|e| invalid(e.to_string()))?;
    let fields = lance_file::datatypes::Fields::from(&lance_schema);
    fields
        .0
        .iter()
        .map(|f| {
            lancet_proto::file::Field::decode(f.encode_to_vec().as_slice())
                .map_err(|e| invalid(format!("re-decoding lance field: {e}")))
        })
        .collect()
}

/// The top-level columns of a table whose manifest records `fields`, converted to Arrow by
/// lance-core as pylance converts them, each with its field ids. A field list lance-core
/// cannot read (a logical type it does not know, a child before its parent) is `Corrupt`
/// naming `at`.
pub fn table_schema(
    fields: &[lancet_proto::file::Field],
    at: &str,
) -> Result<Vec<crate::Column>, crate::FileError> {
    use prost::Message;
    let corrupt = |rule: String| crate::FileError::Corrupt {
        at: lancet_proto::ObjectRef::new(at).within("schema"),
        rule,
    };
    let lance_fields = fields
        .iter()
        .map(|f| {
            lance_file::format::pb::Field::decode(f.encode_to_vec().as_slice())
                .map_err(|e| corrupt(format!("re-decoding field {}: {e}", f.id)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let converted = std::panic::catch_unwind(|| {
        lance_core::datatypes::Schema::try_from(&lance_file::datatypes::Fields(lance_fields)).map(
            |schema| {
                let ids = schema
                    .fields
                    .iter()
                    .map(|f| {
                        let mut ids = Vec::new();
                        pre_order(f, &mut ids);
                        ids
                    })
                    .collect::<Vec<_>>();
                (Schema::from(&schema), ids)
            },
        )
    });
    fn pre_order(f: &lance_core::datatypes::Field, out: &mut Vec<i32>) {
        out.push(f.id);
        f.children.iter().for_each(|c| pre_order(c, out));
    }
    match converted {
        Ok(Ok((schema, ids))) => Ok(schema
            .fields()
            .iter()
            .zip(ids)
            .map(|(field, ids)| crate::Column {
                ids,
                field: field.clone(),
            })
            .collect()),
        Ok(Err(e)) => Err(corrupt(e.to_string())),
        Err(_) => Err(corrupt("a field names a type Lance does not know".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use std::sync::Arc;

    #[test]
    fn exact_comparison() {
        let s = |fields: Vec<Field>| Schema::new(fields);
        let base = s(vec![
            Field::new("a", DataType::UInt32, false),
            Field::new(
                "d",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
            Field::new_list("l", Field::new("item", DataType::Int32, true), false),
        ]);
        assert!(check_schema_exact(&base, &base).is_ok());
        let mut f = base.fields().to_vec();
        f.swap(0, 1);
        assert!(
            check_schema_exact(&s(f.iter().map(|f| f.as_ref().clone()).collect()), &base)
                .unwrap_err()
                .to_string()
                .contains("found where")
        );
        let nullable = s(vec![
            Field::new("a", DataType::UInt32, true),
            base.field(1).clone(),
            base.field(2).clone(),
        ]);
        assert!(check_schema_exact(&nullable, &base)
            .unwrap_err()
            .to_string()
            .contains("nullable"));
        let dict_value = s(vec![
            base.field(0).clone(),
            Field::new(
                "d",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::LargeUtf8)),
                true,
            ),
            base.field(2).clone(),
        ]);
        assert!(check_schema_exact(&dict_value, &base)
            .unwrap_err()
            .to_string()
            .contains("type"));
        let item_name = s(vec![
            base.field(0).clone(),
            base.field(1).clone(),
            Field::new(
                "l",
                DataType::List(Arc::new(Field::new("element", DataType::Int32, true))),
                false,
            ),
        ]);
        assert!(check_schema_exact(&item_name, &base).is_err());
        assert!(check_schema_exact(&s(vec![base.field(0).clone()]), &base)
            .unwrap_err()
            .to_string()
            .contains("fields"));
    }
}
