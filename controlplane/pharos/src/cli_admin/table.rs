//! Human-readable output of `pharos admin`: JSON records as aligned columns (lists) or as
//! `field  value` lines (one record). Hand-written: a few dozen lines do not need a crate.

use serde_json::Value;

/// One column: its heading and the record member it shows.
pub type Column = (&'static str, &'static str);

/// A cell: strings bare, `-` for null or missing, lists of words comma-separated, anything
/// else as compact JSON; always one line.
pub fn cell(v: Option<&Value>) -> String {
    let s = match v {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    };
    super::client::one_line(&s)
}

/// Rows of `records` under `columns`, padded to the widest cell, heading first. An empty list
/// prints the heading alone, so a script or a reader sees that the list is empty.
pub fn render(records: &[Value], columns: &[Column]) -> String {
    let mut rows: Vec<Vec<String>> = vec![columns.iter().map(|c| c.0.to_owned()).collect()];
    for r in records {
        rows.push(columns.iter().map(|c| cell(r.get(c.1))).collect());
    }
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One record as `field  value` lines, members in the record's order.
pub fn record(v: &Value) -> String {
    let Some(map) = v.as_object() else {
        return format!("{}\n", cell(Some(v)));
    };
    let w = map.keys().map(|k| k.chars().count()).max().unwrap_or(0);
    map.iter()
        .map(|(k, v)| format!("{k:<w$}  {}\n", cell(Some(v))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_are_aligned_and_missing_values_are_dashes() {
        let rows = [
            json!({"entity_id": "https://a.example", "status": "active"}),
            json!({"entity_id": "https://bb.example", "status": null, "x": 1}),
        ];
        let t = render(&rows, &[("ENTITY", "entity_id"), ("STATUS", "status")]);
        assert_eq!(
            t,
            "ENTITY              STATUS\nhttps://a.example   active\nhttps://bb.example  -\n"
        );
    }

    #[test]
    fn an_empty_list_prints_its_heading() {
        assert_eq!(render(&[], &[("A", "a"), ("B", "b")]), "A  B\n");
    }

    #[test]
    fn a_record_is_one_line_per_member() {
        let r = record(&json!({"id": 3, "types": ["a", "b"], "cfg": {"k": 1}}));
        assert_eq!(r, "id     3\ntypes  a,b\ncfg    {\"k\":1}\n");
    }
}
