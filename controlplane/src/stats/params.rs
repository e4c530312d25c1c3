//! The statistics queries' common parameters (`from`, `to`, `limit`, `endpoint`, `interval`),
//! read the same way by the Admin API and the CLI. Unlike lighthouse, which silently ignored
//! what it could not parse, a bad or unknown parameter is an error naming it.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime, Time};

/// Default and largest `limit`.
pub const DEFAULT_LIMIT: i64 = 10;
/// Largest `limit`.
pub const MAX_LIMIT: i64 = 100;
/// Default range: the last 24 hours.
pub const DEFAULT_RANGE: i64 = 86_400;

/// A time-series bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Interval {
    /// 60 s.
    Minute,
    /// 3600 s.
    Hour,
    /// 00:00 UTC.
    Day,
    /// Monday 00:00 UTC.
    Week,
    /// The first of the month, 00:00 UTC.
    Month,
}

impl Interval {
    /// Parses `minute|hour|day|week|month`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "minute" => Self::Minute,
            "hour" => Self::Hour,
            "day" => Self::Day,
            "week" => Self::Week,
            "month" => Self::Month,
            _ => return None,
        })
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }
}

/// Parsed parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Start, Unix seconds, inclusive.
    pub from: i64,
    /// End, Unix seconds, inclusive.
    pub to: i64,
    /// Top-N size.
    pub limit: i64,
    /// Endpoint filter.
    pub endpoint: Option<String>,
    /// Time-series bucket.
    pub interval: Interval,
}

/// A rejected parameter: its name and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadParam(pub String);

impl std::fmt::Display for BadParam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// When a bound is a date (`YYYY-MM-DD`): `from` is its start, `to` its last second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Start of range.
    From,
    /// End of range.
    To,
}

/// Parses an RFC 3339 time or a `YYYY-MM-DD` date into Unix seconds.
pub fn parse_time(s: &str, bound: Bound) -> Option<i64> {
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Some(t.unix_timestamp());
    }
    let d = Date::parse(s, format_description!("[year]-[month]-[day]")).ok()?;
    let start = PrimitiveDateTime::new(d, Time::MIDNIGHT)
        .assume_utc()
        .unix_timestamp();
    Some(match bound {
        Bound::From => start,
        Bound::To => start + 86_399,
    })
}

/// RFC 3339 rendering of Unix seconds (UTC).
pub fn rfc3339(ts: i64) -> String {
    OffsetDateTime::from_unix_timestamp(ts)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| ts.to_string())
}

/// `YYYY-MM-DD` of Unix seconds (UTC).
pub fn date(ts: i64) -> String {
    OffsetDateTime::from_unix_timestamp(ts)
        .ok()
        .and_then(|t| t.format(format_description!("[year]-[month]-[day]")).ok())
        .unwrap_or_else(|| ts.to_string())
}

/// Reads `pairs` at `now`; names outside `common` parameters and `extra` are refused.
pub fn parse(pairs: &[(String, String)], now: i64, extra: &[&str]) -> Result<Query, BadParam> {
    let mut q = Query {
        from: now - DEFAULT_RANGE,
        to: now,
        limit: DEFAULT_LIMIT,
        endpoint: None,
        interval: Interval::Hour,
    };
    let (mut from, mut to) = (None, None);
    for (k, v) in pairs {
        match k.as_str() {
            "from" => from = Some(parse_time(v, Bound::From).ok_or_else(|| bad_time("from", v))?),
            "to" => to = Some(parse_time(v, Bound::To).ok_or_else(|| bad_time("to", v))?),
            "limit" => {
                q.limit = v
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        BadParam(format!(
                            "limit: {v:?} is not an integer from 1 to {MAX_LIMIT}"
                        ))
                    })?;
            }
            "endpoint" => {
                let e = pharos_runtime::stats_ring::normalise(v);
                if e.is_empty() {
                    return Err(BadParam("endpoint: must not be empty".into()));
                }
                q.endpoint = Some(e);
            }
            "interval" => {
                q.interval = Interval::parse(v).ok_or_else(|| {
                    BadParam(format!(
                        "interval: {v:?} is not one of minute, hour, day, week, month"
                    ))
                })?;
            }
            other if extra.contains(&other) => {}
            other => return Err(BadParam(format!("{other}: unknown parameter"))),
        }
    }
    match (from, to) {
        (Some(f), Some(t)) => (q.from, q.to) = (f, t),
        (Some(f), None) => q.from = f,
        // Only an end: the 24 hours before it.
        (None, Some(t)) => (q.from, q.to) = (t - DEFAULT_RANGE, t),
        (None, None) => {}
    }
    if q.from > q.to {
        return Err(BadParam("from: must not be after to".into()));
    }
    Ok(q)
}

fn bad_time(name: &str, v: &str) -> BadParam {
    BadParam(format!("{name}: {v:?} is neither RFC 3339 nor YYYY-MM-DD"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Result<Query, BadParam> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(&v, 1_700_000_000, &["format"])
    }

    #[test]
    fn defaults_are_the_last_day() {
        let q = p(&[]).unwrap();
        assert_eq!(
            (q.from, q.to, q.limit),
            (1_700_000_000 - 86_400, 1_700_000_000, 10)
        );
        assert_eq!(q.interval, Interval::Hour);
    }

    #[test]
    fn dates_cover_whole_days_and_rfc3339_is_exact() {
        let q = p(&[("from", "2023-11-14"), ("to", "2023-11-14")]).unwrap();
        assert_eq!(q.from, 1_699_920_000);
        assert_eq!(q.to, 1_699_920_000 + 86_399);
        let q = p(&[
            ("from", "2023-11-14T22:13:20Z"),
            ("to", "2023-11-15T00:00:00+01:00"),
        ]);
        assert_eq!(q.unwrap().from, 1_700_000_000);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (k, v) in [
            ("from", "yesterday"),
            ("to", "2023-13-01"),
            ("limit", "0"),
            ("limit", "101"),
            ("limit", "x"),
            ("interval", "year"),
            ("endpoint", "/"),
            ("colour", "red"),
        ] {
            let e = p(&[(k, v)]).unwrap_err();
            assert!(e.0.starts_with(k), "{k}={v}: {e}");
        }
        assert!(p(&[("from", "2023-11-15"), ("to", "2023-11-14")]).is_err());
        assert_eq!(p(&[("format", "csv")]).unwrap().limit, 10);
        assert_eq!(
            p(&[("endpoint", "/Fetch")]).unwrap().endpoint.as_deref(),
            Some("fetch")
        );
    }
}
