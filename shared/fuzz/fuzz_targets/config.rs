//! The configuration: a YAML file plus `SVC_` variables. Input: YAML, then after a line
//! `---env` one `NAME=value` per line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (yaml, env) = text.split_once("\n---env\n").unwrap_or((text, ""));
    let env: Vec<(String, String)> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let path = std::env::temp_dir().join(format!("pharos-fuzz-config-{}.yaml", std::process::id()));
    if std::fs::write(&path, yaml).is_ok() {
        let _ = pharos_shared::config::load(Some(&path), &env);
    }
});
