//! WebFetch decisions: asks by default, domain rules, local hosts.

use super::*;

fn web(url: &str) -> Value {
    obj! { "url" => url, "prompt" => "what is it?" }
}

/// The permit's reach_local flag for an allowed or approved WebFetch call.
fn reaches_local(p: &Policy, url: &str) -> Option<bool> {
    let reg = Registry::builtin();
    let tool = reg.get("WebFetch").unwrap();
    let input = web(url);
    match p.decide(&facts(&*tool, &input)) {
        Decision::Allow(permit) => Some(permit.may_reach_local()),
        Decision::Ask(q) => Some(q.approve().may_reach_local()),
        Decision::Deny(_) => None,
    }
}

#[test]
fn web_fetch_asks_by_default_and_domain_rules_allow() {
    let cwd = temp("web-default");
    let p = policy(Mode::Default, &cwd, &[]);
    let d = decide(&p, "WebFetch", web("https://docs.rs/tern"));
    assert_eq!(
        d,
        Verdict::Ask("WebFetch wants to fetch https://docs.rs/tern".into())
    );
    // Plan mode only reads: fetching is still asked about, not refused.
    let plan = policy(Mode::Plan, &cwd, &[]);
    assert!(is_ask(&decide(&plan, "WebFetch", web("https://docs.rs/"))));
    let dont = policy(Mode::DontAsk, &cwd, &[]);
    assert!(is_deny(&decide(&dont, "WebFetch", web("https://docs.rs/"))));
    let accept = policy(Mode::AcceptEdits, &cwd, &[]);
    assert!(is_ask(&decide(
        &accept,
        "WebFetch",
        web("https://docs.rs/")
    )));

    let p = policy(
        Mode::Default,
        &cwd,
        &[("WebFetch(domain:docs.rs)", Behavior::Allow)],
    );
    assert_eq!(
        decide(&p, "WebFetch", web("https://docs.rs/x")),
        Verdict::Allow
    );
    assert_eq!(
        decide(&p, "WebFetch", web("http://API.Docs.RS./y")),
        Verdict::Allow
    );
    for other in [
        "https://evildocs.rs/",
        "https://docs.rs.evil.com/",
        "https://example.com/?docs.rs",
        "https://example.com/#@docs.rs",
    ] {
        assert!(is_ask(&decide(&p, "WebFetch", web(other))), "{other}");
    }
    // Credentials that would move the host in a naive reader are refused.
    let d = decide(&p, "WebFetch", web("https://docs.rs@evil.com/"));
    assert!(is_deny(&d) && d_text(&d).contains("password"), "{d:?}");
    assert!(is_deny(&decide(&p, "WebFetch", web("file:///etc/passwd"))));
    assert_eq!(
        suggest(&p, "WebFetch", web("https://Example.com:8443/a")),
        Some("WebFetch(domain:example.com)".into())
    );
}

#[test]
fn web_fetch_deny_and_ask_rules_win() {
    let cwd = temp("web-deny");
    let p = policy(
        Mode::Default,
        &cwd,
        &[
            ("WebFetch", Behavior::Allow),
            ("WebFetch(domain:evil.com)", Behavior::Deny),
            ("WebFetch(domain:careful.org)", Behavior::Ask),
        ],
    );
    assert_eq!(
        decide(&p, "WebFetch", web("https://good.com/")),
        Verdict::Allow
    );
    assert!(is_deny(&decide(
        &p,
        "WebFetch",
        web("https://cdn.evil.com/")
    )));
    assert!(is_ask(&decide(&p, "WebFetch", web("https://careful.org/"))));
    let bypass = policy(
        Mode::BypassPermissions,
        &cwd,
        &[("WebFetch(domain:evil.com)", Behavior::Deny)],
    );
    assert!(is_deny(&decide(
        &bypass,
        "WebFetch",
        web("https://evil.com/")
    )));
}

/// A blanket `WebFetch` allow is how an injected page would reach a
/// metadata service or a local admin port: local hosts still ask under
/// it, and only a rule naming them (or bypass) lets them through.
#[test]
fn a_blanket_web_fetch_rule_does_not_cover_local_hosts() {
    let cwd = temp("web-local");
    let p = policy(Mode::Default, &cwd, &[("WebFetch", Behavior::Allow)]);
    for local in [
        "http://127.0.0.1:8080/admin",
        "http://localhost:3000/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://10.0.0.5/",
    ] {
        let d = decide(&p, "WebFetch", web(local));
        assert!(is_ask(&d), "{local}: {d:?}");
        assert!(d_text(&d).contains("a local address"), "{d:?}");
    }
    assert_eq!(reaches_local(&p, "https://example.com/"), Some(false));
    // A person asked about the local address by name may let it through.
    assert_eq!(reaches_local(&p, "http://127.0.0.1/"), Some(true));

    let named = policy(
        Mode::Default,
        &cwd,
        &[
            ("WebFetch", Behavior::Allow),
            ("WebFetch(domain:127.0.0.1)", Behavior::Allow),
            ("WebFetch(domain:intranet.corp)", Behavior::Allow),
        ],
    );
    assert_eq!(
        decide(&named, "WebFetch", web("http://127.0.0.1:9/")),
        Verdict::Allow
    );
    assert!(is_ask(&decide(
        &named,
        "WebFetch",
        web("http://127.0.0.2/")
    )));
    assert_eq!(
        reaches_local(&named, "https://wiki.intranet.corp/"),
        Some(true)
    );
    let bypass = policy(Mode::BypassPermissions, &cwd, &[]);
    assert_eq!(
        decide(&bypass, "WebFetch", web("http://127.0.0.1/")),
        Verdict::Allow
    );
    assert_eq!(reaches_local(&bypass, "https://example.com/"), Some(true));
    // A one-time yes to a public name does not follow it to loopback.
    let plain = policy(Mode::Default, &cwd, &[]);
    assert_eq!(reaches_local(&plain, "https://example.com/"), Some(false));
}
