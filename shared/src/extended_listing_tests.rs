use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::subordinate::{GeneralSettings, StoredJwks, Tombstone};

fn record(id: &str, status: SubordinateStatus, types: &[&str], updated: i64) -> Arc<Subordinate> {
    Arc::new(Subordinate {
        id: 1,
        entity_id: id.into(),
        status,
        registered_entity_types: types.iter().map(|t| Arc::from(*t)).collect(),
        jwks: StoredJwks::default(),
        metadata: None,
        metadata_policy: None,
        constraints: None,
        additional_claims: vec![],
        registered: 1,
        updated,
        version: 1,
        statement: Default::default(),
    })
}

fn active(id: &str, updated: i64) -> Arc<Subordinate> {
    record(
        id,
        SubordinateStatus::Active,
        &["openid_relying_party"],
        updated,
    )
}

fn query(q: &str) -> Result<ListingQuery, QueryError> {
    ListingQuery::parse(
        url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (Cow::Owned(k.into()), v)),
    )
}

fn ids(p: &Page) -> Vec<String> {
    p.entries.iter().map(|e| e.id().to_owned()).collect()
}

/// Every page of `q` with `limit`, following `next`.
fn walk(src: Source<'_>, q: &str, limit: usize) -> Vec<String> {
    let mut q = query(q).unwrap();
    let mut all = Vec::new();
    loop {
        let page = src.page(&q, limit);
        all.extend(ids(&page));
        match page.next {
            Some(c) => q.from = Some(c),
            None => return all,
        }
    }
}

