//! What chain validation records when asked to show its work (the chain explainer, issue 40):
//! each statement, each signature, each constraint, the policy engine's own trace, and the
//! step and rule that failed. Filled by [`super::validate`] as it runs; nothing is recorded
//! when no trace is asked for.

use serde::Serialize;
use serde_json::{Value, json};

use super::statement::Statement;
use crate::Error;
use crate::jose;
use crate::policy::PolicyTrace;

/// One assembled chain, validated step by step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChainTrace {
    /// The statements in chain order: the subject's Entity Configuration first, the Trust
    /// Anchor's last.
    pub statements: Vec<StatementStep>,
    /// Each constraint of each Subordinate Statement, as checked (§6.2).
    pub constraints: Vec<ConstraintStep>,
    /// Metadata resolution (§6.1.4), as the policy engine ran it; statement numbers are chain
    /// positions.
    pub policy: Option<PolicyTrace>,
    /// The step that failed, in words; `None` when the chain is valid.
    pub failed: Option<Failure>,
}

/// One statement of the chain.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StatementStep {
    /// Its position (`ES[n]`).
    pub position: usize,
    /// `entity_configuration` or `subordinate_statement`.
    pub kind: &'static str,
    /// `iss` (as read, even when the statement was refused).
    pub iss: Option<String>,
    /// `sub`.
    pub sub: Option<String>,
    /// The `kid` of the key that signed it.
    pub kid: Option<String>,
    /// `iat`.
    pub iat: Option<i64>,
    /// `exp`.
    pub exp: Option<i64>,
    /// Which keys verified its signature (absent until verified).
    pub signature: Option<String>,
    /// Why it was refused on its own (§3.2), when it was.
    pub problem: Option<String>,
}

/// One constraint checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConstraintStep {
    /// The position of the statement carrying it.
    pub statement: usize,
    /// Its issuer.
    pub issuer: String,
    /// `max_path_length`, `naming_constraints` or `allowed_entity_types`.
    pub constraint: &'static str,
    /// The constraint's value.
    pub value: Value,
    /// What was checked against it, in words.
    pub checked: String,
    /// Whether it held.
    pub ok: bool,
}

/// Where validation stopped and why, in words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Failure {
    /// The step (which statement, signature, constraint, merge or operator).
    pub step: String,
    /// The rule of the specification that it broke.
    pub rule: String,
    /// What was wrong.
    pub message: String,
}

/// The stages a chain can fail in.
#[derive(Clone, Debug)]
pub(crate) enum Stage {
    Shape,
    Statement(usize),
    Links,
    Signature(usize),
    Constraint(usize),
    Metadata,
}

pub(crate) const RULE_STATEMENT: &str = "each statement must be a well-formed Entity Statement (typ, kid, iss, sub, iat, exp, jwks, claims where they belong) that is not expired (§3.2)";
pub(crate) const RULE_LINKS: &str = "the chain starts with the subject's Entity Configuration, the issuer of each statement is the subject of the next, and it ends with the Trust Anchor's Entity Configuration (§4, §10.2)";
pub(crate) const RULE_SIGNATURE: &str = "each statement must verify with the keys of the statement above it: the subject's and each Intermediate's keys as their superior publishes them, the Trust Anchor's with its pinned or own keys (§10.2)";
const RULE_CONSTRAINT: &str = "a superior's constraints bind every Entity below it: max_path_length limits the Intermediates between it and the subject, naming_constraints the Entity Identifiers (§6.2)";
const RULE_MERGE: &str = "a subordinate's metadata policy may only restrict its superior's: operators merge by their rules, and different value (or default) operators for one parameter conflict (§6.1.4.1)";
const RULE_APPLY: &str = "the subject's metadata must satisfy every operator of the merged metadata policy, applied in the order value, add, default, one_of, subset_of, superset_of, essential (§6.1.4.2)";
const RULE_METADATA: &str =
    "metadata and metadata policies must have the structure of §6.1 (objects by Entity Type)";

impl ChainTrace {
    /// Records statement `j` of `n`, parsed or refused.
    pub(crate) fn statement(&mut self, j: usize, jws: &str, parsed: Result<&Statement, &Error>) {
        let decoded = jose::decode_unverified(jws).ok();
        let claim = |k: &str| decoded.as_ref().and_then(|d| d.claims.get(k).cloned());
        let str_of = |v: Option<Value>| v.and_then(|v| v.as_str().map(str::to_owned));
        let iss = str_of(claim("iss"));
        let sub = str_of(claim("sub"));
        let kind = if iss.is_some() && iss == sub {
            "entity_configuration"
        } else {
            "subordinate_statement"
        };
        let kid = decoded
            .as_ref()
            .and_then(|d| d.header.get("kid"))
            .and_then(|k| k.as_str().map(str::to_owned));
        self.statements.push(StatementStep {
            position: j,
            kind,
            iss,
            sub,
            kid,
            iat: claim("iat").and_then(|v| v.as_i64()),
            exp: claim("exp").and_then(|v| v.as_i64()),
            signature: None,
            problem: parsed.err().map(message),
        });
    }

