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

#[test]
fn queries_support_phrases_or_not_and_prefixes() {
    assert_eq!(parse_query("docker deploy").unwrap(), "'docker' & 'deploy'");
    assert_eq!(parse_query("\"rate limit\"").unwrap(), "('rate' <-> 'limit')");
    assert_eq!(parse_query("deploy docker OR kubernetes").unwrap(), "'deploy' & ('docker' | 'kubernetes')");
    assert_eq!(parse_query("deploy NOT staging").unwrap(), "'deploy' & !'staging'");
    assert_eq!(parse_query("deploy -staging").unwrap(), "'deploy' & !'staging'");
    assert_eq!(parse_query("deploy -\"blue green\"").unwrap(), "'deploy' & !('blue' <-> 'green')");
    assert_eq!(parse_query("deploy*").unwrap(), "'deploy':*");
    assert_eq!(parse_query("rate-limit").unwrap(), "('rate' <-> 'limit')", "hyphenated words are phrases");
}

#[test]
fn chinese_queries_become_bigram_phrases() {
    assert_eq!(parse_query("数据库").unwrap(), "('数据' <-> '据库')");
    assert_eq!(parse_query("猫").unwrap(), "'猫':*");
    assert_eq!(parse_query("部署 OR 发布").unwrap(), "('部署' | '发布')");
    assert_eq!(parse_query("用Rust").unwrap(), "('用':* <-> 'rust')");
}

#[test]
fn malformed_queries_never_error() {
    assert_eq!(parse_query("\"unbalanced quote").unwrap(), "('unbalanced' <-> 'quote')");
    assert_eq!(parse_query("OR deploy OR").unwrap(), "'deploy'");
    assert_eq!(parse_query("deploy NOT").unwrap(), "'deploy'");
    assert_eq!(parse_query("AND AND docker").unwrap(), "'docker'");
    assert_eq!(parse_query("'; DROP TABLE messages; --").unwrap(), "'drop' & 'table' & 'messages'");
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
