use super::*;
use crate::Placement;

const PH: &str = "hermes_placeholder_0123456789abcdef0123456789abcdef01234567";

fn secret(placement: Placement) -> Secret {
    Secret {
        name: "GITHUB_TOKEN".into(),
        placeholder: PH.into(),
        value: "ghp_real value&x".into(),
        hosts: vec!["api.github.com".into()],
        placement,
    }
}

fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut builder = http::Request::builder().uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(()).unwrap().into_parts().0
}

#[test]
fn headers_and_basic_credentials_get_the_value_but_cookies_and_forwarding_headers_never() {
    let basic = format!("Basic {}", STANDARD.encode(format!("x-access-token:{PH}")));
    let mut p = parts(
        "/repos",
        &[
            ("authorization", &format!("Bearer {PH}")),
            ("x-api-key", PH),
            ("cookie", &format!("session={PH}")),
            ("x-forwarded-for", PH),
            ("forwarded", PH),
            ("accept-encoding", "gzip"),
        ],
    );
    rewrite_head(&mut p, &[secret(Placement::default())]).unwrap();
    assert_eq!(p.headers["authorization"], "Bearer ghp_real value&x");
    assert_eq!(p.headers["x-api-key"], "ghp_real value&x");
    assert_eq!(p.headers["cookie"], format!("session={PH}"));
    assert_eq!(p.headers["x-forwarded-for"], PH);
    assert_eq!(p.headers["forwarded"], PH);
    assert_eq!(p.headers["accept-encoding"], "identity", "answers come uncompressed, to be scanned");

    let mut p = parts("/", &[("authorization", &basic)]);
    rewrite_head(&mut p, &[secret(Placement::default())]).unwrap();
    let sent = p.headers["authorization"].to_str().unwrap().strip_prefix("Basic ").unwrap();
    assert_eq!(STANDARD.decode(sent).unwrap(), b"x-access-token:ghp_real value&x");
}

#[test]
fn the_query_string_only_when_the_binding_names_it() {
    let uri = format!("/search?q=x&access_token={PH}");
    let mut p = parts(&uri, &[]);
    rewrite_head(&mut p, &[secret(Placement::default())]).unwrap();
    assert_eq!(p.uri.to_string(), uri, "not named: left as it is");
    let mut p = parts(&uri, &[]);
    rewrite_head(&mut p, &[secret(Placement { query: true, ..Placement::default() })]).unwrap();
    assert_eq!(p.uri.to_string(), "/search?q=x&access_token=ghp_real+value%26x", "encoded for a query");
}

#[test]
fn a_required_header_with_another_credential_is_refused() {
    let required = Placement { required_header: Some("authorization".into()), ..Placement::default() };
    let mut planted = parts("/", &[("authorization", "Bearer ghp_attackers_own_token")]);
    let refused = rewrite_head(&mut planted, &[secret(required.clone())]).unwrap_err();
    assert!(refused.0.contains("$GITHUB_TOKEN"), "{refused}");
    let basic = format!("Basic {}", STANDARD.encode(format!("u:{PH}")));
    for ok in [format!("token {PH}"), basic] {
        rewrite_head(&mut parts("/", &[("authorization", &ok)]), &[secret(required.clone())]).unwrap();
    }
    // No credential at all is not a planted one.
    rewrite_head(&mut parts("/", &[]), &[secret(required)]).unwrap();
}

#[test]
fn a_value_that_cannot_be_a_header_is_refused_not_sent_mangled() {
    let mut bad = secret(Placement::default());
    bad.value = "line\r\nInjected: yes".into();
    let refused = rewrite_head(&mut parts("/", &[("authorization", PH)]), &[bad]).unwrap_err();
    assert!(refused.0.contains("authorization"), "{refused}");
}

#[test]
fn only_the_named_body_field_of_a_json_or_form_body() {
    let named = secret(Placement { body_field: Some("token".into()), ..Placement::default() });
    let body = format!(r#"{{"token": "{PH}", "note": "{PH}"}}"#);
    let out = rewrite_body(Some("application/json; charset=utf-8"), body.as_bytes(), std::slice::from_ref(&named));
    let out: serde_json::Value = serde_json::from_slice(&out.unwrap()).unwrap();
    assert_eq!(out["token"], "ghp_real value&x");
    assert_eq!(out["note"], PH, "another field keeps the placeholder");

    let form = format!("token={PH}&note={PH}");
    let out = rewrite_body(Some("application/x-www-form-urlencoded"), form.as_bytes(), std::slice::from_ref(&named));
    assert_eq!(String::from_utf8(out.unwrap()).unwrap(), format!("token=ghp_real+value%26x&note={PH}"));

    assert!(rewrite_body(Some("text/plain"), PH.as_bytes(), std::slice::from_ref(&named)).is_none());
    assert!(rewrite_body(Some("application/json"), body.as_bytes(), &[secret(Placement::default())]).is_none());
}
