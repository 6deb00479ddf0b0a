//! What a `Cache-Control` policy lets caches do, read from its directives: how long any
//! cache may give out an answer sent with it; and the same policy shortened to a lifetime.
//!
//! Directive names are read case-insensitively; `no-cache` given with an argument
//! (`no-cache="x"`) restricts only the fields it names, so it does not keep a whole answer
//! from being given out.

use std::time::Duration;

use axum::http::HeaderValue;

/// One directive: its name in lower case, its argument as written.
struct Directive<'a> {
    name: String,
    argument: Option<&'a str>,
}

fn directives(policy: &str) -> impl Iterator<Item = Directive<'_>> {
    policy
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| match d.split_once('=') {
            Some((name, argument)) => Directive {
                name: name.trim().to_ascii_lowercase(),
                argument: Some(argument.trim()),
            },
            None => Directive {
                name: d.to_ascii_lowercase(),
                argument: None,
            },
        })
}

/// The seconds a directive with a number argument gives, when `policy` has it.
fn seconds(policy: &str, name: &str) -> Option<u64> {
    directives(policy)
        .filter(|d| d.name == name)
        .find_map(|d| d.argument?.trim_matches('"').parse().ok())
}

/// The longest any cache may give out an answer sent with `policy`: its freshness
/// (`max-age`, or `s-maxage` for shared caches, the longer) and then its staleness
/// (`stale-while-revalidate` or `stale-if-error`, the longer). Zero for `no-store` and
/// `no-cache`, which give nothing out unasked.
pub(crate) fn lifetime(policy: &str) -> Duration {
    if directives(policy)
        .any(|d| d.argument.is_none() && matches!(d.name.as_str(), "no-store" | "no-cache"))
    {
        return Duration::ZERO;
    }
    let fresh = seconds(policy, "max-age")
        .unwrap_or(0)
        .max(seconds(policy, "s-maxage").unwrap_or(0));
    let stale = seconds(policy, "stale-while-revalidate")
        .unwrap_or(0)
        .max(seconds(policy, "stale-if-error").unwrap_or(0));
    Duration::from_secs(fresh.saturating_add(stale))
}

/// `policy` with a lifetime of at most `most` (whole seconds): its freshness cut to `most`,
/// its staleness to what is left of it; every other directive as it was. `policy` itself
/// when its lifetime is within `most`.
pub(crate) fn capped(policy: &HeaderValue, most: Duration) -> HeaderValue {
    let Ok(text) = policy.to_str() else {
        return policy.clone();
    };
    if lifetime(text) <= most {
        return policy.clone();
    }
    let most = most.as_secs();
    let fresh = seconds(text, "max-age")
        .unwrap_or(0)
        .max(seconds(text, "s-maxage").unwrap_or(0))
        .min(most);
    let left = most - fresh;
    let rewritten: Vec<String> = directives(text)
        .map(|d| {
            let cap = match d.name.as_str() {
                "max-age" | "s-maxage" => most,
                "stale-while-revalidate" | "stale-if-error" => left,
                _ => u64::MAX,
            };
            match d.argument {
                Some(argument) => match argument.trim_matches('"').parse::<u64>() {
                    Ok(n) if n > cap => format!("{}={cap}", d.name),
                    _ => format!("{}={argument}", d.name),
                },
                None => d.name,
            }
        })
        .collect();
    HeaderValue::from_str(&rewritten.join(", ")).unwrap_or_else(|_| policy.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifetime_is_freshness_then_staleness() {
        let s = Duration::from_secs;
        assert_eq!(
            lifetime("private, max-age=60, stale-while-revalidate=300"),
            s(360)
        );
        assert_eq!(lifetime("public, max-age=10, s-maxage=100"), s(100));
        assert_eq!(
            lifetime("max-age=5, stale-while-revalidate=7, stale-if-error=70"),
            s(75)
        );
        assert_eq!(lifetime("no-cache, max-age=60"), s(0));
        assert_eq!(lifetime("no-store"), s(0));
        assert_eq!(lifetime("public"), s(0));
    }

    #[test]
    fn a_policy_is_capped_to_a_lifetime_keeping_its_other_directives() {
        let cap = |p: &str, most: u64| {
            capped(
                &HeaderValue::from_str(p).unwrap(),
                Duration::from_secs(most),
            )
            .to_str()
            .unwrap()
            .to_owned()
        };
        assert_eq!(
            cap("public, max-age=60, stale-while-revalidate=300", 360),
            "public, max-age=60, stale-while-revalidate=300",
            "within the lifetime: as it was"
        );
        assert_eq!(
            cap("public, max-age=60, stale-while-revalidate=300", 100),
            "public, max-age=60, stale-while-revalidate=40"
        );
        assert_eq!(
            cap("public, max-age=600, s-maxage=900, stale-if-error=60", 120),
            "public, max-age=120, s-maxage=120, stale-if-error=0"
        );
        assert_eq!(
            cap("Public, Max-Age=60, must-revalidate", 0),
            "public, max-age=0, must-revalidate"
        );
        for policy in [
            "public, max-age=60, stale-while-revalidate=300",
            "max-age=600, s-maxage=900, stale-if-error=60",
        ] {
            for most in [0, 1, 59, 60, 61, 359, 360, 1000] {
                let capped = cap(policy, most);
                assert!(
                    lifetime(&capped) <= Duration::from_secs(most),
                    "{policy} capped to {most}: {capped}"
                );
            }
        }
    }
}
