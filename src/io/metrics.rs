//! The HTTP endpoint of `--metrics` and `lag --serve`: `GET /metrics` answered with what the
//! caller renders for the scraper's `Accept` header. Plain HTTP on the address given, one
//! request at a time (a scraper asks every few seconds).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};

/// Makes an answer for a scraper's `Accept` header: its content type and body.
pub trait Render: FnMut(Option<&str>) -> (&'static str, String) {}
impl<F: FnMut(Option<&str>) -> (&'static str, String)> Render for F {}

/// A bound endpoint.
pub struct Endpoint {
    server: tiny_http::Server,
    pub addr: SocketAddr,
}

impl Endpoint {
    /// Binds `addr` (`HOST:PORT`, or `:PORT` for every interface): what is no address is a
    /// usage error (exit 2), an address that cannot be bound (a port in use) exit 4.
    pub fn bind(addr: &str) -> Result<Endpoint> {
        let spelled = match addr.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => addr.to_string(),
        };
        let usage = || Error::Usage(format!("--metrics {addr}: not HOST:PORT"));
        let resolved = spelled.to_socket_addrs().map_err(|_| usage())?;
        let at = resolved.into_iter().next().ok_or_else(usage)?;
        let server = tiny_http::Server::http(at)
            .map_err(|e| Error::Unreachable(format!("cannot serve metrics on {addr}: {e}")))?;
        let addr = server.server_addr().to_ip().unwrap_or(at);
        Ok(Endpoint { server, addr })
    }

    /// Serves on a thread of its own for the rest of the process.
    pub fn serve_in_background(self, mut render: impl Render + Send + 'static) {
        let spawned = std::thread::Builder::new()
            .name("weir-metrics".into())
            .spawn(move || {
                for request in self.server.incoming_requests() {
                    answer(request, &mut render);
                }
            });
        if let Err(e) = spawned {
            eprintln!("weir: cannot serve metrics: {e}");
        }
    }

    /// Serves on this thread until `stop` is set.
    pub fn serve_until(&self, stop: &AtomicBool, mut render: impl Render) {
        while !stop.load(Ordering::Relaxed) {
            match self.server.recv_timeout(Duration::from_millis(200)) {
                Ok(Some(request)) => answer(request, &mut render),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("weir: metrics endpoint: {e}");
                    return;
                }
            }
        }
    }
}

fn answer(request: tiny_http::Request, render: &mut impl Render) {
    let header = |name: &str, value: &str| {
        tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
    };
    let path = request
        .url()
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    let response = match (request.method(), path.as_str()) {
        (tiny_http::Method::Get, "/metrics") => {
            let accept = (request.headers().iter())
                .find(|h| h.field.equiv("Accept"))
                .map(|h| h.value.to_string());
            let (content_type, body) = render(accept.as_deref());
            tiny_http::Response::from_string(body).with_header(header("Content-Type", content_type))
        }
        (tiny_http::Method::Get, "/") => {
            tiny_http::Response::from_string("weir: metrics at /metrics\n")
        }
        _ => tiny_http::Response::from_string("not found: metrics are at /metrics\n")
            .with_status_code(404),
    };
    // A scraper that hung up has nothing to be told.
    let _ = request.respond(response);
}
