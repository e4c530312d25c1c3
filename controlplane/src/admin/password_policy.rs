//! What an admin password must be, for `POST /users`, `PUT /users/{username}` and the
//! `pharos setup` prompts alike: at least [`MIN_CHARS`] characters (NIST SP 800-63B asks for
//! at least 8 and allows more; 12 keeps a passphrase of three words possible), at most 1024
//! bytes (what the Argon2 queue hashes), not the user name, not one character repeated and not
//! one of the most common passwords. An admin user holds the keys to a federation's trust: a
//! password of `"1"` must not be possible by accident.

/// The shortest password accepted, in characters.
pub const MIN_CHARS: usize = 12;

/// The longest password accepted, in bytes.
pub const MAX_BYTES: usize = 1024;

/// Passwords of the leaked-password top lists that reach [`MIN_CHARS`] (compared ignoring
/// case); shorter ones are refused by length already.
const COMMON: [&str; 24] = [
    "123456789012",
    "1234567890123",
    "12345678901234",
    "123456789abc",
    "1q2w3e4r5t6y",
    "qwertyuiopas",
    "qwerty123456",
    "qwertyuiop123",
    "password1234",
    "password12345",
    "password123456",
    "passwordpassword",
    "administrator",
    "administrator1",
    "adminadminadmin",
    "admin1234567",
    "iloveyou1234",
    "welcome12345",
    "letmein12345",
    "changeme1234",
    "changemenow!",
    "trustno1trustno1",
    "abcdefghijkl",
    "correcthorsebatterystaple",
];

/// Checks a new password for user `username`; the message says what to do.
pub fn check(username: &str, password: &str) -> Result<(), String> {
    let chars = password.chars().count();
    if chars < MIN_CHARS {
        return Err(format!(
            "password: at least {MIN_CHARS} characters are required (a few unrelated words make \
             a good one)"
        ));
    }
    if password.len() > MAX_BYTES {
        return Err(format!("password: at most {MAX_BYTES} bytes"));
    }
    let lower = password.to_lowercase();
    if lower == username.to_lowercase() {
        return Err("password: must not be the user name".into());
    }
    let mut it = password.chars();
    if let Some(first) = it.next()
        && it.all(|c| c == first)
    {
        return Err("password: one character repeated is too easy to guess".into());
    }
    if COMMON.contains(&lower.as_str()) {
        return Err("password: one of the most common passwords; choose another".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_common_and_trivial_passwords_are_refused() {
        for p in [
            "",
            "1",
            "short pass",
            "aaaaaaaaaaaaaaa",
            "Password1234",
            "alice-admin-1",
        ] {
            assert!(check("alice-admin-1", p).is_err(), "{p:?}");
        }
        assert!(
            check("alice", "1")
                .unwrap_err()
                .starts_with("password: at least 12 characters")
        );
        assert!(check("alice", &"x".repeat(1025)).is_err());
    }

    #[test]
    fn passphrases_are_accepted() {
        for p in ["a long passphrase", "correct horse", "Zäune gießen ☂ 42"] {
            assert!(check("alice", p).is_ok(), "{p:?}");
        }
    }
}
