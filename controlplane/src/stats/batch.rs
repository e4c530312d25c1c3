//! A batch of request records stored as one row of `stats_batches`.
//!
//! Why not one row per request: storing a row costs the database 2–3 CPU-µs (binding thirteen
//! values, building the record, the table's and the index's B-tree inserts), as much as a
//! fifth of what answering an Entity Configuration costs, on the same cores. A batch of up to
//! 8,192 records is one insert of one JSON document: columns of equal length, every text value
//! written once per batch in `strings` and referred to by position. Encoding costs a fraction
//! of a µs per record and the document is about 40 bytes per record, a third of a row.
//!
//! The document (version 1), kept plain JSON so an operator can still read it with the
//! database's JSON functions:
//!
//! ```json
//! {"v":1,"t0":1700000000,"strings":["fetch","GET","127.0.0.1"],
//!  "ts":[0,0,1],"endpoint":[1,1,1],"method":[2,2,2],"status":[200,200,404],
//!  "duration_us":[310,295,120],"client_ip":[3,3,3],"country":[0,0,0],"user_agent":[0,0,0],
//!  "client_entity_id":[0,0,0],"query_params":[0,0,0],"request_size":[0,0,0],
//!  "response_size":[812,812,71],"error_type":[0,0,4]}
//! ```
//!
//! `ts` holds seconds after `t0` (the batch's earliest record); text columns hold 1-based
//! positions in `strings`, 0 for an absent value.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::db::stats::RequestRow;

/// The document version this build writes and reads.
const VERSION: u32 = 1;

/// The stored document; `S` is `&str` when writing and `String` when reading.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Document<S> {
    v: u32,
    t0: i64,
    strings: Vec<S>,
    ts: Vec<i64>,
    endpoint: Vec<u32>,
    method: Vec<u32>,
    status: Vec<i64>,
    duration_us: Vec<i64>,
    client_ip: Vec<u32>,
    country: Vec<u32>,
    user_agent: Vec<u32>,
    client_entity_id: Vec<u32>,
    query_params: Vec<u32>,
    request_size: Vec<i64>,
    response_size: Vec<i64>,
    error_type: Vec<u32>,
}

/// A batch ready to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The earliest record's `ts`.
    pub ts_first: i64,
    /// The latest record's `ts`.
    pub ts_last: i64,
    /// Records in the batch.
    pub records: i64,
    /// The JSON document.
    pub body: String,
}

