//! Configuration durations: integer or float seconds, or unit strings such as `90s`, `1h30m`,
//! `7d`, `2w6d`, `5 minutes` (units `ns us µs ms s m h d w y`, or their names; d = 24h,
//! w = 7d, y = 365d).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A duration read from the configuration.
///
/// A newtype rather than `std::time::Duration` so that YAML numbers, YAML strings and `SVC_`
/// environment strings all parse the same way, and so that it serialises to a unit string
/// (`"1h30m"`) that parses back to the same value (`pharos check-config` output round-trips).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    /// Whole seconds; the form defaults are written in.
    pub const fn from_secs(secs: u64) -> Self {
        Self(std::time::Duration::from_secs(secs))
    }

    /// The std duration, for handing to tokio and friends.
    pub const fn get(self) -> std::time::Duration {
        self.0
    }

    /// Zero means "none / no cap" for several keys (e.g. `cache.max_lifetime`).
    pub const fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// Parses seconds (`"3600"`, `"1.5"`) or unit components (`"1h30m"`); the one grammar
    /// shared by the file and the environment, so both layers accept exactly the same text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let s = text.trim();
        if s.is_empty() {
            return Err("empty duration".into());
        }
        if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return component(s, NANOS_PER_SEC).and_then(from_nanos);
        }
        let mut total: u128 = 0;
        let mut rest = s;
        while !rest.is_empty() {
            let num_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            if num_len == 0 {
                return Err(format!("invalid duration {text:?}: expected a number"));
            }
            let (num, after) = rest.split_at(num_len);
            // "5 minutes" as well as "5m".
            let after = after.trim_start();
            let unit_len = after
                .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
                .unwrap_or(after.len());
            let (unit, after) = after.split_at(unit_len);
            let scale = unit_nanos(unit).ok_or_else(|| {
                format!(
                    "invalid duration {text:?}: unknown unit {unit:?}; write seconds (\"90\") or \
                     numbers with units (\"90s\", \"5m\", \"5 minutes\", \"1h30m\", \"7d\"; units \
                     ns us ms s m h d w y or their names)"
                )
            })?;
            total = total
                .checked_add(component(num, scale)?)
                .ok_or_else(|| format!("duration {text:?} is too large"))?;
            rest = after.trim_start();
        }
        from_nanos(total)
    }
}

/// Nanoseconds per unit; `None` for an unknown or missing unit.
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" | "nanosecond" | "nanoseconds" => 1,
        "us" | "µs" | "μs" | "microsecond" | "microseconds" => 1_000,
        "ms" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => NANOS_PER_SEC,
        "m" | "min" | "mins" | "minute" | "minutes" => 60 * NANOS_PER_SEC,
        "h" | "hour" | "hours" => 3_600 * NANOS_PER_SEC,
        "d" | "day" | "days" => 86_400 * NANOS_PER_SEC,
        "w" | "week" | "weeks" => 7 * 86_400 * NANOS_PER_SEC,
        "y" | "year" | "years" => 365 * 86_400 * NANOS_PER_SEC,
        _ => return None,
    })
}

/// One `number × unit` term in nanoseconds; the integer part is exact, a fraction is rounded.
fn component(num: &str, scale: u128) -> Result<u128, String> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(format!("invalid number {num:?} in duration"));
    }
    let whole: u128 = if int.is_empty() {
        0
    } else {
        int.parse()
            .map_err(|_| format!("invalid number {num:?} in duration"))?
    };
    let mut nanos = whole
        .checked_mul(scale)
        .ok_or_else(|| format!("duration component {num:?} is too large"))?;
    if !frac.is_empty() {
        let f: f64 = format!("0.{frac}")
            .parse()
            .map_err(|_| format!("invalid number {num:?} in duration"))?;
        // Precision loss is acceptable here: fractions are at most one unit.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let part = (f * scale as f64).round() as u128;
        nanos = nanos.saturating_add(part);
    }
    Ok(nanos)
}

