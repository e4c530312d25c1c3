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

/// `notAfter` of the first certificate of a PEM chain (the end-entity certificate), read with
/// OpenSSL (already in the build through josekit).
pub fn not_after_pem(pem: &[u8]) -> Option<i64> {
    let cert = openssl::x509::X509::from_pem(pem).ok()?;
    let epoch = openssl::asn1::Asn1Time::from_unix(0).ok()?;
    let since = epoch.diff(cert.not_after()).ok()?;
    Some(i64::from(since.days) * 86_400 + i64::from(since.secs))
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
        let pem = pem_expiring(2031, 2, 3);
        for cut in (0..pem.len()).step_by(7) {
            let _ = not_after_pem(&pem.as_bytes()[..cut]);
        }
    }
}