/// Hands out positions in `strings`, remembering the last value of each column so that runs of
/// equal values (the common case: one client polling one endpoint) skip the hash lookup.
struct Dictionary<'a> {
    strings: Vec<&'a str>,
    index: HashMap<&'a str, u32>,
    last: [Option<(&'a str, u32)>; 8],
}

impl<'a> Dictionary<'a> {
    fn new() -> Self {
        Self {
            strings: Vec::new(),
            index: HashMap::new(),
            last: [None; 8],
        }
    }

    fn position(&mut self, column: usize, value: Option<&'a str>) -> u32 {
        let Some(value) = value else {
            return 0;
        };
        if let Some(Some((last, at))) = self.last.get(column)
            && *last == value
        {
            return *at;
        }
        let next = u32::try_from(self.strings.len() + 1).unwrap_or(u32::MAX);
        let at = *self.index.entry(value).or_insert_with(|| {
            self.strings.push(value);
            next
        });
        if let Some(slot) = self.last.get_mut(column) {
            *slot = Some((value, at));
        }
        at
    }
}

/// Encodes `rows` (any number; the flusher passes at most 8,192) as one document. `None` for
/// no rows.
pub fn encode(rows: &[RequestRow]) -> Option<Encoded> {
    let ts_first = rows.iter().map(|r| r.ts).min()?;
    let ts_last = rows.iter().map(|r| r.ts).max()?;
    let n = rows.len();
    let mut d = Dictionary::new();
    let mut doc: Document<&str> = Document {
        v: VERSION,
        t0: ts_first,
        ts: Vec::with_capacity(n),
        endpoint: Vec::with_capacity(n),
        method: Vec::with_capacity(n),
        status: Vec::with_capacity(n),
        duration_us: Vec::with_capacity(n),
        client_ip: Vec::with_capacity(n),
        country: Vec::with_capacity(n),
        user_agent: Vec::with_capacity(n),
        client_entity_id: Vec::with_capacity(n),
        query_params: Vec::with_capacity(n),
        request_size: Vec::with_capacity(n),
        response_size: Vec::with_capacity(n),
        error_type: Vec::with_capacity(n),
        ..Document::default()
    };
    for r in rows {
        doc.ts.push(r.ts - ts_first);
        doc.endpoint.push(d.position(0, Some(&r.endpoint)));
        doc.method.push(d.position(1, Some(&r.method)));
        doc.status.push(r.status_code);
        doc.duration_us.push(r.duration_us);
        doc.client_ip.push(d.position(2, r.client_ip.as_deref()));
        doc.country.push(d.position(3, r.country_code.as_deref()));
        doc.user_agent.push(d.position(4, r.user_agent.as_deref()));
        doc.client_entity_id
            .push(d.position(5, r.client_entity_id.as_deref()));
        doc.query_params
            .push(d.position(6, r.query_params.as_deref()));
        doc.request_size.push(r.request_size);
        doc.response_size.push(r.response_size);
        doc.error_type.push(d.position(7, r.error_type.as_deref()));
    }
    doc.strings = d.strings;
    Some(Encoded {
        ts_first,
        ts_last,
        records: i64::try_from(n).unwrap_or(i64::MAX),
        // Serialising numbers and borrowed strings into a String cannot fail.
        body: serde_json::to_string(&doc).unwrap_or_default(),
    })
}

/// A stored batch, read back.
#[derive(Debug)]
pub struct Batch {
    doc: Document<String>,
}

/// One record of a [`Batch`], borrowing its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Arrival, Unix seconds.
    pub ts: i64,
    /// Endpoint.
    pub endpoint: &'a str,
    /// HTTP method.
    pub method: &'a str,
    /// Status code.
    pub status_code: i64,
    /// Microseconds to the response head.
    pub duration_us: i64,
    /// Client address.
    pub client_ip: Option<&'a str>,
    /// Country code.
    pub country_code: Option<&'a str>,
    /// User-Agent.
    pub user_agent: Option<&'a str>,
    /// Authenticated client entity.
    pub client_entity_id: Option<&'a str>,
    /// Query parameters as JSON.
    pub query_params: Option<&'a str>,
    /// Request size in bytes.
    pub request_size: i64,
    /// Response size in bytes.
    pub response_size: i64,
    /// Error class.
    pub error_type: Option<&'a str>,
}

impl Record<'_> {
    /// The owned row.
    pub fn to_row(&self) -> RequestRow {
        let own = |s: Option<&str>| s.map(str::to_owned);
        RequestRow {
            ts: self.ts,
            endpoint: self.endpoint.to_owned(),
            method: self.method.to_owned(),
            status_code: self.status_code,
            duration_us: self.duration_us,
            client_ip: own(self.client_ip),
            country_code: own(self.country_code),
            user_agent: own(self.user_agent),
            client_entity_id: own(self.client_entity_id),
            query_params: own(self.query_params),
            request_size: self.request_size,
            response_size: self.response_size,
            error_type: own(self.error_type),
        }
    }
}

