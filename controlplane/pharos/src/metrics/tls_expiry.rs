//! The expiry (`notAfter`) of the certificates our listeners serve, for `/metrics`: a
//! certificate that expires takes the Admin API (or the public port) down for every client at
//! once, and renewals fail silently (a cron job that stopped, a reload never signalled).
//!
//! `http::tls` records the certificate here each time it loads one (at start and on a SIGHUP
//! reload that succeeds), from the same bytes it hands to rustls: the figure is the served
//! certificate's, so a renewed file that was never reloaded, or whose reload failed, still
//! shows the old certificate's expiry.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// `not_after` before a certificate was recorded.
const UNKNOWN: i64 = i64::MIN;

/// The served certificate of one listener.
#[derive(Debug)]
pub struct Served {
    /// The `listener` label: `main` or `admin`.
    pub listener: &'static str,
    not_after: AtomicI64,
}

impl Served {
    /// The certificate of `listener`, none recorded yet.
    pub fn new(listener: &'static str) -> Arc<Self> {
        Arc::new(Self {
            listener,
            not_after: AtomicI64::new(UNKNOWN),
        })
    }

    /// Unix seconds after which the certificate is no longer valid, when one was recorded.
    pub fn not_after(&self) -> Option<i64> {
        match self.not_after.load(Ordering::Relaxed) {
            UNKNOWN => None,
            t => Some(t),
        }
    }

    /// The listener now serves the chain `pem`.
    pub fn record(&self, pem: &[u8]) {
        match not_after_pem(pem) {
            Some(t) => self.not_after.store(t, Ordering::Relaxed),
            None => tracing::warn!(
                listener = self.listener,
                "the served TLS certificate has no readable expiry; /metrics keeps the last one"
            ),
        }
    }
}

/// `notAfter` of the first certificate of a PEM chain (the end-entity certificate).
pub fn not_after_pem(pem: &[u8]) -> Option<i64> {
    let first = CertificateDer::pem_slice_iter(pem).next()?.ok()?;
    not_after_der(&first)
}

/// `notAfter` of a DER certificate: `Certificate → tbsCertificate → validity` (RFC 5280,
/// 4.1), walked by hand because nothing in the build parses X.509 and this is five fields.
pub fn not_after_der(der: &[u8]) -> Option<i64> {
    let (SEQUENCE, cert, _) = tlv(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = tlv(cert)? else {
        return None;
    };
    let (tag, _, after_version) = tlv(tbs)?;
    // `version` is `[0] EXPLICIT`, absent from v1 certificates.
    let rest = if tag == VERSION { after_version } else { tbs };
    let (INTEGER, _, rest) = tlv(rest)? else {
        return None;
    };
    // signature AlgorithmIdentifier, issuer Name, then validity.
    let (SEQUENCE, _, rest) = tlv(rest)? else {
        return None;
    };
    let (SEQUENCE, _, rest) = tlv(rest)? else {
        return None;
    };
    let (SEQUENCE, validity, _) = tlv(rest)? else {
        return None;
    };
    let (_, _, rest) = tlv(validity)?;
    let (tag, time, _) = tlv(rest)?;
    asn1_time(tag, time)
}

const INTEGER: u8 = 0x02;
const SEQUENCE: u8 = 0x30;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// One DER element: its tag, its content and what follows it.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`) as
/// Unix seconds; RFC 5280 allows no other forms in certificates.
fn asn1_time(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        UTC_TIME if text.len() == 12 => {
            let yy: i32 = text[..2].parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        GENERALIZED_TIME if text.len() == 14 => (text[..4].parse().ok()?, &text[4..]),
        _ => return None,
    };
    let num = |i: usize| rest.get(i..i + 2)?.parse::<u8>().ok();
    let month = time::Month::try_from(num(0)?).ok()?;
    let date = time::Date::from_calendar_date(year, month, num(2)?).ok()?;
    let at = date.with_hms(num(4)?, num(6)?, num(8)?).ok()?;
    Some(at.assume_utc().unix_timestamp())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pem_expiring(year: i32, month: u8, day: u8) -> String {
        let mut params = rcgen::CertificateParams::new(vec!["admin.example".into()]).unwrap();
        params.not_after = rcgen::date_time_ymd(year, month, day);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn the_not_after_of_a_generated_certificate_is_read() {
        // 2031-02-03T00:00:00Z (UTCTime) and 2061-02-03 (GeneralizedTime, from 2050 on).
        assert_eq!(
            not_after_pem(pem_expiring(2031, 2, 3).as_bytes()),
            Some(1_927_843_200)
        );
        assert_eq!(
            not_after_pem(pem_expiring(2061, 2, 3).as_bytes()),
            Some(2_874_614_400)
        );
    }

    #[test]
    fn the_first_certificate_of_a_chain_counts() {
        let chain = format!("{}{}", pem_expiring(2031, 2, 3), pem_expiring(2040, 1, 1));
        assert_eq!(not_after_pem(chain.as_bytes()), Some(1_927_843_200));
    }

    #[test]
    fn anything_else_is_no_expiry_not_a_panic() {
        assert_eq!(not_after_pem(b""), None);
        assert_eq!(
            not_after_pem(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
            None
        );
        let der = CertificateDer::pem_slice_iter(pem_expiring(2031, 2, 3).as_bytes())
            .next()
            .unwrap()
            .unwrap();
        for cut in 0..der.len() {
            assert_eq!(not_after_der(&der[..cut]), None, "truncated at {cut}");
        }
        assert_eq!(asn1_time(UTC_TIME, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(asn1_time(UTC_TIME, b"500101000000Z"), Some(-631_152_000));
        assert_eq!(asn1_time(UTC_TIME, b"991301000000Z"), None, "month 13");
        assert_eq!(asn1_time(GENERALIZED_TIME, b"20310203000000+0100"), None);
    }
}
