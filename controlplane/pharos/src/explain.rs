//! `pharos explain SUB [--anchor TA] [--type T]`: the chain explainer of a running Pharos
//! (issue 40), through its Admin API (`GET /explain`), printed as numbered steps in words, or
//! as the API's JSON with `--json`.
//!
//! Exit statuses: 0 the subject resolves, 2 it does not (the explanation names the failing
//! step), and those of `pharos admin` otherwise (1 refused by the API, 64 usage, 69 the URL
//! cannot be reached). Values read from other entities' statements are printed as JSON or
//! with control characters replaced, so a hostile statement cannot steer the terminal.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use crate::cli_admin::Connection;
use crate::cli_admin::client::{Client, seg};

/// Exit status: explained, and the subject does not resolve.
pub const EXIT_UNRESOLVED: u8 = 2;

/// `pharos explain` arguments.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The Entity to resolve (its Entity Identifier).
    pub sub: String,
    /// The Trust Anchor to resolve towards (default: every anchor the resolver accepts).
    #[arg(long)]
    pub anchor: Option<String>,
    /// Keep only this Entity Type in the resolved metadata (repeatable).
    #[arg(long = "type")]
    pub entity_types: Vec<String>,
    /// Print the Admin API's JSON instead of the steps in words.
    #[arg(long)]
    pub json: bool,
    /// Where and as whom.
    #[command(flatten)]
    pub connection: Connection,
}

/// Runs `pharos explain` and returns its exit status.
pub fn run(args: ExplainArgs) -> ExitCode {
    let Some(rt) = crate::cli_admin::runtime() else {
        return ExitCode::FAILURE;
    };
    let result = rt.block_on(async {
        let client = Client::new(args.connection.target()?)?;
        client.get(&path(&args)).await
    });
    match result {
        Ok(x) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&x).unwrap_or_default());
            } else {
                print!("{}", render(&x));
            }
            if x["failed"].is_null() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_UNRESOLVED)
            }
        }
        Err(f) => f.report(),
    }
}

/// `/explain?sub=…&anchor=…&entity_type=…`.
fn path(args: &ExplainArgs) -> String {
    let mut p = format!("/explain?sub={}", seg(&args.sub));
    if let Some(a) = &args.anchor {
        p.push_str(&format!("&anchor={}", seg(a)));
    }
    for t in &args.entity_types {
        p.push_str(&format!("&entity_type={}", seg(t)));
    }
    p
}

/// A string from a statement, without control characters.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect()
}

/// A member as clean text (`?` when absent).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => clean(s),
        Value::Null => "?".into(),
        other => other.to_string(),
    }
}

/// A value as compact JSON (`absent` for a missing parameter). serde_json escapes control
/// characters, so the text is safe for a terminal.
fn json(v: &Value) -> String {
    if v.is_null() {
        "absent".into()
    } else {
        v.to_string()
    }
}

/// Unix seconds as RFC 3339, with the number.
fn when(v: &Value) -> String {
    match v.as_u64() {
        Some(s) => {
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
            format!("{} ({s})", humantime::format_rfc3339_seconds(t))
        }
        None => "?".into(),
    }
}

