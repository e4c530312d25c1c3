//! "Did you mean …?": the closest of some known names to a mistyped one, for messages about
//! unknown configuration keys, environment variables and the like.

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo
/// (about a third of the word's length); ties go to the first.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = word.chars().count().div_ceil(3);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance counting a swap of two neighbours as one edit (optimal string alignment),
/// over characters, ASCII case ignored.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    // d[i][j]: distance of a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_find_none() {
        let keys = ["port", "ip_listen", "request_timeout"];
        assert_eq!(closest("prots", keys), Some("port"));
        assert_eq!(closest("ip_listn", keys), Some("ip_listen"));
        assert_eq!(closest("PORT", keys), Some("port"));
        assert_eq!(closest("database", keys), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("prots", "port"), 2);
        assert_eq!(distance("", "abc"), 3);
    }
}
