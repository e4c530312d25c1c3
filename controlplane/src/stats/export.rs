//! `export`: the request records of a range as CSV or newline-delimited JSON, streamed from the
//! database in chunks through a small bounded channel, so memory stays flat whatever the range
//! (the reader — an HTTP response body or the CLI's output — paces the database stream).

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use sqlx::Row as _;
use tokio::sync::mpsc;

use super::params::{Query, rfc3339};
use super::query::ms;
use crate::db::Db;
use crate::db::stats::REQUEST_COLUMNS;

/// Export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, with a header line.
    Csv,
    /// One JSON object per line.
    Json,
}

impl Format {
    /// Parses `csv|json`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "csv" => Some(Self::Csv),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// The CSV header (lighthouse's columns, then the authenticated client).
pub const CSV_HEADER: &str = "timestamp,endpoint,method,status_code,duration_ms,client_ip,\
country_code,user_agent,query_params,request_size,response_size,error_type,client_entity_id\n";

/// Bytes gathered before a chunk is handed on.
const CHUNK: usize = 64 * 1024;
/// Chunks in flight between the database and the reader.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Starts streaming the range's records; the receiver yields chunks, then ends (an error is
/// yielded as the last item).
pub fn start(db: Db, q: Query, format: Format) -> mpsc::Receiver<std::io::Result<Bytes>> {
    let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    tokio::spawn(async move {
        if let Err(e) = run(&db, &q, format, &tx).await {
            tracing::error!(error = %e, "statistics export failed");
            let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
        }
    });
    rx
}

async fn run(
    db: &Db,
    q: &Query,
    format: Format,
    tx: &mpsc::Sender<std::io::Result<Bytes>>,
) -> crate::error::Result<()> {
    let mut sql = format!("SELECT {REQUEST_COLUMNS} FROM stats_requests WHERE ts >= ? AND ts <= ?");
    if q.endpoint.is_some() {
        sql.push_str(" AND endpoint = ?");
    }
    sql.push_str(" ORDER BY ts, id");
    let mut query = sqlx::query(db.sql_built(sql)).bind(q.from).bind(q.to);
    if let Some(e) = &q.endpoint {
        query = query.bind(e.clone());
    }
    let mut rows = query.fetch(&db.pool);
    let mut buf = String::with_capacity(CHUNK + 1024);
    if format == Format::Csv {
        buf.push_str(CSV_HEADER);
    }
    while let Some(r) = rows.try_next().await? {
        let ts: i64 = r.try_get(0)?;
        let text = |i: usize| r.try_get::<Option<String>, _>(i);
        let int = |i: usize| r.try_get::<i64, _>(i);
        let rec = Record {
            timestamp: rfc3339(ts),
            endpoint: text(1)?.unwrap_or_default(),
            method: text(2)?.unwrap_or_default(),
            status_code: int(3)?,
            duration_ms: ms(int(4)?),
            client_ip: text(5)?,
            country_code: text(6)?,
            user_agent: text(7)?,
            client_entity_id: text(8)?,
            query_params: text(9)?,
            request_size: int(10)?,
            response_size: int(11)?,
            error_type: text(12)?,
        };
        match format {
            Format::Csv => rec.csv(&mut buf),
            Format::Json => {
                buf.push_str(&serde_json::to_string(&rec).unwrap_or_default());
                buf.push('\n');
            }
        }
        if buf.len() >= CHUNK {
            let chunk = std::mem::replace(&mut buf, String::with_capacity(CHUNK + 1024));
            if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                return Ok(()); // The reader went away.
            }
        }
    }
    if !buf.is_empty() {
        let _ = tx.send(Ok(Bytes::from(buf))).await;
    }
    Ok(())
}

/// One exported record.
#[derive(Debug, serde::Serialize)]
struct Record {
    timestamp: String,
    endpoint: String,
    method: String,
    status_code: i64,
    duration_ms: f64,
    client_ip: Option<String>,
    country_code: Option<String>,
    user_agent: Option<String>,
    query_params: Option<String>,
    request_size: i64,
    response_size: i64,
    error_type: Option<String>,
    client_entity_id: Option<String>,
}

impl Record {
    fn csv(&self, out: &mut String) {
        use std::fmt::Write as _;
        let opt = |o: &Option<String>| o.clone().unwrap_or_default();
        let fields = [
            self.timestamp.clone(),
            self.endpoint.clone(),
            self.method.clone(),
            self.status_code.to_string(),
            self.duration_ms.to_string(),
            opt(&self.client_ip),
            opt(&self.country_code),
            opt(&self.user_agent),
            opt(&self.query_params),
            self.request_size.to_string(),
            self.response_size.to_string(),
            opt(&self.error_type),
            opt(&self.client_entity_id),
        ];
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            csv_field(out, f);
        }
        let _ = out.write_char('\n');
    }
}

/// RFC 4180: quoted when it holds a comma, quote or line break; quotes doubled.
pub fn csv_field(out: &mut String, f: &str) {
    if f.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&f.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        let mut s = String::new();
        csv_field(&mut s, r#"{"a":"1","b":"2"}"#);
        s.push(',');
        csv_field(&mut s, "plain");
        assert_eq!(s, r#""{""a"":""1"",""b"":""2""}",plain"#);
    }
}
