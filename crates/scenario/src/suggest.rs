//! "Did you mean" suggestions and "one of: ..." lists.

/// The candidate closest to `word`, if it is close enough to be a plausible
/// typo: within an edit distance (transpositions count as one edit) of a
/// third of the word's length, or else a prefix of it or extending it.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if word.is_empty() || word.len() > 64 {
        return None;
    }
    let limit = (word.chars().count() / 3).max(1);
    let lower = word.to_ascii_lowercase();
    let candidates: Vec<&str> = candidates.into_iter().filter(|c| c.len() <= 64).collect();
    let by_distance = candidates
        .iter()
        .map(|&c| (distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c);
    by_distance.or_else(|| {
        if lower.len() < 3 {
            return None;
        }
        candidates
            .iter()
            .copied()
            .filter(|c| {
                let c = c.to_ascii_lowercase();
                c.len() >= 3 && (c.starts_with(&lower) || lower.starts_with(&c))
            })
            .min_by_key(|c| c.len().abs_diff(lower.len()))
    })
}

/// `Some("did you mean `x`?")` when a close candidate exists.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(word, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// "one of: a, b, c", or "`a`" for a single item.
pub(crate) fn one_of<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    match items.as_slice() {
        [] => "nothing here".to_string(),
        [only] => format!("`{only}`"),
        _ => format!("one of: {}", items.join(", ")),
    }
}

/// Optimal-string-alignment distance over characters: insertions,
/// deletions, substitutions and transpositions of neighbours.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("nmae", "name"), 1);
        assert_eq!(closest("nmae", ["name", "summary"]), Some("name"));
        assert_eq!(closest("unshar", ["unshare", "unlock"]), Some("unshare"));
        assert_eq!(closest("stratgy", ["strategy", "seed"]), Some("strategy"));
        assert_eq!(
            closest("rcu_grace", ["rcu_read", "rcu_grace_period"]),
            Some("rcu_grace_period")
        );
        assert_eq!(closest("zzzz", ["strategy", "seed"]), None);
        assert_eq!(closest("V6.2", ["v6.2", "v6.3"]), Some("v6.2"));
    }
}
