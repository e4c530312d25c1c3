//! Validation of an assembled Trust Chain (§10.2): per-statement checks, linkage, signatures,
//! constraints (§6.2) and metadata resolution (§6.1.4).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::statement::{Lenience, Statement, parse};
use super::trace::{ChainTrace, Stage};
use super::{AnchorSpec, at, invalid};
use crate::Result;
use crate::interop::{AnchorEcConstraints, note_ignored_constraints};
use crate::jose::{self, Jwks};
use crate::policy::{
    ChainStatementPolicy, Constraints, PolicyTrace, check_max_path_length, check_naming,
    resolve_metadata, resolve_metadata_traced,
};

/// A chain that passed [`validate_chain`], with what was learnt while validating it.
///
/// Exists so that callers (the resolver, registration, trust mark checks) do not decode the
/// statements a second time.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedChain {
    /// The chain subject's Entity ID (`ES[0].sub`).
    pub subject: String,
    /// The Trust Anchor's Entity ID (the last statement's `sub`).
    pub trust_anchor: String,
    /// The statements in chain order, subject EC first, Trust Anchor EC last; all verified.
    pub statements: Vec<Statement>,
    /// The chain's expiry: the minimum `exp` over all statements (§10.4).
    pub exp: i64,
    /// The subject's resolved metadata (not reduced to any Entity Types).
    pub metadata: Value,
}

/// Validate `chain` (compact JWSs: subject EC first, then the statement about each Entity
/// issued by its superior, ending with the Trust Anchor's EC) against `anchor` at `now`.
///
/// Exists for chains that arrive assembled (a `trust_chain` header, an Explicit Registration
/// body, test vectors) and as the validation step of [`super::resolve`]. The Trust Anchor's EC
/// must be present (this implementation does not accept the optional omission of §4). A
/// one-element chain means the subject is the Trust Anchor itself. Only `ES[1].iss` can be
/// checked against the subject's `authority_hints`: Intermediates' ECs are not chain members.
pub fn validate_chain(chain: &[String], anchor: &AnchorSpec, now: i64) -> Result<ValidatedChain> {
    validate_traced(chain, anchor, now, None)
}

/// A trace to record into, when the caller asked for one.
type Rec<'a> = Option<&'a mut ChainTrace>;

/// Records `e` as the failure of `stage` in the trace, and hands it on.
fn noted(trace: &mut Rec<'_>, stage: Stage, e: crate::Error) -> crate::Error {
    if let Some(t) = trace.as_deref_mut() {
        t.fail(stage, &e);
    }
    e
}

/// [`validate_chain`], recording every step in `trace` when one is given (the chain
/// explainer). The checks and their order are those of [`validate_chain`], which is this
/// function without a trace; only the recording is added.
pub(crate) fn validate_traced(
    chain: &[String],
    anchor: &AnchorSpec,
    now: i64,
    mut trace: Rec<'_>,
) -> Result<ValidatedChain> {
    let n = chain.len();
    if n == 0 {
        return Err(noted(
            &mut trace,
            Stage::Shape,
            invalid("the chain is empty"),
        ));
    }
    if n == 2 {
        let e =
            invalid("a chain of two statements cannot link a subject to a distinct Trust Anchor");
        return Err(noted(&mut trace, Stage::Shape, e));
    }
    let rule = anchor.interop.anchor_ec_constraints;
    let parsed: Vec<Result<Statement>> = chain
        .iter()
        .enumerate()
        .map(|(j, jws)| {
            let lenience = Lenience {
                ec_constraints: j == n - 1 && rule != AnchorEcConstraints::Refuse,
                draft_shapes: anchor.interop.draft_shapes,
            };
            parse(jws, now, lenience).map_err(|e| at(format_args!("ES[{j}]"), e))
        })
        .collect();
    if let Some(t) = trace.as_deref_mut() {
        for (j, (jws, p)) in chain.iter().zip(&parsed).enumerate() {
            t.statement(j, jws, p.as_ref());
        }
    }
    let mut statements = Vec::with_capacity(n);
    for (j, p) in parsed.into_iter().enumerate() {
        statements.push(p.map_err(|e| noted(&mut trace, Stage::Statement(j), e))?);
    }
    check_links(&statements, anchor).map_err(|e| noted(&mut trace, Stage::Links, e))?;
    check_signatures(&statements, anchor, &mut trace)?;
    let from_anchor = anchor_constraints(&statements, anchor);
    check_constraints(&statements, from_anchor, &mut trace)?;
    let metadata = resolve(&statements, from_anchor, &mut trace)
        .map_err(|e| noted(&mut trace, Stage::Metadata, e))?;
    let exp = statements.iter().map(|s| s.exp).min().unwrap_or(now);
    Ok(ValidatedChain {
        subject: statements[0].sub.clone(),
        trust_anchor: anchor.entity_id.clone(),
        statements,
        exp,
        metadata,
    })
}

