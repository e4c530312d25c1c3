//! Laws of the policy engine, checked over generated parameter policies and values: merging
//! with nothing or with itself changes nothing, merging is associative where it succeeds (and
//! commutative for `except`, a union), applying is idempotent, and what an applied policy
//! returns satisfies its own checks (no `except` value among them).

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{apply_param_policy, merge_param_policy};

/// A small alphabet, so that generated sets overlap often.
fn word() -> impl Strategy<Value = Value> {
    prop::sample::select(vec!["a", "b", "c", "d", "e"]).prop_map(|s| json!(s))
}

fn set() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(word(), 0..4).prop_map(|mut v| {
        v.sort_by_key(Value::to_string);
        v.dedup();
        v
    })
}

/// A parameter policy of array-valued operators (plus `essential`), valid or not: the laws are
/// stated for the ones the engine accepts.
fn policy() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::of(set()),
        prop::option::of(set()),
        prop::option::of(set()),
        prop::option::of(set()),
        prop::option::of(any::<bool>()),
        prop::option::of(set()),
    )
        .prop_map(
            |(add, subset_of, superset_of, default, essential, except)| {
                let mut p = Map::new();
                if let Some(v) = except {
                    p.insert("except".into(), json!(v));
                }
                if let Some(v) = add {
                    p.insert("add".into(), json!(v));
                }
                if let Some(v) = subset_of {
                    p.insert("subset_of".into(), json!(v));
                }
                if let Some(v) = superset_of {
                    p.insert("superset_of".into(), json!(v));
                }
                if let Some(v) = default.filter(|d| !d.is_empty()) {
                    p.insert("default".into(), json!(v));
                }
                if let Some(e) = essential {
                    p.insert("essential".into(), json!(e));
                }
                p
            },
        )
}

/// Operator values compared as sets, so element order (which the specification leaves open)
/// does not matter.
fn normal(p: &Map<String, Value>) -> Map<String, Value> {
    p.iter()
        .map(|(k, v)| {
            let v = match v.as_array() {
                Some(a) => {
                    let mut a = a.clone();
                    a.sort_by_key(Value::to_string);
                    a.dedup();
                    Value::Array(a)
                }
                None => v.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

fn as_set(v: &Value) -> Vec<String> {
    let mut s: Vec<String> = v
        .as_array()
        .map(|a| a.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    s.sort();
    s.dedup();
    s
}

proptest! {
    #[test]
    fn merging_with_nothing_or_with_itself_changes_nothing(p in policy()) {
        let empty = Map::new();
        if let Ok(m) = merge_param_policy(&p, &empty) {
            prop_assert_eq!(normal(&m), normal(&p));
            prop_assert_eq!(normal(&merge_param_policy(&empty, &p).unwrap()), normal(&p));
            prop_assert_eq!(normal(&merge_param_policy(&p, &p).unwrap()), normal(&p));
        }
    }

    #[test]
    fn merging_is_associative_where_it_succeeds(a in policy(), b in policy(), c in policy()) {
        let left = merge_param_policy(&a, &b).and_then(|ab| merge_param_policy(&ab, &c));
        let right = merge_param_policy(&b, &c).and_then(|bc| merge_param_policy(&a, &bc));
        if let (Ok(l), Ok(r)) = (&left, &right) {
            prop_assert_eq!(normal(l), normal(r));
        }
    }

    #[test]
    fn merging_except_is_a_commutative_union(a in set(), b in set()) {
        let pa = Map::from_iter([("except".to_owned(), json!(a))]);
        let pb = Map::from_iter([("except".to_owned(), json!(b))]);
        let ab = merge_param_policy(&pa, &pb).unwrap();
        let ba = merge_param_policy(&pb, &pa).unwrap();
        prop_assert_eq!(normal(&ab), normal(&ba));
        let mut union: Vec<String> = a.iter().chain(&b).map(Value::to_string).collect();
        union.sort();
        union.dedup();
        prop_assert_eq!(as_set(&ab["except"]), union);
    }

    #[test]
    fn applying_is_idempotent_and_its_result_satisfies_the_policy(
        p in policy(),
        value in prop::option::of(set()),
    ) {
        let value = value.map(|v| json!(v));
        let Ok(out) = apply_param_policy(&p, value.as_ref()) else {
            return Ok(());
        };
        // A second application leaves the result as it is.
        let again = apply_param_policy(&p, out.as_ref());
        prop_assert_eq!(again.ok(), Some(out.clone()));
        match &out {
            None => prop_assert_ne!(p.get("essential"), Some(&json!(true))),
            Some(r) => {
                let r = as_set(r);
                if let Some(s) = p.get("subset_of") {
                    let s = as_set(s);
                    prop_assert!(r.iter().all(|x| s.contains(x)), "{r:?} not within {s:?}");
                }
                if let Some(s) = p.get("superset_of") {
                    prop_assert!(as_set(s).iter().all(|x| r.contains(x)), "{r:?} misses {s:?}");
                }
                if let Some(e) = p.get("except") {
                    let e = as_set(e);
                    prop_assert!(r.iter().all(|x| !e.contains(x)), "{r:?} keeps some of {e:?}");
                }
                if let Some(add) = p.get("add") {
                    // `add` runs before `subset_of` may narrow the value again.
                    let allowed = p.get("subset_of").map(as_set);
                    for x in as_set(add) {
                        if allowed.as_ref().is_none_or(|s| s.contains(&x)) {
                            prop_assert!(r.contains(&x), "{r:?} lacks added {x}");
                        }
                    }
                }
            }
        }
    }
}