fn from_nanos(total: u128) -> Result<Duration, String> {
    let secs =
        u64::try_from(total / NANOS_PER_SEC).map_err(|_| "duration is too large".to_string())?;
    // The remainder is below 10^9 and always fits.
    let nanos = u32::try_from(total % NANOS_PER_SEC).unwrap_or(0);
    Ok(Duration(std::time::Duration::new(secs, nanos)))
}

impl fmt::Display for Duration {
    /// Largest units first (`1h30m`, `7d`, `1s500ms`); `0s` for zero. Parses back exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0.as_nanos();
        if rest == 0 {
            return f.write_str("0s");
        }
        for (unit, scale) in [
            ("d", 86_400 * NANOS_PER_SEC),
            ("h", 3_600 * NANOS_PER_SEC),
            ("m", 60 * NANOS_PER_SEC),
            ("s", NANOS_PER_SEC),
            ("ms", 1_000_000),
            ("us", 1_000),
            ("ns", 1),
        ] {
            if rest >= scale {
                write!(f, "{}{unit}", rest / scale)?;
                rest %= scale;
            }
        }
        Ok(())
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Self(d)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        d.0
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DurationVisitor)
    }
}

struct DurationVisitor;

impl de::Visitor<'_> for DurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("seconds or a duration string such as \"90s\", \"1h30m\", \"7d\"")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok(Duration::from_secs(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        u64::try_from(v)
            .map(Duration::from_secs)
            .map_err(|_| E::custom(format!("negative duration {v}")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        std::time::Duration::try_from_secs_f64(v)
            .map(Duration)
            .map_err(|_| E::custom(format!("invalid duration {v}")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        Duration::parse(v).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> u64 {
        Duration::parse(text)
            .map(|d| d.0.as_secs())
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn unit_strings() {
        assert_eq!(secs("90s"), 90);
        assert_eq!(secs("1h30m"), 5_400);
        assert_eq!(secs("7d"), 604_800);
        assert_eq!(secs("2w6d"), 20 * 86_400);
        assert_eq!(secs("1y"), 365 * 86_400);
        assert_eq!(secs("3600"), 3_600);
        assert_eq!(secs("1.5h"), 5_400);
        assert_eq!(Duration::parse("250ms").map(|d| d.0.as_millis()), Ok(250));
        assert_eq!(Duration::parse("3µs").map(|d| d.0.as_nanos()), Ok(3_000));
    }

    #[test]
    fn unit_names_and_spaces() {
        assert_eq!(secs("5 minutes"), 300);
        assert_eq!(secs("1 hour 30 min"), 5_400);
        assert_eq!(secs("2 days"), 172_800);
        assert_eq!(secs("5 m"), 300);
        // An unknown unit is named, and the message says what is understood.
        let e = Duration::parse("5 fortnights").unwrap_err();
        assert!(e.contains("unknown unit \"fortnights\""), "{e}");
        assert!(e.contains("\"5m\"") && e.contains("seconds"), "{e}");
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "h", "10x", "-5s", "1.2.3s", "5 parsecs"] {
            assert!(Duration::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn serde_numbers_and_strings() {
        let from = |v: serde_json::Value| serde_json::from_value::<Duration>(v).ok();
        assert_eq!(
            from(serde_json::json!(3600)),
            Some(Duration::from_secs(3_600))
        );
        assert_eq!(
            from(serde_json::json!("3600")),
            Some(Duration::from_secs(3_600))
        );
        assert_eq!(
            from(serde_json::json!(1.5)).map(|d| d.0.as_millis()),
            Some(1_500)
        );
        assert_eq!(from(serde_json::json!(-1)), None);
    }

    #[test]
    fn display_round_trips() {
        for text in ["0s", "1h30m", "7d", "1s500ms", "20s", "1d1h1m1s1ms1us1ns"] {
            let d = Duration::parse(text).unwrap_or_default();
            assert_eq!(d.to_string(), text);
            let json = serde_json::to_value(d).unwrap_or_default();
            assert_eq!(serde_json::from_value::<Duration>(json).ok(), Some(d));
        }
    }
}
