//! The `jti` of every trust mark Pharos signs: the data plane's issued marks and the marks the
//! control plane issues to its own entity draw from the same maker.

/// A fresh `jti`: 128 random bits from the operating system, as 32 hex digits. Random rather
/// than time and a counter, so that replicas and restarts never collide without coordination.
pub fn new_jti() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    let mut out = String::with_capacity(32);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn jtis_are_32_hex_digits_and_differ() {
        let (a, b) = (super::new_jti().unwrap(), super::new_jti().unwrap());
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
