//! A batch of request records stored as one row of `stats_batches`.
//!
//! Why not one row per request: storing a row costs the database 2–3 CPU-µs (binding thirteen
//! values, building the record, the table's and the index's B-tree inserts), as much as a
//! fifth of what answering an Entity Configuration costs, on the same cores. A batch of up to
//! 8,192 records is one insert of one JSON document of columns: every text value is written
//! once per batch in `strings` and referred to by position, and every column but the
//! durations is run-length encoded, as consecutive requests mostly share endpoint, client,
//! status and second. Encoding costs a few hundred instructions per record, and a batch of
//! one client's traffic takes a few bytes per record.
//!
//! The document (version 1), kept plain JSON so an operator can still read it with the
//! database's JSON functions:
//!
//! ```json
//! {"v":1,"t0":1700000000,"strings":["fetch","GET","127.0.0.1","not_found"],
//!  "duration_us":[310,295,120],
//!  "ts":[0,2,1,1],"endpoint":[1,3],"method":[2,3],"status":[200,2,404,1],
//!  "client_ip":[3,3],"country":[0,3],"user_agent":[0,3],"client_entity_id":[0,3],
//!  "query_params":[0,3],"request_size":[0,3],"response_size":[812,2,71,1],
//!  "error_type":[0,2,4,1]}
//! ```
//!
//! `duration_us` has one value per record, in order; every other column is a list of
//! (value, repeat count) pairs that expands to one value per record. `entity` (the hosted
//! entity that answered, issue 38) is written only when a record is not the default entity's:
//! absent, every record is entity 1, as in batches written before entities were hosted. `ts` holds seconds after
//! `t0` (the batch's earliest record); text columns hold 1-based positions in `strings`, 0 for
//! an absent value.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;

use super::RequestRow;

/// The document version this build writes and reads.
const VERSION: u32 = 1;

/// The entity of a record whose batch names none.
const DEFAULT_ENTITY: i64 = 1;

/// The stored document as read ([`Encoder::finish`] writes it); [`Batch::decode`] expands its
/// run-length columns from (value, count) pairs to one value per record in place.
#[derive(Debug, Default, Deserialize)]
struct Document {
    v: u32,
    t0: i64,
    strings: Vec<String>,
    duration_us: Vec<i64>,
    ts: Vec<i64>,
    endpoint: Vec<i64>,
    method: Vec<i64>,
    status: Vec<i64>,
    client_ip: Vec<i64>,
    country: Vec<i64>,
    user_agent: Vec<i64>,
    client_entity_id: Vec<i64>,
    query_params: Vec<i64>,
    request_size: Vec<i64>,
    response_size: Vec<i64>,
    error_type: Vec<i64>,
    #[serde(default)]
    entity: Vec<i64>,
}

/// Expands (value, count) pairs into exactly `n` values.
fn expand(name: &str, pairs: &[i64], n: usize) -> Result<Vec<i64>, String> {
    let bad = || format!("statistics batch column {name} does not hold {n} values");
    if !pairs.len().is_multiple_of(2) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(n);
    for pair in pairs.chunks_exact(2) {
        let &[value, count] = pair else {
            return Err(bad());
        };
        let count = usize::try_from(count).map_err(|_| bad())?;
        if count == 0 || count > n - out.len() {
            return Err(bad());
        }
        out.resize(out.len() + count, value);
    }
    if out.len() != n {
        return Err(bad());
    }
    Ok(out)
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

/// The text columns, as [`Encoder::text`] names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    /// `endpoint`.
    Endpoint,
    /// `method`.
    Method,
    /// `client_ip`.
    ClientIp,
    /// `country`.
    Country,
    /// `user_agent`.
    UserAgent,
    /// `client_entity_id`.
    ClientEntityId,
    /// `query_params`.
    QueryParams,
    /// `error_type`.
    ErrorType,
}

/// One record as positions in the encoder's `strings` (0 = absent) and numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Positions {
    /// Arrival, Unix seconds.
    pub ts: i64,
    /// Endpoint.
    pub endpoint: u32,
    /// Method.
    pub method: u32,
    /// Status code.
    pub status: i64,
    /// Microseconds to the response head.
    pub duration_us: i64,
    /// Client address.
    pub client_ip: u32,
    /// Country.
    pub country: u32,
    /// User-Agent.
    pub user_agent: u32,
    /// Authenticated client entity.
    pub client_entity_id: u32,
    /// Query parameters as JSON.
    pub query_params: u32,
    /// Request size.
    pub request_size: i64,
    /// Response size.
    pub response_size: i64,
    /// Error class.
    pub error_type: u32,
    /// The hosted entity that answered.
    pub entity: i64,
}

