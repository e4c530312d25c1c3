//! Files that hold secrets — the SQLite database (it stores private keys with the default key
//! backend) and the filesystem key backend's PEM files — are created readable by the service
//! alone: directories 0700, files 0600, set at creation rather than chmodded afterwards, so
//! there is no window in which another local user can open them. On non-Unix targets the
//! platform's defaults apply.

use std::io::Write;
use std::path::Path;

/// Creates `dir` (and missing parents) with mode 0700. An existing directory is left as it is,
/// with a warning when others may read it: it is the operator's, and may be shared on purpose.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)?;
    warn_if_open(dir);
    Ok(())
}

/// Creates `path` empty with mode 0600 unless it exists (SQLite then opens it; its journal and
/// WAL files inherit the database file's mode).
pub fn create_file(path: &Path) -> std::io::Result<()> {
    match options().create_new(true).write(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            warn_if_open(path);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Writes `data` to a new file `path` with mode 0600; an existing file is an error, so that a
/// key is never written into a file someone else created (and may be able to read).
pub fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut f = options().create_new(true).write(true).open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

fn options() -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o
}

/// Logs a warning when group or others have any access to `path`.
fn warn_if_open(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(path)
            && m.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{:o}", m.permissions().mode() & 0o777),
                "holds secrets but group or others may access it; restrict it (chmod go-rwx)"
            );
        }
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn created_private_and_never_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        let db = dir.join("pharos.db");
        create_file(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        create_file(&db).unwrap();
        let key = dir.join("k.pem");
        write_new(&key, b"secret").unwrap();
        assert_eq!(mode(&key), 0o600);
        assert_eq!(std::fs::read(&key).unwrap(), b"secret");
        assert!(write_new(&key, b"other").is_err());
        assert_eq!(std::fs::read(&key).unwrap(), b"secret");
    }
}