/// Linkage (§10.2 steps 2–4): the subject EC first, Subordinate Statements in between, the
/// anchor's EC last, `ES[j].iss == ES[j+1].sub`, no Entity twice, `ES[1].iss` a hint.
fn check_links(es: &[Statement], anchor: &AnchorSpec) -> Result<()> {
    let last = es.len() - 1;
    if !es[0].is_configuration() {
        return Err(invalid("ES[0] is not an Entity Configuration (iss != sub)"));
    }
    if !es[last].is_configuration() || es[last].sub != anchor.entity_id {
        return Err(invalid(format!(
            "the last statement is not the Entity Configuration of the Trust Anchor {}",
            anchor.entity_id
        )));
    }
    for (j, s) in es.iter().enumerate().take(last).skip(1) {
        if s.is_configuration() {
            return Err(invalid(format!(
                "ES[{j}] must be a Subordinate Statement, not an Entity Configuration"
            )));
        }
    }
    for j in 0..last {
        if es[j].iss != es[j + 1].sub {
            return Err(invalid(format!(
                "ES[{j}].iss {} differs from ES[{}].sub {}",
                es[j].iss,
                j + 1,
                es[j + 1].sub
            )));
        }
    }
    // The Entities on the path are the issuers of ES[0..last]: subject, Intermediates and
    // (as issuer of ES[last-1]) the Trust Anchor.
    let mut seen = BTreeSet::new();
    if let Some(dup) = es[..last]
        .iter()
        .map(|s| s.iss.as_str())
        .find(|s| !seen.insert(*s))
    {
        return Err(invalid(format!(
            "{dup} appears twice in the chain (a loop)"
        )));
    }
    if last >= 2 && !es[0].authority_hints().contains(&es[1].iss.as_str()) {
        return Err(invalid(format!(
            "ES[1].iss {} is not in the subject's authority_hints",
            es[1].iss
        )));
    }
    Ok(())
}

/// Signatures (§10.2): the anchor's EC with the pinned keys (or its own), each other statement
/// with the keys of the next one, and the subject's EC also with its own keys.
fn check_signatures(es: &[Statement], anchor: &AnchorSpec, trace: &mut Rec<'_>) -> Result<()> {
    let last = es.len() - 1;
    let anchor_keys = anchor.jwks.as_ref().unwrap_or(&es[last].jwks);
    let which = if anchor.jwks.is_some() {
        "pinned"
    } else {
        "its own"
    };
    let mut check = |j: usize, keys: &Jwks, position: String, words: String| {
        verify(&es[j], keys).map_err(|e| noted(trace, Stage::Signature(j), at(position, e)))?;
        if let Some(t) = trace.as_deref_mut() {
            t.verified(j, words);
        }
        Ok::<(), crate::Error>(())
    };
    check(
        last,
        anchor_keys,
        format!("ES[{last}] (Trust Anchor, {which} keys)"),
        format!(
            "verified with the Trust Anchor's {} keys",
            if anchor.jwks.is_some() {
                "pinned"
            } else {
                "own"
            }
        ),
    )?;
    for j in (0..last).rev() {
        check(
            j,
            &es[j + 1].jwks,
            format!("ES[{j}] (keys of ES[{}])", j + 1),
            format!(
                "verified with the keys of {} in statement {}",
                es[j + 1].sub,
                j + 1
            ),
        )?;
    }
    if last > 0 {
        check(
            0,
            &es[0].jwks,
            "ES[0] (its own keys)".into(),
            "verified with its own keys".into(),
        )?;
    }
    Ok(())
}

/// Verify one statement's signature; `kid` selects the key (it was checked to be present).
fn verify(s: &Statement, keys: &Jwks) -> Result<()> {
    jose::verify(&s.jws, keys).map(|_| ())
}

/// The `constraints` of the Trust Anchor's own Entity Configuration that apply to this chain
/// (`anchor_ec_constraints: apply`), after its signature was verified. Under `ignore` they are
/// logged once per anchor and dropped; under `refuse` [`parse`] already refused them.
fn anchor_constraints<'a>(es: &'a [Statement], anchor: &AnchorSpec) -> Option<&'a Constraints> {
    let ta = es.last()?;
    let c = ta.constraints.as_ref()?;
    match anchor.interop.anchor_ec_constraints {
        AnchorEcConstraints::Apply => Some(c),
        AnchorEcConstraints::Ignore => {
            let raw = ta.claims.get("constraints").unwrap_or(&Value::Null);
            let _first = note_ignored_constraints(&anchor.entity_id, raw);
            None
        }
        AnchorEcConstraints::Refuse => None,
    }
}