/// Builds one batch document from records whose text it borrows. Text values are written
/// once per batch; a column that repeats its last value (one client polling one endpoint, the
/// common case) skips the hash lookup. The document is written by hand, a number at a time:
/// through serde each number cost ~40 instructions, and a record is thirteen of them.
#[derive(Debug, Default)]
pub struct Encoder<'a> {
    strings: Vec<Cow<'a, str>>,
    index: HashMap<&'a str, u32>,
    last: [Option<(&'a str, u32)>; 8],
    records: Vec<Positions>,
}

impl<'a> Encoder<'a> {
    /// An empty batch with room for `n` records.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            records: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// Records pushed so far.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The position of `value` of `column`, added on first use.
    pub fn text(&mut self, column: Text, value: Option<&'a str>) -> u32 {
        let Some(value) = value else {
            return 0;
        };
        let slot = column as usize;
        if let Some(Some((last, at))) = self.last.get(slot)
            && *last == value
        {
            return *at;
        }
        let next = self.next_position();
        let at = *self.index.entry(value).or_insert(next);
        if at == next {
            self.strings.push(Cow::Borrowed(value));
        }
        if let Some(last) = self.last.get_mut(slot) {
            *last = Some((value, at));
        }
        at
    }

    /// The position of a value made for this batch (the caller remembers it for reuse).
    pub fn owned(&mut self, value: String) -> u32 {
        let at = self.next_position();
        self.strings.push(Cow::Owned(value));
        at
    }

    fn next_position(&self) -> u32 {
        u32::try_from(self.strings.len() + 1).unwrap_or(u32::MAX)
    }

    /// Adds a record.
    pub fn push(&mut self, p: Positions) {
        self.records.push(p);
    }

    /// Adds a record given by its values.
    pub fn push_record(&mut self, r: &Record<'a>) {
        let p = Positions {
            ts: r.ts,
            endpoint: self.text(Text::Endpoint, Some(r.endpoint)),
            method: self.text(Text::Method, Some(r.method)),
            status: r.status_code,
            duration_us: r.duration_us,
            client_ip: self.text(Text::ClientIp, r.client_ip),
            country: self.text(Text::Country, r.country_code),
            user_agent: self.text(Text::UserAgent, r.user_agent),
            client_entity_id: self.text(Text::ClientEntityId, r.client_entity_id),
            query_params: self.text(Text::QueryParams, r.query_params),
            request_size: r.request_size,
            response_size: r.response_size,
            error_type: self.text(Text::ErrorType, r.error_type),
            entity: r.entity,
        };
        self.push(p);
    }

    /// The document; `None` without records.
    pub fn finish(&self) -> Option<Encoded> {
        let rs = &self.records;
        let ts_first = rs.iter().map(|r| r.ts).min()?;
        let ts_last = rs.iter().map(|r| r.ts).max()?;
        let text: usize = self.strings.iter().map(|s| s.len() + 3).sum();
        let mut out = String::with_capacity(200 + text + rs.len() * 48);
        out.push_str("{\"v\":");
        number(&mut out, i64::from(VERSION));
        out.push_str(",\"t0\":");
        number(&mut out, ts_first);
        out.push_str(",\"strings\":");
        // Plain strings always serialise.
        out.push_str(&serde_json::to_string(&self.strings).unwrap_or_else(|_| "[]".into()));
        plain(&mut out, "duration_us", rs.iter().map(|r| r.duration_us));
        runs(&mut out, "ts", rs.iter().map(|r| r.ts - ts_first));
        runs(&mut out, "endpoint", rs.iter().map(|r| r.endpoint.into()));
        runs(&mut out, "method", rs.iter().map(|r| r.method.into()));
        runs(&mut out, "status", rs.iter().map(|r| r.status));
        runs(&mut out, "client_ip", rs.iter().map(|r| r.client_ip.into()));
        runs(&mut out, "country", rs.iter().map(|r| r.country.into()));
        runs(
            &mut out,
            "user_agent",
            rs.iter().map(|r| r.user_agent.into()),
        );
        let entity = rs.iter().map(|r| r.client_entity_id.into());
        runs(&mut out, "client_entity_id", entity);
        runs(
            &mut out,
            "query_params",
            rs.iter().map(|r| r.query_params.into()),
        );
        runs(&mut out, "request_size", rs.iter().map(|r| r.request_size));
        runs(
            &mut out,
            "response_size",
            rs.iter().map(|r| r.response_size),
        );
        runs(
            &mut out,
            "error_type",
            rs.iter().map(|r| r.error_type.into()),
        );
        if rs.iter().any(|r| r.entity != DEFAULT_ENTITY) {
            runs(&mut out, "entity", rs.iter().map(|r| r.entity));
        }
        out.push('}');
        Some(Encoded {
            ts_first,
            ts_last,
            records: i64::try_from(rs.len()).unwrap_or(i64::MAX),
            body: out,
        })
    }
}

fn number(out: &mut String, n: i64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// `,"name":[1,2,3]`.
fn plain(out: &mut String, name: &str, values: impl Iterator<Item = i64>) {
    out.push_str(",\"");
    out.push_str(name);
    out.push_str("\":[");
    let mut buf = itoa::Buffer::new();
    for (i, v) in values.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(buf.format(v));
    }
    out.push(']');
}

/// `,"name":[value,count,…]`: runs of equal values.
fn runs(out: &mut String, name: &str, mut values: impl Iterator<Item = i64>) {
    out.push_str(",\"");
    out.push_str(name);
    out.push_str("\":[");
    let mut buf = itoa::Buffer::new();
    let mut emit = |out: &mut String, first: bool, value: i64, count: i64| {
        if !first {
            out.push(',');
        }
        out.push_str(buf.format(value));
        out.push(',');
        out.push_str(buf.format(count));
    };
    if let Some(mut value) = values.next() {
        let (mut count, mut first) = (1, true);
        for v in values {
            if v == value {
                count += 1;
            } else {
                emit(out, first, value, count);
                (value, count, first) = (v, 1, false);
            }
        }
        emit(out, first, value, count);
    }
    out.push(']');
}

/// Encodes `rows` as one document. `None` for no rows.
pub fn encode(rows: &[RequestRow]) -> Option<Encoded> {
    let mut e = Encoder::with_capacity(rows.len());
    for r in rows {
        e.push_record(&Record::of(r));
    }
    e.finish()
}

/// Encodes `items` as batches with `encode`, halving any part whose document would pass
/// `max_body` bytes (a single item is stored whatever its size).
pub fn encode_within<T>(
    items: &[T],
    max_body: usize,
    encode: impl Fn(&[T]) -> Option<Encoded>,
) -> Vec<Encoded> {
    let mut out = Vec::new();
    let mut pending: Vec<&[T]> = vec![items];
    while let Some(part) = pending.pop() {
        let Some(batch) = encode(part) else {
            continue;
        };
        if batch.body.len() > max_body && part.len() > 1 {
            let (a, b) = part.split_at(part.len() / 2);
            pending.push(b);
            pending.push(a);
            continue;
        }
        out.push(batch);
    }
    out
}

/// A stored batch, read back.
#[derive(Debug)]
pub struct Batch {
    doc: Document,
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
    /// The hosted entity that answered.
    pub entity: i64,
}

impl<'a> Record<'a> {
    /// The record of a row, borrowing its text.
    pub fn of(r: &'a RequestRow) -> Self {
        Self {
            ts: r.ts,
            endpoint: &r.endpoint,
            method: &r.method,
            status_code: r.status_code,
            duration_us: r.duration_us,
            client_ip: r.client_ip.as_deref(),
            country_code: r.country_code.as_deref(),
            user_agent: r.user_agent.as_deref(),
            client_entity_id: r.client_entity_id.as_deref(),
            query_params: r.query_params.as_deref(),
            request_size: r.request_size,
            response_size: r.response_size,
            error_type: r.error_type.as_deref(),
            entity: r.entity,
        }
    }

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
            entity: self.entity,
        }
    }
}

