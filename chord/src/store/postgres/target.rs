//! Where a [`PostgresStore`](super::PostgresStore) connects: the URL, the schema, the TLS
//! connector, and the name the store gives the database in errors (never the password).

use std::fmt::Write as _;
use std::sync::Arc;

use postgres::config::Host;
use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres::{Client, Config, NoTls, Socket};

use crate::store::{Error, Result};

/// Opens one connection (the TLS connector, or none, is captured inside).
type Connect = Arc<dyn Fn(&Config) -> std::result::Result<Client, postgres::Error> + Send + Sync>;

/// A parsed connection target.
#[derive(Clone)]
pub(crate) struct Target {
    config: Config,
    connect: Connect,
    /// The schema holding the store's tables.
    pub(crate) schema: String,
    /// `postgres://user@host:port/db?schema=name`: what errors and `Debug` show.
    pub(crate) name: String,
}

impl Target {
    /// Parses `url` (`postgres://` or `postgresql://`, or the `key=value` form), taking out
    /// the one parameter chord reads itself, `schema` (default `public`).
    pub(crate) fn parse(url: &str) -> Result<Target> {
        let (url, schema) = take_schema(url)?;
        let mut config: Config = url.parse().map_err(|source| Error::Postgres {
            database: redacted(&url),
            action: "parse the URL",
            source,
        })?;
        if config.get_application_name().is_none() {
            config.application_name(&format!("chord pid {}", std::process::id()));
        }
        // A peer that vanishes without closing the socket is noticed within about a minute.
        config.keepalives_idle(std::time::Duration::from_secs(30));
        let schema = schema.unwrap_or_else(|| "public".to_owned());
        let name = describe(&config, &schema);
        Ok(Target {
            config,
            connect: Arc::new(|config: &Config| config.connect(NoTls)),
            schema,
            name,
        })
    }

    /// Uses `tls` to connect.
    pub(crate) fn tls<T>(&mut self, tls: T)
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::TlsConnect: Send,
        T::Stream: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        self.connect = Arc::new(move |config: &Config| config.connect(tls.clone()));
    }

    /// Sets the schema.
    pub(crate) fn set_schema(&mut self, schema: &str) {
        schema.clone_into(&mut self.schema);
        self.name = describe(&self.config, schema);
    }

    /// Opens a new connection.
    pub(crate) fn connect(&self) -> Result<Client> {
        (self.connect)(&self.config).map_err(self.error("connect"))
    }

    /// Wraps a database error with this target's name.
    pub(crate) fn error(&self, action: &'static str) -> impl Fn(postgres::Error) -> Error + '_ {
        move |source| Error::Postgres {
            database: self.name.clone(),
            action,
            source,
        }
    }

    /// The schema as an SQL identifier, quoted.
    pub(crate) fn quoted_schema(&self) -> String {
        quote(&self.schema)
    }
}

/// `ident` as a quoted SQL identifier.
pub(crate) fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// The URL without its `schema` parameter, and that parameter (percent-decoded).
fn take_schema(url: &str) -> Result<(String, Option<String>)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None));
    };
    let mut schema = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("schema", value)) => {
                let value = percent_decode(value).ok_or_else(|| Error::InvalidUrl {
                    url: redacted(url),
                    reason: "the schema parameter is not valid percent-encoded UTF-8".into(),
                })?;
                if value.is_empty() {
                    return Err(Error::InvalidUrl {
                        url: redacted(url),
                        reason: "the schema parameter is empty".into(),
                    });
                }
                schema = Some(value);
            }
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, schema))
}

/// `s` percent-decoded as the rest of a PostgreSQL URL is (by libpq and by the `postgres`
/// crate): each `%XX` is the byte `XX`, every other character stands for itself, `+` included
/// (a `+` is a space only in HTML form data, which a connection URL is not). `None` for a `%`
/// not followed by two hex digits (libpq refuses those too) or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let well_formed = s.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(s).decode_utf8().ok()?;
    Some(decoded.into_owned())
}

/// The URL with any password replaced, for an error about a URL that does not parse.
fn redacted(url: &str) -> String {
    // `scheme://user:password@host...`: drop what lies between the first ':' after the
    // scheme and the '@'.
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((userinfo, host)) = rest.split_once('@') {
            let user = userinfo.split(':').next().unwrap_or("");
            return format!("{scheme}://{user}@{host}");
        }
        return url.to_owned();
    }
    // The key=value form: no password in what is shown.
    url.split_whitespace()
        .filter(|kv| !kv.starts_with("password"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `postgres://user@host:port/db?schema=name`, from the parsed configuration.
fn describe(config: &Config, schema: &str) -> String {
    let mut name = String::from("postgres://");
    if let Some(user) = config.get_user() {
        let _ = write!(name, "{user}@");
    }
    let ports = config.get_ports();
    for (i, host) in config.get_hosts().iter().enumerate() {
        if i > 0 {
            name.push(',');
        }
        match host {
            Host::Tcp(h) => name.push_str(h),
            #[cfg(unix)]
            Host::Unix(path) => name.push_str(&path.display().to_string()),
        }
        if let Some(port) = ports.get(i).or(ports.first()) {
            let _ = write!(name, ":{port}");
        }
    }
    let _ = write!(
        name,
        "/{}?schema={schema}",
        config.get_dbname().unwrap_or("")
    );
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parameter_is_taken_out_and_passwords_never_shown() {
        let t = Target::parse(
            "postgres://me:secret@db.example:6543/app?schema=lanes%20a&connect_timeout=5",
        )
        .unwrap();
        assert_eq!(t.schema, "lanes a");
        assert_eq!(t.name, "postgres://me@db.example:6543/app?schema=lanes a");
        let t = Target::parse("postgres://me@localhost/app").unwrap();
        assert_eq!(t.schema, "public");
        let err = Target::parse("postgres://me:secret@h/db?nonsense=1")
            .err()
            .unwrap();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(matches!(
            Target::parse("postgres://h/db?schema="),
            Err(Error::InvalidUrl { .. })
        ));
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn the_schema_is_percent_decoded_as_a_url_not_as_form_data() {
        let schema = |url: &str| Target::parse(url).map(|t| t.schema);
        assert_eq!(schema("postgres://h/db?schema=a+b").unwrap(), "a+b");
        assert_eq!(schema("postgres://h/db?schema=%2Bx%20y").unwrap(), "+x y");
        assert_eq!(schema("postgres://h/db?schema=caf%C3%A9").unwrap(), "café");
        assert_eq!(schema("postgres://h/db?schema=caf%c3%a9").unwrap(), "café");
        assert_eq!(schema("postgres://h/db?schema=%25").unwrap(), "%");
        for bad in ["%zz", "a%2", "%", "%FF"] {
            let err = schema(&format!("postgres://h/db?schema={bad}")).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidUrl { reason, .. } if reason.contains("percent")),
                "{bad}: {err}"
            );
        }
    }
}