#[test]
fn cursors_are_opaque_and_unknown_ones_are_page_not_found() {
    for c in [
        Cursor::Id("https://a.example/x".into()),
        Cursor::Time(1_700_000_000, "https://b.example".into()),
    ] {
        let text = c.encode();
        assert!(!text.contains("example"), "{text}");
        assert_eq!(Cursor::decode(&text), Ok(c));
    }
    for bad in ["", "!!", "eA", &URL_SAFE_NO_PAD.encode("t\nsoon\nx")] {
        assert!(
            matches!(Cursor::decode(bad), Err(QueryError::PageNotFound(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn parameters_are_read_and_normalised() {
    let q = query(
        "claims=metadata,subordinate_statement&claims=jwks&trust_mark_type=b&trust_mark_type=a\
         &trust_mark_type=a&entity_type=x&limit=5&audit_timestamps=false&unknown=1",
    )
    .unwrap();
    assert_eq!(
        q.claims.as_deref(),
        Some(&["jwks", "metadata", "subordinate_statement"].map(String::from)[..])
    );
    assert_eq!(q.trust_mark_types, ["a", "b"]);
    assert_eq!((q.limit, q.timestamps()), (Some(5), false));
    assert!(q.wants_statement() && !q.wants_trust_marks());
    assert_eq!(
        q.statement_claims().collect::<Vec<_>>(),
        ["jwks", "metadata"]
    );
    let own = query("claims=id,updated,registered").unwrap();
    assert_eq!(own.statement_claims().count(), 0);
    assert!(!own.wants_statement());
    // No claims: the statement alone; an empty claims parameter is no claims.
    assert!(query("").unwrap().wants_statement());
    assert_eq!(query("claims=").unwrap().claims, None);
    assert!(!query("claims=trust_marks").unwrap().wants_statement());
    // A time filter brings the timestamps unless refused.
    assert!(query("updated_after=5").unwrap().timestamps());
    assert!(
        !query("updated_after=5&audit_timestamps=false")
            .unwrap()
            .timestamps()
    );
    for (bad, named) in [
        ("limit=0", "limit"),
        ("limit=-3", "limit"),
        ("limit=ten", "limit"),
        ("updated_after=yesterday", "updated_after"),
        ("updated_before=-1", "updated_before"),
        ("audit_timestamps=yes", "audit_timestamps"),
        ("limit=1&limit=2", "limit"),
        ("updated_after=9&updated_before=8", "updated_after"),
        ("intermediate=1", "intermediate"),
    ] {
        match query(bad) {
            Err(QueryError::Invalid(d)) => assert!(d.contains(named), "{bad}: {d}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let many = vec!["trust_mark_type=x"; 17].join("&");
    assert!(matches!(query(&many), Err(QueryError::Invalid(_))));
    // A cursor of the other order is not a page of this request.
    let by_id = Cursor::Id("https://a".into()).encode();
    assert!(matches!(
        query(&format!("from={by_id}&updated_after=1")),
        Err(QueryError::PageNotFound(_))
    ));
}

fn registry() -> Subordinates {
    let mut s = Subordinates::new(
        [
            active("https://a.example", 100),
            record(
                "https://b.example",
                SubordinateStatus::Active,
                &["openid_provider"],
                300,
            ),
            record(
                "https://c.example",
                SubordinateStatus::Pending,
                &["openid_provider"],
                150,
            ),
            record(
                "https://d.example",
                SubordinateStatus::Blocked,
                &["openid_provider"],
                250,
            ),
            active("https://e.example", 200),
            record(
                "https://f.example",
                SubordinateStatus::Active,
                &["openid_provider", "openid_relying_party"],
                50,
            ),
        ],
        Arc::new(GeneralSettings::default()),
        1,
    );
    s.bury(
        "https://gone.example",
        Tombstone {
            registered: 10,
            revoked: 220,
        },
    );
    s
}

#[test]
fn identifier_order_pages_through_active_subordinates_only() {
    let subs = registry();
    let src = Source {
        subordinates: &subs,
        holders: None,
    };
    let all = ["a", "b", "e", "f"].map(|x| format!("https://{x}.example"));
    for limit in [1, 2, 3, 10] {
        assert_eq!(walk(src, "", limit), all, "limit {limit}");
    }
    let first = src.page(&query("").unwrap(), 2);
    assert_eq!(ids(&first), all[..2]);
    assert_eq!(first.next, Some(Cursor::Id("https://b.example".into())));
    assert_eq!(
        walk(src, "entity_type=openid_provider", 1),
        ["https://b.example", "https://f.example"]
    );
    // A page starts at its cursor's position even when that subordinate has gone since.
    let mut q = query("").unwrap();
    q.from = Some(Cursor::Id("https://bb.example".into()));
    assert_eq!(
        ids(&src.page(&q, 10)),
        ["https://e.example", "https://f.example"]
    );
    let holders: HashSet<Arc<str>> = [Arc::from("https://e.example")].into();
    let marked = Source {
        subordinates: &subs,
        holders: Some(&holders),
    };
    assert_eq!(walk(marked, "trust_marked=true", 1), ["https://e.example"]);
}

#[test]
fn time_order_reports_changes_in_the_window_and_departures() {
    let subs = registry();
    let src = Source {
        subordinates: &subs,
        holders: None,
    };
    // Ascending change time: f 50, a 100, e 200, gone 220 (deleted), d 250 (blocked), b 300;
    // the pending c is never reported.
    let all = ["f", "a", "e", "gone", "d", "b"].map(|x| format!("https://{x}.example"));
    for limit in [1, 2, 4, 10] {
        assert_eq!(walk(src, "updated_after=0", limit), all, "limit {limit}");
    }
    assert_eq!(
        walk(src, "updated_after=100&updated_before=250", 2),
        all[1..5]
    );
    let page = src.page(&query("updated_after=210").unwrap(), 10);
    match &page.entries[..] {
        [
            Entry::Departed {
                registered: 10,
                revoked: 220,
                ..
            },
            Entry::Departed { revoked: 250, .. },
            Entry::Listed(b, 300),
        ] => assert_eq!(&*b.entity_id, "https://b.example"),
        other => panic!("{other:?}"),
    }
    // Content filters apply to the served; departures are reported whatever they were.
    assert_eq!(
        walk(src, "updated_after=0&entity_type=openid_provider", 3),
        ["f", "gone", "d", "b"].map(|x| format!("https://{x}.example"))
    );
}

#[test]
fn a_change_of_the_general_settings_updates_every_active_subordinate() {
    let mut subs = registry();
    let mut general = GeneralSettings::clone(&subs.general);
    general.changed_at = 260;
    subs.general = Arc::new(general);
    let src = Source {
        subordinates: &subs,
        holders: None,
    };
    // Every active record counts as changed at 260 at the earliest; departures keep their time.
    let page = src.page(&query("updated_after=255").unwrap(), 10);
    let got: Vec<(String, i64)> = page
        .entries
        .iter()
        .map(|e| match e {
            Entry::Listed(s, t) => (s.entity_id.to_string(), *t),
            Entry::Departed { id, revoked, .. } => (id.to_string(), *revoked),
        })
        .collect();
    assert_eq!(
        got,
        [
            ("https://f.example".to_owned(), 260),
            ("https://a.example".to_owned(), 260),
            ("https://e.example".to_owned(), 260),
            ("https://b.example".to_owned(), 300),
        ]
    );
    // Before the general change: only what changed then, the departures.
    assert_eq!(
        walk(src, "updated_before=255", 10),
        ["gone", "d"].map(|x| format!("https://{x}.example"))
    );
    // Paging through the same window is the same list.
    assert_eq!(walk(src, "updated_after=255", 1).len(), 4);
}

#[test]
fn a_page_examines_a_bounded_number_of_entries() {
    let records = (0..SCAN_BUDGET + 10).map(|i| {
        let status = if i == SCAN_BUDGET + 5 {
            SubordinateStatus::Active
        } else {
            SubordinateStatus::Inactive
        };
        record(&format!("https://{i:08}.example"), status, &[], 5)
    });
    let subs = Subordinates::new(records, Arc::default(), 1);
    let src = Source {
        subordinates: &subs,
        holders: None,
    };
    let first = src.page(&query("").unwrap(), 10);
    assert!(first.entries.is_empty());
    let next = first.next.clone().expect("a cursor where the scan stopped");
    assert_eq!(
        next,
        Cursor::Id(format!("https://{:08}.example", SCAN_BUDGET - 1))
    );
    let mut q = query("").unwrap();
    q.from = Some(next);
    let second = src.page(&q, 10);
    assert_eq!(
        ids(&second),
        [format!("https://{:08}.example", SCAN_BUDGET + 5)]
    );
    assert_eq!(second.next, None);
}