impl Batch {
    /// Parses and checks a stored document: a known version, columns of one length, text
    /// positions within `strings`.
    pub fn decode(body: &str) -> Result<Self, String> {
        let d: Document = serde_json::from_str(body).map_err(|e| e.to_string())?;
        if d.v != VERSION {
            return Err(format!("unknown statistics batch version {}", d.v));
        }
        let n = d.duration_us.len();
        let mut c = d;
        for (name, column) in [
            ("ts", &mut c.ts),
            ("endpoint", &mut c.endpoint),
            ("method", &mut c.method),
            ("status", &mut c.status),
            ("client_ip", &mut c.client_ip),
            ("country", &mut c.country),
            ("user_agent", &mut c.user_agent),
            ("client_entity_id", &mut c.client_entity_id),
            ("query_params", &mut c.query_params),
            ("request_size", &mut c.request_size),
            ("response_size", &mut c.response_size),
            ("error_type", &mut c.error_type),
        ] {
            *column = expand(name, column, n)?;
        }
        c.entity = if c.entity.is_empty() {
            vec![DEFAULT_ENTITY; n]
        } else {
            expand("entity", &c.entity, n)?
        };
        let strings = c.strings.len() as i64;
        let text = [
            &c.endpoint,
            &c.method,
            &c.client_ip,
            &c.country,
            &c.user_agent,
            &c.client_entity_id,
            &c.query_params,
            &c.error_type,
        ];
        if text
            .iter()
            .any(|c| c.iter().any(|p| !(0..=strings).contains(p)))
        {
            return Err("statistics batch refers to a missing string".into());
        }
        Ok(Self { doc: c })
    }

    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.doc.duration_us.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.doc.duration_us.is_empty()
    }

    fn text(&self, at: i64) -> Option<&str> {
        let i = usize::try_from(at.checked_sub(1)?).ok()?;
        self.doc.strings.get(i).map(String::as_str)
    }

    /// The `i`-th record (`None` past the end).
    pub fn get(&self, i: usize) -> Option<Record<'_>> {
        let d = &self.doc;
        let text = |c: &Vec<i64>| c.get(i).and_then(|p| self.text(*p));
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
            entity: *d.entity.get(i)?,
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

    /// Records of hosted entities keep their entity; a batch of the default entity's only
    /// is written as before (no `entity` column), and one without the column reads as
    /// entity 1's.
    #[test]
    fn entities_round_trip_and_the_default_costs_nothing() {
        let ours = vec![row(10, "fetch", 200, None), row(11, "fetch", 200, None)];
        let plain = encode(&ours).unwrap();
        assert!(!plain.body.contains("\"entity\""), "{}", plain.body);
        let back = Batch::decode(&plain.body).unwrap();
        assert!(back.iter().all(|r| r.entity == 1));
        let mut mixed = ours.clone();
        mixed.push(RequestRow {
            entity: 7,
            ..row(12, "edu/fetch", 404, None)
        });
        let b = Batch::decode(&encode(&mixed).unwrap().body).unwrap();
        let entities: Vec<i64> = b.iter().map(|r| r.entity).collect();
        assert_eq!(entities, [1, 1, 7]);
        assert_eq!(b.iter().map(|r| r.to_row()).collect::<Vec<_>>(), mixed);
    }

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
        // Each text value is written once; runs are written once.
        assert_eq!(e.body.matches("10.0.0.1").count(), 1);
        assert_eq!(e.body.matches("wrk/4").count(), 1);
        assert!(e.body.contains(r#""method":[2,4]"#), "{}", e.body);
    }

    #[test]
    fn nothing_to_encode() {
        assert_eq!(encode(&[]), None);
    }

    #[test]
    fn damaged_documents_are_refused_not_misread() {
        let e = encode(&[row(1, "fetch", 200, None)]).unwrap();
        let bad_len = e.body.replace(r#""status":[200,1]"#, r#""status":[200,2]"#);
        assert!(Batch::decode(&bad_len).is_err(), "{}", e.body);
        let odd = e.body.replace(r#""status":[200,1]"#, r#""status":[200]"#);
        assert!(Batch::decode(&odd).is_err());
        let zero = e
            .body
            .replace(r#""status":[200,1]"#, r#""status":[200,0,200,1]"#);
        assert!(Batch::decode(&zero).is_err());
        let bad_ref = e
            .body
            .replace(r#""endpoint":[1,1]"#, r#""endpoint":[99,1]"#);
        assert!(Batch::decode(&bad_ref).is_err());
        let bad_version = e.body.replace(r#""v":1"#, r#""v":2"#);
        assert!(Batch::decode(&bad_version).is_err());
        assert!(Batch::decode("{").is_err());
    }
}