/// Constraints (§6.2) of every Subordinate Statement `ES[j]`, each applied on its own:
/// `max_path_length` against the `j - 1` Intermediates below its issuer, and
/// `naming_constraints` against its subject and every Entity below it. `from_anchor` (the
/// anchor's Entity Configuration's, see [`anchor_constraints`]) is applied as if the anchor's
/// statement about its immediate subordinate, `ES[last - 1]`, carried it as well.
fn check_constraints(
    es: &[Statement],
    from_anchor: Option<&Constraints>,
    trace: &mut Rec<'_>,
) -> Result<()> {
    let last = es.len() - 1;
    let own = (1..last).filter_map(|j| es[j].constraints.as_ref().map(|c| (j, c, "")));
    let anchor = from_anchor
        .filter(|_| last >= 2)
        .map(|c| (last - 1, c, " (the Trust Anchor's Entity Configuration)"));
    for (j, c, whose) in own.chain(anchor) {
        let fail = |e: crate::Error| invalid(format!("ES[{j}] constraints{whose}: {e}"));
        let issuer = if whose.is_empty() {
            es[j].iss.as_str()
        } else {
            es[last].sub.as_str()
        };
        let r = check_max_path_length(c, j - 1);
        if let (Some(t), Some(max)) = (trace.as_deref_mut(), c.max_path_length) {
            let checked = format!("{} Intermediates between {issuer} and the subject", j - 1);
            t.constraint(j, issuer, "max_path_length", json!(max), checked, r.is_ok());
        }
        r.map_err(|e| noted(trace, Stage::Constraint(j), fail(e)))?;
        for below in &es[..=j] {
            let r = check_naming(c, &below.sub);
            if let (Some(t), Some(nc)) = (trace.as_deref_mut(), &c.naming_constraints) {
                let value = ChainTrace::value_of(nc);
                let checked = format!("the Entity Identifier {}", below.sub);
                t.constraint(j, issuer, "naming_constraints", value, checked, r.is_ok());
            }
            r.map_err(|e| noted(trace, Stage::Constraint(j), fail(e)))?;
        }
    }
    Ok(())
}

/// Metadata resolution (§6.1.4): the Subordinate Statements from the Trust Anchor's down to
/// the Immediate Superior's, applied to the subject's own metadata. A one-element chain (the
/// subject is the anchor) resolves to the anchor's own metadata. `from_anchor` contributes its
/// `allowed_entity_types` at the top of the chain.
fn resolve(
    es: &[Statement],
    from_anchor: Option<&Constraints>,
    trace: &mut Rec<'_>,
) -> Result<Value> {
    let last = es.len() - 1;
    let anchor = from_anchor
        .filter(|_| last >= 2)
        .map(|c| ChainStatementPolicy {
            constraints: Some(c),
            ..ChainStatementPolicy::default()
        });
    // The chain position of each entry, for the trace: the anchor's EC, then ES[last-1..1].
    let positions: Vec<usize> = anchor.iter().map(|_| last).chain((1..last).rev()).collect();
    let policies: Vec<ChainStatementPolicy<'_>> = anchor
        .into_iter()
        .chain((1..last).rev().map(|j| ChainStatementPolicy {
            metadata_policy: es[j].claims.get("metadata_policy"),
            metadata_policy_crit: es[j].metadata_policy_crit.as_deref(),
            metadata: es[j].claims.get("metadata"),
            constraints: es[j].constraints.as_ref(),
        }))
        .collect();
    let empty = json!({});
    let leaf = es[0].claims.get("metadata").unwrap_or(&empty);
    let Some(t) = trace.as_deref_mut() else {
        return resolve_metadata(&policies, leaf);
    };
    let p = t.policy.insert(PolicyTrace::default());
    let r = resolve_metadata_traced(&policies, leaf, Some(p));
    let at = |i: usize| positions.get(i).copied().unwrap_or(i);
    for m in &mut p.merges {
        m.statement = at(m.statement);
    }
    for f in &mut p.entity_type_filters {
        f.statement = at(f.statement);
    }
    let filters = p.entity_type_filters.clone();
    for f in filters {
        let issuer = es.get(f.statement).map_or("", |s| s.iss.as_str());
        let checked = if f.removed.is_empty() {
            "the subject's Entity Types: none removed".to_owned()
        } else {
            format!(
                "the subject's Entity Types: removed {}",
                f.removed.join(", ")
            )
        };
        t.constraint(
            f.statement,
            issuer,
            "allowed_entity_types",
            json!(f.allowed),
            checked,
            true,
        );
    }
    r
}