/// Numbered steps in words.
pub fn render(x: &Value) -> String {
    let mut o = String::new();
    let anchors: Vec<String> = arr(&x["trust_anchors"]).iter().map(text).collect();
    let types: Vec<String> = arr(&x["entity_types"]).iter().map(text).collect();
    let _ = writeln!(
        o,
        "Explaining {} towards {} (entity types: {})",
        text(&x["subject"]),
        if anchors.is_empty() {
            "no anchor".into()
        } else {
            anchors.join(", ")
        },
        if types.is_empty() {
            "all".into()
        } else {
            types.join(", ")
        }
    );
    let mut n = 0;
    let mut step = |o: &mut String, title: &str| {
        n += 1;
        let _ = writeln!(o, "\n{n}. {title}");
    };
    for note in arr(&x["collection"]) {
        let _ = writeln!(o, "  note: {}", text(note));
    }
    if !x["trust_anchor"].is_null() {
        let _ = writeln!(o, "  chain explained: towards {}", text(&x["trust_anchor"]));
    }
    let statements = arr(&x["statements"]);
    if !statements.is_empty() {
        step(&mut o, "Statements fetched, subject first");
        for s in statements {
            let kind = match s["kind"].as_str() {
                Some("entity_configuration") => "Entity Configuration",
                _ => "Subordinate Statement",
            };
            let _ = writeln!(
                o,
                "  [{}] {kind}: issuer {}, subject {}, key {}, expires {}",
                s["position"],
                text(&s["iss"]),
                text(&s["sub"]),
                text(&s["kid"]),
                when(&s["exp"])
            );
            match (&s["signature"], &s["problem"]) {
                (_, Value::String(p)) => {
                    let _ = writeln!(o, "      refused: {}", clean(p));
                }
                (Value::String(sig), _) => {
                    let _ = writeln!(o, "      signature {}", clean(sig));
                }
                _ => {
                    let _ = writeln!(o, "      signature not checked");
                }
            }
        }
    }
    let constraints = arr(&x["constraints"]);
    // Constraints are checked once every signature verified.
    let signed = statements.iter().all(|s| s["signature"].is_string());
    if !statements.is_empty() {
        step(&mut o, "Constraints checked");
        if !signed {
            let _ = writeln!(o, "  not reached: validation stopped before them");
        } else if constraints.is_empty() {
            let _ = writeln!(o, "  none in the chain");
        }
        for c in constraints {
            let _ = writeln!(
                o,
                "  statement {} (issued by {}): {} {} against {}: {}",
                c["statement"],
                text(&c["issuer"]),
                text(&c["constraint"]),
                json(&c["value"]),
                text(&c["checked"]),
                if c["ok"] == Value::Bool(true) {
                    "holds"
                } else {
                    "VIOLATED"
                }
            );
        }
    }
    let p = &x["policy"];
    if p.is_object() {
        step(
            &mut o,
            "Metadata policies merged, from the Trust Anchor down",
        );
        if arr(&p["merges"]).is_empty() {
            let _ = writeln!(o, "  no statement carries a metadata_policy");
        }
        for m in arr(&p["merges"]) {
            let _ = writeln!(o, "  statement {}: {}", m["statement"], json(&m["policy"]));
            match &m["combined"] {
                Value::Null => {
                    let _ = writeln!(o, "    combined: FAILED");
                }
                c => {
                    let _ = writeln!(o, "    combined: {}", json(c));
                }
            }
        }
        step(&mut o, "The subject's own metadata");
        let _ = writeln!(o, "  {}", json(&p["subject_metadata"]));
        step(
            &mut o,
            "The Immediate Superior's metadata claim, applied before the policy",
        );
        match &p["superior_metadata"] {
            Value::Null => {
                let _ = writeln!(o, "  none");
            }
            s => {
                let _ = writeln!(o, "  claim: {}", json(&s["claim"]));
                let _ = writeln!(o, "  after: {}", json(&s["after"]));
            }
        }
        for f in arr(&p["entity_type_filters"]) {
            let removed: Vec<String> = arr(&f["removed"]).iter().map(text).collect();
            let _ = writeln!(
                o,
                "  allowed_entity_types of statement {}: {} (removed: {})",
                f["statement"],
                json(&f["allowed"]),
                if removed.is_empty() {
                    "none".into()
                } else {
                    removed.join(", ")
                }
            );
        }
        step(&mut o, "The merged policy applied, claim by claim");
        if arr(&p["operators"]).is_empty() {
            let _ = writeln!(o, "  no operator applies to the subject's metadata");
        }
        for s in arr(&p["operators"]) {
            let _ = write!(
                o,
                "  metadata.{}.{}  {} {}: {} → ",
                text(&s["entity_type"]),
                text(&s["parameter"]),
                text(&s["operator"]),
                json(&s["operand"]),
                json(&s["before"])
            );
            let _ = match &s["error"] {
                Value::String(e) => writeln!(o, "REFUSED: {}", clean(e)),
                _ => writeln!(o, "{}", json(&s["after"])),
            };
        }
    }
    if !x["metadata"].is_null() {
        step(&mut o, "Resolved metadata (what resolve returns)");
        let _ = writeln!(o, "  {}", json(&x["metadata"]));
        let _ = writeln!(o, "  the chain expires {}", when(&x["exp"]));
    }
    if x["failed"].is_null() {
        step(&mut o, "Trust Marks");
        if arr(&x["trust_marks"]).is_empty() {
            let _ = writeln!(o, "  the subject shows none");
        }
        for m in arr(&x["trust_marks"]) {
            let _ = writeln!(
                o,
                "  {} {} (issuer {}): {}",
                if m["kept"] == Value::Bool(true) {
                    "kept"
                } else {
                    "dropped"
                },
                text(&m["trust_mark_type"]),
                text(&m["issuer"]),
                text(&m["reason"])
            );
        }
    }
    for c in arr(&x["other_chains"]) {
        let _ = writeln!(
            o,
            "\nAnother chain towards {}: {}",
            text(&c["trust_anchor"]),
            text(&c["outcome"])
        );
    }
    match &x["failed"] {
        Value::Null => {
            let _ = writeln!(o, "\nResult: resolved towards {}", text(&x["trust_anchor"]));
        }
        f => {
            let _ = writeln!(o, "\nResult: DOES NOT RESOLVE");
            let _ = writeln!(o, "  failing step: {}", text(&f["step"]));
            let _ = writeln!(o, "  rule: {}", text(&f["rule"]));
            let _ = writeln!(o, "  what was wrong: {}", text(&f["message"]));
        }
    }
    o
}

/// The elements of an array member (none when absent).
fn arr(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operators_are_lines_of_before_and_after_and_control_characters_are_replaced() {
        let x = json!({"subject": "https://l.example", "trust_anchors": ["https://ta.example"],
            "statements": [{"position": 0, "kind": "entity_configuration",
                "iss": "https://l.example\u{1b}[31m", "sub": "https://l.example", "kid": "k1",
                "exp": 0, "signature": "verified with its own keys"}],
            "policy": {"merges": [], "subject_metadata": {}, "operators": [
                {"entity_type": "openid_relying_party", "parameter": "grant_types",
                 "operator": "subset_of", "operand": ["a", "b"],
                 "before": ["a", "b", "c"], "after": ["a", "b"]}]},
            "failed": {"step": "the signature of statement 0", "rule": "r", "message": "m"}});
        let out = render(&x);
        assert!(out.contains(
            "  metadata.openid_relying_party.grant_types  subset_of [\"a\",\"b\"]: [\"a\",\"b\",\"c\"] → [\"a\",\"b\"]"
        ), "{out}");
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(
            out.contains("failing step: the signature of statement 0"),
            "{out}"
        );
        assert!(out.contains("1970-01-01T00:00:00Z (0)"), "{out}");
    }
}
