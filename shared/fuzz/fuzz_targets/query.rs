//! Query strings of the entity collection endpoint (the richest query grammar we parse).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::collection::query::CollectionQuery;

fuzz_target!(|data: &[u8]| {
    let params: Vec<(String, String)> = url::form_urlencoded::parse(data)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    for paging in [false, true] {
        let _ = CollectionQuery::parse(&params, paging);
    }
});
