//! Country lookup of client addresses in a MaxMind-format database (`stats.capture.geo_ip.*`).
//! Done by the flusher, so the request path never touches the database file.

use std::net::IpAddr;

use maxminddb::{Reader, geoip2};

use crate::error::{Error, Result};

/// An opened `.mmdb` file, read into memory once at start.
#[derive(Debug)]
pub struct Geo {
    reader: Reader<Vec<u8>>,
}

impl Geo {
    /// Opens `path`; a missing or malformed file is a start-up error naming it.
    pub fn open(path: &str) -> Result<Self> {
        let reader = Reader::open_readfile(path).map_err(|e| {
            Error::Internal(format!("stats.capture.geo_ip.database_path {path}: {e}"))
        })?;
        Ok(Self { reader })
    }

    /// The ISO 3166-1 alpha-2 code of `ip`'s country, if the database knows it.
    pub fn country(&self, ip: IpAddr) -> Option<String> {
        let found = self.reader.lookup(ip).ok()?;
        let c: geoip2::Country<'_> = found.decode().ok()??;
        c.country
            .iso_code
            .or(c.registered_country.iso_code)
            .map(str::to_owned)
    }
}
