use super::*;

#[test]
fn words_are_lowercased_and_split_on_punctuation() {
    assert_eq!(tokens("Rate-limit the API, v2!", false), ["rate", "limit", "the", "api", "v2"]);
    assert_eq!(tokens("Crème brûlée", false), ["crème", "brûlée"]);
}

#[test]
fn overlong_words_are_left_out_so_postgres_never_refuses_the_vector() {
    let text = format!("before {} after", "x".repeat(5_000));
    assert_eq!(tokens(&text, false), ["before", "after"]);
    assert_eq!(index_vector(&text), "'after':2 'before':1");
}

#[test]
fn cjk_runs_become_bigrams_plus_their_last_character() {
    assert_eq!(tokens("数据库", false), ["数据", "据库", "库"]);
    assert_eq!(tokens("使用Rust写代码", false), ["使用", "用", "rust", "写代", "代码", "码"]);
    assert_eq!(tokens("数据库", true), ["数据", "据库"], "a query keeps only the bigrams");
    assert_eq!(tokens("猫", true), ["猫"]);
    assert_eq!(tokens("カタカナ と ひらがな", false).len(), 3 + 1 + 1 + 3 + 1);
}

#[test]
fn the_index_is_a_tsvector_literal_with_positions() {
    assert_eq!(index_vector("deploy the deploy"), "'deploy':1,3 'the':2");
    assert_eq!(index_vector("  …  "), "");
}

/// Asserts the `tsquery` each query parses to.
fn assert_parses(cases: &[(&str, &str)]) {
    for &(query, parsed) in cases {
        assert_eq!(parse_query(query).as_deref(), Some(parsed), "{query:?}");
    }
}

#[test]
fn queries_support_phrases_or_not_and_prefixes() {
    assert_parses(&[
        ("docker deploy", "'docker' & 'deploy'"),
        ("\"rate limit\"", "('rate' <-> 'limit')"),
        ("deploy docker OR kubernetes", "'deploy' & ('docker' | 'kubernetes')"),
        ("deploy NOT staging", "'deploy' & !'staging'"),
        ("deploy -staging", "'deploy' & !'staging'"),
        ("deploy -\"blue green\"", "'deploy' & !('blue' <-> 'green')"),
        ("deploy*", "'deploy':*"),
        // Hyphenated words are phrases.
        ("rate-limit", "('rate' <-> 'limit')"),
    ]);
}

#[test]
fn chinese_queries_become_bigram_phrases() {
    assert_parses(&[
        ("数据库", "('数据' <-> '据库')"),
        ("猫", "'猫':*"),
        ("部署 OR 发布", "('部署' | '发布')"),
        ("用Rust", "('用':* <-> 'rust')"),
    ]);
}

#[test]
fn malformed_queries_never_error() {
    assert_parses(&[
        ("\"unbalanced quote", "('unbalanced' <-> 'quote')"),
        ("OR deploy OR", "'deploy'"),
        ("deploy NOT", "'deploy'"),
        ("AND AND docker", "'docker'"),
        ("'; DROP TABLE messages; --", "'drop' & 'table' & 'messages'"),
    ]);
    assert_eq!(parse_query("*** ---"), None);
    assert_eq!(parse_query("NOT deploy"), None, "only negations: nothing to look for");
    assert_eq!(parse_query(""), None);
}

#[test]
fn snippets_centre_on_the_first_match() {
    let text = format!("{} the database migration failed {}", "x ".repeat(100), "y ".repeat(100));
    let s = snippet(&text, &parse_query("migration").unwrap(), 60);
    assert!(s.starts_with('…') && s.ends_with('…') && s.contains("migration"), "{s}");
    let s = snippet("我们的数据库迁移失败了", &parse_query("数据库").unwrap(), 60);
    assert_eq!(s, "我们的数据库迁移失败了");
    assert_eq!(snippet("short", "'zzz'", 60), "short");
}
