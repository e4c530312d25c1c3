//! `export`: the request records of a range as CSV or newline-delimited JSON, streamed from the
//! database batch by batch in chunks through a small bounded channel, so memory stays flat whatever the range
//! (the reader — an HTTP response body or the CLI's output — paces the database stream).

use bytes::Bytes;
use tokio::sync::mpsc;

use super::params::{Query, rfc3339};
use super::query::ms;
use crate::db::{Db, stats};

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
    let mut buf = String::with_capacity(CHUNK + 1024);
    if format == Format::Csv {
        buf.push_str(CSV_HEADER);
    }
    // Batches are read one at a time; each is written out in chunks before the next is read,
    // so at most one decoded batch and the chunks in flight are held.
    let mut batches = stats::batches(db, q.from, q.to);
    while let Some(b) = batches.next().await? {
        let selected = b.iter().filter(|r| {
            r.entity == db.entity()
                && r.ts >= q.from
                && r.ts <= q.to
                && q.endpoint.as_deref().is_none_or(|e| e == r.endpoint)
        });
        for r in selected {
            let rec = Record {
                timestamp: rfc3339(r.ts),
                endpoint: r.endpoint,
                method: r.method,
                status_code: r.status_code,
                duration_ms: ms(r.duration_us),
                client_ip: r.client_ip,
                country_code: r.country_code,
                user_agent: r.user_agent,
                query_params: r.query_params,
                request_size: r.request_size,
                response_size: r.response_size,
                error_type: r.error_type,
                client_entity_id: r.client_entity_id,
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
    }
    if !buf.is_empty() {
        let _ = tx.send(Ok(Bytes::from(buf))).await;
    }
    Ok(())
}

/// One exported record.
#[derive(Debug, serde::Serialize)]
struct Record<'a> {
    timestamp: String,
    endpoint: &'a str,
    method: &'a str,
    status_code: i64,
    duration_ms: f64,
    client_ip: Option<&'a str>,
    country_code: Option<&'a str>,
    user_agent: Option<&'a str>,
    query_params: Option<&'a str>,
    request_size: i64,
    response_size: i64,
    error_type: Option<&'a str>,
    client_entity_id: Option<&'a str>,
}

impl Record<'_> {
    fn csv(&self, out: &mut String) {
        use std::fmt::Write as _;
        let (status, duration) = (self.status_code.to_string(), self.duration_ms.to_string());
        let (request, response) = (
            self.request_size.to_string(),
            self.response_size.to_string(),
        );
        let fields = [
            self.timestamp.as_str(),
            self.endpoint,
            self.method,
            &status,
            &duration,
            self.client_ip.unwrap_or_default(),
            self.country_code.unwrap_or_default(),
            self.user_agent.unwrap_or_default(),
            self.query_params.unwrap_or_default(),
            &request,
            &response,
            self.error_type.unwrap_or_default(),
            self.client_entity_id.unwrap_or_default(),
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
///
/// A cell that a spreadsheet would read as a formula (it starts with `=`, `+`, `-`, `@`, a tab
/// or a carriage return; the User-Agent and query parameters are whatever a stranger sent) is
/// prefixed with `'`, as OWASP advises against CSV injection: opened in a spreadsheet it is
/// text, not a `=HYPERLINK(…)` or a command.
pub fn csv_field(out: &mut String, f: &str) {
    let defused;
    let f = if f.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        defused = format!("'{f}");
        defused.as_str()
    } else {
        f
    };
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

    #[test]
    fn cells_a_spreadsheet_would_run_as_formulas_are_text() {
        let field = |f: &str| {
            let mut s = String::new();
            csv_field(&mut s, f);
            s
        };
        assert_eq!(
            field(r#"=HYPERLINK("https://evil.example","x")"#),
            r#""'=HYPERLINK(""https://evil.example"",""x"")""#
        );
        assert_eq!(field("+1+cmd|' /C calc'!A0"), "'+1+cmd|' /C calc'!A0");
        assert_eq!(field("-2+3"), "'-2+3");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("\t=1"), "'\t=1");
        assert_eq!(field("\r=1"), "\"'\r=1\"");
        // Ordinary values are untouched, also with those characters inside.
        assert_eq!(field("curl/8.5 (a=b)"), "curl/8.5 (a=b)");
        assert_eq!(field("2026-11-26T10:00:00Z"), "2026-11-26T10:00:00Z");
    }
}