impl Batch {
    /// Parses and checks a stored document: a known version, columns of one length, text
    /// positions within `strings`.
    pub fn decode(body: &str) -> Result<Self, String> {
        let doc: Document<String> = serde_json::from_str(body).map_err(|e| e.to_string())?;
        if doc.v != VERSION {
            return Err(format!("unknown statistics batch version {}", doc.v));
        }
        let n = doc.ts.len();
        let lengths = [
            doc.endpoint.len(),
            doc.method.len(),
            doc.status.len(),
            doc.duration_us.len(),
            doc.client_ip.len(),
            doc.country.len(),
            doc.user_agent.len(),
            doc.client_entity_id.len(),
            doc.query_params.len(),
            doc.request_size.len(),
            doc.response_size.len(),
            doc.error_type.len(),
        ];
        if lengths.iter().any(|l| *l != n) {
            return Err("statistics batch columns differ in length".into());
        }
        let strings = doc.strings.len();
        let text = [
            &doc.endpoint,
            &doc.method,
            &doc.client_ip,
            &doc.country,
            &doc.user_agent,
            &doc.client_entity_id,
            &doc.query_params,
            &doc.error_type,
        ];
        if text.iter().any(|c| c.iter().any(|p| *p as usize > strings)) {
            return Err("statistics batch refers to a missing string".into());
        }
        Ok(Self { doc })
    }

    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.doc.ts.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.doc.ts.is_empty()
    }

    fn text(&self, at: u32) -> Option<&str> {
        match at {
            0 => None,
            p => self.doc.strings.get(p as usize - 1).map(String::as_str),
        }
    }

    /// The `i`-th record (`None` past the end).
    pub fn get(&self, i: usize) -> Option<Record<'_>> {
        let d = &self.doc;
        let text = |c: &Vec<u32>| c.get(i).and_then(|p| self.text(*p));
        Some(Record {
            ts: d.t0 + d.ts.get(i)?,
            endpoint: text(&d.endpoint).unwrap_or_default(),
            method: text(&d.method).unwrap_or_default(),
            status_code: *d.status.get(i)?,
            duration_us: *d.duration_us.get(i)?,
            client_ip: text(&d.client_ip),
            country_code: text(&d.country),
            user_agent: text(&d.user_agent),
            client_entity_id: text(&d.client_entity_id),
            query_params: text(&d.query_params),
            request_size: *d.request_size.get(i)?,
            response_size: *d.response_size.get(i)?,
            error_type: text(&d.error_type),
        })
    }

    /// The records in stored (arrival) order.
    pub fn iter(&self) -> impl Iterator<Item = Record<'_>> {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ts: i64, endpoint: &str, status: i64, ip: Option<&str>) -> RequestRow {
        RequestRow {
            ts,
            endpoint: endpoint.into(),
            method: "GET".into(),
            status_code: status,
            duration_us: ts % 1000,
            client_ip: ip.map(Into::into),
            user_agent: Some("wrk/4".into()),
            query_params: (endpoint == "fetch").then(|| r#"{"sub":"https://a"}"#.into()),
            response_size: 812,
            error_type: crate::stats::flush::error_type(status as u16).map(Into::into),
            ..RequestRow::default()
        }
    }

    #[test]
    fn records_come_back_as_they_went_in() {
        let rows = vec![
            row(1_700_000_005, "fetch", 200, Some("10.0.0.1")),
            row(1_700_000_003, ".well-known/openid-federation", 200, None),
            row(1_700_000_009, "fetch", 404, Some("10.0.0.2")),
            row(1_700_000_009, "fetch", 200, Some("10.0.0.1")),
        ];
        let e = encode(&rows).unwrap();
        assert_eq!(
            (e.ts_first, e.ts_last, e.records),
            (1_700_000_003, 1_700_000_009, 4)
        );
        let b = Batch::decode(&e.body).unwrap();
        let back: Vec<RequestRow> = b.iter().map(|r| r.to_row()).collect();
        assert_eq!(back, rows);
        // Each text value is written once.
        assert_eq!(e.body.matches("10.0.0.1").count(), 1);
        assert_eq!(e.body.matches("wrk/4").count(), 1);
    }

    #[test]
    fn nothing_to_encode() {
        assert_eq!(encode(&[]), None);
    }

    #[test]
    fn damaged_documents_are_refused_not_misread() {
        let e = encode(&[row(1, "fetch", 200, None)]).unwrap();
        let bad_len = e.body.replace(r#""status":[200]"#, r#""status":[200,200]"#);
        assert!(Batch::decode(&bad_len).is_err());
        let bad_ref = e.body.replace(r#""endpoint":[1]"#, r#""endpoint":[99]"#);
        assert!(Batch::decode(&bad_ref).is_err());
        let bad_version = e.body.replace(r#""v":1"#, r#""v":2"#);
        assert!(Batch::decode(&bad_version).is_err());
        assert!(Batch::decode("{").is_err());
    }
}