    /// Statement `j` in words: "the Subordinate Statement of A about B".
    pub(crate) fn describe(&self, j: usize) -> String {
        let Some(s) = self.statements.get(j) else {
            return format!("statement {j}");
        };
        let who = |v: &Option<String>| v.clone().unwrap_or_else(|| "(unknown)".into());
        match s.kind {
            "entity_configuration" => {
                format!("statement {j}, the Entity Configuration of {}", who(&s.iss))
            }
            _ => format!(
                "statement {j}, the Subordinate Statement of {} about {}",
                who(&s.iss),
                who(&s.sub)
            ),
        }
    }

    /// Records that statement `j`'s signature verified with `keys` (in words).
    pub(crate) fn verified(&mut self, j: usize, keys: String) {
        if let Some(s) = self.statements.get_mut(j) {
            s.signature = Some(match s.signature.take() {
                Some(earlier) => format!("{earlier}; {keys}"),
                None => keys,
            });
        }
    }

    /// Records a constraint check.
    pub(crate) fn constraint(
        &mut self,
        statement: usize,
        issuer: &str,
        constraint: &'static str,
        value: Value,
        checked: String,
        ok: bool,
    ) {
        self.constraints.push(ConstraintStep {
            statement,
            issuer: issuer.to_owned(),
            constraint,
            value,
            checked,
            ok,
        });
    }

    /// Records where validation stopped.
    pub(crate) fn fail(&mut self, stage: Stage, e: &Error) {
        let message = message(e);
        if let Stage::Signature(j) = stage
            && let Some(s) = self.statements.get_mut(j)
        {
            s.problem.get_or_insert_with(|| message.clone());
        }
        let (step, rule) = match stage {
            Stage::Shape => ("the chain's shape".to_owned(), RULE_LINKS),
            Stage::Statement(j) => (self.describe(j), RULE_STATEMENT),
            Stage::Links => ("the links between the statements".to_owned(), RULE_LINKS),
            Stage::Signature(j) => (
                format!("the signature of {}", self.describe(j)),
                RULE_SIGNATURE,
            ),
            Stage::Constraint(j) => (
                format!("the constraints of {}", self.describe(j)),
                RULE_CONSTRAINT,
            ),
            Stage::Metadata => self.metadata_stage(),
        };
        self.failed = Some(Failure {
            step,
            rule: rule.to_owned(),
            message,
        });
    }

    /// Which part of metadata resolution failed: the merge of one statement's policy, one
    /// operator on one parameter, or the structure.
    fn metadata_stage(&self) -> (String, &'static str) {
        let Some(p) = &self.policy else {
            return ("metadata resolution".into(), RULE_METADATA);
        };
        if let Some(m) = p.merges.last().filter(|m| m.combined.is_none()) {
            let merged_into = if p.merges.len() > 1 {
                " into the policies above it"
            } else {
                ""
            };
            return (
                format!(
                    "merging the metadata policy of {}{merged_into}",
                    self.describe(m.statement)
                ),
                RULE_MERGE,
            );
        }
        if let Some(s) = p.operators.last().filter(|s| s.error.is_some()) {
            return (
                format!(
                    "applying the policy operator {} to metadata.{}.{} (value before: {})",
                    s.operator,
                    s.entity_type,
                    s.parameter,
                    s.before.as_ref().map_or("absent".into(), Value::to_string)
                ),
                RULE_APPLY,
            );
        }
        ("metadata resolution".into(), RULE_METADATA)
    }

    /// The constraint value as JSON, for the record.
    pub(crate) fn value_of<T: Serialize>(v: &T) -> Value {
        serde_json::to_value(v).unwrap_or_else(|_| json!(null))
    }
}

/// An error's message without its kind's prefix (`invalid_trust_chain: `).
pub(crate) fn message(e: &Error) -> String {
    match e {
        Error::InvalidTrustChain(m)
        | Error::InvalidPolicy(m)
        | Error::InvalidMetadata(m)
        | Error::InvalidTrustAnchor(m)
        | Error::Fetch(m) => m.clone(),
        other => other.to_string(),
    }
}
