//! The address `chord serve` listens on (`--listen`): a host, a name or an IP address, and a
//! port. A name is resolved when the server starts, and the first of its addresses that can
//! be bound is taken, as other servers do with `localhost:8080`.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::str::FromStr;

use tokio::net::TcpListener;

/// `HOST:PORT`, as `--listen` gives it: `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListenAddr {
    /// The host: a name, or an IP address (an IPv6 one without its brackets).
    host: String,
    /// The port; 0 takes a free one.
    port: u16,
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<ListenAddr, String> {
        let usage = "expected HOST:PORT (127.0.0.1:8080, [::1]:8080, localhost:8080)";
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("no port: {usage}"))?;
        let port = port
            .parse()
            .map_err(|_| format!("port {port:?} is not a number from 0 to 65535: {usage}"))?;
        let host = match host.strip_prefix('[') {
            Some(v6) => v6
                .strip_suffix(']')
                .ok_or_else(|| format!("an IPv6 address is closed by `]`: {usage}"))?,
            None if host.contains(':') => {
                return Err(format!("an IPv6 address is written in brackets: {usage}"))
            }
            None => host,
        };
        if host.is_empty() {
            return Err(format!("no host: {usage}"));
        }
        Ok(ListenAddr {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Why `--listen` could not be listened on: each names the host and port given, and the
/// address tried.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListenError {
    /// The host name did not resolve.
    #[error("--listen {listen}: cannot resolve {}: {source}", listen.host)]
    Resolve {
        /// What `--listen` gave.
        listen: ListenAddr,
        /// Why.
        source: io::Error,
    },
    /// The host name resolved to no address.
    #[error("--listen {listen}: {} resolves to no address", listen.host)]
    NoAddress {
        /// What `--listen` gave.
        listen: ListenAddr,
    },
    /// No address of the host could be bound: the last one tried, and why.
    #[error("--listen {listen}: cannot listen on {addr}: {source}")]
    Bind {
        /// What `--listen` gave.
        listen: ListenAddr,
        /// The address tried last.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// Binds the first address of `listen`'s host that can be bound.
pub(crate) async fn bind(listen: &ListenAddr) -> Result<TcpListener, ListenError> {
    let addrs = tokio::net::lookup_host((listen.host.as_str(), listen.port))
        .await
        .map_err(|source| ListenError::Resolve {
            listen: listen.clone(),
            source,
        })?;
    let mut failed = None;
    for addr in addrs {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(source) => failed = Some((addr, source)),
        }
    }
    Err(match failed {
        Some((addr, source)) => ListenError::Bind {
            listen: listen.clone(),
            addr,
            source,
        },
        None => ListenError::NoAddress {
            listen: listen.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (String, u16) {
        let a: ListenAddr = text.parse().unwrap();
        (a.host, a.port)
    }

    #[test]
    fn hosts_and_ports_are_read() {
        assert_eq!(parsed("127.0.0.1:8080"), ("127.0.0.1".into(), 8080));
        assert_eq!(parsed("localhost:0"), ("localhost".into(), 0));
        assert_eq!(parsed("[::1]:80"), ("::1".into(), 80));
        assert_eq!(
            "[::1]:80".parse::<ListenAddr>().unwrap().to_string(),
            "[::1]:80"
        );
        for bad in [
            "nowhere",
            "localhost:",
            "localhost:65536",
            ":8080",
            "::1:80",
            "[::1:80",
        ] {
            assert!(bad.parse::<ListenAddr>().is_err(), "{bad}");
        }
    }
}
